"""The OpenTelemetry family and its neighbours on the real files of ../shared/data/formats.

Every expected value below was read by hand from the source file named in the test (they are facts of
the source, not outputs of this code): OTel GenAI chat spans (content on spans, as events only, ids in
base64), OpenInference, Pydantic AI (instrumentation versions 2 and 5) and the OpenAI Agents SDK's own
export. Each file is ingested by auto-detection through the library and through the CLI.
"""

from __future__ import annotations

import base64
import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext
from output_contracts.traces.formats.detect import FORMAT_NAMES
from output_contracts.traces.formats.openai_agents import OpenAIAgentsAdapter
from output_contracts.traces.formats.openinference import OpenInferenceAdapter
from output_contracts.traces.formats.otel import OtelAdapter
from output_contracts.traces.formats.otlp import otlp_id
from output_contracts.traces.formats.pyliteral import decode_literal
from output_contracts.traces.ingest import ingest

CTX = RecordContext("t.jsonl", "0" * 64, 1)

# ---- what each real file holds, read from the file by hand ------------------------------------------

OTEL_TRACE = "1a15968eb38242287eaca958cdb6c50f"
WEATHER = [
    ("get_current_weather", {"location": "Seattle, WA"}, "50 degrees and raining", "ok", None),
    ("get_current_weather", {"location": "San Francisco, CA"}, "70 degrees and sunny", "ok", None),
]
PYDANTIC = [
    (
        "get_weather",
        {"city": "Paris", "units": "metric"},
        {"city": "Paris", "temp": 21.5, "units": "metric"},
        "ok",
        None,
    ),
    (
        "lookup_order",
        {"order_id": "88213"},
        {"order_id": "88213", "items": [{"sku": "A1", "qty": 2}], "total": 19.99},
        "ok",
        None,
    ),
    (
        "refund",
        {"order_id": "88213", "amount": 999},
        "amount exceeds refund limit of 500",
        "error",
        "amount exceeds refund limit of 500",
    ),
]
AGENTS = [
    ("get_weather", {"city": "Paris"}, {"city": "Paris", "temp": 21.5}, "ok", None),
    (
        "lookup_order",
        {"order_id": "88213"},
        {"order_id": "88213", "items": [{"sku": "A1", "qty": 2}], "total": 19.99},
        "ok",
        None,
    ),
    (
        "refund",
        {"order_id": "88213", "amount": 999},
        "An error occurred while running the tool. Please try again.",
        "error",
        "Error running tool (non-fatal): Tool execution failed. Error details are redacted.",
    ),
]

