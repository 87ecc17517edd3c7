"""`smolagents`: a smolagents agent's memory as smolagents returns it, `agent.memory.get_full_steps()`
(smolagents 1.10 and later; earlier versions hold `ChatMessage` objects there, which have no JSON
form), written as one JSON array a file (`json.dumps(agent.memory.get_full_steps())`).

The array holds the steps' dicts in order: a task step `{task, task_images}`, action steps
`{step_number, timing, model_input_messages, tool_calls, error, model_output_message, model_output,
code_action, observations, observations_images, action_output, token_usage, is_final_answer}`, and
planning or final-answer steps (`{plan, ...}`, `{output}`), which hold no call. The whole file is one
record and one episode.

An **action step** yields its calls:

- `tool_calls[M]` = `{id, type, function: {name, arguments}}` → `tool` = `function.name`, `arguments` =
  `function.arguments` (an object, or JSON text holding one; anything else, such as a `CodeAgent`'s
  code text, is `R_FIELD`); `id` → `meta.tool_call_id`, `step_number` → `meta.step_number`.
- `observations` → `result` (decoded when it is a JSON object or array), `status: "ok"`. smolagents
  writes one text a step: the outputs of the step's calls, each `str(output).strip()`, joined with
  `"\\n"` in the order of the calls' ids. A step with one call takes it whole. A step with N > 1 calls
  is split only when the text has exactly N lines, line k answering the k-th call in id order (this is
  exact unless an output holds a newline while another is empty); otherwise each of its calls is
  `R_UNMATCHED` (which part answers which call is not recorded).
- A step whose tool run failed has `error` = `{type, message}` and **no** `tool_calls` (smolagents
  records them only after every call succeeded): its calls are read from `model_output_message.
  tool_calls` (same shape). When `error.type` is one of smolagents' tool errors
  (`AgentToolExecutionError`, `AgentToolCallError`, and 1.x's `AgentExecutionError`) and the step asked
  for one call, that call is `status: "error"` with `error` = `error.message` and no result; with
  several calls (which one failed is not recorded), or another error type (the agent failed before
  running the call), each asked call is `R_UNMATCHED` naming the error.
- A step without calls (a parsing or generation error, a plain-text answer) yields none.

`trace_id` = `task_id` = the file name without `.json` (the dump holds no run id); the episode's
label `task` = the first task step's `task`; `started_at` = the step's `timing.start_time` (epoch
seconds, RFC 3339 UTC); `step` is left to ingest (calls in reading order). A dump with action steps and
not one call or reject is `R_NO_CALLS`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from output_contracts.traces.formats.adapter import (
    R_NO_CALLS,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    decode_result,
    parse_arguments,
)
from output_contracts.traces.records import Episode, ToolCall

#: The keys every action step's dict has (`ActionStep.dict()`), the format's defining shape.
ACTION_KEYS = frozenset(
    {"step_number", "timing", "tool_calls", "observations", "error", "model_output_message"}
)
#: smolagents' errors raised by running a tool (the call was made and failed).
TOOL_ERRORS = frozenset({"AgentToolExecutionError", "AgentToolCallError", "AgentExecutionError"})


def _is_action(step: Any) -> bool:
    return isinstance(step, dict) and step.keys() >= ACTION_KEYS


def _stamp(timing: Any) -> str | None:
    t = timing.get("start_time") if isinstance(timing, dict) else None
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 <= t < 1e11:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


Asked = tuple[str | None, str, Any, str, Any]


def _asked(calls: Any, where: str) -> list[Asked]:
    """`(id, tool, raw arguments, where, raw call)` of each call of a `tool_calls` list."""
    if not isinstance(calls, list):
        raise RecordError(f"'{where}' is not a list", field=where)
    out: list[Asked] = []
    for m, c in enumerate(calls):
        fn = c.get("function") if isinstance(c, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str) or not name:
            raise RecordError(f"'{where}[{m}].function.name' is missing", field=f"{where}[{m}].function.name")
        cid = c.get("id")
        args = fn.get("arguments") if isinstance(fn, dict) else None
        out.append((None if cid is None else str(cid), name, args, f"{where}[{m}]", c))
    return out


def split_observations(text: str, n: int) -> list[str] | None:
    """The `n` outputs smolagents joined into one step's `observations`, or None when the text does not
    have exactly `n` lines (see the module docstring)."""
    if n == 1:
        return [text]
    parts = text.split("\n")
    return parts if len(parts) == n else None


class SmolagentsAdapter(WholeDocument):
    """A smolagents memory dump: a JSON array of `get_full_steps()` dicts."""

    name = "smolagents"

    def sniff(self, record: Any) -> int:
        if not isinstance(record, list):
            return 0
        return 2 if any(_is_action(s) for s in record) else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = ACTION_KEYS | {"observations_images", "action_output", "model_input_messages"}

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record):
            return None
        return f"no array of steps with an action step ({', '.join(sorted(ACTION_KEYS))})"

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, list):
            raise RecordError("a smolagents memory dump is a JSON array of steps")
        name = PurePath(ctx.source).name
        trace_id = name[: -len(".json")] if name.endswith(".json") else name
        task = next(
            (s["task"] for s in record if isinstance(s, dict) and isinstance(s.get("task"), str)), None
        )
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = 0
        actions = 0
        for i, step in enumerate(record):
            if not _is_action(step):
                continue
            actions += 1
            where = f"[{i}]"
            started_at = _stamp(step.get("timing"))
            number = step.get("step_number")
            err = step.get("error")
            asked = _asked(step["tool_calls"] or [], f"{where}.tool_calls")
            if not asked and err is not None:
                mom = step.get("model_output_message")
                if isinstance(mom, dict) and mom.get("tool_calls"):
                    asked = _asked(mom["tool_calls"], f"{where}.model_output_message.tool_calls")
            if not asked:
                continue
            outcomes: list[tuple[Any, str, str | None] | str]
            if err is not None and not step["tool_calls"]:
                etype = err.get("type") if isinstance(err, dict) else None
                emsg = err.get("message") if isinstance(err, dict) else None
                text = emsg if isinstance(emsg, str) else str(err)
                if etype in TOOL_ERRORS and len(asked) == 1:
                    outcomes = [(None, "error", text)]
                else:
                    why = (
                        f"step {number} failed ({etype}) before running its calls"
                        if etype not in TOOL_ERRORS
                        else f"step {number} failed ({etype}) and which of its {len(asked)} calls failed is not recorded"
                    )
                    outcomes = [why] * len(asked)
            else:
                obs = step.get("observations")
                parts = split_observations(obs, len(asked)) if isinstance(obs, str) else None
                if parts is None:
                    why = (
                        f"step {number} records no observations"
                        if not isinstance(obs, str)
                        else f"step {number}'s observations do not split into its {len(asked)} calls' outputs"
                    )
                    outcomes = [why] * len(asked)
                else:
                    # smolagents joins the outputs in the order of the calls' ids
                    order = sorted(range(len(asked)), key=lambda k: asked[k][0] or "")
                    by_call: list[Any] = [None] * len(asked)
                    for k, part in zip(order, parts, strict=True):
                        by_call[k] = part
                    outcomes = [(decode_result(p), "ok", None) for p in by_call]
            for (cid, tool, raw_args, cwhere, raw), got in zip(asked, outcomes, strict=True):
                meta: dict[str, Any] = {"step_number": number}
                if cid is not None:
                    meta["tool_call_id"] = cid
                try:
                    args = (
                        {}
                        if raw_args is None
                        else parse_arguments(raw_args, field=f"{cwhere}.function.arguments")
                    )
                except RecordError as e:
                    dropped.append(DroppedCall(index, e.reason, raw, e.code))
                    index += 1
                    continue
                if isinstance(got, str):
                    dropped.append(DroppedCall(index, f"tool call '{cid}' ({tool}): {got}", raw))
                    index += 1
                    continue
                result, status, error = got
                calls.append(
                    ToolCall(
                        trace_id=trace_id,
                        tool=tool,
                        arguments=args,
                        result=result,
                        status=status,
                        error=error,
                        task_id=trace_id,
                        started_at=started_at,
                        source=ctx.source,
                        line=ctx.line,
                        index=index,
                        meta=meta,
                    )
                )
                index += 1
        if actions and not calls and not dropped:
            raise RecordError(f"{actions} action step(s) and no tool call", code=R_NO_CALLS)
        labels = {"task": task} if task is not None else {}
        return Parsed(calls, [Episode(trace_id=trace_id, task_id=trace_id, labels=labels)], dropped)
