"""`google-adk`: Google Agent Development Kit sessions (github.com/google/adk-python, `google-adk`).

A record is one `Session`: `{id, appName|app_name, userId|user_id, state, events: [...]}`, in camelCase
(`session.model_dump_json(by_alias=True)`, what the ADK web and API server return) or snake_case
(`session.model_dump(mode="json")`); a `.json` file holding one session, or one session a line. Each
event is `{author, invocationId|invocation_id, id, timestamp, content: {role, parts: [...]},
errorCode|error_code?, errorMessage|error_message?, longRunningToolIds|long_running_tool_ids?}`. Parts
`{functionCall|function_call: {id?, name, args}}` are calls, `{functionResponse|function_response: {id?,
name, response}}` their answers:

- `name` → `tool`, `args` → `arguments` (null → `{}`), `response` → `result`; ADK wraps a tool's
  value that is not a dict as `{"result": value}`, so a response that is exactly `{"result": X}` is `X`
  (a tool that itself returned a dict whose only key is `result` reads the same);
- the join: a response with an `id` answers the first unanswered call with that id before it; a
  response without `id` answers the first unanswered call **of the same name** before it (call order);
  a call without `id` can only be answered so;
- status (ADK has no error flag; these are its own conventions): `error` when the response holds a
  non-null `error` (ADK's answer to an unknown tool or invalid arguments, `on_tool_error_callback`
  results; `error` = that value as text), or `status: "error"` (the tool convention of ADK's docs;
  `error` = `error_message`, else the response as JSON). A tool that raises ends the run: ADK records an
  event with `errorCode` (the exception class) and `errorMessage` and no content; such an event answers
  the call left unanswered in its invocation when there is exactly one (long-running calls aside), as
  `status: "error"`, `error` = `errorMessage`, `meta.error_type` = `errorCode`;
- `trace_id` = `task_id` = the session `id`; episode labels `app_name`, `user_id`; `step` = the call's
  order in the session; a call's `author` (the agent) and `invocationId` go to `meta` with its `id`; the
  calling event's `timestamp` (seconds) → `started_at` (ISO 8601, UTC).

Rejects: a call nothing answers `R_UNMATCHED` (a long-running call still waiting, or a raising call
whose error event cannot be told apart); a response answering no call before it `R_ORPHAN_RESULT` (a
second response for an answered id `R_DUPLICATE_RESULT`); a session where the agent spoke but called no
tool `R_NO_CALLS` (the whole record).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from output_contracts.traces.formats.adapter import (
    R_DUPLICATE_RESULT,
    R_NO_CALLS,
    R_ORPHAN_RESULT,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    error_text,
    list_of_dicts,
    require_str,
)
from output_contracts.traces.records import Episode, ToolCall


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    v = d.get(camel)
    return d.get(snake) if v is None else v


def _has_parts(events: list[Any]) -> bool:
    """Some event has `content.parts` (a list): the shape of ADK events."""
    for e in events:
        c = e.get("content") if isinstance(e, dict) else None
        if isinstance(c, dict) and isinstance(c.get("parts"), list):
            return True
    return False


def unwrap(response: Any) -> Any:
    """ADK's envelope for a tool value that is not a dict: `{"result": X}` is `X`."""
    if isinstance(response, dict) and len(response) == 1 and "result" in response:
        return response["result"]
    return response


def failure(response: Any) -> str | None:
    """The error text of a function response that reports failure (see the module), else None."""
    if not isinstance(response, dict):
        return None
    err = response.get("error")
    if err is not None:
        return error_text(err)
    if response.get("status") == "error":
        msg = response.get("error_message")
        return msg if isinstance(msg, str) else error_text(response)
    return None


@dataclass
class _Call:
    """A call of the session waiting for (or given) its answer."""

    cid: str | None
    tool: str
    arguments: dict[str, Any]
    index: int
    invocation: Any
    author: Any
    started_at: str | None
    long_running: bool
    raw: Any
    answer: tuple[Any, str | None, str | None] | None = None  # (result, error, error_type)


def _iso(ts: Any) -> str | None:
    if isinstance(ts, int | float) and not isinstance(ts, bool) and 0 <= ts < 1e11:
        return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
    return None


