"""The tool registry (DESIGN §2.4): one source for everything about a tool.

`tools.json` (or a folder of them) lists tools with their argument schema (`parameters`), declared
output contract (`output`, a JSON Schema of the result), `substitutes` (tools that can answer the same
need, offered as recovery tools in receipts) and `immutable` argument pointers (never to be changed by a
repair). The file is validated against `output_contracts/schemas/tool-registry.schema.json`, and every
`parameters` / `output` against the JSON Schema 2020-12 meta-schema, so a typo surfaces at load time
with the file, line and field, not later as a puzzling check result.

The module also holds the small schema-walking helpers that plan-check, `registry check/infer` and the
tool exports share, so that all of them read a declaration the same way:

- `schema_types` — the JSON types a schema admits (`None` = not declared, anything goes);
- `object_fields` — the declared property names of an object schema, in declared order (`None` when the
  object is open: no `properties` but `additionalProperties` allowed, so its fields are not declared);
- `field_schema` / `item_schema` — one step down into a property / an array element.

These read `properties`, `additionalProperties`, `patternProperties`, `items`, `prefixItems`, local
`$ref`s (`#/$defs/...`, `#/definitions/...`) and the branches of `anyOf`/`oneOf`/`allOf` (a property
declared in any branch is declared). That covers what pydantic, zod and hand-written registries emit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from output_contracts.errors import SchemaError, TraceError
from output_contracts.jsonutil import atomic_write_bytes

REGISTRY_SCHEMA = "tool-registry"
_KNOWN_KEYS = (
    "name",
    "description",
    "parameters",
    "output",
    "substitutes",
    "immutable",
    "substitutes_inferred",
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool's declaration."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    output: Mapping[str, Any] | None = None
    substitutes: tuple[str, ...] = ()
    immutable: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: substitutes proposed from corpus evidence (`registry infer --substitutes`): `{"tool", "evidence"}`
    #: objects; recovery tools only where `substitutes` is empty, flagged as inferred in receipts
    substitutes_inferred: tuple[Mapping[str, Any], ...] = ()

    def inferred_substitute_names(self) -> tuple[str, ...]:
        """The tools of `substitutes_inferred`, in their order (strongest evidence first)."""
        return tuple(str(d["tool"]) for d in self.substitutes_inferred)

    def to_json(self) -> dict[str, Any]:
        """The declaration as written in `tools.json` (empty optional keys left out, extras kept)."""
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        d["parameters"] = dict(self.parameters) if self.parameters else {"type": "object", "properties": {}}
        if self.output is not None:
            d["output"] = dict(self.output)
        if self.substitutes:
            d["substitutes"] = list(self.substitutes)
        if self.immutable:
            d["immutable"] = list(self.immutable)
        if self.substitutes_inferred:
            d["substitutes_inferred"] = [dict(x) for x in self.substitutes_inferred]
        for k, v in self.extra.items():
            d.setdefault(k, v)
        return d

    def output_fields(self) -> list[str] | None:
        """Declared top-level output fields in declared order (`None`: no output or an open object)."""
        if self.output is None:
            return None
        return object_fields(self.output, self.output)


@dataclass(frozen=True)
class Registry:
    """Tools by name, in declaration order."""

    tools: Mapping[str, ToolSpec]
    source: str | None = None

    def get(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return list(self.tools)

    def recovery_tools(self, name: str, visible: Iterable[str] | None = None) -> list[str]:
        """The tool itself, then its declared substitutes that are `visible` (all when unknown), in order.

        What a receipt offers as `recovery_tools` (DESIGN §4); duplicates and the tool itself listed as
        its own substitute are dropped.
        """
        spec = self.tools.get(name)
        seen = {name}
        out = [name]
        allowed = None if visible is None else set(visible)
        for sub in spec.substitutes if spec is not None else ():
            if sub not in seen and (allowed is None or sub in allowed):
                seen.add(sub)
                out.append(sub)
        return out

    def suggest(self, name: str) -> str | None:
        """The declared tool name closest to `name` (difflib), for "did you mean" hints."""
        return suggest(name, self.names())

    def to_json(self) -> dict[str, Any]:
        """`{"tools": [...]}` in declaration order."""
        return {"tools": [spec.to_json() for spec in self.tools.values()]}


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to `name` by difflib's ratio (cutoff 0.6), or None."""
    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------------
# Loading and validation


def _spec(d: Mapping[str, Any]) -> ToolSpec:
    return ToolSpec(
        name=d["name"],
        description=d.get("description", "") or "",
        parameters=d.get("parameters") or {},
        output=d.get("output"),
        substitutes=tuple(d.get("substitutes") or ()),
        immutable=tuple(d.get("immutable") or ()),
        substitutes_inferred=tuple(d.get("substitutes_inferred") or ()),
        extra={k: v for k, v in d.items() if k not in _KNOWN_KEYS},
    )


