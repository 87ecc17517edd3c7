"""The join shared by session formats: one message a line, a call and its result on different lines.

Claude Code and Codex CLI write a session as JSON Lines, one message (or item) a line, so a tool call
and its result are two records. `SessionJoin` is the per-source state a session adapter keeps between
lines (`Adapter.begin` makes one per source): calls wait by (trace, call id) until a later line answers
them, at which point the joined `ToolCall` is emitted on the result's line but carries the call's own
line, index and step (so call ids and step order follow the calls, not the answers). What is left at the
end of the source (`finish`) is reported, never dropped silently:

- a call no later line answers: `R_UNMATCHED`, on the call's line;
- a result whose id is unknown or already answered: `R_ORPHAN_RESULT` / `R_DUPLICATE_RESULT`, at once;
- a session (episode) with agent activity (an assistant message, reasoning) but no tool call at all:
  `R_NO_CALLS`, on the session's first line; its episode is kept with 0 calls.

A call repeated under the same id in the same trace (a resumed session replays its history) is kept
once: the first occurrence wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from output_contracts.traces.formats.adapter import (
    R_DUPLICATE_RESULT,
    R_NO_CALLS,
    R_ORPHAN_RESULT,
    R_UNKEYED_RESULT,
    DroppedCall,
    Parsed,
    RecordContext,
    answered_call,
)
from output_contracts.traces.records import Episode, ToolCall


@dataclass
class _Pending:
    """A call waiting for its result: where it was made and what it asked."""

    ctx: RecordContext
    tool: str
    arguments: dict[str, Any]
    index: int
    step: int
    started_at: str | None
    raw: Any


@dataclass
class _Trace:
    """Per-episode bookkeeping: where it starts, whether the agent acted, how many calls it made."""

    first_line: int
    task_id: str
    activity: bool = False
    calls: int = 0


@dataclass
class SessionJoin:
    """Calls waiting for results, answered ids and episodes seen, for one source."""

    what: str = "session"
    pending: dict[tuple[str, str], _Pending] = field(default_factory=dict)
    answered: set[tuple[str, str]] = field(default_factory=set)
    traces: dict[str, _Trace] = field(default_factory=dict)

    def episode(
        self, trace_id: str, task_id: str, line: int, labels: dict[str, Any] | None = None
    ) -> Episode | None:
        """The episode of `trace_id` the first time it is seen (else None): it is emitted once."""
        if trace_id in self.traces:
            return None
        self.traces[trace_id] = _Trace(line, task_id)
        return Episode(trace_id=trace_id, task_id=task_id, labels=labels or {})

    def activity(self, trace_id: str) -> None:
        """The agent did something in this trace (a message, reasoning): a trace with activity and no
        call is reported by `finish`."""
        t = self.traces.get(trace_id)
        if t is not None:
            t.activity = True

    def call(
        self,
        ctx: RecordContext,
        trace_id: str,
        call_id: str,
        *,
        tool: str,
        arguments: dict[str, Any],
        index: int,
        started_at: str | None,
        raw: Any,
    ) -> None:
        """A call made on `ctx.line`: it waits for its result (a repeat of a known id is ignored)."""
        key = (trace_id, call_id)
        if key in self.pending or key in self.answered:
            return
        t = self.traces[trace_id]
        self.pending[key] = _Pending(ctx, tool, arguments, index, t.calls, started_at, raw)
        t.calls += 1
        t.activity = True

    def result(
        self,
        trace_id: str,
        call_id: Any,
        *,
        content: Any,
        failed: bool | None,
        index: int,
        raw: Any,
        what: str,
    ) -> ToolCall | DroppedCall:
        """The answer on the current line: the joined call, or why it answers none."""
        if not isinstance(call_id, str):
            return DroppedCall(
                index, f"{what} at position {index} has no id to join it to a call", raw, R_UNKEYED_RESULT
            )
        key = (trace_id, call_id)
        p = self.pending.pop(key, None)
        if p is None:
            if key in self.answered:
                return DroppedCall(
                    index,
                    f"{what} for id '{call_id}' answers a call that already has its result",
                    raw,
                    R_DUPLICATE_RESULT,
                )
            return DroppedCall(
                index, f"{what} for id '{call_id}' answers no call before it", raw, R_ORPHAN_RESULT
            )
        self.answered.add(key)
        task = self.traces[trace_id].task_id
        return answered_call(
            p.ctx,
            trace_id=trace_id,
            task_id=task,
            tool=p.tool,
            arguments=p.arguments,
            content=content,
            failed=failed,
            step=p.step,
            index=p.index,
            started_at=p.started_at,
            meta={"call_id": call_id},
        )

    def finish(self, what_call: str) -> Parsed:
        """Calls never answered, and traces with activity but no call, as rejects (see the module)."""
        dropped = [
            DroppedCall(
                p.index,
                f"{what_call} '{cid}' ({p.tool}) has no result in the {self.what}",
                p.raw,
                line=p.ctx.line,
            )
            for (_, cid), p in self.pending.items()
        ]
        dropped += [
            DroppedCall(
                0,
                f"{self.what} '{tid}' has agent activity but no tool call",
                {"trace_id": tid},
                R_NO_CALLS,
                line=t.first_line,
            )
            for tid, t in self.traces.items()
            if t.activity and t.calls == 0
        ]
        return Parsed((), (), sorted(dropped, key=lambda d: (d.line or 0, d.index)))
