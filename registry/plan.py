"""Plan check (DESIGN §8): verify a multi-step tool plan against the registry before anything runs.

A plan is a list of steps `{"id", "tool", "arguments"}`; argument strings may reference the output of an
earlier step as `${step_id.field[.rest]}`. A string that is exactly one reference takes the referenced
field's declared type; a reference embedded in longer text makes a string. `$${` writes a literal `${`.
Path components after the field are object keys or array indexes (`${s1.rows.0.node}` or
`${s1.rows[0].node}`); a step id that itself contains dots is matched whole (the longest declared id wins).

Four codes, every error of a plan collected (never only the first), sorted by step position, argument
pointer, code (E_TOOL, E_ORDER, E_SCHEMA, E_ARGS: what makes the others moot first) and message:

- `E_TOOL`   the step's tool is not in the registry (with the closest name as a suggestion).
- `E_ORDER`  a reference to a later step, to the step itself, or to no step at all; a step id used twice.
- `E_SCHEMA` a referenced field the producing tool does not declare in its `output`, checked as deep as
  the declaration goes: `E_SCHEMA: step 2: temporal_reachability outputs no field 'count' (available:
  rows, rows_total, truncated, cursor)`, fields listed in declared order, plus `did you mean` when close.
  Indexing into a declared scalar, or reading a field of a declared array, is the same error.
- `E_ARGS`   the arguments fail the tool's `parameters` schema (JSON Schema 2020-12): missing required,
  wrong type, enum/const, extra property under `additionalProperties: false`, bounds, patterns, formats
  (jsonschema's checkers plus RFC 3339 `date-time`). At a
  reference only what the declaration fixes is judged: its type (and its enum, when declared); a
  malformed reference (`${}`, `${s1.}`) is an E_ARGS error too.

Deliberate limits (documented in docs/plan-check.md): a producer with no declared `output`, or an object
declared without `properties`, cannot be checked; such references are counted as `unchecked`. Declared
`properties` are taken as the whole declaration even without `additionalProperties: false`, since a plan
should rely only on what a tool promises.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import re
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from contracts import __version__
from contracts.errors import CheckError, SchemaError
from contracts.schemas import jsonschema_module
from contracts.traces.registry import (
    Registry,
    ToolSpec,
    deref,
    field_schema,
    has_item_schema,
    item_schema,
    object_fields,
    pointer_lines,
    schema_types,
    suggest,
    type_label,
)

if TYPE_CHECKING:
    import jsonschema

CODES = ("E_SCHEMA", "E_ARGS", "E_ORDER", "E_TOOL")
CODE_HELP = {
    "E_SCHEMA": "A reference reads a field the producing tool does not declare in its output.",
    "E_ARGS": "A step's arguments (references resolved to their declared types) fail the tool's parameter schema.",
    "E_ORDER": "A reference points to a later step, to its own step, or to no step (plans must be acyclic).",
    "E_TOOL": "A step calls a tool that is not in the registry.",
}
PLAN_REPORT_VERSION = 1
#: Order of codes at the same place: what makes the others moot comes first.
_RANK = ("E_TOOL", "E_ORDER", "E_SCHEMA", "E_ARGS")

StepId = str | int

# ---------------------------------------------------------------------------------------------------
# Plans


@dataclass(frozen=True)
class Step:
    """One plan step. `index` is its 1-based position; `lines` maps argument pointers to file lines."""

    id: StepId
    tool: str
    arguments: Mapping[str, Any]
    index: int
    line: int | None = None
    lines: Mapping[str, int] = field(default_factory=dict)

    def line_of(self, pointer: str) -> int | None:
        """The line of an argument pointer (or of its nearest ancestor that has one), else the step's."""
        probe = pointer
        while True:
            if probe in self.lines:
                return self.lines[probe]
            if probe == "":
                return self.line
            probe = probe.rpartition("/")[0]


