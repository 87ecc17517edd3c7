"""The format files hold exactly the generator's episodes, written as each format records them.

Two views: a minimal reader per format written here (checks the files against DESIGN §2.2 without
depending on our adapters), and the project's own ingest (checks that adapters and files agree, call by
call, with the flat truth: tool, arguments, result with its JSON types, status)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import polars as pl
import pytest

from tests.sample_traces.conftest import SAMPLE

Call = tuple[str, str, str, str]  # (tool, canonical arguments, canonical result or error text, status)


def canon(v: Any) -> str:
    """Type-preserving canonical JSON (1 and 1.0 differ), so a float turned int is caught."""
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()


def truth_call(r: dict[str, Any]) -> Call:
    out = canon(r["result"]) if r["status"] == "ok" else f"Error: {r['error']}"
    return (r["tool"], canon(r["arguments"]), out, r["status"])


def from_text(text: str) -> tuple[str, str]:
    if text.startswith("Error: "):
        return text, "error"
    return canon(orjson.loads(text)), "ok"


def chat_calls(messages: list[dict[str, Any]]) -> list[Call]:
    outputs = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    calls = []
    for m in messages:
        for tc in m.get("tool_calls") or []:
            out, status = from_text(outputs[tc["id"]])
            calls.append(
                (tc["function"]["name"], canon(orjson.loads(tc["function"]["arguments"])), out, status)
            )
    return calls


def any_value(v: dict[str, Any]) -> Any:
    ((k, x),) = v.items()
    if k == "intValue":
        assert isinstance(x, str), "OTLP JSON writes int64 as a decimal string"
        return int(x)
    if k == "kvlistValue":
        return {kv["key"]: any_value(kv["value"]) for kv in x["values"]}
    if k == "arrayValue":
        return [any_value(e) for e in x["values"]]
    return x


def read_format(name: str) -> list[list[Call]]:
    """Episodes of a format file as lists of calls, read with a minimal reader of that format."""
    data = (SAMPLE / "formats" / name).read_bytes()
    if name == "tau-bench.json":
        runs = orjson.loads(data)
        assert isinstance(runs, list)
        for run in runs:
            assert set(run) >= {"task_id", "reward", "info", "traj", "trial"}
            assert all("name" in m for m in run["traj"] if m["role"] == "tool")
        return [chat_calls(run["traj"]) for run in runs]
    docs = [orjson.loads(line) for line in data.splitlines()]
    episodes = []
    for d in docs:
        if name == "openai-chat.jsonl":
            episodes.append(chat_calls(d["messages"]))
        elif name == "openai-responses.jsonl":
            outs = {i["call_id"]: i["output"] for i in d["input"] if i["type"] == "function_call_output"}
            episodes.append(
                [
                    (i["name"], canon(orjson.loads(i["arguments"])), *from_text(outs[i["call_id"]]))
                    for i in d["input"]
                    if i["type"] == "function_call"
                ]
            )
        elif name == "anthropic.jsonl":
            results = {}
            for m in d["messages"]:
                if m["role"] == "user" and isinstance(m["content"], list):
                    for b in m["content"]:
                        text = (
                            b["content"]
                            if isinstance(b["content"], str)
                            else "".join(x["text"] for x in b["content"])
                        )
                        results[b["tool_use_id"]] = (text, b["is_error"])
            calls = []
            for m in d["messages"]:
                if m["role"] == "assistant":
                    for b in m["content"]:
                        if b["type"] == "tool_use":
                            text, is_error = results[b["id"]]
                            out, status = from_text(text)
                            assert (status == "error") == is_error
                            calls.append((b["name"], canon(b["input"]), out, status))
            episodes.append(calls)
        elif name == "otel.jsonl":
            (rs,) = d["resourceSpans"]
            (ss,) = rs["scopeSpans"]
            spans = ss["spans"]
            root = spans[0]
            attrs0 = {a["key"]: any_value(a["value"]) for a in root["attributes"]}
            assert attrs0["gen_ai.conversation.id"].startswith("retail-")
            calls = []
            for sp in spans[1:]:
                assert sp["parentSpanId"] == root["spanId"] and sp["traceId"] == root["traceId"]
                a = {x["key"]: x["value"] for x in sp["attributes"]}
                assert any_value(a["gen_ai.operation.name"]) == "execute_tool"
                args = any_value(a["gen_ai.tool.call.arguments"])
                args = orjson.loads(args) if isinstance(args, str) else args
                if sp["status"]["code"] == 2:
                    calls.append(
                        (
                            any_value(a["gen_ai.tool.name"]),
                            canon(args),
                            f"Error: {sp['status']['message']}",
                            "error",
                        )
                    )
                else:
                    res = any_value(a["gen_ai.tool.call.result"])
                    res = orjson.loads(res) if isinstance(res, str) else res
                    calls.append((any_value(a["gen_ai.tool.name"]), canon(args), canon(res), "ok"))
            episodes.append(calls)
    return episodes


@pytest.fixture(scope="module")
def truth(gen: ModuleType) -> dict[str, list[tuple[str, list[Call]]]]:
    """Per format file: `(ingested trace id, calls)` of each episode, from the generator."""
    world = gen.build_world(gen.DEFAULT_SEED)
    return {
        name: [
            (gen.ingested_trace_id(name, t, e, recs), [truth_call(r) for r in recs])
            for _task, t, e, recs in gen.format_episodes(world, name)
        ]
        for name in gen.FORMAT_FILES
    }


def test_format_files_hold_the_generated_episodes(truth: dict[str, list[tuple[str, list[Call]]]]) -> None:
    assert sorted(truth) == [
        "anthropic.jsonl",
        "openai-chat.jsonl",
        "openai-responses.jsonl",
        "otel.jsonl",
        "tau-bench.json",
    ]
    for name, episodes in truth.items():
        assert read_format(name) == [calls for _id, calls in episodes], name
        assert sum(c[3] == "error" for _id, calls in episodes for c in calls) >= 1, name


def test_otel_mixes_text_and_structured_values() -> None:
    kinds = set()
    for line in (SAMPLE / "formats" / "otel.jsonl").read_bytes().splitlines():
        for sp in orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            for a in sp["attributes"]:
                if a["key"].startswith("gen_ai.tool.call."):
                    kinds.add((a["key"], next(iter(a["value"]))))
    assert ("gen_ai.tool.call.result", "stringValue") in kinds and (
        "gen_ai.tool.call.result",
        "kvlistValue",
    ) in kinds
    assert ("gen_ai.tool.call.arguments", "kvlistValue") in kinds


def test_project_ingest_agrees_with_the_truth(
    tmp_path: Path, truth: dict[str, list[tuple[str, list[Call]]]]
) -> None:
    ingest = pytest.importorskip("output_contracts.traces.ingest").ingest
    from output_contracts.traces.corpus import Corpus

    for name, episodes in truth.items():
        out = tmp_path / name.replace(".", "_")
        ingest([SAMPLE / "formats" / name], out)
        calls = Corpus.open(out).scan_calls().collect().sort("trace_id", "step")
        got: dict[str, list[Call]] = {}
        for row in calls.iter_rows(named=True):
            res = (
                canon(orjson.loads(row["result"])) if row["status"] == "ok" else f"Error: {row.get('error')}"
            )
            got.setdefault(row["trace_id"], []).append(
                (
                    row["tool"],
                    canon(orjson.loads(row["arguments"])),
                    res if row["status"] == "ok" else "",
                    row["status"],
                )
            )
        want = {tid: [(c[0], c[1], c[2] if c[3] == "ok" else "", c[3]) for c in cs] for tid, cs in episodes}
        assert got == want, name
        assert calls.filter(pl.col("status") == "error").height == sum(
            c[3] == "error" for _t, cs in episodes for c in cs
        )
