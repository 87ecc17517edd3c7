"""`flat`: the canonical call record, one tool call a line (DESIGN §2.1).

Required: `trace_id`, `tool`, `arguments` (an object) and `result` unless `status` is `"error"`.
Optional: `task_id` (defaults to `trace_id`), `step` (defaults to the call's order within its trace in
this source), `status` (`ok`/`error`, default `ok`), `error`, `started_at`, `labels` (an object), and
episode-level fields repeated on any call of the trace: `reward` (a number), `tools` (the visible tool
names), and the run facts `contracts compare` pairs and averages, `trial` (an integer), `agent_cost`
and `user_cost` (numbers). Integer ids are accepted and stored as decimal text. Unknown fields are
ignored. `step`, stored as an int64, must be 0 to 2**63-1: a line outside that range is rejected (field
`step`).
"""

from __future__ import annotations

from typing import Any

from output_contracts.traces.formats.adapter import (
    INT64_MAX,
    Adapter,
    Parsed,
    RecordContext,
    RecordError,
    decode_result,
    error_text,
    optional_reward,
    optional_str,
    require_str,
    run_facts,
    tool_names,
)
from output_contracts.traces.records import Episode, ToolCall

#: A record's episode facts: reward, tools, trial, agent_cost, user_cost.
EpisodeFacts = tuple[float | None, tuple[str, ...] | None, int | None, float | None, float | None]
#: A record's call as plain values, in this order: trace_id, tool, arguments, result (decoded when a JSON
#: string), status, error, task_id, step, started_at, labels, and its episode facts (None when it declares
#: none). The order `FlatAdapter.fields` returns and ingest reads.
FlatFields = tuple[
    str,
    str,
    dict[str, Any],
    Any,
    str,
    str | None,
    str | None,
    int | None,
    str | None,
    dict[str, Any],
    EpisodeFacts | None,
]

#: Episode-level keys besides `reward` and `tools` whose presence makes a line declare its episode.
_RUN_FACTS = frozenset(("trial", "agent_cost", "user_cost"))


class FlatAdapter(Adapter):
    """One JSON object per line, each a tool call."""

    name = "flat"

    def __init__(self) -> None:
        #: The last `tools` list of plain names (a copy) and its `tool_names`: every record of a flat
        #: file repeats its episode's list, so most records reuse the previous answer. Equality with the
        #: copy is the test, so a hit is exact whatever the trace; lists holding objects are not cached
        #: (a copy of the list would not freeze them). One entry, swapped as one tuple.
        self._tools_seen: tuple[list[str], tuple[str, ...]] | None = None

    marks = frozenset({"tool", "arguments", "trace_id", "result", "status", "error"})

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or "tool" not in record:
            return "no 'tool' field"
        if "arguments" not in record and "trace_id" not in record:
            return "a 'tool' field without 'arguments' or 'trace_id'"
        return None

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict):
            return 0
        if "tool" in record and ("arguments" in record or "trace_id" in record):
            return 2
        if "trace_id" in record and ("arguments" in record or "result" in record):
            return 1
        return 0

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        f = self.fields(record)
        trace_id, tool, args, result, status, error, task_id, step, started_at, labels, facts = f
        call = ToolCall(
            trace_id=trace_id,
            tool=tool,
            arguments=args,
            result=result,
            status=status,
            error=error,
            task_id=task_id,
            step=step,
            started_at=started_at,
            labels=labels,
            source=ctx.source,
            line=ctx.line,
        )
        if facts is None:
            return Parsed((call,))
        reward, tools, trial, agent_cost, user_cost = facts
        ep = Episode(
            trace_id=trace_id,
            task_id=call.task,
            reward=reward,
            tools=tools,
            trial=trial,
            agent_cost=agent_cost,
            user_cost=user_cost,
        )
        return Parsed((call,), (ep,))

    def fields(self, record: dict[str, Any]) -> FlatFields:
        """A record's call as plain values (`FlatFields`), validated: what `parse` wraps in a `ToolCall`
        and an `Episode`, and what ingest stages straight into its columns (no object per call)."""
        # The hot path of a large flat ingest: common well-typed values are taken directly, and the
        # helpers (which build the error messages) run only when a value is missing or unusual.
        rec = record
        get = rec.get
        trace_id = get("trace_id")
        if type(trace_id) is not str or not trace_id:
            trace_id = require_str(rec, "trace_id")
        tool = get("tool")
        if type(tool) is not str or not tool:
            tool = require_str(rec, "tool")
        args = get("arguments")
        if type(args) is not dict:
            what = "missing" if args is None else f"not an object ({type(args).__name__})"
            raise RecordError(f"'arguments' is {what}", field="arguments")
        status = get("status") or "ok"
        if status != "ok" and status != "error":
            raise RecordError(f"'status' must be 'ok' or 'error', got {status!r}", field="status")
        if status == "ok" and "result" not in rec:
            raise RecordError("'result' is missing (required unless status is 'error')", field="result")
        step = get("step")
        if step is not None:
            if type(step) is not int:
                raise RecordError(f"'step' must be an integer, got {step!r}", field="step")
            if step < 0 or step > INT64_MAX:
                raise RecordError(
                    f"'step' is out of range: {step} (must be 0 to 2**63-1, an order stored as int64)",
                    field="step",
                )
        labels = get("labels")
        if labels is None:
            labels = {}
        elif type(labels) is not dict:
            raise RecordError("'labels' must be an object", field="labels")
        error = get("error")
        if error is not None and type(error) is not str:
            error = error_text(error)
        task_id = get("task_id")
        if task_id is not None and type(task_id) is not str:
            task_id = optional_str(rec, "task_id")
        started_at = get("started_at")
        if started_at is not None and type(started_at) is not str:
            started_at = optional_str(rec, "started_at")
        result = get("result")
        if type(result) is str:
            result = decode_result(result)
        tools_v = get("tools")
        if tools_v is None and get("reward") is None and not _RUN_FACTS.intersection(rec):
            facts = None
        else:
            facts = self._facts(rec, tools_v)
        return (trace_id, tool, args, result, status, error, task_id, step, started_at, labels, facts)

    def _facts(self, rec: dict[str, Any], tools_v: Any) -> EpisodeFacts:
        """The episode facts a record declares: reward, visible tools and the run facts."""
        reward = optional_reward(rec)
        trial, agent_cost, user_cost = run_facts(rec)
        seen = self._tools_seen
        if seen is not None and tools_v is not None and seen[0] == tools_v:
            tools: tuple[str, ...] | None = seen[1]
        else:
            tools = tool_names(tools_v)
            if tools_v is not None and tools is None:
                raise RecordError("'tools' must be a list of tool names", field="tools")
            if tools is not None and all(type(t) is str for t in tools_v):
                self._tools_seen = (list(tools_v), tools)
        return reward, tools, trial, agent_cost, user_cost
