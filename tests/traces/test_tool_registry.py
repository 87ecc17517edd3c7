"""The tool registry as a module: loading, validation errors (file, line, field), schema-walking helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.errors import SchemaError, TraceError
from output_contracts.schemas import schema_errors
from output_contracts.traces.leaves import flatten
from output_contracts.traces.tool_registry import (
    field_schema,
    item_schema,
    load_registry,
    object_fields,
    ordered_json,
    pointer_lines,
    registry_from_json,
    save_registry,
    schema_types,
    type_label,
)

Write = Callable[[str, Any], Path]


def test_example_registry_loads_and_validates(world: Path) -> None:
    reg = load_registry(world / "tools.json")
    assert reg.names() == ["search_nodes", "temporal_reachability", "summarize_rows", "send_report"]
    tr = reg.tools["temporal_reachability"]
    assert tr.output_fields() == ["rows", "rows_total", "truncated", "cursor"]
    assert tr.immutable == ("/source",)
    assert reg.tools["search_nodes"].substitutes == ("lookup_node",)
    assert schema_errors(orjson.loads((world / "tools.json").read_bytes()), "tool-registry") == []


def test_bare_list_and_folder(tmp_path: Path, temporal: dict[str, Any]) -> None:
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg" / "a.json").write_bytes(orjson.dumps(temporal["tools"][:1]))
    (tmp_path / "reg" / "b.json").write_bytes(orjson.dumps({"tools": temporal["tools"][1:]}))
    reg = load_registry(tmp_path / "reg")
    assert reg.names() == ["temporal_reachability", "summarize"]
    (tmp_path / "reg" / "c.json").write_bytes(orjson.dumps([{"name": "summarize"}]))
    with pytest.raises(SchemaError, match="tool 'summarize' declared twice"):
        load_registry(tmp_path / "reg")


@pytest.mark.parametrize(
    ("text", "message", "line", "field"),
    [
        (
            b'{"tools": [\n {"name": "a"},\n {"name": 3}\n]}',
            "tools[1].name: 3 is not of type 'string'",
            3,
            "tools[1].name",
        ),
        (
            b'{"tools": [\n {"name": "a",\n  "output": {"type": "objekt"}}\n]}',
            "tool 'a': output is not a valid JSON Schema: tools[0].output.type",
            3,
            "tools[0].output.type",
        ),
        (
            b'{"tools": [\n {"name": "a",\n  "immutable": ["sku"]}\n]}',
            "tools[0].immutable[0]: 'sku' does not match",
            3,
            "tools[0].immutable[0]",
        ),
        (b'{"tools": [\n {"name": "a"},\n {"name": "a"}\n]}', "tool 'a' declared twice", 3, "tools[1].name"),
        (b'{"tool": []}', "(root): 'tools' is a required property", 1, "(root)"),
        (b'[{"name": "a", "substitutes": "b"}]', "tools[0].substitutes: 'b' is not of type 'array'", 1, None),
    ],
)
def test_invalid_registries_name_file_line_and_field(
    write: Write, text: bytes, message: str, line: int, field: str | None
) -> None:
    p = write("tools.json", text)
    with pytest.raises(SchemaError) as ei:
        load_registry(p)
    e = ei.value
    assert message in e.message
    assert (e.source, e.line) == (str(p), line)
    if field is not None:
        assert e.field == field
    assert e.render().startswith(f"error[E_SCHEMA_INVALID]: {p}:{line}: ")


def test_unreadable_registries(write: Write, tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not found"):
        load_registry(tmp_path / "missing.json")
    with pytest.raises(TraceError) as ei:
        load_registry(write("bad.json", b'{"tools": [\n{"name": }]}'))
    assert ei.value.line == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match=r"no \*\.json"):
        load_registry(tmp_path / "empty")


def test_save_keeps_declared_order(tmp_path: Path, temporal: dict[str, Any]) -> None:
    reg = registry_from_json(temporal)
    save_registry(reg, tmp_path / "out.json")
    again = load_registry(tmp_path / "out.json")
    assert again.tools["temporal_reachability"].output_fields() == [
        "rows",
        "rows_total",
        "truncated",
        "cursor",
    ]
    assert again.tools == reg.tools
    assert ordered_json(reg.to_json()) == (tmp_path / "out.json").read_bytes()


def test_schema_helpers_follow_refs_and_branches() -> None:
    root = {
        "$defs": {"Row": {"type": "object", "properties": {"node": {"type": "string"}}}},
        "anyOf": [
            {"type": "object", "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}}}},
            {"type": "object", "properties": {"error": {"type": "string"}}},
        ],
    }
    assert object_fields(root, root) == ["rows", "error"]
    rows = field_schema(root, "rows", root)
    assert schema_types(rows, root) == frozenset({"array"})
    row = item_schema(rows, 0, root)
    assert object_fields(row, root) == ["node"]
    assert field_schema(row, "nope", root) is None
    assert schema_types(root, root) == frozenset({"object"})
    assert type_label(schema_types({"type": ["null", "string"]}, {})) == "null or string"
    assert type_label(schema_types({"enum": [1, "a"]}, {})) == "integer or string"
    assert schema_types({}, {}) is None


def test_open_objects_and_additional_properties() -> None:
    open_obj = {"type": "object"}
    assert object_fields(open_obj, open_obj) is None
    assert field_schema(open_obj, "x", open_obj) == {}
    typed_map = {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert field_schema(typed_map, "b", typed_map) == {"type": "integer"}
    closed = {"type": "object", "properties": {"a": {}}}
    assert field_schema(closed, "b", closed) is None
    patterned = {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x_": {"type": "string"}}}
    assert field_schema(patterned, "x_1", patterned) == {"type": "string"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(json_values, st.sampled_from([None, 1, 2]))
def test_pointer_lines_covers_every_node(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    lines = pointer_lines(text)
    paths = [leaf[0] for leaf in flatten(value)]
    assert set(lines) == set(paths)
    if indent is None:
        assert set(lines.values()) == {1}
    else:
        # Every value sits on the line json.dumps put it on; lines never go backwards in document order.
        seq = [lines[p] for p in paths]
        assert seq == sorted(seq)
        assert max(seq) <= text.count("\n") + 1


def test_immutable_pointers_must_name_declared_parameters(write: Write) -> None:
    tool = {"name": "inv", "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}}}
    ok = [{**tool, "immutable": ["/sku", "/sku/0", ""]}, {"name": "free", "immutable": ["/anything"]}]
    assert load_registry(write("ok.json", {"tools": ok})).tools["inv"].immutable == ("/sku", "/sku/0", "")
    p = write(
        "bad.json",
        b'{"tools": [\n {"name": "inv", "parameters": {"type": "object", "properties": {"sku": {}}},\n  "immutable": ["/skuu"]}\n]}',
    )
    with pytest.raises(SchemaError) as ei:
        load_registry(p)
    assert ei.value.message == (
        "tool 'inv': immutable pointer '/skuu' names no declared parameter (parameters: sku); did you mean '/sku'?"
    )
    assert (ei.value.line, ei.value.field) == (3, "tools[0].immutable[0]")


def test_recovery_tools() -> None:
    reg = registry_from_json({"tools": [{"name": "a", "substitutes": ["b", "a", "c"]}, {"name": "b"}]})
    assert reg.recovery_tools("a") == ["a", "b", "c"]
    assert reg.recovery_tools("a", visible=["c", "a"]) == ["a", "c"]
    assert reg.recovery_tools("unknown") == ["unknown"]
