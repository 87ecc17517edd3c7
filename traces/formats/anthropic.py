"""`anthropic`: one episode a line, Anthropic Messages API transcripts.

Line: `{"id"|"trace_id", "task_id"?, "messages": [...], "tools"?, "system"?, "reward"?, "labels"?}`.
Assistant content blocks `{type: "tool_use", id, name, input}` join user content blocks
`{type: "tool_result", tool_use_id, content, is_error}` by id. `content` is a string or a list of
blocks; text blocks are joined and a JSON object/array in the text is decoded. `is_error: true` makes
a `status: "error"` call with the text as `error`. A `tool_use` no `tool_result` answers is dropped
(and reported), the episode kept.
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
    record_episode,
)
from output_contracts.traces.formats.openai_chat import episode_id
from output_contracts.traces.records import ToolCall


def _blocks(messages: Any) -> list[tuple[int, int, dict[str, Any]]]:
    out: list[tuple[int, int, dict[str, Any]]] = []
    if not isinstance(messages, list):
        return out
    for mi, m in enumerate(messages):
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            out.extend((mi, bi, b) for bi, b in enumerate(content) if isinstance(b, dict))
    return out


class AnthropicAdapter(Adapter):
    """Anthropic Messages transcripts, one episode a line."""

    name = "anthropic"

    marks = frozenset({"messages", "role", "content", "tool_use", "tool_result", "tool_use_id", "input"})

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            return "no 'messages' list"
        if any(b.get("type") in ("tool_use", "tool_result") for _, _, b in _blocks(record["messages"])):
            return None
        return "no message content block of type tool_use or tool_result"

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        trace_id = episode_id(record)
        task_id = optional_str(record, "task_id") or trace_id
        messages = list_of_dicts(record, "messages")
        blocks = _blocks(messages)
        results = Answers()
        for mi, _, b in blocks:
            if b.get("type") == "tool_result":
                if isinstance(b.get("tool_use_id"), str):
                    results.add(b["tool_use_id"], mi, b)
                else:
                    results.add_unkeyed(mi, b)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = 0
        for mi, bi, b in blocks:
            if b.get("type") != "tool_use":
                continue
            where = f"messages[{mi}].content[{bi}]"
            if not isinstance(b.get("name"), str):
                raise RecordError(f"'{where}.name' is missing", field=f"{where}.name")
            args = b.get("input", {})
            if not isinstance(args, dict):
                raise RecordError(f"'{where}.input' is not an object", field=f"{where}.input")
            res = results.take(b.get("id"), mi)
            if res is None:
                dropped.append(
                    DroppedCall(index, f"tool_use '{b.get('id')}' ({b['name']}) has no tool_result", b)
                )
                index += 1
                continue
            calls.append(
                answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=task_id,
                    tool=b["name"],
                    arguments=args,
                    content=res.get("content"),
                    failed=res.get("is_error") is True,
                    step=len(calls),
                    index=index,
                )
            )
            index += 1
        dropped.extend(results.leftovers("tool_result"))
        return Parsed(calls, [record_episode(record, trace_id, task_id)], dropped)
