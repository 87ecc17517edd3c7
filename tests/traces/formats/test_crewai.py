"""CrewAI runs: the `CrewOutput` that `kickoff()` returns, read by the `crewai` adapter, and the
OpenInference export of the same runs (`openinference-instrumentation-crewai` 1.1.21 on crewai 1.15.44),
read by the `openinference` adapter.

The fixtures come from tests/traces/data/formats/crewai/generate.py, which runs one unmodified crew twice
with a scripted model: with native function calling (the instrumentation writes a `TOOL` span a call)
and with text actions (CrewAI runs the tools through `ToolUsage`, which the instrumentation does not
wrap: the export holds no tool call at all). The calls are checked against the `CrewOutput` each run
returned (its task's messages), saved beside the export by the same script."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext, RecordError, decode_result
from output_contracts.traces.formats.crewai import CrewAIAdapter
from output_contracts.traces.formats.detect import best_match, detect_document
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls

DATA = Path(__file__).resolve().parents[1] / "data" / "formats" / "crewai"
NATIVE = DATA / "crewai-1.15.44-native.openinference.otlp.jsonl"
TEXT = DATA / "crewai-1.15.44-text.openinference.otlp.jsonl"


def _messages(name: str) -> list[dict[str, Any]]:
    out = orjson.loads((DATA / name).read_bytes())
    msgs: list[dict[str, Any]] = out["tasks_output"][0]["messages"]
    return msgs


def test_native_tool_calls_are_read_exactly(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    rep = ingest([NATIVE], lib)
    assert [s.format for s in rep.sources] == ["openinference"]
    r = CliRunner().invoke(app, ["ingest", str(NATIVE), "-o", str(tmp_path / "cli"), "--json"])
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["calls"] == 3
    rows = Corpus.open(lib).scan_calls().sort("step").collect().to_dicts()
    assert not (lib / "rejects.jsonl").exists() or not (lib / "rejects.jsonl").read_bytes().strip()
    # the run as CrewAI itself recorded it: assistant tool_calls answered by tool messages
    msgs = _messages("crewai-1.15.44-native.crew_output.json")
    asked = [tc for m in msgs if m["role"] == "assistant" for tc in m.get("tool_calls") or ()]
    answers = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    assert (
        [r["tool"] for r in rows]
        == [tc["function"]["name"] for tc in asked]
        == [
            "get_weather",
            "divide",
            "lookup_order",
        ]
    )
    assert [orjson.loads(r["arguments"]) for r in rows] == [
        orjson.loads(tc["function"]["arguments"]) for tc in asked
    ]
    assert [r["status"] for r in rows] == ["ok", "error", "ok"]
    for row, tc in zip(rows, asked, strict=True):
        answer = answers[tc["id"]]
        if row["status"] == "ok":
            assert orjson.loads(row["result"]) == orjson.loads(answer)
            assert row["error"] is None
        else:  # CrewAI tells the model "Error executing tool: <message>"; the span keeps the message
            assert row["result"] is None
            assert answer == f"Error executing tool: {row['error']}"
            assert row["error"] == "float division by zero"
    assert len({r["trace_id"] for r in rows}) == 1


def test_text_action_run_exports_no_call_and_is_an_error(tmp_path: Path) -> None:
    """Text actions run through `ToolUsage`, which the instrumentation does not wrap: the export holds
    the crew and agent spans only. Ingest says so instead of writing an empty corpus."""
    actions = [
        m["content"] for m in _messages("crewai-1.15.44-text.crew_output.json") if m["role"] == "assistant"
    ]
    assert [re.search(r"Action: (\w+)", a)[1] for a in actions if "Action:" in a] == [  # type: ignore[index]
        "get_weather",
        "divide",
        "lookup_order",
    ]
    with pytest.raises(TraceError, match="no tool call found"):
        ingest([TEXT], tmp_path / "c")
    r = CliRunner().invoke(app, ["ingest", str(TEXT), "-o", str(tmp_path / "cli")])
    assert r.exit_code == 2 and "no tool call found" in r.output
    rep = ingest([TEXT], tmp_path / "empty", allow_empty=True)
    assert [s.format for s in rep.sources] == ["openinference"] and rep.calls == 0


# ---- the `crewai` adapter: CrewOutput documents ---------------------------------------------------

#: The calls of both runs, as the scripted model made them (generate.py's CALLS) and the tools answered.
RUN = [
    ("get_weather", {"city": "Paris"}, {"city": "Paris", "temp_c": 18, "sky": "cloudy"}, "ok", None),
    ("divide", {"a": 18, "b": 0}, None, "error", "float division by zero"),
    ("lookup_order", {"order_id": "A-1001"}, {"order_id": "A-1001", "status": "shipped"}, "ok", None),
]


def _ctx(name: str = "run.json") -> RecordContext:
    return RecordContext(name, "0" * 64, 1)


@pytest.mark.parametrize("mode", ["native", "text"])
def test_crew_output_calls_kept_exactly(mode: str, tmp_path: Path) -> None:
    src = DATA / f"crewai-1.15.44-{mode}.crew_output.json"
    got, lib, _ = both(src, tmp_path, "crewai", lambda p: read_calls(p, ("step",)))
    rows = Corpus.open(lib).scan_calls().sort("step").collect().to_dicts()
    assert got == RUN
    assert not (lib / "rejects.jsonl").exists() or not (lib / "rejects.jsonl").read_bytes().strip()
    raw = orjson.loads(src.read_bytes())
    task = raw["tasks_output"][0]
    # the error is CrewAI's own record of the failure
    assert [(f["tool_name"], f["tool_args"], f["failure"]["message"]) for f in task["tool_failures"]] == [
        (c[0], c[1], c[4]) for c in got if c[3] == "error"
    ]
    assert {x["trace_id"] for x in rows} == {f"{src.name}#0"}
    assert {x["task_id"] for x in rows} == {task["name"]}
    assert [x["step"] for x in rows] == [0, 1, 2]


def test_crew_output_detection() -> None:
    adapter = CrewAIAdapter()
    for mode in ("native", "text"):
        doc = orjson.loads((DATA / f"crewai-1.15.44-{mode}.crew_output.json").read_bytes())
        assert adapter.lacks(doc) is None and detect_document(doc) == "crewai"
        assert adapter.lacks(doc["tasks_output"][0]) is None  # a TaskOutput alone
        assert best_match(doc) == ("crewai", 2)
    otlp = orjson.loads(NATIVE.read_bytes().splitlines()[0])
    assert adapter.sniff(otlp) == 0 and adapter.lacks(otlp)
    assert adapter.lacks({"messages": [], "tasks_output": "x"}) is not None


def _task(messages: list[dict[str, Any]], failures: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A TaskOutput made from the real text-mode one, with other messages."""
    task: dict[str, Any] = orjson.loads((DATA / "crewai-1.15.44-text.crew_output.json").read_bytes())[
        "tasks_output"
    ][0]
    return {**task, "messages": messages, "tool_failures": failures or []}


