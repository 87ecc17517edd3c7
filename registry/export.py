"""Model-facing tool definitions generated from the registry (DESIGN §2.4).

The registry is the one source: what the model reads about a tool and what plan-check enforces come from
the same declaration, so they cannot drift apart. Targets:

- `openai`    Chat Completions / Assistants `tools` list: `{"type": "function", "function": {"name",
              "description", "parameters"}}`.
- `openai-responses`  Responses API `tools` list: `{"type": "function", "name", "description",
              "parameters"}` (the function fields are not nested there).
- `anthropic` Messages API `tools` list: `{"name", "description", "input_schema"}`.
- `mcp`       an MCP `tools/list` result: `{"tools": [{"name", "description", "inputSchema",
              "outputSchema"?}]}`. MCP requires `outputSchema` to be an object schema; a declared output
              that is not one is described in the description instead.

Neither OpenAI nor Anthropic has a field for a tool's output, so the declared output goes into the
description, after the tool's own text: a readable list of the top-level fields (`- rows_total
(integer, >= 0, required)`) followed by one line `Output JSON Schema: {...}` with the exact schema in
canonical JSON. The readable list is for the model; the schema line makes the export lossless, which the
round-trip test (`parse_export`) relies on. For MCP the schema lives in `outputSchema` and the
description carries only the readable list.

Empty `parameters` are exported as `{"type": "object", "properties": {}}`, which every target requires.
Substitutes and immutable pointers are not model-facing and are not exported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import orjson

from output_contracts.errors import UsageError
from output_contracts.traces.tool_registry import (
    Registry,
    ToolSpec,
    field_schema,
    object_fields,
    schema_types,
    type_label,
)

OUTPUT_HEADER = "Output fields:"
SCHEMA_PREFIX = "Output JSON Schema: "
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class Target(StrEnum):
    """Export targets."""

    openai = "openai"
    openai_responses = "openai-responses"
    anthropic = "anthropic"
    mcp = "mcp"


def parameters_of(spec: ToolSpec) -> dict[str, Any]:
    """The tool's parameter schema as exported (empty -> an empty object schema)."""
    return dict(spec.parameters) if spec.parameters else dict(EMPTY_PARAMETERS)


def _bounds(s: Mapping[str, Any]) -> list[str]:
    out = []
    for key, op in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        v = s.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            out.append(f"{op} {v:g}" if isinstance(v, float) else f"{op} {v}")
    return out


def describe_output(output: Any) -> list[str]:
    """Readable lines for a declared output: one `- field (type, constraints)` line per top-level field."""
    root = output
    fields = object_fields(root, root)
    if fields is None:
        return [f"Returns {type_label(schema_types(root, root))}."]
    required: set[str] = set()
    if isinstance(root, Mapping):
        required = set(root.get("required") or ())
    lines = [OUTPUT_HEADER]
    for name in fields:
        sub = field_schema(root, name, root)
        bits = [type_label(schema_types(sub, root))]
        if isinstance(sub, Mapping):
            t = schema_types(sub, root)
            if t == frozenset({"array"}) and isinstance(sub.get("items"), Mapping):
                item_t = schema_types(sub["items"], root)
                if item_t is not None:
                    bits = [f"array of {type_label(item_t)}"]
            if isinstance(sub.get("enum"), list):
                bits.append("one of " + ", ".join(orjson.dumps(v).decode() for v in sub["enum"]))
            bits.extend(_bounds(sub))
        if name in required:
            bits.append("required")
        desc = sub.get("description") if isinstance(sub, Mapping) else None
        lines.append(f"- {name} ({', '.join(bits)})" + (f": {desc}" if desc else ""))
    return lines


def description_with_output(spec: ToolSpec, *, embed_schema: bool) -> str:
    """The tool's description followed by its declared output (see the module docstring)."""
    if spec.output is None:
        return spec.description
    parts = [spec.description] if spec.description else []
    block = describe_output(spec.output)
    if embed_schema:
        block.append(SCHEMA_PREFIX + orjson.dumps(spec.output).decode("utf-8"))
    parts.append("\n".join(block))
    return "\n\n".join(parts)


