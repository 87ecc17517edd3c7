"""Tool calls in OpenTelemetry GenAI chat spans: `gen_ai.input.messages` / `gen_ai.output.messages`.

The GenAI semantic conventions (1.37+) put a model call's messages on its span, each `{role, parts}`:
a `{type: "tool_call", id, name, arguments}` part in the output asks for a call; a later span's input
repeats the conversation and carries the answer as `{type: "tool_call_response", id, response}` (Pydantic
AI writes `result` for `response`). The messages are a JSON string (what the SDKs emit) or structured
`AnyValue`s. This module turns them into `span_join` mentions and replies; `span_join.join` de-duplicates
the history and joins them.

OpenLLMetry (Traceloop) writes the same messages as indexed attributes instead:
`gen_ai.completion.N.tool_calls.M.{id, name, arguments}` ask for calls (the legacy single
`gen_ai.completion.N.function_call.{name, arguments}` too, without an id), and a later span's
`gen_ai.prompt.N.*` with `role` `tool`, `tool_call_id` and `content` answers them; the prompt history
repeats earlier calls as `gen_ai.prompt.N.tool_calls.M.*`. They are read the same way.

When content capture is set to events only, the messages go to the OTLP **logs** signal and the trace
export holds none: a chat span whose `gen_ai.response.finish_reasons` says the model asked for tools
(`tool_calls`, `tool_call`, `function_call`, `tool_use`) but that has no `gen_ai.output.messages` is then
a reject `R_NO_CONTENT`, unless its trace holds `execute_tool` spans (which carry the calls themselves).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from output_contracts.traces.formats.adapter import R_FIELD, R_NO_CONTENT, RecordError
from output_contracts.traces.formats.otlp import Span
from output_contracts.traces.formats.span_join import Bad, Mention, Reply, mention

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
FINISH = "gen_ai.response.finish_reasons"
_INDEXED = re.compile(r"gen_ai\.(prompt|completion)\.(\d+)\.(.+)")
_INDEXED_CALL = re.compile(r"tool_calls\.(\d+)\.(id|name|arguments)")
TOOL_FINISH = frozenset({"tool_calls", "tool_call", "function_call", "tool_use"})


def _messages(value: Any, where: str) -> list[Any]:
    """A messages attribute as a list: JSON text is decoded; anything not a list is a RecordError."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as e:
            raise RecordError(f"'{where}' is not valid JSON: {e}", field=where) from None
    if not isinstance(value, list):
        raise RecordError(f"'{where}' is not a list of messages", field=where)
    return value


def indexed_messages(attrs: dict[str, Any]) -> tuple[list[Any], list[Any]] | None:
    """OpenLLMetry's `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes as (input, output) messages
    in the `{role, parts}` shape, or None when the span has none."""
    found: dict[str, dict[int, dict[str, Any]]] = {"prompt": {}, "completion": {}}
    for k, v in attrs.items():
        m = _INDEXED.fullmatch(k)
        if m:
            found[m[1]].setdefault(int(m[2]), {})[m[3]] = v
    if not found["prompt"] and not found["completion"]:
        return None

    def message(fields: dict[str, Any]) -> dict[str, Any]:
        calls: dict[int, dict[str, Any]] = {}
        for k, v in fields.items():
            m = _INDEXED_CALL.fullmatch(k)
            if m:
                calls.setdefault(int(m[1]), {})[m[2]] = v
        parts: list[dict[str, Any]] = [
            {"type": "tool_call", "id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
            for _, c in sorted(calls.items())
        ]
        if "function_call.name" in fields:
            parts.append(
                {
                    "type": "tool_call",
                    "name": fields["function_call.name"],
                    "arguments": fields.get("function_call.arguments"),
                }
            )
        if fields.get("role") == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": fields.get("tool_call_id"),
                    "response": fields.get("content"),
                }
            )
        return {"role": fields.get("role"), "parts": parts}

    return (
        [message(f) for _, f in sorted(found["prompt"].items())],
        [message(f) for _, f in sorted(found["completion"].items())],
    )


def asks_for_tools(attrs: dict[str, Any], key: str = FINISH) -> bool:
    """True when a span's finish reason(s) say the model stopped to call tools."""
    reasons = attrs.get(key)
    if isinstance(reasons, str):
        reasons = [reasons]
    return isinstance(reasons, list) and any(r in TOOL_FINISH for r in reasons)


def chat_items(
    spans: list[Span], task_of: dict[int, str], traces_with_exec: set[str]
) -> tuple[list[Mention], list[Reply], list[Bad]]:
    """Mentions, replies and rejects of every chat span, spans taken in (start, document) order."""
    mentions: list[Mention] = []
    replies: list[Reply] = []
    bad: list[Bad] = []
    position = 0
    for s in sorted(spans, key=lambda s: (s.start, s.order)):
        has_in, has_out = INPUT in s.attrs, OUTPUT in s.attrs
        indexed = None if has_in or has_out else indexed_messages(s.attrs)
        if (
            not has_out
            and not (indexed and indexed[1])
            and asks_for_tools(s.attrs)
            and s.trace_id not in traces_with_exec
        ):
            bad.append(
                Bad(
                    (s.start, s.order, 0),
                    R_NO_CONTENT,
                    f"chat span '{s.span_id}' ended asking for tool calls (finish reason tool_calls) but holds "
                    "no gen_ai.output.messages: message content was exported as events (not in the trace "
                    "export); re-export with content captured on spans",
                    s.span,
                )
            )
        for side, key in enumerate((INPUT, OUTPUT)):
            where = f"{s.where}.{key}"
            if indexed is not None:
                msgs = indexed[side]
                where = f"{s.where}.gen_ai.{('prompt', 'completion')[side]}"
            elif key not in s.attrs:
                continue
            else:
                try:
                    msgs = _messages(s.attrs[key], where)
                except RecordError as e:
                    bad.append(Bad((s.start, s.order, position), R_FIELD, e.reason, s.span))
                    continue
            for mi, msg in enumerate(msgs):
                parts = msg.get("parts") if isinstance(msg, dict) else None
                for pi, part in enumerate(parts if isinstance(parts, list) else []):
                    if not isinstance(part, dict):
                        continue
                    position += 1
                    kind = part.get("type")
                    cid = part.get("id")
                    call_id = str(cid) if isinstance(cid, str | int) and not isinstance(cid, bool) else None
                    if kind == "tool_call":
                        pwhere = f"{where}[{mi}].parts[{pi}]"
                        got = mention(
                            trace_id=s.trace_id,
                            span_id=s.span_id,
                            call_id=call_id,
                            name=part.get("name"),
                            raw_args=part.get("arguments"),
                            name_field=f"{pwhere}.name",
                            args_field=f"{pwhere}.arguments",
                            position=position,
                            task_id=task_of[s.order],
                            started_at=s.started_at,
                            sort=(s.start, s.order, position),
                            raw=part,
                            asked=side == 1,
                        )
                        if isinstance(got, Bad):
                            bad.append(got)
                        else:
                            mentions.append(got)
                    elif kind == "tool_call_response":
                        content = part["response"] if "response" in part else part.get("result")
                        replies.append(Reply(s.trace_id, call_id, content, position, part))
    return mentions, replies, bad
