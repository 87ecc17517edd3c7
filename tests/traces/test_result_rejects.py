"""Tool results that answer no call are rejects, never dropped in silence.

For every episode format that joins results to calls by id (openai-chat and tau-bench through
`chat_calls`, anthropic, openai-responses): a result whose id matches no call, a second result to an
answered call, a result placed before its call, and a result without an id each become one line of
`rejects.jsonl` with its own code, and the conservation of the source still holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import (
    R_DUPLICATE_RESULT,
    R_ORPHAN_RESULT,
    R_UNKEYED_RESULT,
    R_UNMATCHED,
)
from output_contracts.traces.ingest import ingest


def _chat() -> dict[str, Any]:
    return {
        "trace_id": "t1",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "early", "content": "{}"},  # 1: before its call
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "early", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": '{"x": 1}'},  # 3: answers a
            {"role": "tool", "tool_call_id": "a", "content": '{"x": 2}'},  # 4: a second answer to a
            {"role": "tool", "tool_call_id": "ghost", "content": "{}"},  # 5: no such call
            {"role": "tool", "content": "{}"},  # 6: no id
        ],
    }


def _anthropic() -> dict[str, Any]:
    return {
        "trace_id": "t1",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "early", "content": "{}"}],
            },  # 0
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "early", "name": "g", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "{}"}]},  # 2
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "{}"}]},  # 3
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "{}"}],
            },  # 4
            {"role": "user", "content": [{"type": "tool_result", "content": "{}"}]},  # 5
        ],
    }


def _responses() -> dict[str, Any]:
    return {
        "id": "t1",
        "items": [
            {"type": "function_call_output", "call_id": "early", "output": "{}"},  # 0
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "early", "name": "g", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "{}"},  # 3
            {"type": "function_call_output", "call_id": "a", "output": "{}"},  # 4
            {"type": "function_call_output", "call_id": "ghost", "output": "{}"},  # 5
            {"type": "function_call_output", "output": "{}"},  # 6
        ],
    }


#: format -> (record, expected (code, index) rejects: the call `early` is unmatched (its answer came
#: first), its answer an orphan; the second answer to `a` a duplicate; `ghost` an orphan; no id unkeyed)
CASES = {
    "openai-chat": (
        _chat,
        [
            (R_UNMATCHED, 1),
            (R_ORPHAN_RESULT, 1),
            (R_DUPLICATE_RESULT, 4),
            (R_ORPHAN_RESULT, 5),
            (R_UNKEYED_RESULT, 6),
        ],
    ),
    "anthropic": (
        _anthropic,
        [
            (R_UNMATCHED, 1),
            (R_ORPHAN_RESULT, 0),
            (R_DUPLICATE_RESULT, 3),
            (R_ORPHAN_RESULT, 4),
            (R_UNKEYED_RESULT, 5),
        ],
    ),
    "openai-responses": (
        _responses,
        [
            (R_UNMATCHED, 1),
            (R_ORPHAN_RESULT, 0),
            (R_DUPLICATE_RESULT, 4),
            (R_ORPHAN_RESULT, 5),
            (R_UNKEYED_RESULT, 6),
        ],
    ),
}


def _results(rec: dict[str, Any]) -> list[Any]:
    """Every tool result of a record, whatever the format calls it."""
    out = [m for m in rec.get("messages", []) if m.get("role") == "tool"]
    for m in rec.get("messages", []):
        if isinstance(m.get("content"), list):
            out += [b for b in m["content"] if b.get("type") == "tool_result"]
    out += [i for i in rec.get("items", []) if i.get("type") == "function_call_output"]
    return out


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_every_result_is_joined_or_rejected(fmt: str, tmp_path: Path) -> None:
    make, want = CASES[fmt]
    src = tmp_path / "t.jsonl"
    src.write_bytes(orjson.dumps(make()) + b"\n")
    rep = ingest([src], tmp_path / "c", format=fmt)
    c = Corpus.open(tmp_path / "c")
    calls = c.scan_calls().collect()
    assert calls["tool"].to_list() == ["f"] and rep.calls == 1  # only `a` is a call with its answer
    got = sorted((r["code"], r["index"]) for r in c.rejects())
    assert got == sorted(want), c.rejects()
    for r in c.rejects():
        assert r["source"] == str(src) and r["line"] == 1 and r["error"]
    # every tool result of the record is accounted for: the one joined to `a`, the rest rejected
    rejected_results = [r for r in c.rejects() if r["code"] != R_UNMATCHED]
    assert len(rejected_results) + 1 == len(_results(make()))
    man = c.manifest()
    assert man["counts"]["rejects"] == len(want)


def test_tau_bench_shares_the_chat_join(tmp_path: Path) -> None:
    """τ-bench trajectories are chat messages under `traj`: the same leftovers are rejected."""
    rec = {"task_id": 7, "reward": 1.0, "traj": _chat()["messages"]}
    src = tmp_path / "t.json"
    src.write_bytes(orjson.dumps([rec]))
    ingest([src], tmp_path / "c", format="tau-bench")
    codes = sorted(r["code"] for r in Corpus.open(tmp_path / "c").rejects())
    assert codes == sorted(
        [R_UNMATCHED, R_ORPHAN_RESULT, R_DUPLICATE_RESULT, R_ORPHAN_RESULT, R_UNKEYED_RESULT]
    )
