"""The `autogen` adapter on files the unmodified AutoGen AgentChat 0.4.0 and 0.7.5 wrote (see the
fixture folder's `generate.py`): TaskResult documents and `run_stream` event lines.

Each file is ingested by auto-detection through the library and the CLI; the calls are compared with
values read here from the raw file (FunctionCalls joined to FunctionExecutionResults by id). Edited
copies of the files check each reject, and a hypothesis test generates TaskResults with calls and
results in any order and checks that every call is kept exactly or rejected by name."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext
from output_contracts.traces.formats.autogen import AutoGenAdapter
from output_contracts.traces.formats.detect import best_match
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls, read_rejects

DATA = Path(__file__).resolve().parents[1] / "data" / "formats" / "autogen"
Call = tuple[str, dict[str, Any], Any, str, str | None]


def _rejects(corpus: Path) -> list[tuple[Any, ...]]:
    return read_rejects(corpus, "code", "line")


def _both(src: Path, tmp: Path) -> tuple[list[Call], list[tuple[Any, ...]]]:
    """Ingest by auto-detection through the library and the CLI: both agree, both say `autogen`."""
    got = both(src, tmp, "autogen", read_calls, _rejects)
    return got.calls, _rejects(got.lib)


def _messages(src: Path) -> list[dict[str, Any]]:
    """The run's messages as the file holds them: a TaskResult's, or the stream's lines before its
    closing TaskResult."""
    if src.name.startswith("state-"):  # the model context, its messages renamed as the events they play
        plays = {
            "AssistantMessage": "ToolCallRequestEvent",
            "FunctionExecutionResultMessage": "ToolCallExecutionEvent",
        }
        ms = json.loads(src.read_text())["llm_context"]["messages"]
        return [{**m, "type": plays[m["type"]]} if isinstance(m["content"], list) else m for m in ms]
    if src.suffix == ".json":
        return json.loads(src.read_text())["messages"]
    lines = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    assert "stop_reason" in lines[-1]
    return lines[:-1]


def _expected(messages: list[dict[str, Any]]) -> list[Call]:
    """Calls read from the raw messages: each FunctionCall with the result of the same id."""
    results = {
        r["call_id"]: r for m in messages if m["type"] == "ToolCallExecutionEvent" for r in m["content"]
    }
    out: list[Call] = []
    for m in messages:
        if m["type"] != "ToolCallRequestEvent":
            continue
        for fc in m["content"]:
            r = results[fc["id"]]
            text = r["content"]
            failed = r["is_error"] if "is_error" in r else text.startswith("Error:")
            value = None if failed else (ast.literal_eval(text) if text.startswith("{") else text)
            out.append(
                (
                    fc["name"],
                    json.loads(fc["arguments"]),
                    value,
                    "error" if failed else "ok",
                    text if failed else None,
                )
            )
    return out


FIXTURES = [
    "taskresult-0.4.json",
    "taskresult-0.7.json",
    "stream-0.4.jsonl",
    "stream-0.7.jsonl",
    "state-0.4.json",
    "state-0.7.json",
]


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_read_exactly(name: str, tmp_path: Path) -> None:
    src = DATA / name
    calls, rejects = _both(src, tmp_path)
    assert calls == _expected(_messages(src))
    assert rejects == []


def test_fixture_values(tmp_path: Path) -> None:
    """The values themselves, so that a wrong reading in `_expected` cannot hide a wrong adapter."""
    calls, _ = _both(DATA / "taskresult-0.7.json", tmp_path)
    assert calls == [
        ("get_weather", {"city": "Paris"}, "Sunny, 21 C in Paris", "ok", None),
        ("lookup_order", {"order_id": "B-7"}, None, "error", "'no order B-7'"),
        ("convert_currency", {"amount": 40, "to": "USD"}, {"amount": 44.0, "currency": "USD"}, "ok", None),
    ]
    calls04, _ = _both(DATA / "taskresult-0.4.json", tmp_path / "04")
    assert calls04[1] == ("lookup_order", {"order_id": "B-7"}, None, "error", "Error: 'no order B-7'")


def test_stream_taskresult_not_read_twice(tmp_path: Path) -> None:
    """The closing TaskResult of a stream repeats its messages: one episode, each call once."""
    _both(DATA / "stream-0.7.jsonl", tmp_path)
    c = Corpus.open(tmp_path / "lib")
    assert c.scan_calls().collect().height == 3
    assert c.scan_calls().select("trace_id").unique().collect().height == 1


def test_taskresult_not_openai_chat() -> None:
    doc = json.loads((DATA / "taskresult-0.7.json").read_text())
    assert best_match(doc) == ("autogen", 2)
    assert AutoGenAdapter().lacks(doc) is None
    state = json.loads((DATA / "state-0.7.json").read_text())
    assert best_match(state) == ("autogen", 2)
    assert AutoGenAdapter().lacks({"messages": [{"role": "user", "content": "hi"}]}) is not None


def _write_lines(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_rejects_by_code(tmp_path: Path) -> None:
    """Unanswered call, orphan and unkeyed results, a run without calls: each rejected by name."""
    msgs = _messages(DATA / "stream-0.7.jsonl")
    # drop the last execution event: call_c1 is unanswered; move the first execution before its request
    lines = [msgs[0], msgs[2], msgs[1], msgs[3], msgs[5]]
    unkeyed = {**msgs[4], "id": "x", "content": [{"content": "?", "name": "get_weather", "is_error": False}]}
    lines.append(unkeyed)
    fresh = [{k: v for k, v in m.items() if k != "id"} for m in (msgs[0], msgs[5])]
    lines.append({"messages": fresh, "stop_reason": "done"})  # another run, in which no tool was called
    src = _write_lines(tmp_path / "edited.jsonl", lines)
    rep = ingest([src], tmp_path / "out", allow_empty=True)  # every call here is a reject
    assert rep.sources[0].format == "autogen"
    assert read_calls(tmp_path / "out") == []
    got = sorted(_rejects(tmp_path / "out"))
    assert got == sorted(
        [
            ("R_ORPHAN_RESULT", 2),
            ("R_ORPHAN_RESULT", 2),
            ("R_UNKEYED_RESULT", 6),
            ("R_UNMATCHED", 3),
            ("R_UNMATCHED", 3),
            ("R_UNMATCHED", 4),
            ("R_NO_CALLS", 7),
        ]
    )


# ---- property: any order of calls and results in a TaskResult -----------------------------------

_item = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),  # call id
    st.booleans(),  # a call (True) or a result (False)
    st.booleans(),  # is_error of a result
    st.text(alphabet="xyz{}:' ", max_size=6),  # result text
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_item, max_size=10))
def test_taskresult_join_property(tmp_path: Path, items: list[tuple[str, bool, bool, str]]) -> None:
    messages: list[dict[str, Any]] = [{"type": "TextMessage", "source": "user", "content": "go"}]
    for cid, is_call, err, text in items:
        if is_call:
            fc = {"id": cid, "name": f"tool_{cid}", "arguments": json.dumps({"k": cid})}
            messages.append({"type": "ToolCallRequestEvent", "source": "a", "content": [fc]})
        else:
            fr = {"call_id": cid, "content": text, "is_error": err}
            messages.append({"type": "ToolCallExecutionEvent", "source": "a", "content": [fr]})
    # the model: each call takes the first result of its id after it that no earlier call took;
    # a second call of a waiting id is the same call repeated (kept once)
    waiting: dict[str, int] = {}
    done: set[str] = set()
    kept: list[tuple[str, str, bool]] = []
    codes: list[str] = []
    for cid, is_call, err, text in items:
        if is_call:
            if cid not in waiting and cid not in done:
                waiting[cid] = 1
        elif cid in waiting:
            del waiting[cid]
            done.add(cid)
            kept.append((cid, text, err))
        else:
            codes.append("R_DUPLICATE_RESULT" if cid in done else "R_ORPHAN_RESULT")
    codes += ["R_UNMATCHED"] * len(waiting)
    p = AutoGenAdapter().begin()
    ctx = RecordContext("t.json", "0" * 64, 1)
    parsed = p.parse({"messages": messages, "stop_reason": None}, ctx)
    end = p.finish(ctx)
    got = [(c.tool[5:], c.error if c.status == "error" else None, c.status) for c in parsed.calls]
    assert got == [(cid, text if err else None, "error" if err else "ok") for cid, text, err in kept]
    dropped = [d.code for d in [*parsed.dropped, *end.dropped]]
    if not items or all(not is_call for _, is_call, _, _ in items):
        dropped = [d for d in dropped if d != "R_NO_CALLS"]
    assert sorted(dropped) == sorted(codes)


def test_unknown_event_type_kept_as_message(tmp_path: Path) -> None:
    """A line of an event class this reader does not know is a message without calls, not a reject;
    a line with no type is one."""
    lines = [json.loads(x) for x in (DATA / "stream-0.7.jsonl").read_text().splitlines()]
    extra = {"id": "n1", "source": "assistant", "models_usage": None, "content": "...", "type": "FutureEvent"}
    src = _write_lines(tmp_path / "s.jsonl", [*lines[:2], extra, {"source": "x"}, *lines[2:]])
    rep = ingest([src], tmp_path / "out")
    assert rep.sources[0].format == "autogen"
    assert len(read_calls(tmp_path / "out")) == 3
    assert _rejects(tmp_path / "out") == [("R_FIELD", 4)]
