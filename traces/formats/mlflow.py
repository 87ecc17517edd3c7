"""`mlflow`: MLflow traces as MLflow serialises them (`Trace.to_json()` / `Trace.to_dict()`, MLflow 2.x
and 3.x), and the `traces.json` span file of MLflow 2's local file store.

A record is one trace, `{"info": {...}, "data": {"spans": [...]}}`, one a line (JSON Lines of
`to_json()`), one a file (a `.json` document), or several in a JSON array; or a bare `{"spans": [...], "request", "response"}`
(MLflow 2's `TraceData.to_dict()`, the file store's `mlruns/<experiment>/traces/<id>/artifacts/traces.json`). The span dict differs by
version:

- **MLflow 2.x**: `{name, context: {span_id, trace_id}, parent_id, start_time, end_time, status_code
  ("OK" / "ERROR" / "UNSET"), status_message, attributes, events: [{name, timestamp, attributes}]}`;
  `info.request_id` is the trace id (32 hex digits, not the OTel trace id).
- **MLflow 3.x**: OTel-shaped, `{trace_id, span_id, parent_span_id (base64 of the OTel ids), name,
  start_time_unix_nano, end_time_unix_nano, status: {code ("STATUS_CODE_OK" / "STATUS_CODE_ERROR" /
  "STATUS_CODE_UNSET"), message}, attributes, events: [{name, time_unix_nano, attributes}]}`;
  `info.trace_id` is the trace id (`tr-` + the OTel trace id in hex).

Attribute values are JSON text (`"mlflow.spanType": "\\"TOOL\\""`), decoded before use; a value that is
not a string is taken as it is.

Each span whose `mlflow.spanType` is `TOOL` is one call:

- `tool` = the span's `name` (`@mlflow.trace` names it after the function, or `name=`). MLflow 2
  renames spans that share a name within a trace to `name_1`, `name_2`, ... before saving
  (`deduplicate_span_names_in_place`; MLflow 3 does not): in an MLflow 2 trace, spans named `B_1` ..
  `B_n` (n >= 2, every number from 1 to n present) with no span named `B` itself are read as `B`. The
  saved name goes to `meta.span_name` when it differs. (A 2.x trace whose distinct tools are really
  called `B_1` and `B_2`, with no `B`, is indistinguishable and reads as `B`.)
- `arguments` = `mlflow.spanInputs` decoded (the function's arguments by parameter name, as MLflow's
  decorator binds them). MLflow's CrewAI autologging (`mlflow.crewai.autolog()`) wraps them, and is
  unwrapped (`meta.envelope` = `crewai`): `{tool_name, tool_args}` (native tool calls; `tool_name` = the
  span name) → `tool_args`; `{agent_action: {tool, tool_input}, tools, ...}` (text actions; `tool` = the
  span name) → `tool_input` (JSON text; not an object → `R_FIELD`). Its outputs `{result, ...}` →
  `result`, and CrewAI reports a failed tool in that text with the span status OK: `Error executing
  tool: <m>` → `error` `<m>`, `I encountered an error ...` → `error` = the text (as in `crewai`). Absent → `{}`. Not an object (`span.set_inputs("text")`)
  → the call is rejected `R_FIELD`.
- `result` = `mlflow.spanOutputs` decoded (`null` when the tool returned `None`), then, like every
  format, a string holding a JSON object or array is decoded.
- status: an ERROR status code → `status: "error"`, `error` = the status message (MLflow writes
  `"<ExceptionType>: <message>"`), else the last `exception` event's `exception.type: exception.message`,
  else `"error"`; the result of an error call is null. Otherwise the call is `ok`, and an ok (or unset)
  span without `mlflow.spanOutputs` records no result: `R_UNMATCHED` (the span ended before its output
  was set, or outputs were not captured).
- `trace_id` = `info.request_id` (2.x) / `info.trace_id` (3.x), else the spans' `mlflow.traceRequestId`
  attribute (the bare span file), else the OTel trace id as lower-case hex;
  `task_id` = the `mlflow.trace.session` entry of `info.trace_metadata` / `info.request_metadata` /
  `info.tags` (MLflow 3's session id), else the trace id;
  `step` = the call's order among the trace's TOOL spans by start time (then document order);
  `started_at` = the span start (RFC 3339, UTC); `meta`: `span_id`, `parent_span_id`, `span_name` (when
  it differs from `tool`).

Each record is one episode. A trace that has spans but no TOOL span is rejected whole as `R_NO_CALLS`
(an MLflow trace of a plain chat or chain holds no tool call to read); a trace with no spans at all is
`R_NO_CONTENT` (MLflow 3 can keep spans apart from the trace info, so `info` alone carries none). Spans of
other types (CHAT_MODEL, AGENT, ...) are not read: the tool calls a model asked for are the TOOL spans
that ran them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson

from output_contracts.traces.formats.adapter import (
    R_FIELD,
    R_FORMAT,
    R_NO_CALLS,
    R_NO_CONTENT,
    R_UNMATCHED,
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    decode_result,
    error_text,
    items_or_document,
    list_of_dicts,
    parse_arguments,
)
from output_contracts.traces.formats.crewai import crewai_outcome
from output_contracts.traces.formats.otlp import SPAN_ID_BYTES, TRACE_ID_BYTES, otlp_id, otlp_time
from output_contracts.traces.records import Episode, ToolCall

SPAN_TYPE = "mlflow.spanType"
INPUTS = "mlflow.spanInputs"
OUTPUTS = "mlflow.spanOutputs"
REQUEST_ID = "mlflow.traceRequestId"
SESSION = "mlflow.trace.session"
_DEDUP = re.compile(r"(.+)_([1-9][0-9]*)")
_ERROR = ("ERROR", "STATUS_CODE_ERROR")


def _mlflow_spans(spans: Any) -> bool:
    """True when some span of a list carries an MLflow attribute (`mlflow.spanType` / `traceRequestId`)."""
    if not isinstance(spans, list):
        return False
    for s in spans:
        attrs = s.get("attributes") if isinstance(s, dict) else None
        if isinstance(attrs, dict) and (SPAN_TYPE in attrs or REQUEST_ID in attrs):
            return True
    return False


def _is_trace(record: dict[str, Any]) -> bool:
    """`{info: {request_id | trace_id}, data: {spans: [...]}}`: the shape of `Trace.to_dict()`."""
    info, data = record.get("info"), record.get("data")
    return (
        isinstance(info, dict)
        and isinstance(data, dict)
        and isinstance(data.get("spans"), list)
        and ("request_id" in info or "trace_id" in info)
    )


def _attr(value: Any) -> Any:
    """An MLflow attribute value: JSON text decoded; text that is not JSON, or a non-string, as it is."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _str_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _tool_names(spans: list[dict[str, Any]], v2: bool) -> list[str]:
    """Each span's name, with MLflow 2's `_1`, `_2` de-duplication suffixes undone (see the docstring)."""
    names = [s["name"] if isinstance(s.get("name"), str) else "" for s in spans]
    if not v2:
        return names
    plain = set(names)
    numbered: dict[str, set[int]] = {}
    for n in names:
        m = _DEDUP.fullmatch(n)
        if m:
            numbered.setdefault(m[1], set()).add(int(m[2]))
    renamed = {b for b, nums in numbered.items() if len(nums) >= 2 and nums == set(range(1, len(nums) + 1))}
    renamed -= plain
    out = []
    for n in names:
        m = _DEDUP.fullmatch(n)
        out.append(m[1] if m and m[1] in renamed else n)
    return out


