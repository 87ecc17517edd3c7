"""`codex`: OpenAI Codex CLI session rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

One item a line: `{timestamp, type, payload}`. `type: "session_meta"` names the session (`payload.id`);
`type: "response_item"` carries Responses API items in `payload`:

- `function_call {name, arguments (JSON text), call_id}` → `tool` = `name`, `arguments` = the decoded
  object; `custom_tool_call {name, input (free text), call_id}` (e.g. `apply_patch`) → `arguments` =
  `{"input": <text>}` (the tool takes text, not an object);
- `function_call_output` / `custom_tool_call_output {call_id, output}` answer them by `call_id` (see
  `formats.session`): `output` (text, or `output_text` blocks joined) → `result`, JSON object/array text
  decoded, other text kept; an output object `{content, success: false}` → `status: "error"`;
- `message` items of role `assistant` and `reasoning` items are agent activity (a session with some and
  no call is reported as `R_NO_CALLS`). Other line types (`turn_context`, `event_msg`, ...) and unknown
  ones are ok lines with nothing in them.

`trace_id` = `task_id` = the session id (`session_meta.payload.id`), else the file name without
`.jsonl`; the line's `timestamp` → `started_at`.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from output_contracts.traces.formats.adapter import (
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    parse_arguments,
)
from output_contracts.traces.formats.session import SessionJoin
from output_contracts.traces.records import Episode, ToolCall

_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_TYPES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")


def _output(out: Any) -> tuple[Any, bool | None]:
    """The result content of an output item and its failure flag, when the item states one."""
    if isinstance(out, dict) and "content" in out:
        return out.get("content"), (out.get("success") is False) if "success" in out else None
    return out, None


class CodexAdapter(Adapter):
    """Codex CLI rollouts, one item a line, calls joined across lines."""

    name = "codex"

    def __init__(self) -> None:
        self.join = SessionJoin("session")
        self.session: str | None = None

    def begin(self) -> Adapter:
        return CodexAdapter()

    marks = frozenset({"payload", "timestamp", *_TYPES})

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or not isinstance(record.get("payload"), dict):
            return "no 'payload' object"
        if record.get("type") not in ("session_meta", "response_item"):
            return "no line of type session_meta or response_item"
        return None

    def sniff(self, record: Any) -> int:
        if self.lacks(record) is None:
            return 2
        if isinstance(record, dict) and isinstance(record.get("payload"), dict):
            return 1 if record.get("type") in _TYPES else 0
        return 0

    def _trace(self, ctx: RecordContext) -> tuple[str, list[Episode]]:
        if self.session is None:
            name = PurePath(ctx.source).name
            self.session = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
        ep = self.join.episode(self.session, self.session, ctx.line)
        return self.session, [ep] if ep is not None else []

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("record is not a JSON object")
        payload = record.get("payload")
        kind = record.get("type")
        if kind == "session_meta" and isinstance(payload, dict) and self.session is None:
            sid = payload.get("id")
            if isinstance(sid, str) and sid:
                self.session = sid
            _, eps = self._trace(ctx)
            return Parsed((), eps)
        if kind != "response_item" or not isinstance(payload, dict):
            return Parsed(())
        trace, eps = self._trace(ctx)
        item = payload.get("type")
        join = self.join
        ts = record.get("timestamp")
        started = ts if isinstance(ts, str) else None
        if item in _CALLS:
            name = payload.get("name") if item != "local_shell_call" else "local_shell"
            if not isinstance(name, str):
                raise RecordError("'payload.name' is missing", field="payload.name")
            if item == "function_call":
                args = parse_arguments(payload.get("arguments"), field="payload.arguments")
            elif item == "custom_tool_call":
                text = payload.get("input")
                if not isinstance(text, str):
                    raise RecordError("'payload.input' is not text", field="payload.input")
                args = {"input": text}
            else:
                action = payload.get("action")
                args = action if isinstance(action, dict) else {}
            cid = payload.get("call_id") or payload.get("id")
            if not isinstance(cid, str) or not cid:
                return Parsed(
                    (),
                    eps,
                    [DroppedCall(0, f"{item} ({name}) has no call_id: no output can answer it", payload)],
                )
            join.call(ctx, trace, cid, tool=name, arguments=args, index=0, started_at=started, raw=payload)
            return Parsed((), eps)
        if item in _OUTPUTS:
            content, failed = _output(payload.get("output"))
            got = join.result(
                trace, payload.get("call_id"), content=content, failed=failed, index=0, raw=payload, what=item
            )
            if isinstance(got, ToolCall):
                return Parsed([got], eps)
            return Parsed((), eps, [got])
        if item == "reasoning" or (item == "message" and payload.get("role") == "assistant"):
            join.activity(trace)
        return Parsed((), eps)

    def finish(self, ctx: RecordContext) -> Parsed:
        return self.join.finish("call")
