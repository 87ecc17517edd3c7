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
#: The other Responses item types a transcript holds (a partial sign of the format, see `sniff`).
_ITEM_TYPES = (
    "message",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "code_interpreter_call",
    "image_generation_call",
    "local_shell_call",
    "local_shell_call_output",
    "mcp_call",
    "mcp_list_tools",
    "custom_tool_call",
    "custom_tool_call_output",
    "item_reference",
)


def _items(record: dict[str, Any]) -> list[Any] | None:
    if isinstance(record.get("items"), list):
        return list(record["items"])
    parts = [record[k] for k in ("input", "output") if isinstance(record.get(k), list)]
    return [x for p in parts for x in p] if parts else None


class OpenAIResponsesAdapter(Adapter):
    """OpenAI Responses transcripts, one episode a line."""

    name = "openai-responses"

    marks = frozenset(
        {"items", "input", "output", "function_call", "function_call_output", "call_id", "response"}
    )

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or (items := _items(record)) is None:
            return "no 'items', 'input' or 'output' list"
        if record.get("object") == "response" or any(
            isinstance(i, dict) and i.get("type") in _TYPES for i in items
        ):
            return None
        return "no function_call or function_call_output item"

    def sniff(self, record: Any) -> int:
        if self.lacks(record) is None:
            return 2
        if not isinstance(record, dict) or (items := _items(record)) is None:
            return 0
        # a partial sign: items of the Responses item types (a transcript with no function call yet)
        return 1 if any(isinstance(i, dict) and i.get("type") in _ITEM_TYPES for i in items) else 0

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
