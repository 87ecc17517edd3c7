"""Plan check (`check_plan`): every step of a plan against the registry, every finding collected — the
codes, the references and the declared outputs they read are described in `output_contracts.registry.plan`."""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from output_contracts.registry.plan import (
    Plan,
    PlanFinding,
    PlanReport,
    Reference,
    Step,
    find_references,
    literal_text,
    plan_pointer,
    show_value,
)
from output_contracts.schemas import jsonschema_module
from output_contracts.traces.tool_registry import (
    Registry,
    ToolSpec,
    deref,
    field_schema,
    has_item_schema,
    item_schema,
    object_fields,
    schema_types,
    suggest,
    type_label,
)

if TYPE_CHECKING:
    import jsonschema

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
            pointer = plan_pointer(path)
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
                        path,
                        refs[0].text if refs else bad[0],
                        "string",
                        [literal_text(value)],
                        embedded=value,
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


def _path_label(path: Sequence[str | int]) -> str:
    """A path as messages name it: `rows[0].node`."""
    out = ""
    for t in path:
        out += f"[{t}]" if isinstance(t, int) else (f".{t}" if out else t)
    return out


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
        return _Site(path, ref_text, f"const {show_value(s['const'])}", [s["const"]], judge_enum=True)
    if isinstance(s, Mapping) and isinstance(s.get("enum"), list) and s["enum"]:
        return _Site(
            path, ref_text, "one of " + ", ".join(show_value(v) for v in s["enum"]), list(s["enum"]), True
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
    jsonschema = jsonschema_module()  # imported on first use (see output_contracts/schemas.py)

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
    pointer = plan_pointer(path)
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
                    plan_pointer([*path, name]),
                    f"{head} takes no argument '{name}'{where} (takes: {takes})",
                    suggest(name, props),
                )
            )
        return out
    if site is not None and site.embedded is not None:
        return [
            mk(
                pointer,
                f"{head} argument '{label}' must be {_expected(e)}, but {show_value(site.embedded)} is a string "
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
        return [
            mk(pointer, f"{head} argument '{label}' must be {_expected(e)}, got {show_value(e.instance)}")
        ]
    if e.validator in ("enum", "const"):
        options = e.validator_value if e.validator == "enum" else [e.validator_value]
        sugg = (
            suggest(e.instance, [o for o in options if isinstance(o, str)])
            if isinstance(e.instance, str)
            else None
        )
        return [
            mk(
                pointer,
                f"{head} argument '{label}' must be {_expected(e)}, got {show_value(e.instance)}",
                sugg,
            )
        ]
    plain = _plain_constraint(e)
    if plain is not None and path:
        return [mk(pointer, f"{head} argument '{label}' must {plain}, got {show_value(e.instance)}")]
    where = f"argument '{label}'" if path else "arguments"
    return [mk(pointer, f"{head} {where}: {e.message}")]


def _num(v: Any) -> str:
    return show_value(v)


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
        "pattern": lambda: f"match the pattern {show_value(v)}",
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
        return "one of " + ", ".join(show_value(v) for v in e.validator_value)
    if e.validator == "const":
        return show_value(e.validator_value)
    if e.validator in ("anyOf", "oneOf"):
        types: set[str] = set()
        for c in e.context or ():
            if c.validator == "type" and not c.relative_path:
                t = c.validator_value
                types |= {t} if isinstance(t, str) else set(t)
        return type_label(frozenset(types))
    return str(e.validator_value)
