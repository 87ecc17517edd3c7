"""`openinference`: OTLP JSON traces written with OpenInference conventions (Arize Phoenix, the
OpenInference instrumentations of OpenAI, LangChain, LlamaIndex, the OpenAI Agents SDK, ...).

Spans carry `openinference.span.kind`. Two kinds hold tool calls:

- **`TOOL` spans** (the execution): `tool.name` → `tool` (else the span name); `input.value` (a JSON
  object as text) → `arguments`, except a **call envelope** (smolagents' instrumentation records the
  Python call `tool(*args, **kwargs)`): an object whose keys are exactly `args` (a list) and `kwargs`
  (an object), plus optionally `sanitize_inputs_outputs`, is unwrapped to `kwargs` when `args` is
  empty, to `args[0]` when `args` is one object and `kwargs` is empty, and is otherwise a reject
  `R_FIELD` (positional values have no parameter names); `sanitize_inputs_outputs` is dropped; `output.value` → `result` (decoded when it is a JSON object or array);
  span status ERROR → `status: "error"` with the status message (else the `exception` event's message);
  `tool.id` (else `tool_call.id`) is the call id it answers.
- **`LLM` spans** (the conversation), attributes flattened by index:
  `llm.output_messages.N.message.tool_calls.M.tool_call.{id, function.name, function.arguments}` ask for
  calls; a later span's `llm.input_messages.N.message.*` with `role` `tool`, `tool_call_id` and `content`
  (or `contents.K.message_content.text`, joined) answers them. The input history repeats earlier calls;
  they are de-duplicated by (trace, call id).

Reconciliation (`span_join`): a `TOOL` span is an execution span. It claims the LLM-span call with its
call id in the same trace, or, having no id (smolagents), the first unclaimed LLM-span call (in the
order the model asked for them) of the same tool with equal arguments, among the calls of its own
agent step when the `TOOL` span and the LLM span that asked share their parent span (smolagents' `Step
N` span holds the step's model call and its tool runs), else among the trace's; the pair is one call whose status and result come from the `TOOL` span (the history's
tool message for that id is consumed, not an orphan). LLM-span calls no `TOOL` span claims are answered
by the history; `TOOL` spans no LLM span asked for are calls on their own. Nothing is counted twice.

`task_id` = `session.id` (else `gen_ai.conversation.id`) on the span or its nearest ancestor, else the
trace id. OTel GenAI attributes in the same record (`execute_tool`, chat messages) are read too, as in
`otel`. An LLM span whose `llm.finish_reason` asks for tools but that records no output messages, in a
trace without `TOOL` spans, is a reject `R_NO_CONTENT` (outputs hidden or not captured).
"""

from __future__ import annotations

import re
from typing import Any, cast

from output_contracts.traces.formats.adapter import (
    R_NO_CONTENT,
    RecordError,
    decode_result,
    parse_arguments,
    text_of_blocks,
)
from output_contracts.traces.formats.otel import CONV, OtelAdapter
from output_contracts.traces.formats.otel_chat import asks_for_tools
from output_contracts.traces.formats.otlp import Span, error_message, is_error_status
from output_contracts.traces.formats.span_join import Bad, Exec, Mention, Reply, mention

KIND = "openinference.span.kind"
SESSION = "session.id"
_MSG = re.compile(r"llm\.(input|output)_messages\.(\d+)\.message\.(.+)")
_CALL = re.compile(r"tool_calls\.(\d+)\.tool_call\.(.+)")
_PART = re.compile(r"contents\.(\d+)\.message_content\.text")


def has_openinference(record: Any) -> bool:
    """True when some span of an OTLP `TracesData` record carries `openinference.span.kind`."""
    if not isinstance(record, dict):
        return False
    for r in record.get("resourceSpans") or ():
        for ss in (r.get("scopeSpans") or ()) if isinstance(r, dict) else ():
            for span in (ss.get("spans") or ()) if isinstance(ss, dict) else ():
                attrs = span.get("attributes") if isinstance(span, dict) else None
                if isinstance(attrs, list) and any(
                    isinstance(a, dict) and a.get("key") == KIND for a in attrs
                ):
                    return True
    return False


#: The keys of the call envelope smolagents' instrumentation records as a TOOL span's `input.value`:
#: the Python call `tool(*args, **kwargs)` (smolagents adds `sanitize_inputs_outputs`).
ENVELOPE_KEYS = frozenset({"args", "kwargs"})
ENVELOPE_EXTRA = frozenset({"sanitize_inputs_outputs"})


def is_call_envelope(value: dict[str, Any]) -> bool:
    """True for a call envelope: an object with exactly `args` (a list) and `kwargs` (an object), and
    at most `sanitize_inputs_outputs` besides."""
    keys = value.keys()
    return (
        keys >= ENVELOPE_KEYS
        and keys <= ENVELOPE_KEYS | ENVELOPE_EXTRA
        and isinstance(value["args"], list)
        and isinstance(value["kwargs"], dict)
    )


def unwrap_call_envelope(value: dict[str, Any], *, field: str) -> dict[str, Any]:
    """The arguments a call envelope stands for: `kwargs` when `args` is empty; the one positional
    object when `args` is `[{...}]` and `kwargs` is empty (smolagents' `tool({...})` form); any other
    positional arguments are not named, so they are a `RecordError` naming `field`.
    `sanitize_inputs_outputs` is the framework's own flag, not an argument of the tool: dropped."""
    args, kwargs = value["args"], value["kwargs"]
    if not args:
        return cast(dict[str, Any], kwargs)
    if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
        return cast(dict[str, Any], args[0])
    raise RecordError(
        f"'{field}' passes {len(args)} positional argument(s) the tool's parameters do not name", field=field
    )


