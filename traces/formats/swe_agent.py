"""`swe-agent`: SWE-agent trajectory files (`*.traj`, github.com/SWE-agent/SWE-agent).

A whole-file JSON document, one record: `{environment, trajectory: [...], history: [...], info: {...},
replay_config}`. With function calling (SWE-agent 1.x's default), the calls are in `history`, OpenAI
chat messages: assistant `tool_calls[{id, function: {name, arguments (JSON text)}}]` answered by
`{role: "tool", tool_call_ids: [...], content}` messages.
SWE-agent names the answered calls in a list (`tool_call_ids`, not `tool_call_id`): each id in it is
answered by that message (first unused answer after the call: demonstration trajectories reuse ids).
The join and the `Error:` convention are the `openai-chat` adapter's (`chat_calls`).

- `trace_id` = `task_id` = the instance id (`replay_config.problem_statement.id`, `replay_config` being
  an object or JSON text), else the file name without `.traj`; no reward (`info.exit_status` goes to
  the episode labels as `exit_status`).

**Text actions** (SWE-agent 0.x, and 1.x run with a `thought_action`/`xml_thought_action` parser): the
history holds no `tool_calls`; the model wrote its action as text and SWE-agent parsed it. Then the
calls are read from `trajectory[]`, one call a step, in order (`step` = the step's position):

- `tool` = the command: the first whitespace-delimited word of the step's `action` once its surrounding
  whitespace is removed (`open`, `edit`, `find_file`, `search_dir`, `submit`, or a shell command such
  as `python`, `ls`, `rm`; a compound shell line `cd a && make` is `cd`).
- `arguments` = `{"args": TEXT}`, TEXT being everything after the command with the spaces and tabs
  right after it removed, verbatim (quotes kept, no shell splitting); a multi-line action (`edit 5:7`
  followed by its body and `end_of_edit`) keeps its whole body, newlines included. A command with no
  argument text (`submit`) has `{}`, as it has in SWE-agent's function-calling trajectories.
- `result` = the step's `observation`, as text (never JSON-decoded: it is terminal output).
- `status` = `error`, with `error` = the observation and no result, when the observation's first line
  is one of SWE-agent's own failure messages: starts with `Your proposed edit has introduced new
  syntax error(s)` (the edit linter refused the edit; the file is unchanged), `Error:` or `Usage:` (a
  command's own error or usage line), `No file open.`, or ends with `: command not found` (the shell).
  Anything else is `ok` (a Python traceback printed by `python x.py` is the program's output).
- A step whose `action` is not a string is `R_FIELD` (the whole file); a step whose action is blank, or
  whose `observation` is missing (not a string), is a dropped call: `R_FIELD` and `R_UNMATCHED`.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import orjson

from output_contracts.traces.formats.adapter import (
    R_FIELD,
    R_UNMATCHED,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    list_of_dicts,
)
from output_contracts.traces.formats.openai_chat import chat_calls, has_chat_tools
from output_contracts.traces.records import Episode, ToolCall

#: Observation openings that are SWE-agent's own failure messages (the first line starts with one).
ERROR_OPENINGS = (
    "Your proposed edit has introduced new syntax error(s)",
    "Error:",
    "Usage:",
    "No file open.",
)


def parse_action(action: str) -> tuple[str, dict[str, Any]] | None:
    """`(tool, arguments)` of one text action, or None for a blank one (see the module docstring)."""
    text = action.strip()
    if not text:
        return None
    end = 0
    while end < len(text) and not text[end].isspace():
        end += 1
    rest = text[end:].lstrip(" \t")
    return text[:end], ({"args": rest} if rest else {})


def failed_observation(observation: str) -> bool:
    """True when an observation is one of SWE-agent's own failure messages."""
    first = observation.lstrip().split("\n", 1)[0]
    return first.startswith(ERROR_OPENINGS) or first.rstrip().endswith(": command not found")


def text_action_calls(
    steps: list[dict[str, Any]], *, trace_id: str, ctx: RecordContext
) -> tuple[list[ToolCall], list[DroppedCall]]:
    """One call a trajectory step: the parsed action and its observation."""
    calls: list[ToolCall] = []
    dropped: list[DroppedCall] = []
    for i, st in enumerate(steps):
        action = st.get("action")
        if not isinstance(action, str):
            raise RecordError(f"'trajectory[{i}].action' is not a string", field=f"trajectory[{i}].action")
        parsed = parse_action(action)
        obs = st.get("observation")
        if parsed is None:
            dropped.append(DroppedCall(i, f"trajectory step {i} has a blank action", st, R_FIELD))
            continue
        tool, args = parsed
        if not isinstance(obs, str):
            dropped.append(
                DroppedCall(i, f"trajectory step {i} ({tool}) has no observation", st, R_UNMATCHED)
            )
            continue
        failed = failed_observation(obs)
        calls.append(
            ToolCall(
                trace_id=trace_id,
                tool=tool,
                arguments=args,
                result=None if failed else obs,
                status="error" if failed else "ok",
                error=obs if failed else None,
                task_id=trace_id,
                step=i,
                source=ctx.source,
                line=ctx.line,
                index=i,
            )
        )
    return calls, dropped


def _instance(record: dict[str, Any], source: str) -> str:
    rc = record.get("replay_config")
    if isinstance(rc, str):
        try:
            rc = orjson.loads(rc)
        except orjson.JSONDecodeError:
            rc = None
    ps = rc.get("problem_statement") if isinstance(rc, dict) else None
    iid = ps.get("id") if isinstance(ps, dict) else None
    if isinstance(iid, str) and iid:
        return iid
    name = PurePath(source).name
    return name[: -len(".traj")] if name.endswith(".traj") else name


def _split_answers(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool messages with a `tool_call_ids` list become one `tool_call_id` message per id."""
    out: list[dict[str, Any]] = []
    for m in messages:
        ids = m.get("tool_call_ids")
        if m.get("role") == "tool" and isinstance(ids, list) and "tool_call_id" not in m:
            out.extend({**m, "tool_call_id": i} for i in ids)
            if not ids:
                out.append(m)
        else:
            out.append(m)
    return out


class SweAgentAdapter(WholeDocument):
    """SWE-agent `.traj` files: one record a file."""

    name = "swe-agent"

    marks = frozenset({"trajectory", "history", "info", "action", "observation", "thought", "exit_status"})

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict):
            return "not a JSON object"
        if not isinstance(record.get("trajectory"), list):
            return "no 'trajectory' list of steps"
        if not isinstance(record.get("history"), list):
            return "no 'history' list of messages"
        return None

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("trajectory is not a JSON object")
        iid = _instance(record, ctx.source)
        history = list_of_dicts(record, "history")
        answers = _split_answers(history)
        if has_chat_tools(answers):
            calls, dropped = chat_calls(answers, trace_id=iid, task_id=iid, ctx=ctx, field="history")
        else:
            steps = list_of_dicts(record, "trajectory")
            calls, dropped = text_action_calls(steps, trace_id=iid, ctx=ctx)
        info = record.get("info")
        status = info.get("exit_status") if isinstance(info, dict) else None
        labels = {"exit_status": status} if isinstance(status, str) else {}
        return Parsed(calls, [Episode(trace_id=iid, task_id=iid, labels=labels)], dropped)
