"""Reading OTLP JSON `TracesData`: spans, their ids, attribute values and times (no format semantics).

Shared by the span-based adapters (`otel`, `openinference`): each decides which spans are tool calls;
this module only turns the wire shape into plain values.

Ids: OTLP/JSON writes `traceId`/`spanId` as hex, but exporters that serialise the protobuf with a generic
JSON mapper write protobuf JSON's **base64** of the bytes instead (`GhWWjrOCQih+rKlYzbbFDw==`). Base64 is
case-sensitive, so case-folding it (as a hex id may be) can merge distinct traces. `otlp_id` therefore
maps both to lower-case hex: a hex id of the full width (32 digits for a trace, 16 for a span) is
lower-cased; otherwise text that decodes as base64 (standard or URL-safe alphabet, padding optional) to
exactly 16 (trace) or 8 (span) bytes becomes the hex of those bytes; otherwise a shorter all-hex id is
lower-cased; anything else is kept as it is, never case-folded.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from output_contracts.traces.formats.adapter import INT64_MAX, INT64_MIN, UINT64_MAX, RecordError

_HEX = re.compile(r"[0-9a-fA-F]+")
_B64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8


def otlp_id(value: str, nbytes: int) -> str:
    """A trace (`nbytes` 16) or span (8) id as lower-case hex, decoding protobuf JSON's base64."""
    if len(value) == 2 * nbytes and _HEX.fullmatch(value):
        return value.lower()
    if _B64.fullmatch(value):
        body = value.rstrip("=")
        try:
            raw = base64.b64decode(
                body + "=" * (-len(body) % 4),
                altchars=b"-_" if "-" in body or "_" in body else None,
                validate=True,
            )
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == nbytes:
            return raw.hex()
    if _HEX.fullmatch(value):
        return value.lower()
    return value


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


def otlp_time(nanos: Any, where: str) -> tuple[int, str | None]:
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


class Span(NamedTuple):
    """One span, decoded: where it sits in the document, its ids (see `otlp_id`), attributes, start time.

    `order` is its document position; `start` its start time in nanoseconds (0 when absent).
    """

    where: str
    span: dict[str, Any]
    trace_id: str
    span_id: str | None
    parent_id: str | None
    attrs: dict[str, Any]
    start: int
    started_at: str | None
    order: int


def decoded_spans(doc: Any) -> list[Span]:
    """Every span of a `TracesData` document, decoded, in document order (a span without `traceId`
    rejects the record)."""
    if not isinstance(doc, dict):
        raise RecordError(f"record is not a JSON object ({type(doc).__name__})")
    out: list[Span] = []
    for order, (where, span) in enumerate(_spans(doc)):
        tid = span.get("traceId")
        if not isinstance(tid, str) or not tid:
            raise RecordError(f"'{where}.traceId' is missing", field=f"{where}.traceId")
        sid, pid = span.get("spanId"), span.get("parentSpanId")
        start, stamp = otlp_time(span.get("startTimeUnixNano"), f"{where}.startTimeUnixNano")
        out.append(
            Span(
                where,
                span,
                otlp_id(tid, TRACE_ID_BYTES),
                otlp_id(sid, SPAN_ID_BYTES) if isinstance(sid, str) and sid else None,
                otlp_id(pid, SPAN_ID_BYTES) if isinstance(pid, str) and pid else None,
                attributes(span, where),
                start,
                stamp,
                order,
            )
        )
    return out


def ancestor_attr(spans: list[Span], key: str) -> dict[int, str | None]:
    """For each span (by `order`), `key` on the span or its nearest ancestor (via `parentSpanId`, within
    the same trace and record), as text, or None."""
    by_id = {(s.trace_id, s.span_id): s for s in spans if s.span_id is not None}
    out: dict[int, str | None] = {}
    for s in spans:
        cur: Span | None = s
        seen: set[str] = set()
        found: str | None = None
        while cur is not None:
            v = cur.attrs.get(key)
            if v is not None:
                found = str(v)
                break
            pid = cur.parent_id
            if pid is None or pid in seen:
                break
            seen.add(pid)
            cur = by_id.get((s.trace_id, pid))
        out[s.order] = found
    return out


def is_error_status(span: dict[str, Any]) -> bool:
    """True for a span whose `status.code` is ERROR (`2`, `"STATUS_CODE_ERROR"`)."""
    status = span.get("status")
    return isinstance(status, dict) and status.get("code") in _ERROR_CODES


def error_message(span: dict[str, Any], attrs: dict[str, Any]) -> str | None:
    """Why a failed span failed: `status.message`, else the last `exception` event's `exception.message`,
    else the `error.type` attribute; None when none is given."""
    status = span.get("status")
    msg = status.get("message") if isinstance(status, dict) else None
    if isinstance(msg, str) and msg:
        return msg
    events = span.get("events")
    for ev in reversed(events if isinstance(events, list) else []):
        if isinstance(ev, dict) and ev.get("name") == "exception":
            ev_attrs = attributes(ev, "event")
            m = ev_attrs.get("exception.message")
            if isinstance(m, str) and m:
                return m
    et = attrs.get("error.type")
    return str(et) if et is not None else None


_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")
