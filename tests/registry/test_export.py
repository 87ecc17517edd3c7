"""`contracts tools export`: the registry round-trips through every target; declared outputs are visible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.errors import UsageError
from output_contracts.registry.export import Target, export_tools, parameters_of, parse_export
from output_contracts.traces.tool_registry import Registry, load_registry, registry_from_json

EDGE_CASES: dict[str, Any] = {
    "tools": [
        {"name": "no_output", "description": "Returns nothing declared.\n\nReturns a thing, really."},
        {"name": "empty_params", "output": {"type": "array", "items": {"type": "string"}}},
        {
            "name": "nullable",
            "description": "",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            "output": {
                "type": "object",
                "properties": {
                    "z_last": {"type": "string", "description": "declared first, named last"},
                    "a_first": {"type": ["integer", "null"], "minimum": 0},
                    "mode": {"enum": ["x", "y"]},
                },
                "required": ["z_last"],
            },
        },
        {"name": "unicode", "description": "Grüße — «quoted» ${not.a.ref}", "output": True},
    ]
}


def _registries(world: Path) -> list[Registry]:
    return [load_registry(world / "tools.json"), registry_from_json(EDGE_CASES)]


@pytest.mark.parametrize("target", list(Target))
def test_round_trip_through_every_target(world: Path, target: Target) -> None:
    for reg in _registries(world):
        exported = orjson.loads(orjson.dumps(export_tools(reg, target)))
        back = parse_export(exported, target)
        assert [s.name for s in back] == reg.names()
        for orig, got in zip(reg.tools.values(), back, strict=True):
            assert got.description == orig.description
            assert dict(got.parameters) == parameters_of(orig)
            assert got.output == orig.output
            # Declared order survives (plan-check lists fields in it).
            if isinstance(orig.output, dict) and "properties" in orig.output:
                assert list(got.output["properties"]) == list(orig.output["properties"])  # type: ignore[index]


def test_openai_shape_and_output_in_description(world: Path) -> None:
    tools = export_tools(load_registry(world / "tools.json"), "openai")
    tr = next(t for t in tools if t["function"]["name"] == "temporal_reachability")
    assert tr["type"] == "function"
    assert set(tr["function"]) == {"name", "description", "parameters"}
    desc = tr["function"]["description"]
    assert desc.startswith("Nodes reachable from a source within a time window")
    assert "- rows (array of object, required)" in desc
    assert "- rows_total (integer, >= 0, required)" in desc
    assert "- cursor (null or string, required)" in desc
    assert tr["function"]["parameters"]["required"] == ["source", "start", "end"]


def test_openai_responses_shape(world: Path) -> None:
    tools = export_tools(load_registry(world / "tools.json"), "openai-responses")
    assert [set(t) for t in tools] == [{"type", "name", "description", "parameters"}] * 4
    assert tools[1]["name"] == "temporal_reachability" and tools[1]["type"] == "function"


def test_anthropic_shape(world: Path) -> None:
    tools = export_tools(load_registry(world / "tools.json"), "anthropic")
    assert [set(t) for t in tools] == [{"name", "description", "input_schema"}] * 4
    assert "Output JSON Schema: " in tools[0]["description"]


def test_mcp_uses_output_schema_for_objects_only() -> None:
    doc = export_tools(registry_from_json(EDGE_CASES), "mcp")
    by_name = {t["name"]: t for t in doc["tools"]}
    assert "outputSchema" not in by_name["no_output"]
    assert "outputSchema" not in by_name["empty_params"]  # an array output: MCP wants an object schema
    assert "Output JSON Schema: " in by_name["empty_params"]["description"]
    assert by_name["nullable"]["outputSchema"]["required"] == ["z_last"]
    assert "Output JSON Schema" not in by_name["nullable"]["description"]
    assert by_name["nullable"]["description"] == (
        "Output fields:\n- z_last (string, required): declared first, named last\n"
        '- a_first (null or integer, >= 0)\n- mode (string, one of "x", "y")'
    )
    assert by_name["empty_params"]["inputSchema"] == {"type": "object", "properties": {}}


def test_unknown_target() -> None:
    with pytest.raises(UsageError, match="choose from: openai, openai-responses, anthropic, mcp"):
        export_tools(registry_from_json(EDGE_CASES), "gemini")


def test_cli_export(world: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from output_contracts.cli.app import app

    runner = CliRunner()
    r = runner.invoke(app, ["tools", "export", "--registry", str(world / "tools.json"), "--target", "mcp"])
    assert r.exit_code == 0, r.output
    doc = orjson.loads(r.stdout)
    assert [t["name"] for t in doc["tools"]] == load_registry(world / "tools.json").names()
    out = tmp_path / "openai.json"
    r = runner.invoke(
        app, ["tools", "export", "-r", str(world / "tools.json"), "-t", "openai", "-o", str(out)]
    )
    assert r.exit_code == 0
    assert parse_export(orjson.loads(out.read_bytes()), "openai")[1].name == "temporal_reachability"
    r = runner.invoke(app, ["tools", "export", "-r", str(world / "tools.json"), "-t", "gemini"])
    assert r.exit_code == 2
