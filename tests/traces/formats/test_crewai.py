"""CrewAI traces, as the OpenInference instrumentation exports them (`openinference-instrumentation-crewai`
1.1.21 on crewai 1.15.44), read by the `openinference` adapter: no CrewAI adapter of its own.

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
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest

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