def _dotted(pointer_parts: Iterable[Any]) -> str:
    """`["tools", 2, "output"]` -> `tools[2].output` (the field names errors use)."""
    out = ""
    for p in pointer_parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(root)"


def registry_from_json(data: Any, *, source: str | None = None, text: bytes | None = None) -> Registry:
    """Validate parsed registry JSON and build a `Registry`.

    Accepts `{"tools": [...]}` or a bare list of tools. `text` (the file's bytes) lets errors carry the
    line of the offending field. Raises `SchemaError` naming the file, line and field.
    """
    from output_contracts.schema_fast import metaschema_check
    from output_contracts.schemas import jsonschema_module, validation_errors

    doc = {"tools": data} if isinstance(data, list) else data
    lines = pointer_lines(text) if text is not None else {}
    bare = isinstance(data, list)

    def where(parts: list[Any]) -> tuple[str, int | None]:
        ptr_parts = parts[1:] if bare and parts and parts[0] == "tools" else parts
        ptr = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in ptr_parts)
        line = None
        probe = ptr
        while line is None:
            line = lines.get(probe)
            if probe == "":
                break
            probe = probe.rpartition("/")[0]
        return _dotted(parts), line

    # The exact fast tests accept what is valid without importing jsonschema (`output_contracts.
    # schema_fast`); what they refuse, jsonschema judges and words.
    errors = sorted(
        validation_errors(doc, REGISTRY_SCHEMA), key=lambda e: (list(map(str, e.absolute_path)), e.message)
    )
    if errors:
        e = errors[0]
        fld, line = where(list(e.absolute_path))
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SchemaError(
            f"not a valid tool registry: {fld}: {e.message}{more}", source=source, line=line, field=fld
        )
    is_schema = metaschema_check()
    tools: dict[str, ToolSpec] = {}
    for i, d in enumerate(doc["tools"]):
        for key in ("parameters", "output"):
            sub = d.get(key)
            if sub is None or (is_schema is not None and is_schema(sub)):
                continue
            jsonschema = jsonschema_module()
            problems = sorted(
                jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA).iter_errors(sub),
                key=lambda e: (list(map(str, e.absolute_path)), e.message),
            )
            if problems:
                p = problems[0]
                fld, line = where(["tools", i, key, *p.absolute_path])
                raise SchemaError(
                    f"tool '{d['name']}': {key} is not a valid JSON Schema: {fld}: {p.message}",
                    source=source,
                    line=line,
                    field=fld,
                )
        spec = _spec(d)
        for j, ptr in enumerate(spec.immutable):
            first = ptr.split("/")[1].replace("~1", "/").replace("~0", "~") if ptr else None
            params = spec.parameters
            if first is None or not params or field_schema(params, first, params) is not None:
                continue
            declared = object_fields(params, params) or []
            hint = suggest(first, declared)
            fld, line = where(["tools", i, "immutable", j])
            raise SchemaError(
                f"tool '{spec.name}': immutable pointer '{ptr}' names no declared parameter "
                f"(parameters: {', '.join(declared) or 'none'})"
                + (f"; did you mean '/{hint}'?" if hint else ""),
                source=source,
                line=line,
                field=fld,
            )
        if spec.name in tools:
            fld, line = where(["tools", i, "name"])
            raise SchemaError(f"tool '{spec.name}' declared twice", source=source, line=line, field=fld)
        tools[spec.name] = spec
    return Registry(tools=tools, source=source)


#: The longest tool name a registry may declare (tool-registry.schema.json `name.maxLength`).
MAX_TOOL_NAME = 128