@dataclass(frozen=True)
class Plan:
    """A parsed plan: its steps in order and the file it came from."""

    steps: tuple[Step, ...]
    source: str = "<plan>"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def plan_from_json(data: Any, *, source: str = "<plan>", text: bytes | None = None) -> Plan:
    """Validate a parsed JSON plan (a list of steps or `{"steps": [...]}`) and build a `Plan`."""
    from contracts.schemas import load_schema

    if not isinstance(data, list | dict):
        raise SchemaError(
            f'not a valid plan: expected a list of steps or {{"steps": [...]}}, got {_show(data)}',
            source=source,
            line=1,
            field="(root)",
        )
    bare = isinstance(data, list)
    doc: dict[str, Any] = {"steps": data} if isinstance(data, list) else data
    lines = pointer_lines(text) if text is not None else {}
    prefix = "" if bare else "/steps"
    jsonschema = jsonschema_module()  # imported on first use (see contracts/schemas.py)

    validator = jsonschema.Draft202012Validator(load_schema("plan"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        parts = list(e.absolute_path)
        if bare and parts and parts[0] == "steps":
            parts = parts[1:]
        ptr = "".join("/" + _escape(str(p)) for p in parts)
        line = _nearest(lines, ptr)
        fld = _field_name(list(e.absolute_path))
        raise SchemaError(
            f"not a valid plan: {fld}: {_short_message(e)}", source=source, line=line, field=fld
        )
    steps = []
    for i, d in enumerate(doc["steps"]):
        base = f"{prefix}/{i}"
        arg_base = base + "/arguments"
        arg_lines = {
            k[len(arg_base) :]: v for k, v in lines.items() if k == arg_base or k.startswith(arg_base + "/")
        }
        steps.append(
            Step(
                id=d["id"],
                tool=d["tool"],
                arguments=d.get("arguments") or {},
                index=i + 1,
                line=lines.get(base),
                lines=arg_lines,
            )
        )
    return Plan(steps=tuple(steps), source=source)


def _nearest(lines: Mapping[str, int], ptr: str) -> int | None:
    probe = ptr
    while True:
        if probe in lines:
            return lines[probe]
        if probe == "":
            return None
        probe = probe.rpartition("/")[0]


def _field_name(parts: Sequence[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(root)"


def _short_message(e: jsonschema.ValidationError) -> str:
    if e.validator == "anyOf" and e.path and e.path[-1] == "id":
        return f"step id must be a non-empty string without '$', '{{', '}}' or spaces, or an integer; got {_show(e.instance)}"
    return e.message


def parse_plan(raw: bytes, *, source: str = "<plan>") -> Plan:
    """Parse plan bytes: JSON (a list of steps or `{"steps": [...]}`) or JSONL (a step a line).

    The format is sniffed: text that parses as one JSON document is JSON (a lone object with a `tool`
    key is a one-step JSONL plan); otherwise every non-blank line must be a JSON step.
    `.jsonl` files are always read line by line.
    """
    if not raw.strip():
        raise CheckError("plan is empty (expected a list of steps)", source=source, code="E_INPUT")
    jsonl = source.endswith(".jsonl")
    if not jsonl:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if raw.strip().count(b"\n") == 0:
                raise CheckError(
                    f"plan is not valid JSON: {e}", source=source, line=e.lineno, code="E_INPUT"
                ) from e
            jsonl = True
        else:
            if isinstance(data, dict) and "steps" not in data and "tool" in data:
                jsonl = True
            else:
                return plan_from_json(data, source=source, text=raw)
    steps: list[Any] = []
    line_of: list[int] = []
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            steps.append(orjson.loads(line))
        except orjson.JSONDecodeError as e:
            raise CheckError(
                f"plan line is not valid JSON: {e}", source=source, line=n, code="E_INPUT"
            ) from e
        line_of.append(n)
    try:
        plan = plan_from_json(steps, source=source)
    except SchemaError as e:
        m = re.match(r"\[(\d+)\]", e.field or "")
        if m is None:
            m = re.match(r"steps\[(\d+)\]", e.field or "")
        if m is not None:
            e.line = line_of[int(m.group(1))]
        raise
    return Plan(
        steps=tuple(
            Step(
                id=s.id,
                tool=s.tool,
                arguments=s.arguments,
                index=s.index,
                line=line_of[s.index - 1],
                lines={},
            )
            for s in plan.steps
        ),
        source=source,
    )


def load_plan(path: str | Path) -> Plan:
    """Read and parse a plan file (see `parse_plan`); errors name the file, line and field."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError as e:
        raise CheckError("plan file not found", source=str(p), code="E_INPUT") from e
    except IsADirectoryError as e:
        raise CheckError("plan path is a folder, not a file", source=str(p), code="E_INPUT") from e
    return parse_plan(raw, source=str(p))


# ---------------------------------------------------------------------------------------------------
# References

_REF = re.compile(r"\$\$\{|\$\{([^{}]*)\}")
_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Reference:
    """One `${step.field.rest}`: the step id text and the path tokens (indexes written `[n]` are ints)."""

    text: str
    step: str
    path: tuple[str | int, ...]


def find_references(s: str, step_ids: Iterable[str] = ()) -> tuple[list[Reference], list[str], bool]:
    """The references in an argument string: (references, malformed `${...}` texts, whole-string?).

    `whole` is True when the string is exactly one reference (it then takes the field's declared type).
    """
    ids = sorted(step_ids, key=len, reverse=True)
    refs: list[Reference] = []
    bad: list[str] = []
    spans = 0
    for m in _REF.finditer(s):
        if m.group(0) == "$${":
            continue
        spans += 1
        body = m.group(1).strip()
        ref = _parse_ref(m.group(0), body, ids)
        if ref is None:
            bad.append(m.group(0))
        else:
            refs.append(ref)
    whole = spans == 1 and len(refs) == 1 and s == refs[0].text
    return refs, bad, whole


def _parse_ref(text: str, body: str, ids: Sequence[str]) -> Reference | None:
    if not body:
        return None
    step = None
    for sid in ids:
        if body == sid or body.startswith(sid + ".") or body.startswith(sid + "["):
            step = sid
            break
    if step is None:
        step = re.split(r"[.\[]", body, maxsplit=1)[0]
    rest = body[len(step) :]
    if not step:
        return None
    path: list[str | int] = []
    pos = 0
    while pos < len(rest):
        m = _TOKEN.match(rest, pos)
        if m is None:
            return None
        path.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return Reference(text=text, step=step, path=tuple(path))


def _path_label(path: Sequence[str | int]) -> str:
    out = ""
    for t in path:
        out += f"[{t}]" if isinstance(t, int) else (f".{t}" if out else t)
    return out


# ---------------------------------------------------------------------------------------------------
# Findings and reports


@dataclass(frozen=True)
class PlanFinding:
    """One plan error: a value, never an exception (CONVENTIONS 3)."""

    code: str
    step: StepId
    index: int
    tool: str
    pointer: str
    message: str
    suggestion: str | None = None
    reference: str | None = None
    line: int | None = None

    @property
    def text(self) -> str:
        """`CODE: message` plus `; did you mean '...'?` when there is a suggestion."""
        hint = f"; did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"{self.code}: {self.message}{hint}"

    def sort_key(self) -> tuple[Any, ...]:
        return (self.index, self.pointer, _RANK.index(self.code), self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "step": self.step,
            "index": self.index,
            "tool": self.tool,
            "pointer": self.pointer,
            "message": self.message,
            "text": self.text,
            "suggestion": self.suggestion,
            "reference": self.reference,
            "line": self.line,
        }


@dataclass(frozen=True)
class PlanReport:
    """Everything plan-check found in one plan."""

    plan: str
    steps: int
    references: int
    unchecked: int
    findings: tuple[PlanFinding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "steps": self.steps,
            "references": self.references,
            "unchecked_references": self.unchecked,
            "errors": [f.to_json() for f in self.findings],
        }


# ---------------------------------------------------------------------------------------------------
# The check


@dataclass
class _Site:
    """A reference site inside a step's arguments: where it is and what values it may take."""

    path: tuple[str | int, ...]
    ref_text: str
    declared: str  # type label for messages
    reps: list[Any]  # representative values of the declared type; empty = unknown, judge nothing
    judge_enum: bool = False
    embedded: str | None = None  # the original string when references are embedded in text


def check_plan(plan: Plan, registry: Registry) -> PlanReport:
    """Check every step of `plan` against `registry`; return all findings, sorted deterministically."""
    findings: list[PlanFinding] = []
    first_index: dict[str, Step] = {}
    for st in plan.steps:
        key = str(st.id)
        if key in first_index:
            prev = first_index[key]
            findings.append(
                PlanFinding(
                    "E_ORDER",
                    st.id,
                    st.index,
                    st.tool,
                    "",
                    f"step {st.id}: step id {st.id!r} is already used by the step at position {prev.index} "
                    f"(ids must be unique; references resolve to the first)",
                    line=st.line,
                )
            )
        else:
            first_index[key] = st
    ids = list(first_index)
    n_refs = 0
    unchecked = 0
    for st in plan.steps:
        spec = registry.get(st.tool)
        if spec is None:
            findings.append(
                PlanFinding(
                    "E_TOOL",
                    st.id,
                    st.index,
                    st.tool,
                    "",
                    f"step {st.id}: unknown tool '{st.tool}' (not declared in the registry)",
                    suggestion=registry.suggest(st.tool),
                    line=st.line,
                )
            )
        sites: list[_Site] = []
        for path, value in _strings(st.arguments, ()):
            pointer = _pointer(path)
            refs, bad, whole = find_references(value, ids)
            for b in bad:
                findings.append(
                    PlanFinding(
                        "E_ARGS",
                        st.id,
                        st.index,
                        st.tool,
                        pointer,
                        f"step {st.id}: {st.tool} argument '{_path_label(path)}' holds a malformed reference {b} "
                        "(write ${step.field.rest}, or $${ for a literal '${')",
                        reference=b,
                        line=st.line_of(pointer),
                    )
                )
            if not refs and not bad:
                continue
            resolved: Any = None
            for ref in refs:
                n_refs += 1
                sub, checked = _check_reference(st, ref, pointer, plan, first_index, registry, findings)
                if not checked:
                    unchecked += 1
                if whole:
                    resolved = sub
            if whole and not bad:
                sites.append(_site_for(path, refs[0].text, resolved))
            else:
                sites.append(
                    _Site(
                        path, refs[0].text if refs else bad[0], "string", [_blank_refs(value)], embedded=value
                    )
                )
        if spec is not None:
            findings.extend(_check_arguments(st, spec, sites))
    findings.sort(key=PlanFinding.sort_key)
    return PlanReport(
        plan=plan.source,
        steps=len(plan.steps),
        references=n_refs,
        unchecked=unchecked,
        findings=tuple(_dedupe(findings)),
    )


def _dedupe(findings: Iterable[PlanFinding]) -> Iterator[PlanFinding]:
    seen: set[tuple[Any, ...]] = set()
    for f in findings:
        k = (f.code, f.index, f.pointer, f.message)
        if k not in seen:
            seen.add(k)
            yield f


def _strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))


def _pointer(path: Sequence[str | int]) -> str:
    return "".join("/" + _escape(str(t)) for t in path)


def _blank_refs(s: str) -> str:
    return _REF.sub(lambda m: "${" if m.group(0) == "$${" else "", s)


def _check_reference(
    st: Step,
    ref: Reference,
    pointer: str,
    plan: Plan,
    first_index: Mapping[str, Step],
    registry: Registry,
    findings: list[PlanFinding],
) -> tuple[Any, bool]:
    """Check one reference: E_ORDER, then E_SCHEMA. Returns (declared sub-schema or None, checked?)."""
    line = st.line_of(pointer)

    def add(code: str, message: str, suggestion: str | None = None) -> None:
        findings.append(
            PlanFinding(code, st.id, st.index, st.tool, pointer, message, suggestion, ref.text, line)
        )

    producer = first_index.get(ref.step)
    if producer is None:
        known = ", ".join(str(s.id) for s in plan.steps[: st.index - 1]) or "none"
        add(
            "E_ORDER",
            f"step {st.id}: {ref.text} refers to unknown step '{ref.step}' (earlier steps: {known})",
            suggest(ref.step, [str(s.id) for s in plan.steps if s.index < st.index]),
        )
        return None, False
    if producer.index == st.index:
        add(
            "E_ORDER",
            f"step {st.id}: {ref.text} refers to the step itself (a step can only use earlier outputs)",
        )
    elif producer.index > st.index:
        add(
            "E_ORDER",
            f"step {st.id}: {ref.text} refers to step {producer.id}, which runs later "
            f"(position {producer.index} > {st.index}); references must point backwards",
        )
    spec = registry.get(producer.tool)
    if spec is None or spec.output is None:
        return None, False
    return _walk_output(st, spec, ref, add)


def _walk_output(st: Step, spec: ToolSpec, ref: Reference, add: Any) -> tuple[Any, bool]:
    root = spec.output
    cur: Any = root
    walked: list[str | int] = []
    for tok in ref.path:
        types = schema_types(cur, root)
        here = f"output '{_path_label(walked)}'" if walked else "output"
        is_index = isinstance(tok, int) or (isinstance(tok, str) and tok.isdigit())
        if types is not None and not types & {"object", "array"}:
            what = f"field '{tok}'" if not isinstance(tok, int) else f"index [{tok}]"
            add(
                "E_SCHEMA",
                f"step {st.id}: {spec.name} {here} is {type_label(types)}, it has no {what}",
            )
            return None, True
        wants_array = types is not None and "array" in types and "object" not in types
        if is_index and (wants_array or (types is None and has_item_schema(cur, root))):
            cur = item_schema(cur, int(tok), root)
            walked.append(int(tok))
            continue
        if wants_array:
            add(
                "E_SCHEMA",
                f"step {st.id}: {spec.name} {here} is an array, it has no field '{tok}' "
                f"(index it: {_path_label([*walked, 0, str(tok)])})",
            )
            return None, True
        key = str(tok)
        fields = object_fields(cur, root)
        sub = field_schema(cur, key, root)
        if sub is None:
            listed = ", ".join(fields or []) or "none"
            if walked:
                msg = f"step {st.id}: {spec.name} {here} has no field '{key}' (available: {listed})"
            else:
                msg = f"step {st.id}: {spec.name} outputs no field '{key}' (available: {listed})"
            add("E_SCHEMA", msg, suggest(key, fields or []))
            return None, True
        if fields is None and sub == {}:
            return None, False  # open object: nothing declared below here
        cur = sub
        walked.append(key)
    return (cur, root), True


_REP_BY_TYPE: dict[str, Any] = {
    "null": None,
    "boolean": False,
    "integer": 0,
    "number": 0.5,
    "string": "",
    "array": [],
    "object": {},
}


def _site_for(path: tuple[str | int, ...], ref_text: str, resolved: Any) -> _Site:
    if resolved is None:
        return _Site(path, ref_text, "any", [])
    sub, root = resolved
    s = deref(sub, root)
    if isinstance(s, Mapping) and "const" in s:
        return _Site(path, ref_text, f"const {_show(s['const'])}", [s["const"]], judge_enum=True)
    if isinstance(s, Mapping) and isinstance(s.get("enum"), list) and s["enum"]:
        return _Site(
            path, ref_text, "one of " + ", ".join(_show(v) for v in s["enum"]), list(s["enum"]), True
        )
    types = schema_types(sub, root)
    if types is None:
        return _Site(path, ref_text, "any", [])
    order = [t for t in _REP_BY_TYPE if t in types]
    return _Site(path, ref_text, type_label(types), [_REP_BY_TYPE[t] for t in order])


def _set(doc: Any, path: Sequence[str | int], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, list):
        out_l = list(doc)
        out_l[int(head)] = _set(out_l[int(head)], rest, value)
        return out_l
    out = dict(doc)
    out[head] = _set(out[head], rest, value)
    return out


def _is_type_failure(e: jsonschema.ValidationError) -> bool:
    if e.validator == "type":
        return True
    if e.validator in ("anyOf", "oneOf") and e.context:
        direct = [c for c in e.context if not c.relative_path]
        return bool(direct) and all(_is_type_failure(c) for c in direct)
    return False


def _check_arguments(st: Step, spec: ToolSpec, sites: Sequence[_Site]) -> list[PlanFinding]:
    """E_ARGS: validate the arguments with each reference site replaced by its representative values."""
    params = spec.parameters
    if not params:
        return []
    jsonschema = jsonschema_module()  # imported on first use (see contracts/schemas.py)

    try:
        validator = jsonschema.Draft202012Validator(params, format_checker=_formats())
    except jsonschema.SchemaError:  # pragma: no cover - the registry loader checks schemas
        return []
    variants = max([len(s.reps) for s in sites if s.reps] or [1])
    found: dict[tuple[Any, ...], PlanFinding] = {}
    for v in range(variants):
        instance: Any = dict(st.arguments)
        for s in sites:
            instance = _set(instance, s.path, s.reps[min(v, len(s.reps) - 1)] if s.reps else None)
        for e in validator.iter_errors(instance):
            epath = tuple(e.absolute_path)
            site = next((s for s in sites if epath[: len(s.path)] == s.path), None)
            if site is not None:
                at_site = epath == site.path
                if not site.reps or not at_site:
                    continue
                if not (_is_type_failure(e) or (site.judge_enum and e.validator in ("enum", "const"))):
                    continue
            for f in _arg_findings(st, spec, e, site):
                found.setdefault((f.pointer, f.message), f)
    return list(found.values())


def _arg_findings(
    st: Step, spec: ToolSpec, e: jsonschema.ValidationError, site: _Site | None
) -> list[PlanFinding]:
    path = list(e.absolute_path)
    pointer = _pointer(path)
    label = _path_label(path)
    head = f"step {st.id}: {spec.name}"

    def mk(ptr: str, msg: str, suggestion: str | None = None) -> PlanFinding:
        return PlanFinding(
            "E_ARGS",
            st.id,
            st.index,
            spec.name,
            ptr,
            msg,
            suggestion,
            site.ref_text if site else None,
            st.line_of(ptr),
        )

    if e.validator == "required" and isinstance(e.instance, Mapping):
        out = []
        for name in e.validator_value:
            if name not in e.instance:
                where = f" in argument '{label}'" if path else ""
                out.append(mk(pointer, f"{head} is missing required argument '{name}'{where}"))
        return out[:1] if out else [mk(pointer, f"{head}: {e.message}")]
    if (
        e.validator == "additionalProperties"
        and isinstance(e.instance, Mapping)
        and e.validator_value is False
    ):
        props = list((e.schema.get("properties") or {}).keys())
        pats = list((e.schema.get("patternProperties") or {}).keys())
        out = []
        for name in e.instance:
            if name in props or any(re.search(p, name) for p in pats):
                continue
            where = f" in argument '{label}'" if path else ""
            takes = ", ".join(props) or "none"
            out.append(
                mk(
                    _pointer([*path, name]),
                    f"{head} takes no argument '{name}'{where} (takes: {takes})",
                    suggest(name, props),
                )
            )
        return out
    if site is not None and site.embedded is not None:
        return [
            mk(
                pointer,
                f"{head} argument '{label}' must be {_expected(e)}, but {_show(site.embedded)} is a string "
                "(a reference inside text makes a string)",
            )
        ]
    if site is not None and (_is_type_failure(e) or e.validator in ("enum", "const")):
        want = _expected(e)
        return [
            mk(
                pointer,
                f"{head} argument '{label}' must be {want}, but {site.ref_text} is declared {site.declared}",
            )
        ]
    if _is_type_failure(e):
        return [mk(pointer, f"{head} argument '{label}' must be {_expected(e)}, got {_show(e.instance)}")]
    if e.validator in ("enum", "const"):
        options = e.validator_value if e.validator == "enum" else [e.validator_value]
        sugg = (
            suggest(e.instance, [o for o in options if isinstance(o, str)])
            if isinstance(e.instance, str)
            else None
        )
        return [
            mk(pointer, f"{head} argument '{label}' must be {_expected(e)}, got {_show(e.instance)}", sugg)
        ]
    plain = _plain_constraint(e)
    if plain is not None and path:
        return [mk(pointer, f"{head} argument '{label}' must {plain}, got {_show(e.instance)}")]
    where = f"argument '{label}'" if path else "arguments"
    return [mk(pointer, f"{head} {where}: {e.message}")]


def _num(v: Any) -> str:
    return _show(v)


def _plain_constraint(e: jsonschema.ValidationError) -> str | None:
    """The common keywords as `must ...` phrases (the rest keep jsonschema's own message)."""
    v = e.validator_value
    phrases = {
        "minimum": lambda: f"be >= {_num(v)}",
        "exclusiveMinimum": lambda: f"be > {_num(v)}",
        "maximum": lambda: f"be <= {_num(v)}",
        "exclusiveMaximum": lambda: f"be < {_num(v)}",
        "multipleOf": lambda: f"be a multiple of {_num(v)}",
        "minLength": lambda: f"have at least {v} character(s)",
        "maxLength": lambda: f"have at most {v} character(s)",
        "pattern": lambda: f"match the pattern {_show(v)}",
        "format": lambda: f"be a valid {v}",
        "minItems": lambda: f"have at least {v} item(s)",
        "maxItems": lambda: f"have at most {v} item(s)",
        "uniqueItems": lambda: "have unique items",
    }
    make = phrases.get(str(e.validator))
    return make() if make is not None else None


def _date_time(value: object) -> bool:
    """RFC 3339 date-time (jsonschema checks it only with an optional package): a date, 'T', a time, a zone."""
    if not isinstance(value, str):
        return True
    if len(value) < 20 or value[10] not in "Tt" or value[4] != "-":
        return False
    parsed = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    return parsed.tzinfo is not None


@functools.cache
def _formats() -> jsonschema.FormatChecker:
    """Format assertions for parameters: jsonschema's built-in checkers plus `date-time`.

    A plan that passes "tomorrow" where a date-time is declared is an error before anything runs. Built
    once, on first use, so that importing this module does not import jsonschema.
    """
    checker = jsonschema_module().FormatChecker()
    checker.checks("date-time", raises=ValueError)(_date_time)
    return checker


def _expected(e: jsonschema.ValidationError) -> str:
    if e.validator == "type":
        t = e.validator_value
        return type_label(frozenset([t] if isinstance(t, str) else t))
    if e.validator == "enum":
        return "one of " + ", ".join(_show(v) for v in e.validator_value)
    if e.validator == "const":
        return _show(e.validator_value)
    if e.validator in ("anyOf", "oneOf"):
        types: set[str] = set()
        for c in e.context or ():
            if c.validator == "type" and not c.relative_path:
                t = c.validator_value
                types |= {t} if isinstance(t, str) else set(t)
        return type_label(frozenset(types))
    return str(e.validator_value)


def _show(v: Any) -> str:
    text = orjson.dumps(v).decode("utf-8")
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------------
# Reports in the output formats (text, json, sarif, github)


def reports_json(reports: Sequence[PlanReport], registry: Registry) -> dict[str, Any]:
    """The `--output-format json` document (schema `plan-report`)."""
    by_code: dict[str, int] = {}
    for r in reports:
        for f in r.findings:
            by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "version": PLAN_REPORT_VERSION,
        "registry": registry.source,
        "summary": {
            "plans": len(reports),
            "steps": sum(r.steps for r in reports),
            "references": sum(r.references for r in reports),
            "unchecked_references": sum(r.unchecked for r in reports),
            "errors": sum(len(r.findings) for r in reports),
            "by_code": {c: by_code[c] for c in CODES if c in by_code},
        },
        "plans": [r.to_json() for r in reports],
    }


def reports_text(reports: Sequence[PlanReport]) -> list[str]:
    """One line per error: `plan.json:12: E_SCHEMA: step 2: ...` (ruff's concise shape)."""
    lines = []
    for r in reports:
        for f in r.findings:
            where = f"{r.plan}:{f.line}" if f.line is not None else r.plan
            lines.append(f"{where}: {f.text}")
    return lines


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def reports_github(reports: Sequence[PlanReport]) -> list[str]:
    """GitHub Actions workflow commands: `::error file=...,line=...,title=E_SCHEMA::message`."""
    out = []
    for r in reports:
        for f in r.findings:
            props = [f"file={_gh_escape(r.plan, True)}"]
            if f.line is not None:
                props.append(f"line={f.line}")
            props.append(f"title={_gh_escape(f.code, True)}")
            out.append(f"::error {','.join(props)}::{_gh_escape(f.text)}")
    return out


def _uri(path: str) -> str:
    if path in ("-", "<stdin>"):
        return "stdin"
    return urllib.parse.quote(Path(path).as_posix())


def reports_sarif(reports: Sequence[PlanReport]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, one rule per code, one result per error with file and line."""
    rules = [
        {
            "id": c,
            "name": c.removeprefix("E_").lower(),
            "shortDescription": {"text": CODE_HELP[c]},
            "fullDescription": {"text": CODE_HELP[c]},
            "helpUri": f"docs/plan-check.md#{c.lower()}",
            "defaultConfiguration": {"level": "error"},
        }
        for c in CODES
    ]
    results = []
    for r in reports:
        for f in r.findings:
            region: dict[str, Any] = {"startLine": f.line} if f.line is not None else {}
            loc: dict[str, Any] = {"artifactLocation": {"uri": _uri(r.plan)}}
            if region:
                loc["region"] = region
            fp = hashlib.sha256(f"{f.code}\0{f.step}\0{f.pointer}\0{f.message}".encode()).hexdigest()[:32]
            results.append(
                {
                    "ruleId": f.code,
                    "ruleIndex": CODES.index(f.code),
                    "level": "error",
                    "message": {"text": f.text},
                    "locations": [
                        {
                            "physicalLocation": loc,
                            "logicalLocations": [
                                {"name": f"step {f.step}", "fullyQualifiedName": f"step {f.step}{f.pointer}"}
                            ],
                        }
                    ],
                    "partialFingerprints": {"planFinding/v1": fp},
                    "properties": {
                        "step": f.step,
                        "tool": f.tool,
                        "pointer": f.pointer,
                        "suggestion": f.suggestion,
                    },
                }
            )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "contracts plan-check",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
