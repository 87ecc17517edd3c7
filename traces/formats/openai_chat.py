"""`openai-chat`: one episode a line, OpenAI Chat Completions messages.

Line: `{"id"|"trace_id", "task_id"?, "messages": [...], "tools"?, "reward"?, "labels"?}`. Each assistant
message's `tool_calls[]` (`{id, type: "function", function: {name, arguments}}`, arguments a JSON string)
is joined to the `role: "tool"` message with the same `tool_call_id`. Calls are numbered in the order the
assistant made them; a call no tool message answers is dropped (and reported), the episode kept. Tool
message content may be a string or a list of text parts; a JSON string holding an object/array is
decoded. Chat has no error flag: a tool message whose content starts with `Error:` (the convention of
τ-bench and most agent frameworks) makes a `status: "error"` call with that text as `error`. The legacy
single `function_call` field is read too.
"""

from __future__ import annotations

from typing import Any

from output_contracts.traces.formats.adapter import (
    Adapter,
    Answers,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    answered_call,
    list_of_dicts,
    optional_str,
    parse_arguments,
    record_episode,
)
from output_contracts.traces.records import ToolCall


def episode_id(rec: dict[str, Any]) -> str:
    """`trace_id`, else `id`: the episode's identity in episode formats."""
    for key in ("trace_id", "id"):
        v = rec.get(key)
        if isinstance(v, str) and v:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
    raise RecordError("'trace_id' (or 'id') is missing", field="trace_id")


def chat_calls(
    messages: list[dict[str, Any]],
    *,
    trace_id: str,
    task_id: str,
    ctx: RecordContext,
    field: str = "messages",
) -> tuple[list[ToolCall], list[DroppedCall]]:
    """Join assistant `tool_calls` to `tool` messages by id; shared by `openai-chat` and `tau-bench`.

    Chat has no error flag: a tool message whose content starts with `Error:` (the convention τ-bench
    and most agent frameworks use for a failed tool) is an error call (`answered_call` without `failed`).
    """
    answers = Answers()
    for pos, m in enumerate(messages):
        if m.get("role") in ("tool", "function"):
            key = m.get("tool_call_id")
            if key is None and m.get("role") == "function":
                key = "fn:" + str(m.get("name"))
            if isinstance(key, str):
                answers.add(key, pos, m)
            else:
                answers.add_unkeyed(pos, m)
    calls: list[ToolCall] = []
    dropped: list[DroppedCall] = []
    index = 0
    for mi, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        requested: list[tuple[str | None, Any, str]] = []
        tcs = m.get("tool_calls")
        if isinstance(tcs, list):
            for ti, tc in enumerate(tcs):
                where = f"{field}[{mi}].tool_calls[{ti}]"
                if not isinstance(tc, dict):
                    raise RecordError(f"'{where}' is not an object", field=where)
                fn = tc.get("function")
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise RecordError(f"'{where}.function.name' is missing", field=f"{where}.function.name")
                requested.append((tc.get("id"), fn, where))
        fc = m.get("function_call")
        if isinstance(fc, dict) and isinstance(fc.get("name"), str):
            requested.append(("fn:" + fc["name"], fc, f"{field}[{mi}].function_call"))
        for call_key, fn, where in requested:
            args = parse_arguments(fn.get("arguments"), field=f"{where}.function.arguments")
            answer = answers.take(call_key, mi)
            if answer is None:
                dropped.append(
                    DroppedCall(
                        index, f"tool call '{call_key}' ({fn['name']}) has no matching tool message", fn
                    )
                )
                index += 1
                continue
            calls.append(
                answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=task_id,
                    tool=fn["name"],
                    arguments=args,
                    content=answer.get("content"),
                    step=len(calls),
                    index=index,
                )
            )
            index += 1
    dropped.extend(answers.leftovers("tool message"))
    return calls, dropped


def has_chat_tools(messages: Any) -> bool:
    """True when a message list carries OpenAI-style tool calls or tool messages."""
    if not isinstance(messages, list):
        return False
    for m in messages:
        if isinstance(m, dict) and (
            m.get("tool_calls") or (m.get("role") == "tool" and "tool_call_id" in m) or m.get("function_call")
        ):
            return True
    return False


class OpenAIChatAdapter(Adapter):
    """OpenAI Chat Completions transcripts, one episode a line."""

    name = "openai-chat"
    marks = frozenset({"messages", "role", "content", "tool_calls", "tool_call_id", "function", "tool"})

    def lacks(self, record: Any) -> str | None:
        """The shape is a `messages` list of OpenAI chat messages: objects with a `role` (a list of
        other message objects, such as AutoGen's `{source, type, content}` events, is not chat)."""
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            return "no 'messages' list"
        if not any(isinstance(m, dict) and isinstance(m.get("role"), str) for m in record["messages"]):
            return "no message with a 'role'"
        return None

    def sniff(self, record: Any) -> int:
        if self.lacks(record) is not None:
            return 0
        return 2 if has_chat_tools(record["messages"]) else 1

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        trace_id = episode_id(record)
        task_id = optional_str(record, "task_id") or trace_id
        messages = list_of_dicts(record, "messages")
        calls, dropped = chat_calls(messages, trace_id=trace_id, task_id=task_id, ctx=ctx)
        return Parsed(calls, [record_episode(record, trace_id, task_id)], dropped)