def _mcp_output_ok(output: Any) -> bool:
    return isinstance(output, Mapping) and schema_types(output, output) == frozenset({"object"})


def export_tool(spec: ToolSpec, target: Target) -> dict[str, Any]:
    """One tool's model-facing definition for `target`."""
    if target is Target.openai:
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": description_with_output(spec, embed_schema=True),
                "parameters": parameters_of(spec),
            },
        }
    if target is Target.openai_responses:
        return {
            "type": "function",
            "name": spec.name,
            "description": description_with_output(spec, embed_schema=True),
            "parameters": parameters_of(spec),
        }
    if target is Target.anthropic:
        return {
            "name": spec.name,
            "description": description_with_output(spec, embed_schema=True),
            "input_schema": parameters_of(spec),
        }
    if target is Target.mcp:
        structured = _mcp_output_ok(spec.output)
        d: dict[str, Any] = {
            "name": spec.name,
            "description": description_with_output(spec, embed_schema=not structured),
            "inputSchema": parameters_of(spec),
        }
        if structured and spec.output is not None:
            d["outputSchema"] = dict(spec.output)
        return d
    raise UsageError(f"unknown export target {target!r}")  # pragma: no cover - exhaustive enum


def export_tools(registry: Registry, target: Target | str) -> Any:
    """Every tool of the registry, in declaration order: a list (openai, anthropic) or `{"tools": [...]}` (mcp)."""
    try:
        t = Target(target)
    except ValueError as e:
        raise UsageError(
            f"unknown export target '{target}' (choose from: {', '.join(x.value for x in Target)})",
            field="target",
        ) from e
    tools = [export_tool(spec, t) for spec in registry.tools.values()]
    return {"tools": tools} if t is Target.mcp else tools


def _split_description(text: str, *, has_output: bool = False) -> tuple[str, Any | None]:
    """Inverse of `description_with_output`: (the tool's own description, the embedded schema or None).

    The output block is cut only when the export says there was an output (an embedded schema line, or
    MCP's `outputSchema`), so a description that merely mentions "Returns" is left alone.
    """
    lines = text.split("\n")
    schema = None
    if lines and lines[-1].startswith(SCHEMA_PREFIX):
        schema = orjson.loads(lines[-1][len(SCHEMA_PREFIX) :])
        lines = lines[:-1]
    head = "\n".join(lines)
    if schema is None and not has_output:
        return head, None
    for marker in (OUTPUT_HEADER, "Returns "):
        if head.startswith(marker):
            return "", schema
        cut = head.rfind("\n\n" + marker)
        if cut >= 0:
            return head[:cut], schema
    return head, schema


def parse_export(data: Any, target: Target | str) -> list[ToolSpec]:
    """Read an export back into ToolSpecs (name, description, parameters, output): the round-trip check."""
    t = Target(target)
    items: Sequence[Any] = data["tools"] if t is Target.mcp else data
    specs = []
    for d in items:
        if t in (Target.openai, Target.openai_responses):
            fn = d["function"] if t is Target.openai else d
            desc, output = _split_description(fn.get("description", ""))
            specs.append(
                ToolSpec(name=fn["name"], description=desc, parameters=fn["parameters"], output=output)
            )
        elif t is Target.anthropic:
            desc, output = _split_description(d.get("description", ""))
            specs.append(
                ToolSpec(name=d["name"], description=desc, parameters=d["input_schema"], output=output)
            )
        else:
            desc, output = _split_description(d.get("description", ""), has_output="outputSchema" in d)
            if "outputSchema" in d:
                output = d["outputSchema"]
            specs.append(
                ToolSpec(name=d["name"], description=desc, parameters=d["inputSchema"], output=output)
            )
    return specs