def tool_exec(s: Span, task_id: str) -> Exec:
    """The `Exec` of one `TOOL` span (a reject, `R_FIELD`, when `input.value` is not a JSON object:
    plain-text input is not guessed into arguments)."""
    attrs = s.attrs
    name = attrs.get("tool.name") or s.span.get("name")
    if not isinstance(name, str) or not name:
        raise RecordError(f"'{s.where}' is a TOOL span without tool.name", field=f"{s.where}.attributes")
    raw_args = attrs.get("input.value")
    reject = None
    try:
        args = None if raw_args is None else parse_arguments(raw_args, field=f"{s.where}.input.value")
        if args is not None and is_call_envelope(args):
            args = unwrap_call_envelope(args, field=f"{s.where}.input.value")
    except RecordError as e:
        args, reject = None, (e.code, e.reason)
    has_result = "output.value" in attrs
    error = None
    if is_error_status(s.span):
        error = error_message(s.span, attrs) or "error"
    cid = attrs.get("tool.id", attrs.get("tool_call.id"))
    return Exec(
        trace_id=s.trace_id,
        call_id=None if cid is None else str(cid),
        tool=name,
        arguments=args,
        has_result=has_result,
        result=decode_result(attrs.get("output.value")),
        error=error,
        task_id=task_id,
        started_at=s.started_at,
        sort=(s.start, s.order, 0),
        meta={"span_id": s.span_id},
        raw=s.span,
        reject=reject,
        group=s.parent_id,
    )


def _messages(attrs: dict[str, Any]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """`{"input": [(N, fields)], "output": [...]}` from the flattened `llm.*_messages.N.message.*` keys."""
    found: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
    for k, v in attrs.items():
        m = _MSG.fullmatch(k)
        if m:
            found[m[1]].setdefault(int(m[2]), {})[m[3]] = v
    return {side: sorted(msgs.items()) for side, msgs in found.items()}


def _content(fields: dict[str, Any]) -> Any:
    if "content" in fields:
        return fields["content"]
    parts = sorted((int(m[1]), v) for k, v in fields.items() if (m := _PART.fullmatch(k)))
    return text_of_blocks([{"type": "text", "text": v} for _, v in parts]) if parts else None


def llm_items(
    spans: list[Span], task_of: dict[int, str], traces_with_tool: set[str]
) -> tuple[list[Mention], list[Reply], list[Bad]]:
    """Mentions, replies and rejects of every `LLM` span, spans taken in (start, document) order."""
    mentions: list[Mention] = []
    replies: list[Reply] = []
    bad: list[Bad] = []
    position = 0
    for s in sorted(spans, key=lambda s: (s.start, s.order)):
        if s.attrs.get(KIND) != "LLM":
            continue
        msgs = _messages(s.attrs)
        if (
            not msgs["output"]
            and asks_for_tools(s.attrs, "llm.finish_reason")
            and s.trace_id not in traces_with_tool
        ):
            reason = (
                f"LLM span '{s.span_id}' ended asking for tool calls (llm.finish_reason tool_calls) but records "
                "no llm.output_messages: message content was not captured on the span"
            )
            bad.append(Bad((s.start, s.order, 0), R_NO_CONTENT, reason, s.span))
        for side in ("input", "output"):
            for n, fields in msgs[side]:
                calls: dict[int, dict[str, Any]] = {}
                for k, v in fields.items():
                    m = _CALL.fullmatch(k)
                    if m:
                        calls.setdefault(int(m[1]), {})[m[2]] = v
                for _, call in sorted(calls.items()):
                    position += 1
                    sort = (s.start, s.order, position)
                    cid = call.get("id")
                    where = f"{s.where}.llm.{side}_messages.{n}"
                    got = mention(
                        trace_id=s.trace_id,
                        span_id=s.span_id,
                        call_id=None if cid is None else str(cid),
                        name=call.get("function.name"),
                        raw_args=call.get("function.arguments"),
                        name_field=f"{where}.function.name",
                        args_field=f"{where}.function.arguments",
                        position=position,
                        task_id=task_of[s.order],
                        started_at=s.started_at,
                        sort=sort,
                        raw=call,
                        group=s.parent_id,
                        asked=side == "output",
                    )
                    if isinstance(got, Bad):
                        bad.append(got)
                    else:
                        mentions.append(got)
                if fields.get("role") == "tool":
                    position += 1
                    tcid = fields.get("tool_call_id")
                    replies.append(
                        Reply(
                            s.trace_id,
                            None if tcid is None else str(tcid),
                            _content(fields),
                            position,
                            fields,
                        )
                    )
    return mentions, replies, bad


class OpenInferenceAdapter(OtelAdapter):
    """OTLP JSON `TracesData` holding OpenInference spans (one a line or one a file)."""

    name = "openinference"
    task_keys = (SESSION, CONV)

    marks = frozenset({"resourceSpans", "scopeSpans", "spans", "attributes", KIND})

    def lacks(self, record: Any) -> str | None:
        if has_openinference(record):
            return None
        if isinstance(record, dict) and isinstance(record.get("resourceSpans"), list):
            return f"no span with '{KIND}'"
        return f"no 'resourceSpans' list with '{KIND}' spans"

    def sniff(self, record: Any) -> int:
        return 2 if has_openinference(record) else 0

    def extra_items(
        self, spans: list[Span], task_of: dict[int, str]
    ) -> tuple[list[Exec], list[Mention], list[Reply], list[Bad]]:
        tools = [tool_exec(s, task_of[s.order]) for s in spans if s.attrs.get(KIND) == "TOOL"]
        mentions, replies, bad = llm_items(spans, task_of, {e.trace_id for e in tools})
        return tools, mentions, replies, bad