class GoogleAdkAdapter(WholeDocument):
    """Google ADK sessions: one record a session."""

    name = "google-adk"
    whole_file: ClassVar[bool] = True

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict) or not isinstance(record.get("events"), list):
            return 0
        app = _get(record, "appName", "app_name")
        user = _get(record, "userId", "user_id")
        if isinstance(app, str) and isinstance(user, str):
            return 2
        return 1 if _has_parts(record["events"]) and "id" in record else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {
            "events",
            "author",
            "parts",
            "functionCall",
            "functionResponse",
            "function_call",
            "function_response",
            "invocationId",
            "invocation_id",
            "appName",
            "app_name",
        }
    )

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        return "no session with 'appName'/'app_name', 'userId'/'user_id' and an 'events' list"

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("session is not a JSON object")
        sid = require_str(record, "id")
        events = list_of_dicts(record, "events")
        calls: list[_Call] = []
        by_id: dict[str, _Call] = {}
        by_name: dict[str, deque[_Call]] = {}  # unanswered calls per tool, in order
        dropped: list[DroppedCall] = []
        spoke = False
        n = 0  # position of a call or response part in the session
        for ei, e in enumerate(events):
            author = e.get("author")
            invocation = _get(e, "invocationId", "invocation_id")
            content = e.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            if not isinstance(parts, list):
                code = _get(e, "errorCode", "error_code")
                if code is not None:
                    self._error_event(e, invocation, calls)
                continue
            if author != "user" and any(isinstance(p, dict) and p.get("text") for p in parts):
                spoke = True
            long_running = _get(e, "longRunningToolIds", "long_running_tool_ids")
            lr = set(long_running) if isinstance(long_running, list) else set()
            for pi, p in enumerate(parts):
                if not isinstance(p, dict):
                    continue
                where = f"events[{ei}].content.parts[{pi}]"
                fc = _get(p, "functionCall", "function_call")
                fr = _get(p, "functionResponse", "function_response")
                if isinstance(fc, dict):
                    name = fc.get("name")
                    if not isinstance(name, str) or not name:
                        raise RecordError(
                            f"'{where}.functionCall.name' is missing", field=f"{where}.functionCall.name"
                        )
                    args = fc.get("args")
                    args = {} if args is None else args
                    if not isinstance(args, dict):
                        raise RecordError(
                            f"'{where}.functionCall.args' is not an object",
                            field=f"{where}.functionCall.args",
                        )
                    cid = fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else None
                    c = _Call(cid, name, args, n, invocation, author, _iso(e.get("timestamp")), cid in lr, fc)
                    calls.append(c)
                    if cid is not None and cid not in by_id:
                        by_id[cid] = c
                    by_name.setdefault(name, deque()).append(c)
                elif isinstance(fr, dict):
                    got = self._answer(fr, n, by_id, by_name)
                    if got is not None:
                        dropped.append(got)
                else:
                    continue
                n += 1
        out: list[ToolCall] = []
        for c in calls:
            if c.answer is None:
                dropped.append(
                    DroppedCall(c.index, f"functionCall '{c.cid}' ({c.tool}) has no functionResponse", c.raw)
                )
                continue
            result, err, etype = c.answer
            meta: dict[str, Any] = {"call_id": c.cid, "author": c.author, "invocation_id": c.invocation}
            if etype is not None:
                meta["error_type"] = etype
            out.append(
                ToolCall(
                    trace_id=sid,
                    tool=c.tool,
                    arguments=c.arguments,
                    result=None if err is not None else result,
                    status="ok" if err is None else "error",
                    error=err,
                    task_id=sid,
                    step=len(out),
                    source=ctx.source,
                    line=ctx.line,
                    index=c.index,
                    started_at=c.started_at,
                    meta=meta,
                )
            )
        if not calls and not dropped and spoke:
            raise RecordError(f"session '{sid}' has agent replies but no function call", code=R_NO_CALLS)
        labels = {
            k: v
            for k, v in (
                ("app_name", _get(record, "appName", "app_name")),
                ("user_id", _get(record, "userId", "user_id")),
            )
            if isinstance(v, str)
        }
        dropped.sort(key=lambda d: d.index)
        return Parsed(out, [Episode(trace_id=sid, task_id=sid, labels=labels)], dropped)

    @staticmethod
    def _answer(
        fr: dict[str, Any], position: int, by_id: dict[str, _Call], by_name: dict[str, deque[_Call]]
    ) -> DroppedCall | None:
        """Join one functionResponse to its call (see the module), or why it answers none."""
        rid = fr.get("id") if isinstance(fr.get("id"), str) and fr.get("id") else None
        name = fr.get("name")
        call: _Call | None = None
        if rid is not None:
            call = by_id.get(rid)
            if call is not None and call.answer is not None:
                return DroppedCall(
                    position,
                    f"functionResponse for id '{rid}' answers a call that already has its response",
                    fr,
                    R_DUPLICATE_RESULT,
                )
        else:
            queue = by_name.get(name) if isinstance(name, str) else None
            while queue and queue[0].answer is not None:
                queue.popleft()
            call = queue[0] if queue else None
        if call is None:
            what = f"id '{rid}'" if rid is not None else f"name '{name}' (no id)"
            return DroppedCall(
                position, f"functionResponse for {what} answers no call before it", fr, R_ORPHAN_RESULT
            )
        response = fr.get("response")
        call.answer = (unwrap(response), failure(response), None)
        return None

    @staticmethod
    def _error_event(e: dict[str, Any], invocation: Any, calls: list[_Call]) -> None:
        """An error event answers the one unanswered call of its invocation (a raising tool), if one."""
        waiting = [c for c in calls if c.answer is None and not c.long_running and c.invocation == invocation]
        if len(waiting) != 1:
            return
        code = _get(e, "errorCode", "error_code")
        msg = _get(e, "errorMessage", "error_message")
        waiting[0].answer = (None, msg if isinstance(msg, str) else error_text(code), error_text(code))
