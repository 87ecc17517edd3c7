"""The non-flat adapter formats (DESIGN §2.2): a few clean episodes written as each format records them.

Why a generator for these too: each adapter must turn its format back into the flat records the
episode started as, so the test (tests/sample_traces/test_formats.py) needs the truth next to the file.
The files exercise what adapters get wrong: parallel calls answered out of order (join by id, not by
position), failed calls, arguments as JSON text or structured values, and tool definitions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from .catalog import World
from .episodes import episode_start, make_episode
from .registry import registry
from .tasks import VISIBLE_TOOLS, Task, make_task
from .vocab import hexid

SYSTEM_PROMPT = "You are a retail operations assistant. Use the tools to look things up; never guess."
INSTRUCTIONS = {
    "order_status": "Where is my order {o}? Please check what shipped and what is still in stock.",
    "stock_check": "Do we have enough stock of {s} to ship a customer order this week? Get a shipping quote too.",
    "refund": "Order {o} arrived with a problem. Please refund it.",
    "invoice": "Please invoice order {o} for customer {c}.",
    "shopping": "I am looking for a {q}. What do you have, and what would shipping cost?",
}


def instruction(task: Task) -> str:
    return INSTRUCTIONS[task.scenario].format(
        o=task.orders[0].order_id, s=task.skus[0], c=task.customer.customer_id, q=task.queries[0]
    )


def dumps(v: Any) -> str:
    return orjson.dumps(v).decode()


def output_text(rec: dict[str, Any]) -> str:
    """The tool output as the model saw it: JSON text, or `Error: …` for a failed call."""
    return f"Error: {rec['error']}" if rec["status"] == "error" else dumps(rec["result"])


def call_groups(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Calls grouped into assistant turns: every third turn issues two calls in parallel, so adapters
    must join results to calls by id, not by position."""
    groups: list[list[dict[str, Any]]] = []
    i = 0
    while i < len(records):
        n = 2 if len(groups) % 3 == 2 and i + 1 < len(records) else 1
        groups.append(records[i : i + n])
        i += n
    return groups


def call_id_of(rec: dict[str, Any], prefix: str) -> str:
    return prefix + hexid(rec["trace_id"], rec["step"], n=24)


def visible_specs(task: Task) -> list[dict[str, Any]]:
    """The registry entries of the tools the episode's agent was given, in the order it was given them."""
    by_name = {t["name"]: t for t in registry()["tools"]}
    return [by_name[n] for n in VISIBLE_TOOLS[task.scenario]]


def to_openai_chat(task: Task, records: list[dict[str, Any]]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": instruction(task)},
    ]
    for g in call_groups(records):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id_of(r, "call_"),
                        "type": "function",
                        "function": {"name": r["tool"], "arguments": dumps(r["arguments"])},
                    }
                    for r in g
                ],
            }
        )
        for r in reversed(g):  # results of parallel calls come back in any order
            msgs.append({"role": "tool", "tool_call_id": call_id_of(r, "call_"), "content": output_text(r)})
    msgs.append({"role": "assistant", "content": "I have what I need; here is the summary."})
    tools = [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
        }
        for t in visible_specs(task)
    ]
    return {"id": records[0]["trace_id"], "task_id": task.task_id, "tools": tools, "messages": msgs}


def to_openai_responses(task: Task, records: list[dict[str, Any]]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": SYSTEM_PROMPT}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": instruction(task)}]},
    ]
    for g in call_groups(records):
        for r in g:
            items.append(
                {
                    "type": "function_call",
                    "id": call_id_of(r, "fc_"),
                    "call_id": call_id_of(r, "call_"),
                    "name": r["tool"],
                    "arguments": dumps(r["arguments"]),
                    "status": "completed",
                }
            )
        for r in reversed(g):
            items.append(
                {"type": "function_call_output", "call_id": call_id_of(r, "call_"), "output": output_text(r)}
            )
    items.append(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done; summary below."}],
        }
    )
    tools = [
        {
            "type": "function",
            "name": t["name"],
            "description": t["description"],
            "parameters": t["parameters"],
        }
        for t in visible_specs(task)
    ]
    return {"id": records[0]["trace_id"], "task_id": task.task_id, "tools": tools, "input": items}