def test_unanswered_and_orphan_and_empty() -> None:
    adapter = CrewAIAdapter()
    parsed = adapter.parse(
        _task(
            [
                {"role": "assistant", "content": 'Thought: t\nAction: ping\nAction Input: {"host": "a"}'},
                {"role": "tool", "tool_call_id": "nope", "content": "x"},
                {
                    "role": "assistant",
                    "content": "Thought: t\nAction: ping\nAction Input: not json\nObservation: x",
                },
            ]
        ),
        _ctx(),
    )
    assert parsed.calls == []
    assert sorted(d.code for d in parsed.dropped) == ["R_FIELD", "R_ORPHAN_RESULT", "R_UNMATCHED"]
    with pytest.raises(RecordError) as e:
        adapter.parse(_task([{"role": "assistant", "content": "Thought: done\nFinal Answer: hi"}]), _ctx())
    assert e.value.code == "R_NO_CALLS"


NAMES = st.from_regex(re.compile(r"[a-z][a-z_]{0,11}"), fullmatch=True)
VALUES = st.one_of(st.integers(-1000, 1000), st.text(max_size=12), st.booleans(), st.none())


@settings(max_examples=150, deadline=None)
@given(
    tool=NAMES,
    args=st.dictionaries(NAMES, VALUES, max_size=4),
    obs=st.one_of(
        st.text(max_size=40),
        st.dictionaries(NAMES, VALUES, max_size=3).map(lambda d: orjson.dumps(d).decode()),
    ),
    thought=st.text(
        alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=20
    ),
    failed=st.booleans(),
)
def test_text_action_round_trip(
    tool: str, args: dict[str, Any], obs: str, thought: str, failed: bool
) -> None:
    """A ReAct message as CrewAI writes it (`agent_utils`: the action text + `\\nObservation: <result>`)
    reads back as the call: tool, arguments, the observation as result, or the failure's message."""
    content = (
        f"Thought: {thought}\nAction: {tool}\nAction Input: {orjson.dumps(args).decode()}\nObservation: {obs}"
    )
    failures = [{"tool_name": tool, "tool_args": args, "failure": {"message": "boom"}}] if failed else []
    parsed = CrewAIAdapter().parse(_task([{"role": "assistant", "content": content}], failures), _ctx())
    assert parsed.dropped == []
    (call,) = parsed.calls
    assert (call.tool, call.arguments) == (tool, args)
    if failed:
        assert (call.status, call.error, call.result) == ("error", "boom", None)
    elif obs.lstrip().startswith("I encountered an error") or obs.startswith("Error executing tool: "):
        assert call.status == "error"
    else:
        assert (call.status, call.result) == ("ok", decode_result(obs))