def _crewai_arguments(tool: str, inputs: dict[str, Any], field: str) -> dict[str, Any] | RecordError | None:
    """The call's arguments when a TOOL span holds MLflow's CrewAI autolog envelope (`mlflow.crewai`),
    else None: native calls `{tool_name, tool_args}`, text actions `{agent_action: {tool, tool_input},
    tools, ...}` (the action input is JSON text; not an object → the RecordError to reject with)."""
    if (
        set(inputs) == {"tool_name", "tool_args"}
        and inputs["tool_name"] == tool
        and isinstance(inputs["tool_args"], dict)
    ):
        return inputs["tool_args"]
    action = inputs.get("agent_action")
    if isinstance(action, dict) and action.get("tool") == tool and "tool_input" in action:
        try:
            return parse_arguments(action["tool_input"] or {}, field=f"{field}.agent_action.tool_input")
        except RecordError as e:
            return e
    return None


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    attrs = span.get("attributes")
    return attrs if isinstance(attrs, dict) else {}


def _status(span: dict[str, Any]) -> dict[str, Any]:
    status = span.get("status")
    return status if isinstance(status, dict) else {}


def _error(span: dict[str, Any], v2: bool) -> str:
    msg = span.get("status_message") if v2 else _status(span).get("message")
    if isinstance(msg, str) and msg:
        return msg
    events = span.get("events")
    for ev in reversed(events if isinstance(events, list) else []):
        attrs = ev.get("attributes") if isinstance(ev, dict) else None
        if isinstance(ev, dict) and ev.get("name") == "exception" and isinstance(attrs, dict):
            etype, emsg = attrs.get("exception.type"), attrs.get("exception.message")
            text = ": ".join(error_text(x) for x in (etype, emsg) if x is not None and x != "")
            if text:
                return text
    return "error"


