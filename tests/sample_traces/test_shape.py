"""The clean set has the promised shape: ≥ 300 tasks, ≥ 1,500 episodes, ≥ 10,000 calls, flat records
of DESIGN §2.1, several calls an episode and several episodes a task, and the counts recorded in
planted.json are the real ones."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

FLAT_KEYS = [
    "trace_id",
    "task_id",
    "step",
    "tool",
    "arguments",
    "result",
    "status",
    "error",
    "started_at",
    "labels",
    "reward",
    "tools",
]


def test_sizes(clean: list[dict[str, Any]], planted: dict[str, Any]) -> None:
    tasks = {r["task_id"] for r in clean}
    traces = {r["trace_id"] for r in clean}
    assert len(tasks) >= 300 and len(traces) >= 1500 and len(clean) >= 10_000
    c = planted["counts"]["clean"]
    assert (c["tasks"], c["episodes"], c["calls"]) == (len(tasks), len(traces), len(clean))
    assert c["by_tool"] == dict(sorted(Counter(r["tool"] for r in clean).items()))
    assert len(c["by_tool"]) >= 8 and min(c["by_tool"].values()) >= 300


def test_records_are_flat_call_records(clean: list[dict[str, Any]], faulty: list[dict[str, Any]]) -> None:
    for r in clean + faulty:
        assert list(r) == FLAT_KEYS
        assert re.fullmatch(r"retail-\d{3}", r["task_id"]) and re.fullmatch(r"ep-\d{5}", r["trace_id"])
        assert isinstance(r["arguments"], dict) and r["status"] in ("ok", "error")
        if r["status"] == "error":
            assert r["result"] is None and isinstance(r["error"], str) and r["error"]
        else:
            assert isinstance(r["result"], dict) and r["error"] is None
        assert r["started_at"].endswith("Z")


def test_episodes_and_tasks_have_several_calls(clean: list[dict[str, Any]]) -> None:
    per_trace = Counter(r["trace_id"] for r in clean)
    assert min(per_trace.values()) >= 3 and sum(per_trace.values()) / len(per_trace) >= 6
    eps_per_task = Counter(t for t, _ in {(r["task_id"], r["trace_id"]) for r in clean})
    assert min(eps_per_task.values()) >= 3
    # Steps number the calls of a trace from 0, in time order.
    steps: dict[str, list[int]] = {}
    times: dict[str, list[str]] = {}
    for r in clean:
        steps.setdefault(r["trace_id"], []).append(r["step"])
        times.setdefault(r["trace_id"], []).append(r["started_at"])
    assert all(s == list(range(len(s))) for s in steps.values())
    assert all(t == sorted(t) for t in times.values())


def test_some_calls_fail_realistically(clean: list[dict[str, Any]]) -> None:
    errors = [r for r in clean if r["status"] == "error"]
    assert 0.005 <= len(errors) / len(clean) <= 0.03
    assert len({r["tool"] for r in errors}) >= 8


def test_visible_tools_cover_every_call(
    clean: list[dict[str, Any]], faulty: list[dict[str, Any]], planted: dict[str, Any]
) -> None:
    """Each episode declares one visible tool set (repeated on its calls) that includes every tool it calls;
    the inventory substitutes are visible 1, 2 or 3 at a time across episodes."""
    names = set(planted["counts"]["clean"]["by_tool"])
    per_trace: dict[str, tuple[str, ...]] = {}
    for r in clean + faulty:
        tools = tuple(r["tools"])
        assert per_trace.setdefault(r["trace_id"], tools) == tools
        assert r["tool"] in tools and set(tools) <= names and len(set(tools)) == len(tools)
    inventory = {"lookup_inventory", "query_warehouse", "get_stock_by_sku"}
    assert {len(inventory & set(t)) for t in per_trace.values()} == {1, 2, 3}


def test_ids_are_unique_per_call(clean: list[dict[str, Any]]) -> None:
    """Quote, invoice and refund ids are fresh on every call (noise: never a domain or an echo)."""
    for tool, key in (
        ("quote_shipping", "quote_id"),
        ("create_invoice", "invoice_id"),
        ("refund_order", "refund_id"),
    ):
        ids = [r["result"][key] for r in clean if r["tool"] == tool and r["status"] == "ok"]
        assert len(ids) >= 300 and len(set(ids)) == len(ids), tool
