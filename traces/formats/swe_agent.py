"""`swe-agent`: SWE-agent trajectory files (`*.traj`, github.com/SWE-agent/SWE-agent).

A whole-file JSON document, one record: `{environment, trajectory: [...], history: [...], info: {...},
replay_config}`. The calls are in `history`, OpenAI chat messages: assistant `tool_calls[{id, function:
{name, arguments (JSON text)}}]` answered by `{role: "tool", tool_call_ids: [...], content}` messages.
SWE-agent names the answered calls in a list (`tool_call_ids`, not `tool_call_id`): each id in it is
answered by that message (first unused answer after the call: demonstration trajectories reuse ids).
The join and the `Error:` convention are the `openai-chat` adapter's (`chat_calls`).

- `trace_id` = `task_id` = the instance id (`replay_config.problem_statement.id`, `replay_config` being
  an object or JSON text), else the file name without `.traj`; no reward (`info.exit_status` goes to
  the episode labels as `exit_status`).

A trajectory whose steps hold actions but whose history has no `tool_calls` (SWE-agent parsing actions
from the model's text) is rejected whole as `R_NO_CALLS`: there is no call structure to read.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import orjson

from output_contracts.traces.formats.adapter import (
    R_NO_CALLS,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    list_of_dicts,
)
from output_contracts.traces.formats.openai_chat import chat_calls
from output_contracts.traces.records import Episode


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

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or not isinstance(record.get("trajectory"), list):
            return "no 'trajectory' list"
        if not isinstance(record.get("history"), list):
            return "a 'trajectory' without a 'history' list"
        return None

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("trajectory is not a JSON object")
        iid = _instance(record, ctx.source)
        history = _split_answers(list_of_dicts(record, "history"))
        calls, dropped = chat_calls(history, trace_id=iid, task_id=iid, ctx=ctx, field="history")
        if not calls and not dropped and record.get("trajectory"):
            raise RecordError(
                f"trajectory '{iid}' has {len(record['trajectory'])} step(s) but no tool_calls in its history "
                "(actions parsed from text)",
                code=R_NO_CALLS,
            )
        info = record.get("info")
        status = info.get("exit_status") if isinstance(info, dict) else None
        labels = {"exit_status": status} if isinstance(status, str) else {}
        return Parsed(calls, [Episode(trace_id=iid, task_id=iid, labels=labels)], dropped)
