"""tools.json is a valid registry that tells the truth: every clean call's arguments satisfy the tool's
`parameters` schema and every clean result satisfies its declared `output` schema."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import jsonschema
import pytest

from output_contracts.traces.tool_registry import Registry, load_registry
from tests.sample_traces.conftest import SAMPLE


@pytest.fixture(scope="module")
def reg() -> Registry:
    return load_registry(SAMPLE / "tools.json")


def test_registry_loads_with_substitutes_and_immutables(reg: Registry) -> None:
    assert len(reg.tools) >= 8
    inv = reg.tools["lookup_inventory"]
    assert set(inv.substitutes) == {"query_warehouse", "get_stock_by_sku"}
    assert reg.tools["refund_order"].immutable == ("/order_id",)
    for spec in reg.tools.values():
        assert spec.description
        assert all(s in reg.tools and s != spec.name for s in spec.substitutes)
        props = spec.parameters["properties"]
        assert set(spec.parameters["required"]) <= set(props)
        for ptr in spec.immutable:
            assert ptr.lstrip("/") in props, f"{spec.name}: immutable {ptr} is not a parameter"
    without_output = [s.name for s in reg.tools.values() if s.output is None]
    assert 1 <= len(without_output) <= 2, without_output


def test_schemas_are_valid_json_schema(reg: Registry) -> None:
    for spec in reg.tools.values():
        jsonschema.Draft202012Validator.check_schema(spec.parameters)
        if spec.output is not None:
            jsonschema.Draft202012Validator.check_schema(spec.output)


def test_every_clean_call_satisfies_its_schemas(reg: Registry, clean: list[dict[str, Any]]) -> None:
    validators: dict[str, tuple[Any, Any]] = {
        name: (
            jsonschema.Draft202012Validator(spec.parameters),
            jsonschema.Draft202012Validator(spec.output) if spec.output is not None else None,
        )
        for name, spec in reg.tools.items()
    }
    bad: dict[str, int] = defaultdict(int)
    for r in clean:
        params, output = validators[r["tool"]]
        if any(True for _ in params.iter_errors(r["arguments"])):
            bad[f"{r['tool']} arguments"] += 1
        if r["status"] == "ok" and output is not None and any(True for _ in output.iter_errors(r["result"])):
            bad[f"{r['tool']} result"] += 1
    assert not bad, dict(bad)


def test_output_schemas_do_not_claim_noise(reg: Registry, planted: dict[str, Any]) -> None:
    """Schema-derived rules must not contradict the noise list (a declared rule needs no support)."""
    for n in planted["noise"]:
        spec = reg.tools[n["tool"]]
        if spec.output is None or "*" in n["path"] or n["path"].count("/") != 1:
            continue
        key = n["path"][1:]
        prop = spec.output["properties"].get(key, {})
        if "REQUIRED" in n["codes"]:
            assert key not in spec.output.get("required", []), n
        if "DOMAIN" in n["codes"]:
            assert "enum" not in prop, n
        if "POSITIVE" in n["codes"]:
            assert "exclusiveMinimum" not in prop, n
        if "NONNEG" in n["codes"]:
            assert "minimum" not in prop, n
        if "TYPE" in n["codes"]:
            assert prop.get("type") != "string", n
