"""`openai-agents`: the OpenAI Agents SDK's own trace export (`{"data": [...]}`).

The SDK's backend exporter posts batches `{"data": [item, ...]}` where an item is a trace
(`{"object": "trace", "id", "workflow_name", "group_id", "metadata"}`) or a span (`{"object":
"trace.span", "id", "trace_id", "parent_id", "started_at", "ended_at", "span_data", "error"}`). A record is
one batch: a whole `.json` file, or one batch a line; a line holding a single trace or span item is a
batch of one. Spans with `span_data.type == "function"` are tool calls:

- `span_data.name` → `tool` (required);
- `span_data.input` (the arguments as JSON text; empty or null → `{}`) → `arguments`;
- `span_data.output` → `result`: JSON text holding an object or array is decoded; the SDK writes a
  returned dict as Python's `str()` of it, which is decoded only when unambiguous (`pyliteral`); any
  other text stays text;
- `error` (`{message, data}`) not null → `status: "error"`, `error` = `message`, with `: ` and
  `data.error` appended when that is text; the output (the text the model was shown) stays the result;
- a function span with neither output nor error (not finished) is dropped as `R_UNMATCHED`;
- `trace_id` → `trace_id`; the trace item's `group_id` (the conversation) → `task_id`, else the trace id;
- `started_at` → `started_at` (as written) and call order (then document order); `id` (the span id) and
  `parent_id` go to `meta`.

Every trace seen in a record is an episode. Other span types (agent, generation, response, handoff,
guardrail, custom) hold no tool call and are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from output_contracts.traces.formats.adapter import (
    R_FIELD,
    Adapter,
    Parsed,
    RecordContext,
    RecordError,
    parse_arguments,
)
from output_contracts.traces.formats.pyliteral import decode_literal
from output_contracts.traces.formats.span_join import Bad, Exec, join
from output_contracts.traces.records import Episode

_OBJECTS = ("trace", "trace.span")


def _is_item(x: Any) -> bool:
    return isinstance(x, dict) and x.get("object") in _OBJECTS and ("span_data" in x or "workflow_name" in x)


def _items(record: Any) -> list[Any] | None:
    """The items of a batch (or of a single-item record), or None when `record` is neither."""
    if isinstance(record, dict):
        data = record.get("data")
        if (
            isinstance(data, list)
            and data
            and all(isinstance(x, dict) for x in data)
            and any(map(_is_item, data))
        ):
            return data
        if _is_item(record):
            return [record]
    return None


def _nanos(stamp: Any) -> int:
    """An ISO 8601 time as nanoseconds since the epoch, for ordering; unparseable or absent sorts last."""
    if isinstance(stamp, str):
        try:
            dt = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return 2**63
        if dt.tzinfo is not None:
            return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    return 2**63


def _error(err: dict[str, Any]) -> str:
    msg = err.get("message")
    text = msg if isinstance(msg, str) and msg else "error"
    data = err.get("data")
    detail = data.get("error") if isinstance(data, dict) else None
    return f"{text}: {detail}" if isinstance(detail, str) and detail else text


class OpenAIAgentsAdapter(Adapter):
    """OpenAI Agents SDK trace export batches, one a file or one a line."""

    name = "openai-agents"
    whole_file = True

    marks = frozenset({"data", "trace", "trace.span", "trace_id", "span_data", "parent_id", "group_id"})

    def lacks(self, record: Any) -> str | None:
        return None if _items(record) is not None else "no 'data' list of trace / trace.span items"

    def sniff(self, record: Any) -> int:
        return 2 if _items(record) is not None else 0

    def sniff_document(self, doc: Any) -> int:
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        yield doc

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        items = _items(record)
        if items is None:
            raise RecordError("not an OpenAI Agents SDK export: no 'data' list of trace / trace.span items")
        groups: dict[str, str] = {}
        seen: list[str] = []
        execs: list[Exec] = []
        bad: list[Bad] = []
        for order, item in enumerate(items):
            where = f"data[{order}]"
            if item.get("object") == "trace":
                tid = item.get("id")
                if isinstance(tid, str) and tid:
                    if tid not in seen:
                        seen.append(tid)
                    gid = item.get("group_id")
                    if isinstance(gid, str | int) and not isinstance(gid, bool):
                        groups[tid] = str(gid)
                continue
            tid = item.get("trace_id")
            if not isinstance(tid, str) or not tid:
                raise RecordError(f"'{where}.trace_id' is missing", field=f"{where}.trace_id")
            if tid not in seen:
                seen.append(tid)
            sd = item.get("span_data")
            if not isinstance(sd, dict) or sd.get("type") != "function":
                continue
            sort = (_nanos(item.get("started_at")), order, 0)
            name = sd.get("name")
            if not isinstance(name, str) or not name:
                bad.append(Bad(sort, R_FIELD, f"'{where}.span_data.name' is missing", item))
                continue
            raw_args = sd.get("input")
            try:
                args = {} if raw_args is None else parse_arguments(raw_args, field=f"{where}.span_data.input")
            except RecordError as e:
                bad.append(Bad(sort, e.code, e.reason, item))
                continue
            err = item.get("error")
            output = sd.get("output")
            started = item.get("started_at")
            execs.append(
                Exec(
                    trace_id=tid,
                    call_id=None,
                    tool=name,
                    arguments=args,
                    has_result=output is not None,
                    result=decode_literal(output),
                    error=_error(err) if isinstance(err, dict) else None,
                    task_id=tid,
                    started_at=started if isinstance(started, str) else None,
                    sort=sort,
                    meta={"span_id": item.get("id"), "parent_id": item.get("parent_id")},
                    raw=item,
                )
            )
        execs = [e._replace(task_id=groups.get(e.trace_id, e.trace_id)) for e in execs]
        calls, dropped = join(ctx, sorted(execs, key=lambda e: e.sort), [], [], bad)
        eps = [Episode(trace_id=t, task_id=groups.get(t, t)) for t in seen]
        return Parsed(calls, eps, dropped)
