"""plan-check as a library: references, every code, declared-type resolution, ordering, loading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.errors import CheckError, SchemaError
from output_contracts.registry.plan import find_references, load_plan, parse_plan, plan_from_json
from output_contracts.registry.plan_check import check_plan
from output_contracts.registry.plan_report import reports_json
from output_contracts.schemas import schema_errors
from output_contracts.traces.tool_registry import registry_from_json

Write = Callable[[str, Any], Path]


def _check(registry: dict[str, Any], steps: list[dict[str, Any]]) -> list[str]:
    reg = registry_from_json(registry, source="tools.json")
    report = check_plan(plan_from_json(steps, source="plan.json"), reg)
    return [f.text for f in report.findings]


S1 = {"id": "s1", "tool": "temporal_reachability", "arguments": {"source": "a"}}


def test_exact_acceptance_message(temporal: dict[str, Any]) -> None:
    texts = _check(temporal, [S1, {"id": 2, "tool": "summarize", "arguments": {"count": "${s1.count}"}}])
    assert texts == [
        "E_SCHEMA: step 2: temporal_reachability outputs no field 'count' "
        "(available: rows, rows_total, truncated, cursor)"
    ]


def test_close_field_gets_a_suggestion(temporal: dict[str, Any]) -> None:
    reg = registry_from_json(temporal)
    plan = plan_from_json([S1, {"id": 2, "tool": "summarize", "arguments": {"count": "${s1.row_total}"}}])
    (f,) = check_plan(plan, reg).findings
    assert f.code == "E_SCHEMA"
    assert f.suggestion == "rows_total"
    assert f.text.endswith("(available: rows, rows_total, truncated, cursor); did you mean 'rows_total'?")
    assert f.reference == "${s1.row_total}"
    assert f.pointer == "/count"


def test_fields_listed_in_declared_order_not_sorted(temporal: dict[str, Any]) -> None:
    props = temporal["tools"][0]["output"]["properties"]
    temporal["tools"][0]["output"]["properties"] = dict(reversed(list(props.items())))
    texts = _check(temporal, [S1, {"id": 2, "tool": "summarize", "arguments": {"count": "${s1.zzz}"}}])
    assert "(available: cursor, truncated, rows_total, rows)" in texts[0]


def test_nested_references_checked_as_deep_as_declared(temporal: dict[str, Any]) -> None:
    steps = [
        S1,
        {
            "id": 2,
            "tool": "summarize",
            "arguments": {
                "count": 1,
                "text": "${s1.rows.0.nod}",  # typo one level down
                "ratio": "${s1.rows[1].time}",  # fine: bracket index
                "mode": "${s1.rows_total.x}",  # into a scalar
            },
        },
        {
            "id": 3,
            "tool": "summarize",
            "arguments": {"count": 1, "text": "${s1.rows.node}"},
        },  # array, no index
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_SCHEMA: step 2: temporal_reachability output 'rows_total' is integer, it has no field 'x'",
        "E_SCHEMA: step 2: temporal_reachability output 'rows[0]' has no field 'nod' (available: node, time); "
        "did you mean 'node'?",
        "E_SCHEMA: step 3: temporal_reachability output 'rows' is an array, it has no field 'node' "
        "(index it: rows[0].node)",
    ]


def test_open_objects_and_undeclared_outputs_are_unchecked(temporal: dict[str, Any]) -> None:
    temporal["tools"][0]["output"]["properties"]["meta"] = {"type": "object"}  # no properties: open
    temporal["tools"][1].pop("output")
    reg = registry_from_json(temporal)
    plan = plan_from_json(
        [
            S1,
            {"id": 2, "tool": "summarize", "arguments": {"count": 1, "text": "${s1.meta.anything.deep}"}},
            {"id": 3, "tool": "summarize", "arguments": {"count": 1, "text": "${2.whatever}"}},
        ]
    )
    report = check_plan(plan, reg)
    assert report.findings == ()
    assert (report.references, report.unchecked) == (2, 2)


def test_e_args_all_kinds_in_one_plan(temporal: dict[str, Any]) -> None:
    steps = [
        {
            "id": "s1",
            "tool": "temporal_reachability",
            "arguments": {"limit": "ten", "extra": 1, "sourc": "x"},
        },
        {"id": "s2", "tool": "summarize", "arguments": {"count": 3, "mode": "medium"}},
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_ARGS: step s1: temporal_reachability is missing required argument 'source'",
        "E_ARGS: step s1: temporal_reachability takes no argument 'extra' (takes: source, limit)",
        "E_ARGS: step s1: temporal_reachability argument 'limit' must be integer, got \"ten\"",
        "E_ARGS: step s1: temporal_reachability takes no argument 'sourc' (takes: source, limit); "
        "did you mean 'source'?",
        'E_ARGS: step s2: summarize argument \'mode\' must be one of "short", "long", got "medium"',
    ]


def test_whole_reference_takes_the_declared_type(temporal: dict[str, Any]) -> None:
    steps = [
        S1,
        {
            "id": 2,
            "tool": "summarize",
            "arguments": {
                "count": "${s1.rows_total}",  # integer -> integer: fine
                "ratio": "${s1.rows_total}",  # integer -> number: fine (integer is a number)
                "text": "${s1.truncated}",  # boolean -> string: E_ARGS
            },
        },
        {"id": 3, "tool": "summarize", "arguments": {"count": "${s1.rows.0.time}", "text": "${s1.cursor}"}},
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_ARGS: step 2: summarize argument 'text' must be string, but ${s1.truncated} is declared boolean",
        "E_ARGS: step 3: summarize argument 'count' must be integer, but ${s1.rows.0.time} is declared number",
        "E_ARGS: step 3: summarize argument 'text' must be string, but ${s1.cursor} is declared null or string",
    ]


def test_embedded_reference_makes_a_string(temporal: dict[str, Any]) -> None:
    steps = [
        S1,
        {
            "id": 2,
            "tool": "summarize",
            "arguments": {"count": "${s1.rows_total} rows", "text": "n=${s1.rows_total}"},
        },
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_ARGS: step 2: summarize argument 'count' must be integer, but \"${s1.rows_total} rows\" is a string "
        "(a reference inside text makes a string)"
    ]


def test_declared_enum_is_judged_against_parameter_enum(temporal: dict[str, Any]) -> None:
    temporal["tools"][0]["output"]["properties"]["speed"] = {"enum": ["short", "long"]}
    temporal["tools"][0]["output"]["properties"]["size"] = {"enum": ["short", "huge"]}
    ok = _check(
        temporal, [S1, {"id": 2, "tool": "summarize", "arguments": {"count": 1, "mode": "${s1.speed}"}}]
    )
    assert ok == []
    bad = _check(
        temporal, [S1, {"id": 2, "tool": "summarize", "arguments": {"count": 1, "mode": "${s1.size}"}}]
    )
    assert bad == [
        'E_ARGS: step 2: summarize argument \'mode\' must be one of "short", "long", '
        'but ${s1.size} is declared one of "short", "huge"'
    ]


def test_e_order_later_self_unknown_and_duplicate_ids(temporal: dict[str, Any]) -> None:
    steps = [
        {"id": "a", "tool": "summarize", "arguments": {"count": "${b.summary}", "text": "${a.summary}"}},
        {"id": "b", "tool": "summarize", "arguments": {"count": 1, "text": "${c.summary}"}},
        {"id": "a", "tool": "summarize", "arguments": {"count": 1}},
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_ORDER: step a: ${b.summary} refers to step b, which runs later (position 2 > 1); "
        "references must point backwards",
        "E_ARGS: step a: summarize argument 'count' must be integer, but ${b.summary} is declared string",
        "E_ORDER: step a: ${a.summary} refers to the step itself (a step can only use earlier outputs)",
        "E_ORDER: step b: ${c.summary} refers to unknown step 'c' (earlier steps: a)",
        "E_ORDER: step a: step id 'a' is already used by the step at position 1 "
        "(ids must be unique; references resolve to the first)",
    ]


def test_e_tool_with_suggestion_and_no_cascade(temporal: dict[str, Any]) -> None:
    steps = [
        {"id": 1, "tool": "temporal_reachabilty", "arguments": {"bogus": 1}},
        {"id": 2, "tool": "summarize", "arguments": {"count": "${1.count}"}},
        {"id": 3, "tool": "launch_rocket", "arguments": {}},
    ]
    reg = registry_from_json(temporal)
    report = check_plan(plan_from_json(steps), reg)
    assert [(f.code, f.step, f.suggestion) for f in report.findings] == [
        ("E_TOOL", 1, "temporal_reachability"),
        ("E_TOOL", 3, None),
    ]
    assert report.findings[0].text == (
        "E_TOOL: step 1: unknown tool 'temporal_reachabilty' (not declared in the registry); "
        "did you mean 'temporal_reachability'?"
    )
    assert report.unchecked == 1


def test_whole_output_reference(temporal: dict[str, Any]) -> None:
    texts = _check(temporal, [S1, {"id": 2, "tool": "summarize", "arguments": {"count": "${s1}"}}])
    assert texts == [
        "E_ARGS: step 2: summarize argument 'count' must be integer, but ${s1} is declared object"
    ]


def test_integer_step_ids_and_dotted_ids(temporal: dict[str, Any]) -> None:
    steps = [
        {"id": 1, "tool": "temporal_reachability", "arguments": {"source": "a"}},
        {"id": "fetch.v2", "tool": "temporal_reachability", "arguments": {"source": "b"}},
        {
            "id": 3,
            "tool": "summarize",
            "arguments": {"count": "${1.rows_total}", "text": "${fetch.v2.cursr}"},
        },
    ]
    texts = _check(temporal, steps)
    assert texts == [
        "E_SCHEMA: step 3: temporal_reachability outputs no field 'cursr' (available: rows, rows_total, "
        "truncated, cursor); did you mean 'cursor'?"
    ]


def test_malformed_reference_and_escape(temporal: dict[str, Any]) -> None:
    steps = [
        S1,
        {"id": 2, "tool": "summarize", "arguments": {"count": 1, "text": "${} and ${s1.} but $${lit}"}},
    ]
    texts = _check(temporal, steps)
    hint = "(write ${step.field.rest}, or $${ for a literal '${')"
    assert texts == [
        f"E_ARGS: step 2: summarize argument 'text' holds a malformed reference ${{s1.}} {hint}",
        f"E_ARGS: step 2: summarize argument 'text' holds a malformed reference ${{}} {hint}",
    ]


def test_find_references_shapes() -> None:
    refs, bad, whole = find_references("${s1.rows.0.node}", ["s1"])
    assert [(r.step, r.path) for r in refs] == [("s1", ("rows", "0", "node"))] and whole and not bad
    refs, bad, whole = find_references(" ${s1.rows[2]} and ${x} ", ["s1"])
    assert [(r.step, r.path) for r in refs] == [("s1", ("rows", 2)), ("x", ())] and not whole
    refs, bad, whole = find_references(" ${s1.rows_total}", ["s1"])
    assert len(refs) == 1 and not whole  # a space makes it text: the argument is a string
    refs, bad, whole = find_references("$${s1.a}", ["s1"])
    assert refs == [] and bad == [] and not whole
    refs, bad, _ = find_references("${a..b}", ["a"])
    assert refs == [] and bad == ["${a..b}"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s1", "s2", "x"]),
            st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), max_size=3),
        ),
        max_size=4,
    ),
    st.text(alphabet="abc .-", max_size=5),
)
def test_find_references_round_trip(parts: list[tuple[str, list[str]]], glue: str) -> None:
    text = glue.join("${" + ".".join([sid, *path]) + "}" for sid, path in parts)
    refs, bad, whole = find_references(text, ["s1", "s2"])
    assert bad == []
    assert [(r.step, list(r.path)) for r in refs] == [(sid, path) for sid, path in parts]
    assert whole == (len(parts) == 1 and text == "${" + ".".join([parts[0][0], *parts[0][1]]) + "}")


def test_findings_sorted_and_deterministic(world: Path) -> None:
    from output_contracts.traces.tool_registry import load_registry

    reg = load_registry(world / "tools.json")
    a = check_plan(load_plan(world / "fail-many.json"), reg)
    b = check_plan(load_plan(world / "fail-many.json"), reg)
    assert a == b
    keys = [(f.index, f.pointer) for f in a.findings]
    assert keys == sorted(keys)
    assert {f.code for f in a.findings} == {"E_SCHEMA", "E_ARGS", "E_ORDER", "E_TOOL"}


def test_report_json_validates(world: Path) -> None:
    from output_contracts.traces.tool_registry import load_registry

    reg = load_registry(world / "tools.json")
    reports = [check_plan(load_plan(p), reg) for p in sorted(world.glob("*.json*")) if p.name != "tools.json"]
    doc = reports_json(reports, reg)
    assert schema_errors(doc, "plan-report") == []
    assert doc["summary"]["plans"] == 7
    assert doc["summary"]["errors"] == sum(len(r.findings) for r in reports) > 0


# -- loading -----------------------------------------------------------------------------------------


def test_jsonl_plan_has_line_numbers(write: Write, temporal: dict[str, Any]) -> None:
    p = write(
        "plan.jsonl",
        b'{"id": "s1", "tool": "temporal_reachability", "arguments": {"source": "a"}}\n\n'
        b'{"id": "s2", "tool": "summarize", "arguments": {"count": "${s1.count}"}}\n',
    )
    plan = load_plan(p)
    assert [s.line for s in plan.steps] == [1, 3]
    (f,) = check_plan(plan, registry_from_json(temporal)).findings
    assert f.line == 3


def test_json_plan_lines_point_at_the_argument(write: Write, temporal: dict[str, Any]) -> None:
    p = write(
        "plan.json",
        b'{"steps": [\n  {"id": "s1", "tool": "temporal_reachability",\n   "arguments": {"source": "a"}},\n'
        b'  {"id": "s2", "tool": "summarize",\n   "arguments": {\n     "count": 1,\n     "text": "${s1.cnt}"}}\n]}\n',
    )
    (f,) = check_plan(load_plan(p), registry_from_json(temporal)).findings
    assert f.line == 7


def test_lone_object_is_a_one_step_plan() -> None:
    plan = parse_plan(b'{"id": 1, "tool": "t", "arguments": {}}', source="one.json")
    assert [(s.id, s.tool) for s in plan.steps] == [(1, "t")]


@pytest.mark.parametrize(
    ("raw", "match", "line"),
    [
        (b'[{"id": "s1", "tool": "t"}, {"tool": "u"}]', "steps[1]: 'id' is a required property", 1),
        (b'[\n{"id": "s1", "tool": "t"},\n{"id": true, "tool": "u"}\n]', "step id must be", 3),
        (b'{"id": "s1", "tool": "t"}\n{"id": "s2", "tool": "u", "arguments": []}\n', "arguments", 2),
        (b'[{"id": "s 1", "tool": "t"}]', "step id must be", 1),
    ],
)
def test_schema_invalid_plans_name_field_and_line(raw: bytes, match: str, line: int) -> None:
    with pytest.raises(SchemaError) as ei:
        parse_plan(raw, source="p.json" if raw.startswith(b"[") else "p.jsonl")
    assert match in ei.value.message
    assert ei.value.line == line
    assert ei.value.source in ("p.json", "p.jsonl")


def test_unparseable_plans(write: Write) -> None:
    with pytest.raises(CheckError) as ei:
        load_plan(write("bad.jsonl", b'{"id": 1, "tool": "t"}\n{"id": 2,\n'))
    assert ei.value.line == 2
    with pytest.raises(CheckError):
        load_plan(Path("no/such/plan.json"))


_fields = st.sampled_from(
    ["rows", "rows_total", "truncated", "cursor", "count", "rows.0.node", "rows[1].time", "summary", ""]
)
_values = st.one_of(
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.text(alphabet="ab ${}.", max_size=6),
    st.builds(
        lambda s, f: "${" + s + ("." + f if f else "") + "}",
        st.sampled_from(["s0", "s1", "s2", "9"]),
        _fields,
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s0", "s1", "s2", 9]),
            st.sampled_from(["temporal_reachability", "summarize", "nope"]),
            st.dictionaries(
                st.sampled_from(["source", "limit", "count", "ratio", "text", "mode", "x"]),
                _values,
                max_size=4,
            ),
        ),
        max_size=5,
    )
)
def test_random_plans_never_crash_and_report_in_order(steps: list[tuple[Any, str, dict[str, Any]]]) -> None:
    from tests.registry.conftest import TEMPORAL

    reg = registry_from_json(TEMPORAL)
    plan = plan_from_json([{"id": i, "tool": t, "arguments": a} for i, t, a in steps], source="p.json")
    a = check_plan(plan, reg)
    assert a == check_plan(plan, reg)
    assert [f.sort_key() for f in a.findings] == sorted(f.sort_key() for f in a.findings)
    assert all(f.text.startswith(f"{f.code}: step {f.step}: ") for f in a.findings)
    assert schema_errors(reports_json([a], reg), "plan-report") == []


def test_empty_and_scalar_plans() -> None:
    with pytest.raises(CheckError, match="plan is empty"):
        parse_plan(b" \n", source="p.json")
    with pytest.raises(SchemaError, match=r'expected a list of steps or \{"steps": \[...\]\}, got 5'):
        parse_plan(b"5", source="p.json")
    assert parse_plan(b"[]", source="p.json").steps == ()