def load_registry(path: str | Path) -> Registry:
    """Load `tools.json` (`{"tools": [...]}` or a bare list), or every `*.json` in a folder, merged.

    Files of a folder are read in sorted name order; a tool declared in two files is an error.
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.json"))
        if not files:
            raise TraceError("registry folder holds no *.json file", source=str(p))
    else:
        files = [p]
    tools: dict[str, ToolSpec] = {}
    for f in files:
        try:
            raw = f.read_bytes()
        except FileNotFoundError as e:
            raise TraceError("registry file not found", source=str(f)) from e
        except IsADirectoryError as e:  # pragma: no cover - guarded by is_dir above
            raise TraceError("registry path is a folder", source=str(f)) from e
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise TraceError(f"registry is not valid JSON: {e}", source=str(f), line=e.lineno) from e
        reg = registry_from_json(data, source=str(f), text=raw)
        for name, spec in reg.tools.items():
            if name in tools:
                raise SchemaError(
                    f"tool '{name}' declared twice (again in this file)", source=str(f), field="name"
                )
            tools[name] = spec
    return Registry(tools=tools, source=str(p))


def ordered_json(value: Any) -> bytes:
    """Pretty JSON that keeps key order (2-space indent, trailing newline).

    Registries and tool exports are not key-sorted like other artifacts: the order of `properties` is
    the declared order that plan-check lists fields in, and a person reviews the file top to bottom.
    The output is still deterministic, since every producer builds its dicts in a fixed order.
    """
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def save_registry(registry: Registry, path: str | Path) -> None:
    """Write a registry atomically, in declaration order (see `ordered_json`)."""
    atomic_write_bytes(path, ordered_json(registry.to_json()))


# ---------------------------------------------------------------------------------------------------
# Walking declared schemas

JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

#: leaves.parquet kind -> JSON Schema type.
KIND_TO_TYPE = {
    "null": "null",
    "bool": "boolean",
    "int": "integer",
    "float": "number",
    "number": "number",
    "string": "string",
    "array": "array",
    "object": "object",
}


def deref(schema: Any, root: Any) -> Any:
    """Follow local `$ref`s (`#/...` JSON Pointers into `root`); anything else is returned unchanged."""
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        node: Any = root
        for tok in [t for t in ref[1:].split("/") if t]:
            tok = tok.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                return {}
        schema = node
        seen += 1
    return schema


def _branches(schema: Any, root: Any) -> list[Mapping[str, Any]]:
    """The schema itself plus its `anyOf`/`oneOf`/`allOf` branches (recursively), dereferenced."""
    s = deref(schema, root)
    if not isinstance(s, Mapping):
        return []
    out = [s]
    for key in ("anyOf", "oneOf", "allOf"):
        for b in s.get(key) or ():
            out.extend(_branches(b, root))
    return out


def schema_types(schema: Any, root: Any) -> frozenset[str] | None:
    """The JSON types `schema` admits, or None when it does not say (no `type`, `const` or `enum`).

    `anyOf`/`oneOf` branches add up; `const`/`enum` give the types of their values.
    """
    s = deref(schema, root)
    if s is True or s == {}:
        return None
    if s is False:
        return frozenset()
    if not isinstance(s, Mapping):
        return None
    if "type" in s:
        t = s["type"]
        return frozenset([t] if isinstance(t, str) else t)
    if "const" in s:
        return frozenset([_json_type(s["const"])])
    if isinstance(s.get("enum"), list):
        return frozenset(_json_type(v) for v in s["enum"])
    alts = [b for key in ("anyOf", "oneOf") for b in s.get(key) or ()]
    if alts:
        acc: set[str] = set()
        for b in alts:
            t = schema_types(b, root)
            if t is None:
                return None
            acc |= t
        return frozenset(acc)
    for b in s.get("allOf") or ():
        t = schema_types(b, root)
        if t is not None:
            return t
    return None


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def type_label(types: frozenset[str] | None) -> str:
    """`integer`, `string or null`, `any` — how messages name a declared type."""
    if types is None:
        return "any"
    order = [t for t in JSON_TYPES if t in types]
    return " or ".join(order) if order else "nothing"


def object_fields(schema: Any, root: Any) -> list[str] | None:
    """Declared property names of an object schema in declared order, or None when its fields are open.

    Open means: no `properties` in any branch (nothing declared), or `additionalProperties` /
    `patternProperties` that admit other keys while no `properties` are given. When `properties` are
    given, they are the declaration, even without `additionalProperties: false`: a declared output lists
    what a caller may rely on.
    """
    names: list[str] = []
    declared = False
    for b in _branches(schema, root):
        props = b.get("properties")
        if isinstance(props, Mapping):
            declared = True
            for k in props:
                if k not in names:
                    names.append(k)
    return names if declared else None


def field_schema(schema: Any, key: str, root: Any) -> Any | None:
    """The declared schema of property `key` (merged view over branches), or None when undeclared.

    Returns `{}` (anything) when the object declares no `properties`; a key outside `properties` is
    declared when an explicit `additionalProperties` (a schema or `true`) or a matching
    `patternProperties` admits it.
    """
    hits: list[Any] = []
    for b in _branches(schema, root):
        props = b.get("properties")
        if isinstance(props, Mapping) and key in props:
            hits.append(props[key])
            continue
        for pat, sub in (b.get("patternProperties") or {}).items():
            if re.search(pat, key):
                hits.append(sub)
        ap = b.get("additionalProperties")
        if isinstance(ap, Mapping):
            hits.append(ap)
        elif ap is True:
            hits.append({})
    if not hits:
        return {} if object_fields(schema, root) is None else None
    if len(hits) == 1:
        return hits[0]
    return {"anyOf": hits}


def map_value_schema(schema: Any, root: Any) -> Any | None:
    """The schema of a map's entries, or None when `schema` is not a map.

    A map is an object that declares no `properties` and gives `additionalProperties` as a schema: its
    keys are data (ids, names), and the entries all follow that one schema. In rule paths such a key is
    `~*` (`output_contracts.traces.pointers.MAP_TOKEN`)."""
    if object_fields(schema, root) is not None:
        return None
    for b in _branches(schema, root):
        ap = b.get("additionalProperties")
        if isinstance(ap, Mapping):
            return ap
    return None


def declared_maps(schema: Any) -> list[str]:
    """Patterns of the maps a declared schema describes (`""` when the whole value is one), in
    generalized form (a map inside a map entry is `/users/~*/cards`)."""
    root = schema
    out: list[str] = []

    def walk(s: Any, pattern: str, depth: int) -> None:
        if depth > 32:
            return
        value = map_value_schema(s, root)
        if value is not None:
            out.append(pattern)
            walk(value, f"{pattern}/~*", depth + 1)
            return
        for name in object_fields(s, root) or ():
            sub = field_schema(s, name, root)
            if sub is not None:
                walk(sub, f"{pattern}/{name.replace('~', '~0').replace('/', '~1')}", depth + 1)
        if has_item_schema(s, root):
            walk(item_schema(s, None, root), f"{pattern}/*", depth + 1)

    if schema is not None:
        walk(schema, "", 0)
    return sorted(set(out))


def item_schema(schema: Any, index: int | None, root: Any) -> Any:
    """The declared schema of an array element (`prefixItems[index]` when given, else `items`), or `{}`."""
    for b in _branches(schema, root):
        prefix = b.get("prefixItems")
        if index is not None and isinstance(prefix, list) and index < len(prefix):
            return prefix[index]
        items = b.get("items")
        if isinstance(items, Mapping):
            return items
        if isinstance(items, list) and index is not None and index < len(items):  # draft-4 tuple form
            return items[index]
    return {}


def has_item_schema(schema: Any, root: Any) -> bool:
    """True when the array's elements are declared (`items` or `prefixItems`)."""
    return any(
        isinstance(b.get("items"), Mapping | list) or "prefixItems" in b for b in _branches(schema, root)
    )


