"""One hand-written example per format (tests/traces/data/), ingested and checked value by value."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import Answers, decode_result, text_of_blocks
from output_contracts.traces.formats.detect import FORMAT_NAMES, detect_records
from output_contracts.traces.formats.otlp import any_value
from output_contracts.traces.ingest import ingest

DATA = Path(__file__).parent / "data"


def _load(
    tmp_path: Path, *files: Path, fmt: str = "auto", allow_empty: bool = False
) -> tuple[Any, pl.DataFrame, pl.DataFrame]:
    out = tmp_path / "corpus"
    rep = ingest(list(files), out, format=fmt, allow_empty=allow_empty)
    c = Corpus.open(out)
    calls = (
        c.scan_calls()
        .collect()
        .with_columns(pl.col("tool").cast(pl.String), pl.col("task_id").cast(pl.String))
    )
    eps = c.scan_episodes().collect().with_columns(pl.col("task_id").cast(pl.String))
    return rep, calls, eps


def _j(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def test_flat(tmp_path: Path) -> None:
    rep, calls, eps = _load(tmp_path, DATA / "flat.jsonl")
    s = rep.sources[0]
    assert (s.format, s.lines, s.calls, s.rejects, s.blank) == ("flat", 6, 5, 0, 1)
    rows = calls.to_dicts()
    assert [r["line"] for r in rows] == [1, 2, 4, 5, 6]
    assert [r["step"] for r in rows] == [0, 1, 0, 1, 0]
    # a JSON string holding an object is decoded; plain text stays text
    assert _j(rows[1]["result"]) == {
        "order_id": "#W100",
        "items": [{"price": 2.5}, {"price": 4}],
        "total": 6.5,
    }
    assert _j(rows[4]["result"]) == "plain text, not JSON"
    assert (
        rows[2]["status"] == "error" and rows[2]["result"] is None and rows[2]["error"] == "timeout after 30s"
    )
    assert rows[3]["fault"] == "sign_flip"
    assert (rows[4]["trace_id"], rows[4]["task_id"]) == ("9", "4")
    assert rows[2]["task_id"] == "ep-0008"  # task_id defaults to trace_id
    assert rows[0]["started_at"] == "2026-03-01T10:00:02Z"
    by = {r["trace_id"]: r for r in eps.to_dicts()}
    assert by["ep-0007"]["reward"] == 1.0
    assert _j(by["ep-0007"]["tools"]) == ["lookup_inventory", "query_warehouse", "get_order"]
    assert by["ep-0007"]["n_calls"] == 2
    assert by["ep-0008"]["faulty"] is True and by["ep-0007"]["faulty"] is False
    assert by["ep-0008"]["reward"] is None


def test_openai_chat(tmp_path: Path) -> None:
    rep, calls, eps = _load(tmp_path, DATA / "openai_chat.jsonl")
    s = rep.sources[0]
    assert (s.format, s.lines, s.ok, s.episodes, s.calls, s.dropped_calls) == ("openai-chat", 2, 2, 2, 3, 1)
    rows = calls.to_dicts()
    assert [(r["tool"], _j(r["arguments"]), r["index"], r["step"]) for r in rows] == [
        ("get_weather", {"city": "Paris"}, 0, 0),
        ("get_weather", {"city": "Oslo"}, 1, 1),
        ("get_time", {}, 2, 2),
    ]
    # answers are joined by id, not by position; text parts are collapsed then decoded
    assert [_j(r["result"]) for r in rows] == [
        {"city": "Paris", "temp_c": 11.5},
        {"city": "Oslo", "temp_c": -2},
        "14:05",
    ]
    assert {r["task_id"] for r in rows} == {"weather-3"}
    by = {r["trace_id"]: r for r in eps.to_dicts()}
    assert by["chat-1"]["reward"] == 0.5 and _j(by["chat-1"]["tools"]) == ["get_weather", "get_time"]
    assert by["chat-2"]["n_calls"] == 0  # the episode is kept, its unanswered call is not
    rejects = Corpus.open(tmp_path / "corpus").rejects()
    assert [(r["line"], r["code"], r["index"]) for r in rejects] == [(2, "R_UNMATCHED", 0)]
    assert "call_z" in rejects[0]["error"]


def test_openai_responses(tmp_path: Path) -> None:
    rep, calls, eps = _load(tmp_path, DATA / "openai_responses.jsonl")
    assert rep.sources[0].format == "openai-responses"
    assert [(r["tool"], _j(r["arguments"]), _j(r["result"])) for r in calls.to_dicts()] == [
        ("add", {"a": 2, "b": 3}, {"sum": 5}),
        ("add", {"a": 5, "b": 5}, {"sum": 10}),
    ]
    assert eps.to_dicts()[0]["task_id"] == "math-1" and _j(eps.to_dicts()[0]["tools"]) == ["add"]


def test_anthropic(tmp_path: Path) -> None:
    rep, calls, _ = _load(tmp_path, DATA / "anthropic.jsonl")
    assert rep.sources[0].format == "anthropic"
    rows = calls.to_dicts()
    assert [(r["tool"], _j(r["arguments"]), r["status"]) for r in rows] == [
        ("read_file", {"path": "a.txt"}, "ok"),
        ("read_file", {"path": "b.txt"}, "error"),
    ]
    assert _j(rows[0]["result"]) == {"path": "a.txt", "size": 12}
    assert rows[1]["error"] == "ENOENT: b.txt" and rows[1]["result"] is None


def _check_otel(calls: pl.DataFrame, eps: pl.DataFrame) -> None:
    rows = calls.to_dicts()
    tid = "5b8efff798038103d269b633813fc60c"
    # ordered by start time, not by document order
    assert [(r["trace_id"], r["tool"], r["status"], r["step"]) for r in rows] == [
        (tid, "search_flights", "error", 0),
        (tid, "get_flight", "ok", 1),
    ]
    assert rows[0]["error"] == "upstream 503" and _j(rows[0]["arguments"]) == {"from": "CDG", "to": "OSL"}
    assert _j(rows[1]["arguments"]) == {"flight": "AF123", "seats": 2, "flex": True, "tags": ["a", 1.5]}
    assert _j(rows[1]["result"]) == {"flight": "AF123", "price": 199.0, "seats_left": 7}
    assert {r["task_id"] for r in rows} == {"conv-77"}  # from the parent invoke_agent span
    expected = datetime.fromtimestamp(1772359202, UTC).strftime("%Y-%m-%dT%H:%M:%S") + ".5Z"
    assert rows[1]["started_at"] == expected
    assert _j(rows[1]["meta"]) == {"span_id": "eee19b7ec3c1b175", "tool_call_id": "call_2"}
    by = {r["trace_id"]: r for r in eps.to_dicts()}
    assert by[tid]["task_id"] == "conv-77" and by[tid]["n_calls"] == 2
    assert by["0af7651916cd43dd8448eb211c80319c"]["n_calls"] == 0


def test_otel_whole_file(tmp_path: Path) -> None:
    rep, calls, eps = _load(tmp_path, DATA / "otel.json")
    s = rep.sources[0]
    assert (s.format, s.unit, s.lines, s.calls, s.dropped_calls) == ("otel", "record", 1, 2, 1)
    _check_otel(calls, eps)


def test_otel_lines_gzipped(tmp_path: Path) -> None:
    doc = orjson.loads((DATA / "otel.json").read_bytes())
    f = tmp_path / "spans.jsonl.gz"
    f.write_bytes(gzip.compress(orjson.dumps(doc) + b"\n"))
    rep, calls, eps = _load(tmp_path, f)
    s = rep.sources[0]
    assert (s.format, s.unit, s.lines, s.calls) == ("otel", "line", 1, 2)
    _check_otel(calls, eps)


def test_tau_bench_lines(tmp_path: Path) -> None:
    run = {
        "task_id": 7,
        "trial": 1,
        "reward": 1.0,
        "info": {},
        "traj": [
            {"role": "user", "content": "cancel"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "cancel", "arguments": '{"id": "R1"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "cancel",
                "content": "Error: reservation not found",
            },
            # the same id again, as in τ-bench's recorded runs: joins the *next* answer
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "cancel", "arguments": '{"id": "R2"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "name": "cancel",
                "content": '{"id": "R2", "status": "cancelled"}',
            },
        ],
    }
    f = tmp_path / "runs.jsonl"
    f.write_bytes(orjson.dumps(run) + b"\n")
    rep, calls, eps = _load(tmp_path, f)
    assert rep.sources[0].format == "tau-bench"
    rows = calls.to_dicts()
    assert [(r["trace_id"], r["status"], r["error"], _j(r["result"])) for r in rows] == [
        ("7-1", "error", "Error: reservation not found", None),
        ("7-1", "ok", None, {"id": "R2", "status": "cancelled"}),
    ]
    assert eps.to_dicts()[0]["reward"] == 1.0 and eps.to_dicts()[0]["task_id"] == "7"


def test_forced_format_rejects_other_records(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"no tool call found \(1 reject\)"):
        _load(tmp_path, DATA / "anthropic.jsonl", fmt="flat")
    rep, calls, _ = _load(tmp_path, DATA / "anthropic.jsonl", fmt="flat", allow_empty=True)
    assert calls.height == 0 and rep.sources[0].rejects == 1
    rej = Corpus.open(tmp_path / "corpus").rejects()[0]
    assert rej["code"] == "R_FORMAT" and "looks like anthropic" in rej["error"]


def test_mixed_formats_fail_naming_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "mixed.jsonl"
    f.write_bytes((DATA / "flat.jsonl").read_bytes() + (DATA / "anthropic.jsonl").read_bytes())
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "c")
    assert e.value.source == str(f) and e.value.line == 7 and "mixed formats" in e.value.message
    assert not (tmp_path / "c" / "corpus.json").exists()


def test_unknown_format_fails(tmp_path: Path) -> None:
    f = tmp_path / "odd.jsonl"
    f.write_text('{"hello": 1}\n{"world": 2}\n')
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "c")
    assert e.value.line == 1 and "unknown format" in e.value.message


def test_detection_prefers_certain_claims() -> None:
    plain_chat = {"id": "x", "messages": [{"role": "user", "content": "hi"}]}
    anth = orjson.loads((DATA / "anthropic.jsonl").read_bytes())
    assert detect_records([(1, plain_chat), (2, anth)], "f") == "anthropic"
    assert detect_records([(1, plain_chat)], "f") == "openai-chat"
    assert detect_records([], "f") is None
    assert set(FORMAT_NAMES) >= {"flat", "openai-chat", "openai-responses", "anthropic", "otel", "tau-bench"}
    assert set(FORMAT_NAMES) >= {"claude-code", "codex", "inspect-ai", "atif", "swe-agent"}
    assert set(FORMAT_NAMES) >= {"openinference", "openai-agents"}


def test_helpers() -> None:
    assert decode_result('{"a": 1}') == {"a": 1}
    assert decode_result(" [1, 2]") == [1, 2]
    assert decode_result("42") == "42" and decode_result("{not json") == "{not json"
    assert text_of_blocks([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "ab"
    img = [{"type": "image", "source": {}}]
    assert text_of_blocks(img) == img
    assert any_value({"intValue": "9007199254740993"}) == 9007199254740993
    assert any_value({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}) == {
        "k": False
    }
    assert any_value({}) is None
    a = Answers()
    a.add("x", 3, "first")
    a.add("x", 7, "second")
    assert a.take("x", 5) == "second" and a.take("x", 1) == "first" and a.take("x", 0) is None


def test_mixed_formats_beyond_the_sniff_window(tmp_path: Path) -> None:
    flat = (DATA / "flat.jsonl").read_bytes().splitlines()[0] + b"\n"
    f = tmp_path / "late.jsonl"
    f.write_bytes(flat * 40 + (DATA / "anthropic.jsonl").read_bytes())
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "c")
    assert e.value.line == 41 and "this record is anthropic" in e.value.message
