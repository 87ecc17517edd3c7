"""Detection by positive evidence: a format claims a record only when its defining shape is present
(`Adapter.lacks`), and a file no format claims fails naming the two closest formats and what each lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.formats.adapter import vocabulary
from output_contracts.traces.formats.detect import ADAPTERS, best_match, closest, detect_records
from output_contracts.traces.ingest import ingest

DATA = Path(__file__).parent / "data"

#: The shape of an AutoGen AgentChat `TaskResult` (`TaskResult.model_dump()`): messages that are
#: events with `source`, `models_usage`, `content` and `type`, not chat messages with a `role`.
TASK_RESULT = {
    "messages": [
        {"source": "user", "models_usage": None, "content": "What is the weather?", "type": "TextMessage"},
        {
            "source": "assistant",
            "models_usage": {"prompt_tokens": 10, "completion_tokens": 5},
            "content": [{"id": "c1", "arguments": '{"city": "Paris"}', "name": "get_weather"}],
            "type": "ToolCallRequestEvent",
        },
        {
            "source": "assistant",
            "models_usage": None,
            "content": [{"content": "sunny", "call_id": "c1", "is_error": False, "name": "get_weather"}],
            "type": "ToolCallExecutionEvent",
        },
    ],
    "stop_reason": None,
}


def test_a_message_list_without_roles_is_not_openai_chat() -> None:
    chat = ADAPTERS["openai-chat"]
    assert chat.sniff(TASK_RESULT) == 0
    assert chat.lacks(TASK_RESULT) == "no message with a 'role'"
    assert chat.lacks({"id": "x", "messages": [{"role": "user", "content": "hi"}]}) is None
    assert chat.sniff({"id": "x", "messages": [{"role": "user", "content": "hi"}]}) == 1
    assert (
        ADAPTERS["anthropic"].lacks(TASK_RESULT) == "no message content block of type tool_use or tool_result"
    )


@pytest.mark.parametrize(
    ("name", "record", "phrase"),
    [
        ("flat", {"trace_id": "t"}, "no 'tool' field"),
        ("flat", {"tool": "x"}, "a 'tool' field without 'arguments' or 'trace_id'"),
        ("openai-chat", {"message": []}, "no 'messages' list"),
        ("openai-responses", {"input": [{"type": "x"}]}, "no function_call or function_call_output item"),
        ("openai-responses", {"inputs": {}}, "no 'items', 'input' or 'output' list"),
        ("otel", {"resourceSpans": {}}, "no 'resourceSpans' list"),
        ("openinference", {"resourceSpans": []}, "no span with 'openinference.span.kind'"),
        ("swe-agent", {"trajectory": []}, "no 'history' list of messages"),
        ("atif", {"steps": [], "session_id": "s"}, "no ATIF 'schema_version'"),
        ("codex", {"type": "event_msg", "payload": {}}, "no line of type session_meta or response_item"),
        (
            "claude-code",
            {"sessionId": "s", "type": "summary"},
            "no 'type' user/assistant line with a 'message' object",
        ),
        ("inspect-ai", {"eval": {}}, "no 'eval' object with 'task' or 'run_id'"),
        ("openai-agents", {"data": []}, "no 'data' list of trace / trace.span items"),
    ],
)
def test_each_format_says_what_a_record_lacks(name: str, record: Any, phrase: str) -> None:
    assert ADAPTERS[name].lacks(record) == phrase


def _first_records() -> list[tuple[str, Any]]:
    out = []
    for f in sorted(p for p in DATA.iterdir() if p.is_file()):  # formats/ holds the producers' fixtures
        text = f.read_bytes()
        rec = orjson.loads(text) if f.suffix == ".json" else orjson.loads(text.splitlines()[0])
        out.append((f.name, rec))
    return out


@pytest.mark.parametrize(("name", "record"), _first_records())
def test_the_detected_format_lacks_nothing(name: str, record: Any) -> None:
    fmt = detect_records([(1, record)], name)
    assert fmt is not None and ADAPTERS[fmt].lacks(record) is None


_KEYS = st.sampled_from(
    [
        *("messages", "role", "tool", "tool_calls", "content", "type", "trace_id", "arguments", "items"),
        *("input", "output", "resourceSpans", "steps", "schema_version", "eval", "task", "payload"),
        *("trajectory", "history", "data", "object", "traj", "task_id", "sessionId", "message", "uuid"),
    ]
)
_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=5)


def _nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return _leaf | st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4)


_json = _nest(_nest(_nest(_leaf)))
_words = st.sampled_from(
    ["tool_use", "function_call", "ATIF-v1.2", "user", "tool", "response", "session_meta"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["messages", "type", "tool", "steps", "items", "trace_id"]), _json | _words
    )
)
def test_lacks_agrees_with_sniff(record: dict[str, Any]) -> None:
    """A certain claim always shows the defining shape; a record that shows it is always claimed."""
    for adapter in ADAPTERS.values():
        s, why = adapter.sniff(record), adapter.lacks(record)
        if s == 2:
            assert why is None, adapter.name
        if s == 0:
            assert isinstance(why, str) and why, adapter.name


def test_closest_is_ranked_by_evidence_then_generality() -> None:
    # no mark of any format: the most general formats, flat before openai-chat (later in priority first)
    assert [n for n, _ in closest([{"hello": 1}])] == ["flat", "openai-chat"]
    rec = {"resourceSpans": {}, "spans": 1, "attributes": 2}
    assert closest([rec])[0] == ("otel", "no 'resourceSpans' list")
    assert {"resourceSpans", "spans", "attributes"} <= vocabulary(rec)


def test_unknown_file_names_the_two_closest(tmp_path: Path) -> None:
    f = tmp_path / "odd.jsonl"
    f.write_text('\n{"hello": 1}\n{"world": 2}\n')
    assert best_match({"hello": 1}) == (None, 0)
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "c")
    assert (e.value.code, e.value.source, e.value.line) == ("E_FORMAT", str(f), 2)
    assert e.value.message == (
        "unknown format: closest are flat (no 'tool' field) and openai-chat (no 'messages' list); pass --format"
    )
    r = CliRunner().invoke(app, ["ingest", str(f), "-o", str(tmp_path / "d")])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"error[E_FORMAT]: {f}:2: unknown format: closest are flat (no 'tool' field) and openai-chat "
        "(no 'messages' list); pass --format"
    ]
    assert not (tmp_path / "d").exists()


def test_folder_walk_notes_what_the_closest_lacked(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_bytes((DATA / "flat.jsonl").read_bytes())
    (src / "metrics.jsonl").write_text('{"epoch": 1, "loss": 0.5}\n')
    rep = ingest([src], tmp_path / "c")
    notes = {Path(s.source).name: s.note for s in rep.sources if s.skipped}
    assert notes == {
        "metrics.jsonl": "not traces: no format claims its first 1 record(s); closest are flat (no 'tool' field) "
        "and openai-chat (no 'messages' list)"
    }
