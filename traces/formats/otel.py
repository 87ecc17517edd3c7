"""`otel`: OpenTelemetry OTLP JSON exports of GenAI `execute_tool` spans.

A record is one `TracesData` object (`{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`), one a
line, or one per `.json` file. Spans whose `gen_ai.operation.name` attribute is `execute_tool` are tool
calls (OpenTelemetry GenAI semantic conventions):

- `gen_ai.tool.name` → `tool` (required; a span without it is rejected with the record);
- `gen_ai.tool.call.arguments` → `arguments` (an object, structured or as a JSON string; absent → `{}`,
  since the attribute is opt-in and many tools take no arguments);
- `gen_ai.tool.call.result` → `result` (structured or a JSON string); a span with neither a result nor
  an error status is dropped as "no matching result";
- span `status.code` ERROR (`2` or `"STATUS_CODE_ERROR"`) → `status: "error"`, `error` = the status
  message, else the `error.type` attribute;
- `traceId` (hex, lower-cased) → `trace_id`; `gen_ai.conversation.id` on the span or its nearest
  ancestor (by `parentSpanId`, within the same record) → `task_id`, else the trace id;
- `startTimeUnixNano` → `started_at` (RFC 3339, UTC); `gen_ai.tool.call.id` and `spanId` go to `meta`.

Attribute values are OTLP `AnyValue`s: `stringValue`, `boolValue`, `intValue` (int64, usually a decimal
string), `doubleValue`, `bytesValue` (kept as its base64 text), `arrayValue.values[]` and
`kvlistValue.values[{key, value}]`. Calls are ordered by start time, then document order; `step` is left
to ingest, which numbers a trace's calls in reading order. Every trace seen in a record is an episode,
even one with no tool span. Unknown fields are ignored. Out-of-range integers reject the record, naming
the field: an `intValue` outside int64, a `startTimeUnixNano` outside fixed64 (negative or > 2**64-1).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from contracts.traces.formats.base import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    decode_result,
    error_text,
    parse_arguments,
)
from contracts.traces.model import Episode, ToolCall

OP = "gen_ai.operation.name"
CONV = "gen_ai.conversation.id"
_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")


def any_value(v: Any, where: str = "value") -> Any:
    """Decode an OTLP JSON `AnyValue` into plain JSON."""
    if not isinstance(v, dict) or not v:
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        iv = v["intValue"]
        try:
            n = int(iv)
        except (TypeError, ValueError):
            raise RecordError(f"'{where}.intValue' is not an integer: {iv!r}", field=where) from None
        if n < INT64_MIN or n > INT64_MAX:
            raise RecordError(f"'{where}.intValue' is out of the int64 range: {iv!r}", field=where)
        return n
    if "doubleValue" in v:
        dv = v["doubleValue"]
        try:
            f = float(dv)
        except (TypeError, ValueError):
            raise RecordError(f"'{where}.doubleValue' is not a number: {dv!r}", field=where) from None
        if not math.isfinite(f):
            raise RecordError(f"'{where}.doubleValue' is not finite ({dv!r}), not JSON", field=where)
        return f
    if "bytesValue" in v:
        return v["bytesValue"]
    if "arrayValue" in v:
        vals = (v["arrayValue"] or {}).get("values") or []
        return [any_value(x, f"{where}.arrayValue.values[{i}]") for i, x in enumerate(vals)]
    if "kvlistValue" in v:
        vals = (v["kvlistValue"] or {}).get("values") or []
        return {
            str(kv.get("key")): any_value(kv.get("value"), f"{where}.kvlistValue.{kv.get('key')}")
            for kv in vals
            if isinstance(kv, dict)
        }
    return None


def attributes(span: dict[str, Any], where: str) -> dict[str, Any]:
    """A span's `attributes[{key, value}]` as a dict of decoded values."""
    out: dict[str, Any] = {}
    attrs = span.get("attributes") or []
    if not isinstance(attrs, list):
        raise RecordError(f"'{where}.attributes' is not a list", field=f"{where}.attributes")
    for kv in attrs:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = any_value(kv.get("value"), f"{where}.attributes.{kv['key']}")
    return out


