"""The fast test of `contract-set.schema.json` (`output_contracts.schema_fast`, with its per-code dispatch)
accepts exactly what jsonschema accepts.

`ContractSet.load` trusts the fast test and skips jsonschema for a set it accepts, so a set it wrongly
accepted would load without its error: these tests compare the two on real contract sets and on
random mutations of a small set that holds a rule of every code (every parameter shape of the schema's
per-code branches, which `output_contracts.codes.generate` writes from the specs), near-valid values
drawn from the set itself as often as odd ones.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.table import names
from output_contracts.errors import ContractsError
from output_contracts.schema_fast import Check, compile_schema
from output_contracts.schemas import _validator, fast_check, jsonschema_module, load_schema, schema_errors
from tests.json_tree import locations, subtrees

REPO = Path(__file__).resolve().parents[2]
GOLDEN = orjson.loads((REPO / "tests" / "golden" / "sample-contracts.json").read_bytes())


def _small_set() -> dict[str, Any]:
    """The golden set cut down to one rule of each (code, params keys, path count) shape,
    one fold over them, and a tool with inferred substitutes: every branch of the schema, small
    enough for jsonschema to judge hundreds of mutations in seconds."""
    seen: dict[tuple[Any, ...], int] = {}
    tools: dict[str, Any] = {}
    for name, tc in sorted(GOLDEN["tools"].items()):
        kept = []
        for r in tc["rules"]:
            p = r["params"]
            shape = (
                r["code"],
                tuple(sorted(p)),
                len(r["paths"]),
                tuple(sorted(p["when"])) if isinstance(p.get("when"), dict) else None,
                repr(type(p.get("then"))),
                p.get("min") is None,
            )
            if seen.get(shape, 0) < 1:
                seen[shape] = seen.get(shape, 0) + 1
                kept.append(r)
        if kept:
            tools[name] = {**tc, "rules": kept}
    first = next(iter(tools))
    tools[first] = {**tools[first], "substitutes_inferred": ["x_tool"]}
    ids = [r["id"] for tc in tools.values() for r in tc["rules"]]
    fold = {"fold": 0, "rules": ids[::2], "support": {i: {"calls": 3, "tasks": 2} for i in ids[:4]}}
    return {**GOLDEN, "tools": tools, "folds": [fold]}


SMALL = _small_set()


_ODD = [
    None, True, False, 0, 1, -1, 1.0, 0.5, 2.5, 255, 256, -0.5, "", "x", "\n",
    "/a", "/a/*", "/a/~*/b", "/*", "a/b", "$args", "$args/a", "$argsx/a", "/a\n",
    "r-0123456789ab", "r-0123456789ab\n", "r-0123456789AB", "0123456789abcdef", "0123456789abcde",
    "a" * 64, "a" * 64 + "\n", "mined", "schema", "exact", "loose", "present", "in", "number", "year",
    "aware", "linear", "cent", "negative", "ok", "reward", "int",
    *names(),
    [], ["a"], ["a", "a"], [1, -1], [1.0], [True], [1, -1, 1, -1], ["mined", "mined"], ["zero", "zero"],
    {}, {"in": ["x", None, True]}, {"in": []}, {"in": [1]}, {"sign": ["zero"]}, {"sign": ["zero", "zero"]},
    {"equals": 1}, {"equals": [1]}, {"sum": "cent"}, {"sum": "x"}, {"kind": "int"}, {"calls": 1, "tasks": 0},
    {"calls": -1, "tasks": 0}, {"calls": 1.0, "tasks": 2.5},
]  # fmt: skip
_KEYS = sorted(
    {k for v in subtrees(SMALL) if isinstance(v, dict) for k in v}
    | {"extra", "coef", "in_full", "max_violation_rate", "substitutes_inferred", "rule_source", "support"}
)
_VALUES = st.one_of(st.sampled_from(_ODD), st.sampled_from(subtrees(SMALL))).map(copy.deepcopy)


def _mutate(doc: Any, data: st.DataObject) -> Any:
    """One random change somewhere in `doc` (a new value, a key or element removed or added)."""
    node = doc
    while True:
        kids = list(node) if isinstance(node, dict) else list(range(len(node)))
        descend = [k for k in kids if isinstance(node[k], dict | list)]
        if descend and data.draw(st.integers(0, 3)) > 0:
            node = node[data.draw(st.sampled_from(descend))]
            continue
        break
    action = data.draw(st.sampled_from(["set", "drop", "add"]))
    if isinstance(node, dict):
        if action == "drop" and node:
            del node[data.draw(st.sampled_from(sorted(node)))]
        elif action == "set" and node:
            node[data.draw(st.sampled_from(sorted(node)))] = data.draw(_VALUES)
        else:
            node[data.draw(st.sampled_from(_KEYS))] = data.draw(_VALUES)
    else:
        if action == "drop" and node:
            node.pop(data.draw(st.integers(0, len(node) - 1)))
        elif action == "set" and node:
            node[data.draw(st.integers(0, len(node) - 1))] = data.draw(_VALUES)
        else:
            node.append(copy.deepcopy(node[0]) if node and data.draw(st.booleans()) else data.draw(_VALUES))
    return doc


def conforms(doc: Any) -> bool:
    """The fast test's verdict on a whole contract set."""
    check = fast_check("contract-set")
    assert check is not None, "the contract-set schema uses a keyword the fast test does not state"
    return check(doc)


