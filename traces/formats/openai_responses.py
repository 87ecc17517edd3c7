"""`openai-responses`: one episode a line, OpenAI Responses API items.

Line: `{"id"|"trace_id", "task_id"?, "items"?: [...], "input"?: [...], "output"?: [...], "tools"?,
"reward"?, "labels"?}`; the item list is `items` when present, else `input` followed by `output` (so a
stored Response object whose `input` was recorded beside it reads as it is). `function_call` items
(`call_id`, `name`, `arguments` as a JSON string) join `function_call_output` items (`call_id`,
`output`: a string or a list of text parts) by `call_id`. Other item types (messages, reasoning, built-in
tool calls) are ignored. The API has no error flag on outputs: an output starting with `Error:` makes a
`status: "error"` call, as in `openai-chat`.
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
    optional_str,
    parse_arguments,
    record_episode,
)
from output_contracts.traces.formats.openai_chat import episode_id
from output_contracts.traces.records import ToolCall

_TYPES = ("function_call", "function_call_output")


def _items(record: dict[str, Any]) -> list[Any] | None:
    if isinstance(record.get("items"), list):
        return list(record["items"])
    parts = [record[k] for k in ("input", "output") if isinstance(record.get(k), list)]
    return [x for p in parts for x in p] if parts else None


class OpenAIResponsesAdapter(Adapter):
    """OpenAI Responses transcripts, one episode a line."""

    name = "openai-responses"

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict):
            return 0
        items = _items(record)
        if items is None:
            return 0
        if any(isinstance(i, dict) and i.get("type") in _TYPES for i in items):
            return 2
        if record.get("object") == "response":
            return 2
        return 1 if any(isinstance(i, dict) and "type" in i for i in items) else 0

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        trace_id = episode_id(record)
        task_id = optional_str(record, "task_id") or trace_id
        items = _items(record)
        if items is None:
            raise RecordError("no item list ('items', 'input' or 'output')", field="items")
        outputs = Answers()
        for pos, it in enumerate(items):
            if isinstance(it, dict) and it.get("type") == "function_call_output":
                cid = it.get("call_id")
                if isinstance(cid, str):
                    outputs.add(cid, pos, it)
                else:
                    outputs.add_unkeyed(pos, it)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = 0
        for k, it in enumerate(items):
            if not isinstance(it, dict) or it.get("type") != "function_call":
                continue
            where = f"items[{k}]"
            if not isinstance(it.get("name"), str):
                raise RecordError(f"'{where}.name' is missing", field=f"{where}.name")
            args = parse_arguments(it.get("arguments"), field=f"{where}.arguments")
            out = outputs.take(it.get("call_id"), k)
            if out is None:
                dropped.append(
                    DroppedCall(
                        index, f"function_call '{it.get('call_id')}' ({it['name']}) has no output", it
                    )
                )
                index += 1
                continue
            calls.append(
                answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=task_id,
                    tool=it["name"],
                    arguments=args,
                    content=out.get("output"),
                    step=len(calls),
                    index=index,
                )
            )
            index += 1
        dropped.extend(outputs.leftovers("function_call_output"))
        return Parsed(calls, [record_episode(record, trace_id, task_id)], dropped)
