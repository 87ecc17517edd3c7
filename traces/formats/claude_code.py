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

Sub-agent messages inside `progress` lines: a main session can carry a sub-agent's (Task tool's) messages
only as `{type: "progress", sessionId, parentToolUseID, data: {type: "agent_progress", agentId,
message: {type: "user"|"assistant", uuid, timestamp, message: {role, content}}}}`. The nested message is
read like a sidechain line of that sub-agent: its episode is `{sessionId}/sidechain-{agentId}` (key
`parentToolUseID` when `agentId` is missing), labels `{"parent_trace_id": sessionId, "sidechain": key}`,
and its `tool_use` / `tool_result` blocks are calls and results of that episode (block positions are
`data.message.message.content[i]`). The same sub-agent message is never counted twice:
- a nested message whose `uuid` this file already read (as a sidechain line or an earlier progress
  line), or a sidechain line whose `uuid` an earlier progress line carried, is skipped;
- newer Claude Code also writes the sub-agent's transcript to its own file,
  `<dir>/<sessionId>/subagents/agent-<agentId>.jsonl` beside the session file `<dir>/<sessionId>.jsonl`
  (older versions: `<dir>/agent-<agentId>.jsonl`). When that file exists, it is the sub-agent's record
  (a folder ingest reads it, detected by its lines' `isSidechain`/`agentId`) and the progress copies in
  the main file are skipped (they are the same messages: same uuids, same tool ids).
Other progress lines (`hook_progress`, `bash_progress`, ...) hold no tool activity.
"""

from __future__ import annotations

from pathlib import Path
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
        self.from_progress: set[str] = set()  # uuids of the sub-agent messages read from progress lines
        self.own_file: dict[tuple[str, str], bool] = {}  # (source, agent) -> its transcript file exists

    def begin(self) -> Adapter:
        return ClaudeCodeAdapter()

    marks = frozenset(
        {
            "sessionId",
            "uuid",
            "parentUuid",
            "isSidechain",
            "message",
            "tool_use",
            "tool_result",
            "agent_progress",
        }
    )

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict):
            return 0
        return 2 if self.lacks(record) is None else 0

    def lacks(self, record: Any) -> str | None:
        """None when `record` is a Claude Code session line (a message, or a sub-agent's progress)."""
        if not isinstance(record, dict):
            return "not a JSON object"
        if "sessionId" not in record:
            return "no 'sessionId'"
        kind = record.get("type")
        if kind == "progress":
            data = record.get("data")
            nested = data.get("message") if isinstance(data, dict) else None
            if isinstance(data, dict) and data.get("type") == "agent_progress" and isinstance(nested, dict):
                return None
            return "a 'progress' line without an agent_progress message"
        if kind not in _ROLES or not isinstance(record.get("message"), dict):
            return "no 'type' user/assistant line with a 'message' object"
        if "uuid" not in record and "isSidechain" not in record:
            return "no 'uuid' or 'isSidechain'"
        return None

    def _agent_file(self, source: str, sid: str, agent: str) -> bool:
        """True when the sub-agent `agent` of session `sid` has its own transcript file beside `source`."""
        key = (source, agent)
        found = self.own_file.get(key)
        if found is None:
            found = False
            if (
                source != "-"
                and agent
                and "/" not in agent
                and "\\" not in agent
                and agent not in (".", "..")
            ):
                here = Path(source).parent
                names = (f"agent-{agent}.jsonl", f"agent-{agent}.jsonl.gz")
                found = any((d / n).is_file() for d in (here / sid / "subagents", here) for n in names)
            self.own_file[key] = found
        return found

    def _progress(self, record: dict[str, Any], ctx: RecordContext) -> Parsed:
        """A `progress` line: an `agent_progress` one carries a sub-agent message (see the module)."""
        data = record.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return Parsed(())
        nested = data.get("message")
        if not isinstance(nested, dict) or nested.get("type") not in _ROLES:
            return Parsed(())
        msg = nested.get("message")
        if not isinstance(msg, dict):
            return Parsed(())
        sid = require_str(record, "sessionId")
        agent = data.get("agentId")
        key = agent if isinstance(agent, str) and agent else record.get("parentToolUseID")
        if not isinstance(key, str) or not key:
            raise RecordError(
                "agent_progress line names no sub-agent ('data.agentId' and 'parentToolUseID' missing)",
                field="data.agentId",
            )
        uuid = nested.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.from_progress or uuid in self.side_root:  # read already
                return Parsed(())
            self.from_progress.add(uuid)
        if self._agent_file(ctx.source, sid, key):
            return Parsed(())
        trace = f"{sid}/sidechain-{key}"
        labels = {"parent_trace_id": sid, "sidechain": key}
        return self._message(
            nested["type"], msg, nested.get("timestamp"), sid, trace, labels, ctx, "data.message.message"
        )

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
        kind = record.get("type")
        if kind == "progress":
            return self._progress(record, ctx)
        msg = record.get("message")
        if kind not in _ROLES or not isinstance(msg, dict):
            return Parsed(())  # summary, system, snapshot lines: no tool activity
        sid = require_str(record, "sessionId")
        uuid = record.get("uuid")
        if record.get("isSidechain") is True and isinstance(uuid, str) and uuid in self.from_progress:
            return Parsed(())  # a sub-agent message already read from a progress line
        trace, labels = self._trace(record, sid)
        return self._message(kind, msg, record.get("timestamp"), sid, trace, labels, ctx, "message")

    def _message(
        self,
        kind: str,
        msg: dict[str, Any],
        ts: Any,
        sid: str,
        trace: str,
        labels: dict[str, Any] | None,
        ctx: RecordContext,
        at: str,
    ) -> Parsed:
        """One user or assistant message `msg` of episode `trace` (`at` names it in errors)."""
        join = self.join
        ep = join.episode(trace, sid, ctx.line, labels)
        episodes: list[Episode] = [ep] if ep is not None else []
        if kind == "assistant":
            join.activity(trace)
        content = msg.get("content")
        if not isinstance(content, list):
            return Parsed((), episodes)
        started = ts if isinstance(ts, str) else None
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        for bi, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            block = b.get("type")
            where = f"{at}.content[{bi}]"
            if block == "tool_use":
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
            elif block == "tool_result":
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