def to_anthropic(task: Task, records: list[dict[str, Any]]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": instruction(task)}]
    for k, g in enumerate(call_groups(records)):
        blocks: list[dict[str, Any]] = []
        if k == 0:
            blocks.append({"type": "text", "text": "Let me look that up."})
        blocks += [
            {"type": "tool_use", "id": call_id_of(r, "toolu_"), "name": r["tool"], "input": r["arguments"]}
            for r in g
        ]
        msgs.append({"role": "assistant", "content": blocks})
        results = []
        for r in reversed(g):
            text = output_text(r)
            # Content is a string, or (every other call) a list of text blocks: both are valid.
            content: Any = [{"type": "text", "text": text}] if r["step"] % 2 else text
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call_id_of(r, "toolu_"),
                    "content": content,
                    "is_error": r["status"] == "error",
                }
            )
        msgs.append({"role": "user", "content": results})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "All set."}]})
    tools = [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in visible_specs(task)
    ]
    return {
        "id": records[0]["trace_id"],
        "task_id": task.task_id,
        "system": SYSTEM_PROMPT,
        "tools": tools,
        "messages": msgs,
    }


def _has_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, dict):
        return any(_has_null(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_null(x) for x in v)
    return False


def any_value(v: Any) -> dict[str, Any]:
    """An OTLP JSON AnyValue: int64 as a decimal string, as the OTLP JSON mapping requires."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(x)} for k, x in v.items()]}}
    raise TypeError(type(v).__name__)


def _attr(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def _nanos(ts: str) -> str:
    t = datetime.fromisoformat(ts)
    return str(int(t.timestamp()) * 1_000_000_000)


def to_otel(task: Task, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One TracesData: a root `invoke_agent` span carrying `gen_ai.conversation.id` (the task id) and one
    `execute_tool` child span per call. Arguments and results alternate between JSON text
    (`stringValue`) and structured `kvlistValue`, so adapters must read both."""
    trace_hex = hexid("otel", records[0]["trace_id"], n=32)
    root_id = hexid("span", records[0]["trace_id"], "root", n=16)
    first, last = records[0]["started_at"], records[-1]["started_at"]
    spans: list[dict[str, Any]] = [
        {
            "traceId": trace_hex,
            "spanId": root_id,
            "name": "invoke_agent retail-assistant",
            "kind": 1,
            "startTimeUnixNano": _nanos(first),
            "endTimeUnixNano": str(int(_nanos(last)) + 2_000_000_000),
            "attributes": [
                _attr("gen_ai.operation.name", {"stringValue": "invoke_agent"}),
                _attr("gen_ai.agent.name", {"stringValue": "retail-assistant"}),
                _attr("gen_ai.conversation.id", {"stringValue": task.task_id}),
            ],
            "status": {"code": 1},
        }
    ]
    for r in records:
        structured = r["step"] % 2 == 1
        attrs = [
            _attr("gen_ai.operation.name", {"stringValue": "execute_tool"}),
            _attr("gen_ai.tool.name", {"stringValue": r["tool"]}),
            _attr("gen_ai.tool.type", {"stringValue": "function"}),
            _attr("gen_ai.tool.call.id", {"stringValue": call_id_of(r, "call_")}),
            _attr(
                "gen_ai.tool.call.arguments",
                any_value(r["arguments"]) if structured else {"stringValue": dumps(r["arguments"])},
            ),
        ]
        status: dict[str, Any] = {"code": 1}
        if r["status"] == "error":
            attrs.append(_attr("error.type", {"stringValue": "tool_error"}))
            status = {"code": 2, "message": r["error"]}
        elif structured and not _has_null(r["result"]):
            attrs.append(_attr("gen_ai.tool.call.result", any_value(r["result"])))
        else:
            attrs.append(_attr("gen_ai.tool.call.result", {"stringValue": dumps(r["result"])}))
        start = int(_nanos(r["started_at"]))
        spans.append(
            {
                "traceId": trace_hex,
                "spanId": hexid("span", r["trace_id"], r["step"], n=16),
                "parentSpanId": root_id,
                "name": f"execute_tool {r['tool']}",
                "kind": 1,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 350_000_000),
                "attributes": attrs,
                "status": status,
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", {"stringValue": "retail-agent"})]},
                "scopeSpans": [{"scope": {"name": "retail-agent.tools", "version": "1.0.0"}, "spans": spans}],
            }
        ]
    }