#: file -> (format, calls, trace_id, task_id, call ids, reject codes)
CASES: dict[str, tuple[str, list[tuple[Any, ...]], str, str, list[str | None], list[str]]] = {
    "otel-genai/openai-v2-chat-tools.otlp.jsonl": (
        "otel",
        WEATHER,
        OTEL_TRACE,
        OTEL_TRACE,
        ["call_JpNb8OiAkbIbHzDggfpdDHpi", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"],
        [],
    ),
    "otel-genai/openai-v2-chat-tools.base64ids.otlp.jsonl": (
        "otel",
        WEATHER,
        OTEL_TRACE,  # GhWWjrOCQih+rKlYzbbFDw== decoded
        OTEL_TRACE,
        ["call_JpNb8OiAkbIbHzDggfpdDHpi", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"],
        [],
    ),
    "otel-genai/openai-v2-chat-tools.events.otlp.jsonl": ("otel", [], "", "", [], ["R_NO_CONTENT"]),
    "openinference/openai-chat-tools.otlp.jsonl": (
        "openinference",
        WEATHER,
        "0117e892b6f9c8a60bdb265bd9cee035",
        "0117e892b6f9c8a60bdb265bd9cee035",
        ["call_JpNb8OiAkbIbHzDggfpdDHpi", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"],
        [],
    ),
    "pydantic-ai/pydantic-ai-v2.otlp.jsonl": (
        "otel",
        PYDANTIC,
        "64eba14585591cea2f4c8960249ad65c",
        "01a23bda-e1af-70c4-a8d5-eed179ed3a27",
        ["call_1", "call_2", "call_3"],
        [],
    ),
    "pydantic-ai/pydantic-ai-v5.otlp.jsonl": (
        "otel",
        PYDANTIC,
        "702288a0edda09107d9eff1f29302766",
        "01a23bda-e454-761f-a73a-9fd4e45cbd72",
        ["call_1", "call_2", "call_3"],
        [],
    ),
    "openai-agents/agents-sdk-trace-ingest.json": (
        "openai-agents",
        AGENTS,
        "trace_f4fac11c9ec54fb9bd4ef54d945dcf07",
        "conv-42",
        [None, None, None],
        [],
    ),
}


def _rows(out: Path) -> list[dict[str, Any]]:
    c = Corpus.open(out)
    df = (
        c.scan_calls()
        .collect()
        .with_columns(pl.col("tool").cast(pl.String), pl.col("task_id").cast(pl.String))
    )
    return df.sort("trace_id", "step").to_dicts()


def _facts(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    def j(t: str | None) -> Any:
        return None if t is None else orjson.loads(t)

    return [(r["tool"], j(r["arguments"]), j(r["result"]), r["status"], r["error"]) for r in rows]


def _check(out: Path, name: str) -> None:
    _fmt, calls, trace, task, ids, codes = CASES[name]
    rows = _rows(out)
    assert _facts(rows) == calls
    assert [r["step"] for r in rows] == list(range(len(calls)))
    assert {r["trace_id"] for r in rows} == ({trace} if calls else set())
    assert {r["task_id"] for r in rows} == ({task} if calls else set())
    assert [orjson.loads(r["meta"]).get("tool_call_id") for r in rows] == ids
    assert [r["code"] for r in Corpus.open(out).rejects()] == codes


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_file_library(shared_data: Path, tmp_path: Path, name: str) -> None:
    fmt, calls, *_, codes = CASES[name]
    rep = ingest([shared_data / "formats" / name], tmp_path / "c", allow_empty=not calls)
    s = rep.sources[0]
    assert (s.format, s.lines, s.calls, s.rejects + s.dropped_calls) == (fmt, 1, len(calls), len(codes))
    _check(tmp_path / "c", name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_file_cli(shared_data: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / "c"
    fmt, calls, *_, codes = CASES[name]
    argv = ["ingest", str(shared_data / "formats" / name), "-o", str(out), "--json"]
    if not calls:  # a file that yields no tool call is exit 2 naming it, unless --allow-empty
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 2 and f"{name}: no tool call found (" in r.stderr, r.output
        argv.append("--allow-empty")
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 0, r.output
    rep = orjson.loads(r.stdout)
    assert rep["sources"][0]["format"] == fmt and rep["calls"] == len(calls) and rep["rejects"] == len(codes)
    assert schema_errors(orjson.loads((out / "corpus.json").read_bytes()), "corpus-manifest") == []
    _check(out, name)
    info = CliRunner().invoke(app, ["corpus", "info", str(out), "--json"])
    assert info.exit_code == 0
    assert orjson.loads(info.stdout)["rejects"]["by_code"] == {c: codes.count(c) for c in codes}


def test_format_names() -> None:
    assert {"otel", "openinference", "openai-agents"} <= set(FORMAT_NAMES)


def test_forced_format(shared_data: Path, tmp_path: Path) -> None:
    """`--format` selects each adapter; otel forced on an OpenInference file reads no OpenInference call."""
    f = shared_data / "formats" / "openinference" / "openai-chat-tools.otlp.jsonl"
    r = CliRunner().invoke(
        app, ["ingest", str(f), "-o", str(tmp_path / "a"), "--format", "openinference", "--json"]
    )
    assert r.exit_code == 0 and orjson.loads(r.stdout)["calls"] == 2
    r = CliRunner().invoke(app, ["ingest", str(f), "-o", str(tmp_path / "b"), "--format", "otel"])
    assert r.exit_code == 2 and "no tool call found" in r.stderr
    g = shared_data / "formats" / "openai-agents" / "agents-sdk-trace-ingest.json"
    r = CliRunner().invoke(
        app, ["ingest", str(g), "-o", str(tmp_path / "c"), "--format", "openai-agents", "--json"]
    )
    assert r.exit_code == 0 and orjson.loads(r.stdout)["calls"] == 3


def test_events_only_reject_reason(shared_data: Path, tmp_path: Path) -> None:
    f = shared_data / "formats" / "otel-genai" / "openai-v2-chat-tools.events.otlp.jsonl"
    ingest([f], tmp_path / "c", allow_empty=True)
    (rej,) = Corpus.open(tmp_path / "c").rejects()
    assert rej["code"] == "R_NO_CONTENT" and "exported as events" in rej["error"]
    assert "89b97057aa70673d" in rej["error"]  # the chat span whose finish reason is tool_calls
    eps = Corpus.open(tmp_path / "c").scan_episodes().collect()
    assert eps["trace_id"].to_list() == ["74993adc0718e7a22314aba00501cfb6"]


# ---- OTLP ids ---------------------------------------------------------------------------------------


def test_otlp_ids() -> None:
    assert otlp_id("GhWWjrOCQih+rKlYzbbFDw==", 16) == OTEL_TRACE
    assert otlp_id("SefLpm8MpHE=", 8) == "49e7cba66f0ca471"
    assert otlp_id("1A15968EB38242287EACA958CDB6C50F", 16) == OTEL_TRACE  # hex: case-insensitive
    # base64 is case-sensitive: ids that differ only in case are different traces
    assert otlp_id("ghwwjrocqih+rklyzbbfdw==", 16) != otlp_id("GhWWjrOCQih+rKlYzbbFDw==", 16)
    assert otlp_id("my-Trace", 16) == "my-Trace"  # neither hex nor base64 of 16 bytes: kept as is


@given(st.binary(min_size=16, max_size=16), st.binary(min_size=8, max_size=8))
def test_otlp_id_hex_and_base64_agree(trace: bytes, span: bytes) -> None:
    for raw, n in ((trace, 16), (span, 8)):
        b64 = base64.b64encode(raw).decode()
        assert otlp_id(b64, n) == otlp_id(raw.hex(), n) == otlp_id(raw.hex().upper(), n) == raw.hex()
        assert otlp_id(b64.rstrip("="), n) == raw.hex()
        assert otlp_id(base64.urlsafe_b64encode(raw).decode(), n) == raw.hex()


def test_base64_ids_that_differ_in_case_stay_apart(shared_data: Path, tmp_path: Path) -> None:
    doc = orjson.loads(
        (shared_data / "formats/otel-genai/openai-v2-chat-tools.base64ids.otlp.jsonl").read_bytes()
    )
    other = copy.deepcopy(doc)
    for ss in other["resourceSpans"][0]["scopeSpans"]:
        for span in ss["spans"]:
            span["traceId"] = span["traceId"].swapcase()
    f = tmp_path / "two.jsonl"
    f.write_bytes(orjson.dumps(doc) + b"\n" + orjson.dumps(other) + b"\n")
    rep = ingest([f], tmp_path / "c")
    assert (rep.calls, rep.episodes) == (4, 2)
    assert {r["trace_id"] for r in _rows(tmp_path / "c")} == {
        OTEL_TRACE,
        base64.b64decode("GhWWjrOCQih+rKlYzbbFDw==".swapcase()).hex(),
    }


# ---- chat-span history: de-duplication, orphans, unmatched ------------------------------------------


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {
        "key": key,
        "value": {"stringValue": value if isinstance(value, str) else orjson.dumps(value).decode()},
    }


def _chat_span(i: int, inp: list[Any], out: list[Any], finish: str = "tool_calls") -> dict[str, Any]:
    return {
        "traceId": "ab" * 16,
        "spanId": f"{i + 1:016x}",
        "name": "chat m",
        "startTimeUnixNano": str(1_800_000_000_000_000_000 + i),
        "attributes": [
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.input.messages", inp),
            _kv("gen_ai.output.messages", out),
            {
                "key": "gen_ai.response.finish_reasons",
                "value": {"arrayValue": {"values": [{"stringValue": finish}]}},
            },
        ],
    }


def _doc(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


def _resp(cid: str, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": cid, "response": response}


def test_history_repeats_are_one_call_and_orphans_are_rejects() -> None:
    user = {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    asks = {"role": "assistant", "parts": [_call("c1", "f", {"x": 1}), _call("c2", "g", {})]}
    answer1 = {"role": "tool", "parts": [_resp("c1", '{"y": 2}')]}
    stray = {"role": "tool", "parts": [_resp("c9", "who asked?")]}
    done = {"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}
    doc = _doc(
        _chat_span(0, [user], [asks]),
        _chat_span(1, [user, asks, answer1, stray], [done], "stop"),
        _chat_span(2, [user, asks, answer1, stray, done, user], [done], "stop"),  # the history again
    )
    parsed = OtelAdapter().parse(doc, CTX)
    assert [(c.tool, c.arguments, c.result, c.status) for c in parsed.calls] == [
        ("f", {"x": 1}, {"y": 2}, "ok")
    ]
    assert sorted(d.code for d in parsed.dropped) == ["R_ORPHAN_RESULT", "R_UNMATCHED"]  # c9; c2 unanswered


def test_execute_tool_span_and_its_chat_call_are_one_call() -> None:
    """The chat message asks for c1, an execute_tool span runs it: one call, status from the span."""
    asks = {"role": "assistant", "parts": [_call("c1", "f", {"x": 1})]}
    answer = {"role": "tool", "parts": [_resp("c1", "Error: boom")]}
    tool = {
        "traceId": "ab" * 16,
        "spanId": "00000000000000ff",
        "startTimeUnixNano": str(1_800_000_000_000_000_000 + 1),
        "attributes": [
            _kv("gen_ai.operation.name", "execute_tool"),
            _kv("gen_ai.tool.name", "f"),
            _kv("gen_ai.tool.call.id", "c1"),
        ],
        "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
    }
    parsed = OtelAdapter().parse(
        _doc(_chat_span(0, [], [asks]), tool, _chat_span(2, [asks, answer], [], "stop")), CTX
    )
    assert [(c.tool, c.arguments, c.status, c.error) for c in parsed.calls] == [
        ("f", {"x": 1}, "error", "boom")
    ]
    assert parsed.dropped == []


# ---- OpenInference: TOOL spans and LLM-span calls reconciled -----------------------------------------


def _tool_span(sid: str, start: int, name: str, args: str, output: str, **extra: str) -> dict[str, Any]:
    attrs = [_kv("openinference.span.kind", "TOOL"), _kv("tool.name", name), _kv("input.value", args)]
    attrs += [_kv("output.value", output)] + [_kv(k.replace("_", "."), v) for k, v in extra.items()]
    return {
        "traceId": "0117e892b6f9c8a60bdb265bd9cee035",
        "spanId": sid,
        "startTimeUnixNano": str(start),
        "attributes": attrs,
    }


def test_openinference_tool_spans_claim_llm_calls(shared_data: Path) -> None:
    doc = orjson.loads((shared_data / "formats/openinference/openai-chat-tools.otlp.jsonl").read_bytes())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    t0 = int(spans[0]["startTimeUnixNano"])
    spans += [
        # with the call id: claims the Seattle call; its output wins over the history's tool message
        _tool_span(
            "00000000000000a1",
            t0 + 1,
            "get_current_weather",
            '{"location": "Seattle, WA"}',
            "50F, rain",
            tool_id="call_JpNb8OiAkbIbHzDggfpdDHpi",
        ),
        # without an id: claims the San Francisco call by tool and arguments
        _tool_span(
            "00000000000000a2", t0 + 2, "get_current_weather", '{"location": "San Francisco, CA"}', "70F"
        ),
        # asked for by no LLM span: a call of its own
        _tool_span("00000000000000a3", t0 + 3, "get_time", '{"tz": "PST"}', '{"hour": 9}'),
    ]
    parsed = OpenInferenceAdapter().parse(doc, CTX)
    assert [(c.tool, c.arguments, c.result) for c in parsed.calls] == [
        ("get_current_weather", {"location": "Seattle, WA"}, "50F, rain"),
        ("get_current_weather", {"location": "San Francisco, CA"}, "70F"),
        ("get_time", {"tz": "PST"}, {"hour": 9}),
    ]
    assert [c.meta.get("tool_call_id") for c in parsed.calls] == [
        "call_JpNb8OiAkbIbHzDggfpdDHpi",
        "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
        None,
    ]
    assert parsed.dropped == []  # both history tool messages were consumed by the claimed calls


# ---- Python-literal results ------------------------------------------------------------------------


def test_python_literal_rule() -> None:
    assert decode_literal("{'city': 'Paris', 'temp': 21.5}") == {"city": "Paris", "temp": 21.5}
    assert decode_literal("[{'ok': True, 'n': None}]") == [{"ok": True, "n": None}]
    assert decode_literal('{"a": 1}') == {"a": 1}  # JSON first
    for text in (
        "{'a': (1, 2)}",
        "{1: 'a'}",
        "{'a'}",
        "[1, 2] and more",
        "{'n': 10**3}",
        "{'n': " + str(2**70) + "}",  # beyond int64 (as JSON text, orjson would read a float)
        "plain",
    ):
        assert decode_literal(text) == text
    assert decode_literal("{'a': float('nan')}") == "{'a': float('nan')}"


# ---- hypothesis round trips -------------------------------------------------------------------------

_name = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
_scalar = st.one_of(st.integers(-(2**40), 2**40), st.text("abc xyz", max_size=6), st.booleans(), st.none())
_args = st.dictionaries(_name, _scalar, max_size=3)
_result = st.one_of(
    st.dictionaries(_name, _scalar, min_size=1, max_size=3),
    st.from_regex(r"[a-z][a-z ]{0,12}", fullmatch=True),
)
_turns = st.lists(st.lists(st.tuples(_name, _args, _result), min_size=1, max_size=3), min_size=1, max_size=4)


def _as_otel(turns: list[list[tuple[str, dict[str, Any], Any]]]) -> dict[str, Any]:
    """Turns of parallel calls as GenAI chat spans: each span's input repeats the whole history."""
    history: list[Any] = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    spans, n = [], 0
    for i, turn in enumerate(turns):
        ids = [f"c{n + k}" for k in range(len(turn))]
        n += len(turn)
        asks = {
            "role": "assistant",
            "parts": [_call(c, t, a) for c, (t, a, _) in zip(ids, turn, strict=True)],
        }
        spans.append(_chat_span(i, history, [asks]))
        res = [r if isinstance(r, str) else orjson.dumps(r).decode() for _, _, r in turn]
        history = [
            *history,
            asks,
            *({"role": "tool", "parts": [_resp(c, r)]} for c, r in zip(ids, res, strict=True)),
        ]
    spans.append(_chat_span(len(turns), history, [{"role": "assistant", "parts": []}], "stop"))
    return _doc(*spans)


def _as_openinference(turns: list[list[tuple[str, dict[str, Any], Any]]]) -> dict[str, Any]:
    """The same as OpenInference LLM spans with flattened message attributes."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    spans, n = [], 0

    def flat(prefix: str, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for i, m in enumerate(msgs):
            p = f"{prefix}.{i}.message"
            out.append(_kv(f"{p}.role", m["role"]))
            if "content" in m:
                out.append(_kv(f"{p}.content", m["content"]))
            if "tool_call_id" in m:
                out.append(_kv(f"{p}.tool_call_id", m["tool_call_id"]))
            for j, (cid, name, args) in enumerate(m.get("calls", [])):
                q = f"{p}.tool_calls.{j}.tool_call"
                out += [
                    _kv(f"{q}.id", cid),
                    _kv(f"{q}.function.name", name),
                    _kv(f"{q}.function.arguments", args),
                ]
        return out

    for i, turn in enumerate([*turns, []]):
        ids = [f"c{n + k}" for k in range(len(turn))]
        n += len(turn)
        asks = {"role": "assistant", "calls": [(c, t, a) for c, (t, a, _) in zip(ids, turn, strict=True)]}
        attrs = [_kv("openinference.span.kind", "LLM")]
        attrs += flat("llm.input_messages", history) + flat("llm.output_messages", [asks] if turn else [])
        spans.append(
            {
                "traceId": "cd" * 16,
                "spanId": f"{i + 1:016x}",
                "startTimeUnixNano": str(10 + i),
                "attributes": attrs,
            }
        )
        res = [r if isinstance(r, str) else orjson.dumps(r).decode() for _, _, r in turn]
        history = [
            *history,
            asks,
            *({"role": "tool", "tool_call_id": c, "content": r} for c, r in zip(ids, res, strict=True)),
        ]
    return _doc(*spans)


def _as_openllmetry(turns: list[list[tuple[str, dict[str, Any], Any]]]) -> dict[str, Any]:
    """The same as OpenLLMetry's indexed `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    spans, n = [], 0

    def flat(prefix: str, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for i, m in enumerate(msgs):
            out.append(_kv(f"{prefix}.{i}.role", m["role"]))
            for k in ("content", "tool_call_id"):
                if k in m:
                    out.append(_kv(f"{prefix}.{i}.{k}", m[k]))
            for j, (cid, name, args) in enumerate(m.get("calls", [])):
                q = f"{prefix}.{i}.tool_calls.{j}"
                out += [_kv(f"{q}.id", cid), _kv(f"{q}.name", name), _kv(f"{q}.arguments", args)]
        return out

    for i, turn in enumerate([*turns, []]):
        ids = [f"c{n + k}" for k in range(len(turn))]
        n += len(turn)
        asks = {"role": "assistant", "calls": [(c, t, a) for c, (t, a, _) in zip(ids, turn, strict=True)]}
        attrs = [_kv("llm.request.type", "chat")]
        attrs += flat("gen_ai.prompt", history) + flat("gen_ai.completion", [asks] if turn else [])
        spans.append(
            {
                "traceId": "ef" * 16,
                "spanId": f"{i + 1:016x}",
                "startTimeUnixNano": str(10 + i),
                "attributes": attrs,
            }
        )
        res = [r if isinstance(r, str) else orjson.dumps(r).decode() for _, _, r in turn]
        history = [
            *history,
            asks,
            *({"role": "tool", "tool_call_id": c, "content": r} for c, r in zip(ids, res, strict=True)),
        ]
    return _doc(*spans)


@settings(max_examples=25, deadline=None)
@given(_turns)
def test_round_trip_otel_chat_openinference_openllmetry(
    turns: list[list[tuple[str, dict[str, Any], Any]]],
) -> None:
    expected = [(t, a, r, "ok") for turn in turns for t, a, r in turn]
    for adapter, doc in (
        (OtelAdapter(), _as_otel(turns)),
        (OpenInferenceAdapter(), _as_openinference(turns)),
        (OtelAdapter(), _as_openllmetry(turns)),
    ):
        parsed = adapter.parse(orjson.loads(orjson.dumps(doc)), CTX)
        assert [(c.tool, c.arguments, c.result, c.status) for c in parsed.calls] == expected
        assert list(parsed.dropped) == []
        assert [c.meta["tool_call_id"] for c in parsed.calls] == [f"c{k}" for k in range(len(expected))]


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        _scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(_name, c, max_size=3), max_leaves=8
    )
)
def test_round_trip_python_literal(value: Any) -> None:
    """`str()` of a JSON-representable dict or list decodes back to it; other text stays text."""
    text = str(value)
    assert decode_literal(text) == (value if isinstance(value, dict | list) else text)


_value = st.recursive(
    st.one_of(_scalar, st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5)),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(_name, _args, st.dictionaries(_name, _value, min_size=1, max_size=3), st.booleans()),
        max_size=5,
    )
)
def test_round_trip_openai_agents(spans: list[tuple[str, dict[str, Any], dict[str, Any], bool]]) -> None:
    """Function spans written as the SDK writes them (`input` JSON text, `output` = `str()` of the dict)."""
    data: list[dict[str, Any]] = [{"object": "trace", "id": "trace_1", "workflow_name": "w", "group_id": "g"}]
    for i, (name, args, out, failed) in enumerate(spans):
        data.append(
            {
                "object": "trace.span",
                "id": f"span_{i}",
                "trace_id": "trace_1",
                "started_at": f"2026-01-01T00:00:{i:02d}+00:00",
                "span_data": {
                    "type": "function",
                    "name": name,
                    "input": orjson.dumps(args).decode(),
                    "output": str(out),
                },
                "error": {"message": "failed", "data": {"error": "x"}} if failed else None,
            }
        )
    parsed = OpenAIAgentsAdapter().parse(orjson.loads(orjson.dumps({"data": data})), CTX)
    assert [(c.tool, c.arguments, c.result, c.status, c.error, c.task_id) for c in parsed.calls] == [
        (n, a, o, "error" if f else "ok", "failed: x" if f else None, "g") for n, a, o, f in spans
    ]
    assert [e.task_id for e in parsed.episodes] == ["g"]


def test_cli_subprocess(shared_data: Path, tmp_path: Path) -> None:
    """The installed entry point on the base64-id file: one process, exit 0, ids decoded."""
    f = shared_data / "formats/otel-genai/openai-v2-chat-tools.base64ids.otlp.jsonl"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "ingest",
            str(f),
            "-o",
            str(tmp_path / "c"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert orjson.loads(p.stdout)["calls"] == 2
    assert {r["trace_id"] for r in _rows(tmp_path / "c")} == {OTEL_TRACE}


def test_openai_agents_batches_as_json_lines(shared_data: Path, tmp_path: Path) -> None:
    """The exporter's batches one a line read like the whole file; a line holding one item is a batch of
    one (its spans' task is then the trace id: the trace item with the group id is on another line)."""
    doc = orjson.loads((shared_data / "formats/openai-agents/agents-sdk-trace-ingest.json").read_bytes())
    one = tmp_path / "one.jsonl"
    one.write_bytes(orjson.dumps(doc) + b"\n")
    ingest([one], tmp_path / "a")
    assert _facts(_rows(tmp_path / "a")) == AGENTS
    assert {r["task_id"] for r in _rows(tmp_path / "a")} == {"conv-42"}
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in doc["data"]))
    rep = ingest([items], tmp_path / "b")
    assert (rep.sources[0].format, rep.sources[0].lines, rep.calls) == ("openai-agents", 9, 3)
    assert _facts(_rows(tmp_path / "b")) == AGENTS
    assert {r["task_id"] for r in _rows(tmp_path / "b")} == {"trace_f4fac11c9ec54fb9bd4ef54d945dcf07"}


def test_unusable_tool_span_is_one_reject_not_also_a_call(shared_data: Path) -> None:
    """A TOOL span whose input is plain text (not arguments) is rejected; it still claims the LLM call
    it ran, so that call is not kept from the history as well, and its history answer is no orphan."""
    doc = orjson.loads((shared_data / "formats/openinference/openai-chat-tools.otlp.jsonl").read_bytes())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    t0 = int(spans[0]["startTimeUnixNano"])
    spans.append(
        _tool_span(
            "00000000000000a1",
            t0 + 1,
            "get_current_weather",
            "Seattle, WA",
            "50F, rain",
            tool_id="call_JpNb8OiAkbIbHzDggfpdDHpi",
        )
    )
    parsed = OpenInferenceAdapter().parse(doc, CTX)
    assert [(c.arguments, c.result) for c in parsed.calls] == [
        ({"location": "San Francisco, CA"}, "70 degrees and sunny")
    ]
    assert [(d.code, "input.value" in d.reason) for d in parsed.dropped] == [("R_FIELD", True)]
