"""`claude-code`: Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

One message a line: `{type: "user"|"assistant", sessionId, uuid, parentUuid, isSidechain, agentId?,
timestamp, message: {role, content}}`, plus lines of other types (`summary`, `system`,
`file-history-snapshot`, ...) that hold no tool activity and are read as ok lines with nothing in them.
Assistant content blocks `{type: "tool_use", id, name, input}` join later user content blocks
`{type: "tool_result", tool_use_id, content, is_error}` by id (see `formats.session`): `name` → `tool`,
`input` → `arguments`, the result block's `content` (text, or text blocks joined) → `result` (a JSON
object/array in the text decoded, other text kept as text), `is_error: true` → `status: "error"` with
the text as `error`. The call keeps its own line and block index; `timestamp` → `started_at`.

Episodes: `trace_id` = `task_id` = `sessionId`. A sub-agent's messages (`isSidechain: true`, in the same
file or in its own `agent-*.jsonl`) are their own episode: `trace_id` = `{sessionId}/sidechain-{key}`,
`task_id` = `sessionId`, labels `{"parent_trace_id": sessionId, "sidechain": key}`, where `key` is the
line's `agentId`, else the `uuid` of the sidechain's first message (found through `parentUuid`).
"""

from __future__ import annotations

from typing import Any

from output_contracts.traces.formats.adapter import (
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    require_str,
)
from output_contracts.traces.formats.session import SessionJoin
from output_contracts.traces.records import Episode, ToolCall

_ROLES = ("user", "assistant")


class ClaudeCodeAdapter(Adapter):
    """Claude Code session JSONL, one message a line, calls joined across lines."""

    name = "claude-code"

    def __init__(self) -> None:
        self.join = SessionJoin("session")
        self.side_root: dict[str, str] = {}  # sidechain message uuid -> its sidechain's key

    def begin(self) -> Adapter:
        return ClaudeCodeAdapter()

    marks = frozenset(
        {"sessionId", "uuid", "parentUuid", "isSidechain", "message", "tool_use", "tool_result"}
    )

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or "sessionId" not in record:
            return "no 'sessionId' field"
        if record.get("type") not in _ROLES or not isinstance(record.get("message"), dict):
            return "no user or assistant 'message' object"
        if "uuid" not in record and "isSidechain" not in record:
            return "no 'uuid' or 'isSidechain' field"
        return None

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def _trace(self, rec: dict[str, Any], sid: str) -> tuple[str, dict[str, Any] | None]:
        """The episode of a line: the session, or one of its sidechains (and its labels)."""
        if rec.get("isSidechain") is not True:
            return sid, None
        agent = rec.get("agentId")
        uuid = rec.get("uuid")
        parent = rec.get("parentUuid")
        found = self.side_root.get(parent) if isinstance(parent, str) else None
        if isinstance(agent, str) and agent:
            key = agent
        elif found is not None:
            key = found
        else:
            key = uuid if isinstance(uuid, str) and uuid else "0"
        if isinstance(uuid, str):
            self.side_root[uuid] = key
        return f"{sid}/sidechain-{key}", {"parent_trace_id": sid, "sidechain": key}

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("record is not a JSON object")
        msg = record.get("message")
        if record.get("type") not in _ROLES or not isinstance(msg, dict):
            return Parsed(())  # summary, system, snapshot lines: no tool activity
        sid = require_str(record, "sessionId")
        trace, labels = self._trace(record, sid)
        join = self.join
        ep = join.episode(trace, sid, ctx.line, labels)
        episodes: list[Episode] = [ep] if ep is not None else []
        if record["type"] == "assistant":
            join.activity(trace)
        content = msg.get("content")
        if not isinstance(content, list):
            return Parsed((), episodes)
        ts = record.get("timestamp")
        started = ts if isinstance(ts, str) else None
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        for bi, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            where = f"message.content[{bi}]"
            if kind == "tool_use":
                if not isinstance(b.get("name"), str):
                    raise RecordError(f"'{where}.name' is missing", field=f"{where}.name")
                args = b.get("input", {})
                if not isinstance(args, dict):
                    raise RecordError(f"'{where}.input' is not an object", field=f"{where}.input")
                cid = b.get("id")
                if not isinstance(cid, str) or not cid:
                    dropped.append(
                        DroppedCall(bi, f"tool_use ({b['name']}) has no id: no result can answer it", b)
                    )
                    continue
                join.call(
                    ctx, trace, cid, tool=b["name"], arguments=args, index=bi, started_at=started, raw=b
                )
            elif kind == "tool_result":
                got = join.result(
                    trace,
                    b.get("tool_use_id"),
                    content=b.get("content"),
                    failed=b.get("is_error") is True,
                    index=bi,
                    raw=b,
                    what="tool_result",
                )
                if isinstance(got, ToolCall):
                    calls.append(got)
                else:
                    dropped.append(got)
        return Parsed(calls, episodes, dropped)

    def finish(self, ctx: RecordContext) -> Parsed:
        return self.join.finish("tool_use")
