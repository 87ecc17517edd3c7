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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from output_contracts.errors import CheckError, SchemaError
from output_contracts.schemas import jsonschema_module
from output_contracts.traces.tool_registry import (
    pointer_lines,
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


def plan_pointer(path: Sequence[str | int]) -> str:
    """The RFC 6901 pointer of a path in a plan or in a step's arguments (`/rows/0/a~1b`): how findings
    name a place, and the key of the line numbers read off the plan's text."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path)


def plan_from_json(data: Any, *, source: str = "<plan>", text: bytes | None = None) -> Plan:
    """Validate a parsed JSON plan (a list of steps or `{"steps": [...]}`) and build a `Plan`."""
    from output_contracts.schemas import load_schema

    if not isinstance(data, list | dict):
        raise SchemaError(
            f'not a valid plan: expected a list of steps or {{"steps": [...]}}, got {show_value(data)}',
            source=source,
            line=1,
            field="(root)",
        )
    bare = isinstance(data, list)
    doc: dict[str, Any] = {"steps": data} if isinstance(data, list) else data
    lines = pointer_lines(text) if text is not None else {}
    prefix = "" if bare else "/steps"
    jsonschema = jsonschema_module()  # imported on first use (see output_contracts/schemas.py)

    validator = jsonschema.Draft202012Validator(load_schema("plan"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        parts = list(e.absolute_path)
        if bare and parts and parts[0] == "steps":
            parts = parts[1:]
        ptr = plan_pointer(parts)
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
        return f"step id must be a non-empty string without '$', '{{', '}}' or spaces, or an integer; got {show_value(e.instance)}"
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


def literal_text(s: str) -> str:
    """An argument string as the plain text it makes: its references dropped and each `$${` read as the
    `${` it writes. A reference inside longer text makes a string, and this is the string judged."""
    return _REF.sub(lambda m: "${" if m.group(0) == "$${" else "", s)


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


def show_value(v: Any) -> str:
    """A JSON value as a plan message quotes it: compact JSON, cut to 60 characters so a message stays
    one readable line."""
    text = orjson.dumps(v).decode("utf-8")
    return text if len(text) <= 60 else text[:57] + "..."
