"""`otel`: OpenTelemetry OTLP JSON exports of GenAI spans (`execute_tool` spans and chat spans).

A record is one `TracesData` object (`{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`), one a
line, or one per `.json` file (decoding: `otlp`). Two kinds of span hold tool calls (GenAI semantic
conventions):

- **`execute_tool` spans** (`gen_ai.operation.name`): one call each.
  - `gen_ai.tool.name` → `tool` (required; a span without it is rejected with the record);
  - `gen_ai.tool.call.arguments` (Pydantic AI's legacy `tool_arguments`) → `arguments` (an object,
    structured or as a JSON string; absent → the arguments of the chat message that asked for the call,
    else `{}`, since the attribute is opt-in and many tools take no arguments);
  - `gen_ai.tool.call.result` (legacy `tool_response`) → `result` (structured or a JSON string); absent →
    the `tool_call_response` of the chat history; with neither and no error status the call is dropped;
  - span `status.code` ERROR (`2` or `"STATUS_CODE_ERROR"`) → `status: "error"`, `error` = the status
    message, else the last `exception` event's `exception.message`, else `error.type`, else the recorded
    result text, else `"error"`;
  - `gen_ai.tool.call.id` and `spanId` go to `meta`.
- **chat spans** with `gen_ai.input.messages` / `gen_ai.output.messages`: `tool_call` parts answered by
  later `tool_call_response` parts (`otel_chat`). A call that also has an `execute_tool` span (same trace
  and call id) is that span's call, counted once (`span_join`). A call one trace asked for and another
  trace answers (no parent span: each chat call its own trace) is the asking trace's call, joined across
  the records and sources of one ingest run (`span_join`, phase 0; `carry_over`).

`traceId` (hex or protobuf JSON base64, as lower-case hex) → `trace_id`; `gen_ai.conversation.id` on the
span or its nearest ancestor (by `parentSpanId`, within the same record) → `task_id`, else the trace
id; `startTimeUnixNano` → `started_at` (RFC 3339, UTC). Calls are ordered by start time, then document
order; `step` is left to ingest, which numbers a trace's calls in reading order. Every trace seen in a
record is an episode, even one with no tool call. Unknown fields are ignored. Out-of-range integers
reject the record, naming the field: an `intValue` outside int64, a `startTimeUnixNano` outside fixed64.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from output_contracts.traces.formats.adapter import (
    Adapter,
    Parsed,
    RecordContext,
    RecordError,
    error_text,
    parse_arguments,
)
from output_contracts.traces.formats.otel_chat import chat_items
from output_contracts.traces.formats.otlp import (
    Span,
    ancestor_attr,
    decoded_spans,
    error_message,
    is_error_status,
)
from output_contracts.traces.formats.span_join import Bad, Carry, Exec, Mention, Reply, join
from output_contracts.traces.records import Episode

OP = "gen_ai.operation.name"
CONV = "gen_ai.conversation.id"
#: (current attribute, Pydantic AI's legacy instrumentation version 2 name)
ARGS = ("gen_ai.tool.call.arguments", "tool_arguments")
RESULT = ("gen_ai.tool.call.result", "tool_response")


def _first(attrs: dict[str, Any], keys: tuple[str, str]) -> tuple[str | None, Any]:
    for k in keys:
        if k in attrs:
            return k, attrs[k]
    return None, None


def _exec(s: Span, task_id: str) -> Exec:
    """The `Exec` of one `execute_tool` span (a reject, `R_FIELD`, when its arguments are not an object)."""
    attrs = s.attrs
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        raise RecordError(
            f"'{s.where}' is an execute_tool span without gen_ai.tool.name", field=f"{s.where}.attributes"
        )
    akey, raw_args = _first(attrs, ARGS)
    reject = None
    try:
        args = None if raw_args is None else parse_arguments(raw_args, field=f"{s.where}.{akey}")
    except RecordError as e:
        args, reject = None, (e.code, e.reason)
    rkey, result = _first(attrs, RESULT)
    error = None
    if is_error_status(s.span):
        error = error_message(s.span, attrs) or (error_text(result) if rkey is not None else "error")
    cid = attrs.get("gen_ai.tool.call.id")
    meta: dict[str, Any] = {"span_id": s.span_id}
    return Exec(
        trace_id=s.trace_id,
        call_id=None if cid is None else str(cid),
        tool=name,
        arguments=args,
        has_result=rkey is not None,
        result=result,
        error=error,
        task_id=task_id,
        started_at=s.started_at,
        sort=(s.start, s.order, 0),
        meta=meta,
        raw=s.span,
        reject=reject,
    )


class OtelAdapter(Adapter):
    """OTLP JSON `TracesData`, one a line or one a file."""

    name = "otel"
    whole_file = True
    #: Calls waiting for an answer in a later record or source of the same ingest run (`carry_over`);
    #: None (the registered instance, `contracts check`): each record is joined alone.
    carry: Carry | None = None

    def begin(self) -> OtelAdapter:
        """A reader of one source (its own instance: `carry_over` gives it the run's waiting calls)."""
        return type(self)()

    def carry_over(self, run_state: dict[str, Any]) -> None:
        """Join across the records and sources of one ingest run: the calls waiting for an answer are
        the run's (`run_state` lives as long as the run); ingest rejects those still waiting when the
        run ends (`Carry.leftovers`)."""
        carry = run_state.setdefault("span_join", Carry())
        assert isinstance(carry, Carry)
        self.carry = carry

    marks = frozenset({"resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "attributes"})

    def lacks(self, record: Any) -> str | None:
        if isinstance(record, dict) and isinstance(record.get("resourceSpans"), list):
            return None
        return "no 'resourceSpans' list"

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def sniff_document(self, doc: Any) -> int:
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        yield doc

    #: Attributes naming the conversation (task), first found wins, on a span or its nearest ancestor.
    task_keys: tuple[str, ...] = (CONV,)

    def extra_items(
        self, spans: list[Span], task_of: dict[int, str]
    ) -> tuple[list[Exec], list[Mention], list[Reply], list[Bad]]:
        """Calls another span convention adds to the GenAI ones (see `openinference`); none here."""
        return [], [], [], []

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        spans = decoded_spans(record)
        found = [ancestor_attr(spans, k) for k in self.task_keys]
        conv = {s.order: next((f[s.order] for f in found if f[s.order] is not None), None) for s in spans}
        episodes: dict[str, str | None] = {}
        for s in spans:
            if episodes.get(s.trace_id) is None:
                episodes[s.trace_id] = conv[s.order]
        task_of = {s.order: conv[s.order] or episodes.get(s.trace_id) or s.trace_id for s in spans}
        tool_spans = sorted(
            (s for s in spans if s.attrs.get(OP) == "execute_tool"), key=lambda s: (s.start, s.order)
        )
        x_execs, x_mentions, x_replies, x_bad = self.extra_items(spans, task_of)
        execs = [_exec(s, task_of[s.order]) for s in tool_spans] + x_execs
        mentions, replies, bad = chat_items(spans, task_of, {e.trace_id for e in execs})
        calls, dropped = join(
            ctx,
            sorted(execs, key=lambda e: e.sort),
            mentions + x_mentions,
            replies + x_replies,
            bad + x_bad,
            what="tool result",
            carry=self.carry,
        )
        eps = [Episode(trace_id=t, task_id=c or t) for t, c in episodes.items()]
        return Parsed(calls, eps, dropped)