def test_real_contract_sets_conform() -> None:
    for doc in (GOLDEN, SMALL):
        assert schema_errors(doc, "contract-set") == []
        assert conforms(doc)


def test_tau_contract_set_conforms(tmp_path: Path) -> None:
    """Sets of other shapes than the sample world's: every contract set shipped in the repository."""
    found = 0
    for p in sorted((REPO / "tests").rglob("*.json")):
        doc = orjson.loads(p.read_bytes())
        if isinstance(doc, dict) and doc.get("version") == 1 and "folds" in doc and "tools" in doc:
            found += 1
            assert conforms(doc) == (schema_errors(doc, "contract-set") == []), p
    assert found >= 1


def set_schema_document() -> dict[str, Any]:
    return load_schema("contract-set")


def _changed(doc: Any, at: tuple[Any, ...], change: Any) -> Any:
    """`doc` with `change(node)` applied to a copy of the node at `at`; the containers on the way are
    copied, everything else is shared (the variants are only read)."""
    if not at:
        node = copy.copy(doc)
        change(node)
        return node
    top = copy.copy(doc)
    top[at[0]] = _changed(doc[at[0]], at[1:], change)
    return top


def _variants(doc: Any) -> Iterator[Any]:
    """`doc` changed in one place every way the pool allows: each place set to each pool value, each
    key or element dropped, each known key added, each list lengthened by a copy of its first item."""
    pool = [*_ODD, ["/a"] * 17, ["/a", "/b", "/c", "/d", "/e"], ["/a", "/b/*", "/c"], [1, -1, 1]]
    for at in locations(doc):
        node = doc
        for k in at:
            node = node[k]
        if isinstance(node, dict | list):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            for k in keys:
                for value in pool:
                    yield _changed(doc, at, lambda n, k=k, value=value: n.__setitem__(k, value))
                yield _changed(doc, at, lambda n, k=k: n.pop(k))
        if isinstance(node, dict):
            for k in _KEYS:
                if k not in node:
                    yield _changed(doc, at, lambda n, k=k: n.__setitem__(k, 1))
        elif isinstance(node, list) and node:
            yield _changed(doc, at, lambda n: n.append(n[0]))


@pytest.mark.slow  # about 40k rule variants judged by jsonschema: ~8 CPU-s
def test_conforms_is_jsonschema_on_every_single_change_of_a_rule() -> None:
    """Each rule shape, changed in one place every way: the fast test agrees with jsonschema on the
    schema's `rule`."""
    full = set_schema_document()
    rule_schema = {"$schema": full["$schema"], "$defs": full["$defs"], "$ref": "#/$defs/rule"}
    validator = jsonschema_module().validators.validator_for(full)(rule_schema)
    fast: Check | None = compile_schema(rule_schema)
    assert fast is not None
    rules = [r for tc in SMALL["tools"].values() for r in tc["rules"]]
    checked = accepted = 0
    for rule in rules:
        for variant in _variants(rule):
            want = validator.is_valid(variant)
            assert fast(variant) == want, variant
            checked += 1
            accepted += want
    assert checked > 10_000 and accepted > 100  # the pool reaches valid variants, not only invalid ones


@pytest.mark.slow
def test_conforms_is_jsonschema_on_every_single_change_outside_the_rules() -> None:
    skeleton = copy.deepcopy(SMALL)
    names = sorted(skeleton["tools"])[:2]
    skeleton["tools"] = {
        n: {**skeleton["tools"][n], "rules": skeleton["tools"][n]["rules"][:1]} for n in names
    }
    ids = [r["id"] for tc in skeleton["tools"].values() for r in tc["rules"]]
    skeleton["folds"] = [{"fold": 0, "rules": ids, "support": {ids[0]: {"calls": 3, "tasks": 2}}}]
    skeleton["params"] = {  # every key the schema states, maps cut to two entries, one free-form key
        **{k: v for k, v in skeleton["params"].items() if k in ("clean", "k", "max_domain", "seed", "tools")},
        "max_violation_rate": 0.01,
        "min_support": {"TYPE": 20, "RANGE": 30},
        "min_tasks": {"TYPE": 1},
        "rule_source": "mined",
        "domain": {"splits": 5},
    }
    for tc in skeleton["tools"].values():  # every optional list of a tool present
        tc.setdefault("substitutes", ["a"])
        tc.setdefault("maps", ["/m"])
    validator = _validator("contract-set")
    checked = accepted = 0
    for variant in _variants(skeleton):
        want = validator.is_valid(variant)
        assert conforms(variant) == want, variant
        checked += 1
        accepted += want
    assert checked > 3_000 and accepted > 100


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_conforms_is_jsonschema_on_mutated_sets(data: st.DataObject) -> None:
    doc = copy.deepcopy(SMALL)
    for _ in range(data.draw(st.integers(1, 2))):
        doc = _mutate(doc, data)
    assert conforms(doc) == (schema_errors(doc, "contract-set") == [])


def test_a_refused_set_is_worded_by_jsonschema(tmp_path: Path) -> None:
    """The error of an invalid set is jsonschema's, as before the fast test existed."""
    doc = copy.deepcopy(SMALL)
    first = next(iter(doc["tools"].values()))
    first["rules"][0]["examples"] = ["not-hex"]
    p = tmp_path / "bad.json"
    p.write_bytes(orjson.dumps(doc))
    assert not conforms(doc)
    with pytest.raises(ContractsError) as e:
        ContractSet.load(p)
    assert "not a valid contract-set" in e.value.message
    assert "'not-hex' does not match" in e.value.message