# ---------------------------------------------------------------------------------------------------
# Line numbers of JSON Pointers in a JSON text


def pointer_lines(text: bytes | str) -> dict[str, int]:
    """Map every JSON Pointer in a JSON document to the 1-based line where its value starts.

    Used to give errors and SARIF results a line. A best-effort scanner: on malformed input it returns
    what it found so far (the caller has already parsed the text successfully with orjson).
    """
    s = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    out: dict[str, int] = {}
    n = len(s)
    pos = 0
    line = 1

    def skip_ws() -> None:
        nonlocal pos, line
        while pos < n and s[pos] in " \t\r\n":
            if s[pos] == "\n":
                line += 1
            pos += 1

    def read_string() -> str:
        nonlocal pos
        start = pos
        pos += 1
        while pos < n:
            c = s[pos]
            if c == "\\":
                pos += 2
                continue
            if c == '"':
                pos += 1
                break
            pos += 1
        try:
            val: str = orjson.loads(s[start:pos])
        except orjson.JSONDecodeError:
            val = s[start + 1 : pos - 1]
        return val

    def value(ptr: str, depth: int) -> None:
        nonlocal pos, line
        skip_ws()
        if pos >= n or depth > 512:
            return
        out.setdefault(ptr, line)
        c = s[pos]
        if c == "{":
            pos += 1
            while True:
                skip_ws()
                if pos >= n:
                    return
                if s[pos] == "}":
                    pos += 1
                    return
                if s[pos] == ",":
                    pos += 1
                    continue
                if s[pos] != '"':
                    return
                key = read_string()
                skip_ws()
                if pos < n and s[pos] == ":":
                    pos += 1
                value(ptr + "/" + key.replace("~", "~0").replace("/", "~1"), depth + 1)
        elif c == "[":
            pos += 1
            i = 0
            while True:
                skip_ws()
                if pos >= n:
                    return
                if s[pos] == "]":
                    pos += 1
                    return
                if s[pos] == ",":
                    pos += 1
                    continue
                value(f"{ptr}/{i}", depth + 1)
                i += 1
        elif c == '"':
            read_string()
        else:
            while pos < n and s[pos] not in ",}] \t\r\n":
                pos += 1

    value("", 0)
    return out