class MlflowAdapter(Adapter):
    """MLflow `Trace.to_json()` records (one a line, one a file, or an array), and bare span files."""

    name = "mlflow"
    whole_file: ClassVar[bool] = True

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {
            "info",
            "data",
            "spans",
            "request_id",
            "trace_id",
            "mlflow.spanType",
            "mlflow.spanInputs",
            "mlflow.spanOutputs",
        }
    )

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict):
            return "not an object"
        if _is_trace(record):
            return None
        if _mlflow_spans(record.get("spans")):
            return None
        return "no 'info' with a trace id and 'data.spans' list (nor a 'spans' list with mlflow.* attributes)"

    def sniff_document(self, doc: Any) -> int:
        if isinstance(doc, list):
            return 2 if doc and all(self.sniff(r) == 2 for r in doc[:8]) else 0
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        return items_or_document(doc)

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("trace is not a JSON object")
        if _is_trace(record):
            info, where = record["info"], "data.spans"
            spans = list_of_dicts(record["data"], "spans")
        elif isinstance(record.get("spans"), list):
            info, where = {}, "spans"
            spans = list_of_dicts(record, "spans")
        else:
            raise RecordError(f"not an MLflow trace: {self.lacks(record)}", code=R_FORMAT)
        v2 = any("context" in s for s in spans) or "request_id" in info
        attrs_of: list[dict[str, Any]] = [_attributes(s) for s in spans]
        trace_id = _str_id(info.get("request_id")) or _str_id(info.get("trace_id"))
        if trace_id is None:
            trace_id = next((_str_id(_attr(a.get(REQUEST_ID))) for a in attrs_of if REQUEST_ID in a), None)
        if trace_id is None and spans:
            sctx = spans[0].get("context")
            ctx_id = (
                (sctx.get("trace_id") if isinstance(sctx, dict) else None) if v2 else spans[0].get("trace_id")
            )
            trace_id = otlp_id(ctx_id, TRACE_ID_BYTES) if isinstance(ctx_id, str) and ctx_id else None
        if trace_id is None:
            raise RecordError(
                f"trace has no id ('info.request_id', 'info.trace_id' or {REQUEST_ID})", field="info"
            )
        task_id = trace_id
        for key in ("trace_metadata", "request_metadata", "tags"):
            entries = info.get(key)
            session = _str_id(entries.get(SESSION)) if isinstance(entries, dict) else None
            if session is not None:
                task_id = session
                break
        if not spans:
            raise RecordError(f"trace '{trace_id}' holds no spans", code=R_NO_CONTENT, field=where)
        names = _tool_names(spans, v2)
        tools: list[tuple[int, int, dict[str, Any], dict[str, Any], str, str | None]] = []
        for i, (s, attrs) in enumerate(zip(spans, attrs_of, strict=True)):
            if _attr(attrs.get(SPAN_TYPE)) != "TOOL":
                continue
            start, stamp = otlp_time(
                s.get("start_time" if v2 else "start_time_unix_nano"),
                f"{where}[{i}].{'start_time' if v2 else 'start_time_unix_nano'}",
            )
            tools.append((start, i, s, attrs, names[i], stamp))
        if not tools:
            kinds = sorted({str(_attr(a.get(SPAN_TYPE))) for a in attrs_of})
            raise RecordError(
                f"trace '{trace_id}' has {len(spans)} span(s) ({', '.join(kinds)}) but none of type TOOL",
                code=R_NO_CALLS,
            )
        tools.sort(key=lambda t: (t[0], t[1]))
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        for step, (_start, i, s, attrs, tool, stamp) in enumerate(tools):
            span_where = f"{where}[{i}]"
            if not tool:
                raise RecordError(f"'{span_where}.name' is missing", field=f"{span_where}.name")
            if v2:
                sctx = s.get("context")
                sid, pid = (sctx.get("span_id") if isinstance(sctx, dict) else None), s.get("parent_id")
            else:
                sid, pid = s.get("span_id"), s.get("parent_span_id")
            meta: dict[str, Any] = {
                "span_id": otlp_id(sid, SPAN_ID_BYTES) if isinstance(sid, str) else None,
                "parent_span_id": otlp_id(pid, SPAN_ID_BYTES) if isinstance(pid, str) else None,
            }
            if s.get("name") != tool:
                meta["span_name"] = s.get("name")
            args = _attr(attrs[INPUTS]) if INPUTS in attrs else {}
            if not isinstance(args, dict):
                dropped.append(
                    DroppedCall(
                        i,
                        f"'{span_where}.attributes.{INPUTS}' of TOOL span '{tool}' is not an object "
                        f"({type(args).__name__})",
                        s,
                        R_FIELD,
                    )
                )
                continue
            crew = _crewai_arguments(tool, args, f"{span_where}.attributes.{INPUTS}")
            if isinstance(crew, RecordError):
                dropped.append(DroppedCall(i, crew.reason, s, R_FIELD))
                continue
            if crew is not None:
                args, meta["envelope"] = crew, "crewai"
            code = s.get("status_code") if v2 else _status(s).get("code")
            error: str | None
            if code in _ERROR:
                result, status, error = None, "error", _error(s, v2)
            elif OUTPUTS in attrs and crew is not None:
                out = _attr(attrs[OUTPUTS])
                result, status, error = crewai_outcome(out.get("result") if isinstance(out, dict) else out)
            elif OUTPUTS in attrs:
                result, status, error = decode_result(_attr(attrs[OUTPUTS])), "ok", None
            else:
                dropped.append(
                    DroppedCall(
                        i,
                        f"TOOL span '{tool}' ({span_where}) did not fail but records no {OUTPUTS}",
                        s,
                        R_UNMATCHED,
                    )
                )
                continue
            calls.append(
                ToolCall(
                    trace_id=trace_id,
                    tool=tool,
                    arguments=args,
                    result=result,
                    status=status,
                    error=error,
                    task_id=task_id,
                    step=step,
                    started_at=stamp,
                    source=ctx.source,
                    line=ctx.line,
                    index=i,
                    meta=meta,
                )
            )
        return Parsed(calls, [Episode(trace_id=trace_id, task_id=task_id)], dropped)