def to_tau_bench(task: Task, records: list[dict[str, Any]], task_num: int, trial: int) -> dict[str, Any]:
    """A τ-bench run: integer `task_id`, `trial`, `reward`, `info`, and `traj` in OpenAI-chat form with
    `name` on tool messages. The ingested trace id is `{task_id}-{trial}`."""
    traj = to_openai_chat(task, records)["messages"]
    names = {call_id_of(r, "call_"): r["tool"] for r in records}
    for m in traj:
        if m["role"] == "tool":
            m["name"] = names[m["tool_call_id"]]
    actions = [{"name": r["tool"], "kwargs": r["arguments"]} for r in records]
    return {
        "task_id": task_num,
        "reward": 1.0,
        "info": {
            "task": {
                "user_id": task.customer.customer_id,
                "instruction": instruction(task),
                "actions": actions,
            },
            "source": "user",
            "user_cost": 0.0,
            "reward_info": {"reward": 1.0, "info": {"r_actions": True}},
        },
        "traj": traj,
        "trial": trial,
    }


#: format file -> (first task number, tasks, episodes per task). Each format gets its own tasks, so
#: ingesting all of sample_traces/ never sees one episode twice.
FORMAT_FILES = {
    "openai-chat.jsonl": (800, 2, 4),
    "openai-responses.jsonl": (810, 2, 4),
    "anthropic.jsonl": (820, 2, 4),
    "otel.jsonl": (830, 2, 4),
    "tau-bench.json": (840, 2, 4),
}


def format_episodes(world: World, name: str) -> list[tuple[Task, int, int, list[dict[str, Any]]]]:
    """The clean episodes written to format file `name`, as flat records: `(task, task number, episode
    number, records)`. The second episode of each file has a failed call (its third), so every
    adapter's error mapping is exercised. Tests use this to compare an adapter's output with the truth."""
    first, n_tasks, per_task = FORMAT_FILES[name]
    out = []
    for t in range(first, first + n_tasks):
        task = make_task(world, t)
        for e in range(per_task):
            idx = t * 100 + e
            recs = make_episode(
                world, task, f"ep-{idx:05d}", episode_start(idx), 1.0, force_error_step=2 if e == 1 else None
            )
            out.append((task, t, e, recs))
    return out


def ingested_trace_id(name: str, t: int, e: int, recs: list[dict[str, Any]]) -> str:
    """The trace id an adapter derives for an episode of format file `name` (DESIGN §2.2)."""
    if name == "tau-bench.json":
        return f"{t}-{e}"
    if name == "otel.jsonl":
        return hexid("otel", recs[0]["trace_id"], n=32)
    return str(recs[0]["trace_id"])


def format_files(world: World) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Each non-flat format file's bytes and its counts."""
    out: dict[str, tuple[bytes, dict[str, Any]]] = {}
    for name in FORMAT_FILES:
        docs: list[dict[str, Any]] = []
        calls = errors = 0
        trace_ids: list[str] = []
        for task, t, e, recs in format_episodes(world, name):
            calls += len(recs)
            errors += sum(r["status"] == "error" for r in recs)
            if name == "openai-chat.jsonl":
                docs.append(to_openai_chat(task, recs))
            elif name == "openai-responses.jsonl":
                docs.append(to_openai_responses(task, recs))
            elif name == "anthropic.jsonl":
                docs.append(to_anthropic(task, recs))
            elif name == "otel.jsonl":
                docs.append(to_otel(task, recs))
            else:
                docs.append(to_tau_bench(task, recs, t, e))
            trace_ids.append(ingested_trace_id(name, t, e, recs))
        if name.endswith(".json"):
            data = orjson.dumps(docs, option=orjson.OPT_INDENT_2) + b"\n"
        else:
            data = b"".join(orjson.dumps(d) + b"\n" for d in docs)
        out[name] = (
            data,
            {"episodes": len(docs), "calls": calls, "error_calls": errors, "trace_ids": trace_ids},
        )
    return out