def _time(nanos: Any, where: str) -> tuple[int, str | None]:
    """`(nanoseconds, RFC 3339 text)` of an OTLP fixed64 time; `(0, None)` when absent, 0 or not a number.

    A number outside fixed64 (negative, or above 2**64-1) is a `RecordError` naming `where`.
    """
    try:
        n = int(nanos)
    except (TypeError, ValueError):
        return (0, None)
    if n < 0 or n > UINT64_MAX:
        raise RecordError(
            f"'{where}' is out of range: {nanos!r} (a fixed64 count of nanoseconds, 0 to 2**64-1)",
            field=where,
        )
    if n == 0:
        return (0, None)
    secs, frac = divmod(n, 1_000_000_000)
    stamp = datetime.fromtimestamp(secs, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        stamp += "." + f"{frac:09d}".rstrip("0")
    return (n, stamp + "Z")


def _spans(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    rs = doc.get("resourceSpans")
    if not isinstance(rs, list):
        raise RecordError("'resourceSpans' is not a list", field="resourceSpans")
    for i, r in enumerate(rs):
        if not isinstance(r, dict):
            continue
        for j, ss in enumerate(r.get("scopeSpans") or r.get("instrumentationLibrarySpans") or []):
            if not isinstance(ss, dict):
                continue
            for k, span in enumerate(ss.get("spans") or []):
                if isinstance(span, dict):
                    yield f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", span


class OtelAdapter(Adapter):
    """OTLP JSON `TracesData`, one a line or one a file."""

    name = "otel"
    whole_file = True

    def sniff(self, record: Any) -> int:
        return 2 if isinstance(record, dict) and "resourceSpans" in record else 0

    def sniff_document(self, doc: Any) -> int:
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        yield doc

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError(f"record is not a JSON object ({type(record).__name__})")
        spans = []
        for where, span in _spans(record):
            tid = span.get("traceId")
            if not isinstance(tid, str) or not tid:
                raise RecordError(f"'{where}.traceId' is missing", field=f"{where}.traceId")
            spans.append((where, span, tid.lower(), attributes(span, where)))
        by_id = {(tid, s.get("spanId")): (s, attrs) for _, s, tid, attrs in spans}

        def conversation(tid: str, span: dict[str, Any], attrs: dict[str, Any]) -> str | None:
            seen = set()
            while True:
                conv = attrs.get(CONV)
                if conv is not None:
                    return str(conv)
                parent = span.get("parentSpanId")
                if not parent or parent in seen or (tid, parent) not in by_id:
                    return None
                seen.add(parent)
                span, attrs = by_id[(tid, parent)]

        episodes: dict[str, str | None] = {}
        tool_spans: list[tuple[int, int, str, dict[str, Any], dict[str, Any], str]] = []
        for order, (where, span, tid, attrs) in enumerate(spans):
            conv = conversation(tid, span, attrs)
            if episodes.get(tid) is None:
                episodes[tid] = conv
            if attrs.get(OP) == "execute_tool":
                start, _ = _time(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")
                tool_spans.append((start, order, tid, span, attrs, where))
        tool_spans.sort(key=lambda t: (t[0], t[1]))
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        for index, (_start, _order, tid, span, attrs, where) in enumerate(tool_spans):
            name = attrs.get("gen_ai.tool.name")
            if not isinstance(name, str) or not name:
                raise RecordError(
                    f"'{where}' is an execute_tool span without gen_ai.tool.name", field=f"{where}.attributes"
                )
            raw_args = attrs.get("gen_ai.tool.call.arguments")
            args = (
                {}
                if raw_args is None
                else parse_arguments(raw_args, field=f"{where}.gen_ai.tool.call.arguments")
            )
            status_obj: dict[str, Any] = span["status"] if isinstance(span.get("status"), dict) else {}
            is_error = status_obj.get("code") in _ERROR_CODES
            has_result = "gen_ai.tool.call.result" in attrs
            if not has_result and not is_error:
                dropped.append(
                    DroppedCall(
                        index, f"execute_tool span '{span.get('spanId')}' ({name}) has no result", span
                    )
                )
                continue
            error = None
            if is_error:
                err = status_obj.get("message") or attrs.get("error.type") or "error"
                error = error_text(err)
            meta = {"span_id": span.get("spanId")}
            if attrs.get("gen_ai.tool.call.id") is not None:
                meta["tool_call_id"] = attrs["gen_ai.tool.call.id"]
            calls.append(
                ToolCall(
                    trace_id=tid,
                    tool=name,
                    arguments=args,
                    result=decode_result(attrs.get("gen_ai.tool.call.result")) if has_result else None,
                    status="error" if is_error else "ok",
                    error=error,
                    task_id=conversation(tid, span, attrs) or episodes.get(tid) or tid,
                    started_at=_time(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")[1],
                    source=ctx.source,
                    line=ctx.line,
                    index=index,
                    meta=meta,
                )
            )
        eps = [Episode(trace_id=t, task_id=conv or t) for t, conv in episodes.items()]
        return Parsed(calls, eps, dropped)
