"""Every place that lists the property codes agrees with the one table (`output_contracts.codes.table.TABLE`).

Adding a code is a `rules/` module, a `codes/` class and their table rows (docs/design.md,
"Adding a property code"); the JSON Schemas, thresholds and docs that enumerate codes are checked here,
so a code cannot be half-added."""

from __future__ import annotations

import json
from pathlib import Path

from output_contracts.codes.contract_set import CODES
from output_contracts.codes.mine_params import DEFAULT_MIN_SUPPORT, DEFAULT_MIN_TASKS
from output_contracts.codes.table import TABLE
from output_contracts.mining.rule_classes import RULE_CLASSES
from tests.json_tree import subtrees

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "output_contracts" / "schemas"


def _enums(node: object) -> list[list[str]]:
    """Every `enum` list in a schema that contains "REQUIRED" (the code enums)."""
    return [
        v["enum"]
        for v in subtrees(node)
        if isinstance(v, dict)
        and isinstance(v.get("enum"), list)
        and "REQUIRED" in v["enum"]
        and "TYPE" in v["enum"]
    ]


def test_table_and_codes_agree() -> None:
    assert tuple(TABLE) == CODES
    assert len({c.short for c in TABLE.values()}) == len(CODES)  # the mine table's columns are distinct
    node_classes = [c.node_class for c in TABLE.values() if c.node_class]
    assert len(node_classes) == len(set(node_classes))  # one per-node class number per code


def test_every_code_has_a_miner_and_thresholds() -> None:
    emitted = [code for cls in RULE_CLASSES for code in cls().codes]
    assert set(emitted) == set(CODES)
    # one module per property code: classes sharing a code (Sign and FirstSign) live together
    modules: dict[str, set[str]] = {}
    for cls in RULE_CLASSES:
        for code in cls().codes:
            modules.setdefault(code, set()).add(cls.__module__)
    assert all(len(m) == 1 for m in modules.values()), modules
    assert set(DEFAULT_MIN_SUPPORT) == set(CODES) == set(DEFAULT_MIN_TASKS)


def test_schema_enums_list_every_code() -> None:
    for name in ("contract-set", "receipt-v1", "receipt-v2", "receipt-v2-no-recovery"):
        enums = _enums(json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")))
        assert enums, name
        for e in enums:
            assert e == list(CODES), (name, e)


def test_every_code_is_documented() -> None:
    codes_md = (REPO / "docs" / "codes.md").read_text(encoding="utf-8")
    rules_md = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"\n## {code}\n" in codes_md, code
        assert f"`{code}`" in rules_md, code
