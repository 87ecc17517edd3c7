"""`atif`: Agent Trajectory Interchange Format (Harbor, Terminal-Bench, OpenHands; `*.trajectory.json`).

A whole-file JSON document, one record (the trajectory): `{schema_version: "ATIF-v1.x", session_id,
agent: {name, tool_definitions?}, steps: [...]}`. In each step, `tool_calls[{tool_call_id,
function_name, arguments}]` are answered by the same step's `observation.results[{source_call_id?,
content}]`: a result with `source_call_id` answers the call with that id; a result without one answers
the step's first call not yet answered, in order (terminus-2 writes no ids).

- `function_name` → `tool`, `arguments` (an object, or JSON text holding one) → `arguments`, the
  result's `content` (text, or text parts joined; a JSON object/array in the text decoded) → `result`.
  ATIF has no error flag: a result whose text starts with `Error:` is an error call (the convention of
  the other chat formats);
- `trace_id` = `task_id` = `session_id`; `step` = the call's order in the trajectory; `step_id` and
  `tool_call_id` go to `meta`; the visible tools are `agent.tool_definitions` when given.

Sub-agent links (ATIF v1.2+ `observation` on any step, `subagent_trajectory_ref` in results): a result
with `subagent_trajectory_ref: [{session_id, trajectory_path?, trajectory_id?, extra?}]` refers to other
trajectories (Terminus-2's context summarisation writes a `system` step whose one result holds only the
references to its summary, questions and answers trajectories). Each reference is a linked episode:
`trace_id` = `task_id` = the reference's `session_id` (else its `trajectory_id`, v1.7), labels
`{"parent_trace_id": session_id, "trajectory_path": ...}` (the path when given); the referenced file,
read in the same or another ingest, is that episode (same `session_id`), its calls read as any
trajectory's. A reference result without `source_call_id` is that link and nothing else: it answers no
call and is no reject; with `source_call_id` (a delegation tool call) it also answers that call as any
result does. A reference naming neither `session_id` nor `trajectory_id` is `R_FIELD`.
`continued_trajectory_ref` (the linear-history form: the trajectory continues in another file with the
same `session_id`) needs nothing: both files are the one episode.

A call no result answers is `R_UNMATCHED`; a result that answers no call of its step (an id no call of
the step has, or more results than calls, e.g. a parser's feedback to the model, or the observation of
an agent step that made no tool call, as in Terminus-2's linear-history files whose actions are only in
the message text) is `R_ORPHAN_RESULT`; a trajectory with agent steps but no tool call and no result is
rejected whole as `R_NO_CALLS`.
"""

from __future__ import annotations

from typing import Any

from output_contracts.traces.formats.adapter import (
    R_NO_CALLS,
    R_ORPHAN_RESULT,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    answered_call,
    list_of_dicts,
    optional_str,
    parse_arguments,
    require_str,
    tool_names,
)
from output_contracts.traces.records import Episode, ToolCall


class AtifAdapter(WholeDocument):
    """ATIF trajectories: one record a file."""

    name = "atif"

    marks = frozenset(
        {"steps", "schema_version", "session_id", "agent", "observation", "tool_calls", "source"}
    )

    def lacks(self, record: Any) -> str | None:
        if not isinstance(record, dict) or not isinstance(record.get("steps"), list):
            return "no 'steps' list"
        version = record.get("schema_version")
        if isinstance(version, str) and version.upper().startswith("ATIF"):
            return None
        return "no ATIF 'schema_version'"

    def sniff(self, record: Any) -> int:
        if self.lacks(record) is None:
            return 2
        if not isinstance(record, dict) or not isinstance(record.get("steps"), list):
            return 0
        return 1 if "session_id" in record else 0

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("trajectory is not a JSON object")
        trace_id = require_str(record, "session_id")
        steps = list_of_dicts(record, "steps")
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        linked: dict[str, Episode] = {}  # referenced sub-agent trajectories, in order
        agent_steps = 0
        index = 0  # position among the trajectory's calls and results (rejects and call ids)
        order = 0  # the call's order among the trajectory's calls (`step`)
        for si, step in enumerate(steps):
            if step.get("source") == "agent":
                agent_steps += 1
            tcs = step.get("tool_calls")
            obs = step.get("observation")
            results = obs.get("results") if isinstance(obs, dict) else None
            results = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
            pending: list[tuple[int, dict[str, Any], dict[str, Any]]] = []  # (index, call, arguments)
            for ti, tc in enumerate(tcs if isinstance(tcs, list) else ()):
                where = f"steps[{si}].tool_calls[{ti}]"
                if not isinstance(tc, dict) or not isinstance(tc.get("function_name"), str):
                    raise RecordError(f"'{where}.function_name' is missing", field=f"{where}.function_name")
                args = parse_arguments(tc.get("arguments", {}), field=f"{where}.arguments")
                pending.append((index, tc, args))
                index += 1
            first_call = order
            order += len(pending)
            answer: dict[int, dict[str, Any]] = {}  # call index -> its result
            loose: list[tuple[int, dict[str, Any]]] = []
            for ri, r in enumerate(results):
                sid = r.get("source_call_id")
                refs = r.get("subagent_trajectory_ref")
                if refs is not None and refs != []:  # an empty list refers to nothing
                    self._links(refs, trace_id, f"steps[{si}].observation.results[{ri}]", linked)
                    if sid is None:
                        continue  # a link to other trajectories, answering no call
                if sid is None:
                    loose.append((ri, r))
                    continue
                match = next(
                    (i for i, tc, _ in pending if tc.get("tool_call_id") == sid and i not in answer), None
                )
                if match is None:
                    dropped.append(
                        DroppedCall(
                            index + ri,
                            f"steps[{si}] result {ri} for id '{sid}' answers no call of its step",
                            r,
                            R_ORPHAN_RESULT,
                        )
                    )
                else:
                    answer[match] = r
            free = [i for i, _, _ in pending if i not in answer]
            for (_ri, r), i in zip(loose, free, strict=False):
                answer[i] = r
            for ri, r in loose[len(free) :]:
                dropped.append(
                    DroppedCall(
                        index + ri,
                        f"steps[{si}] result {ri} has no source_call_id and no call of its step left to answer"
                        if pending
                        else f"steps[{si}] result {ri} answers no tool call: its step made none (an action "
                        "written in the message text, or feedback to the model)",
                        r,
                        R_ORPHAN_RESULT,
                    )
                )
            for k, (i, tc, args) in enumerate(pending):
                r = answer.get(i)
                if r is None:
                    dropped.append(
                        DroppedCall(
                            i,
                            f"tool call '{tc.get('tool_call_id')}' ({tc['function_name']}) of steps[{si}] has no result",
                            tc,
                        )
                    )
                    continue
                calls.append(
                    answered_call(
                        ctx,
                        trace_id=trace_id,
                        task_id=trace_id,
                        tool=tc["function_name"],
                        arguments=args,
                        content=r.get("content"),
                        step=first_call + k,
                        index=i,
                        started_at=step.get("timestamp") if isinstance(step.get("timestamp"), str) else None,
                        meta={"step_id": step.get("step_id"), "call_id": tc.get("tool_call_id")},
                    )
                )
            index += len(results)
        if agent_steps and not calls and not dropped:
            raise RecordError(
                f"trajectory '{trace_id}' has {agent_steps} agent step(s) but no tool call", code=R_NO_CALLS
            )
        agent = record.get("agent")
        tools = tool_names(agent.get("tool_definitions")) if isinstance(agent, dict) else None
        episodes = [Episode(trace_id=trace_id, task_id=trace_id, tools=tools)]
        episodes += [ep for child, ep in linked.items() if child != trace_id]
        return Parsed(calls, episodes, sorted(dropped, key=lambda d: d.index))

    @staticmethod
    def _links(refs: Any, parent: str, where: str, linked: dict[str, Episode]) -> None:
        """The episodes `subagent_trajectory_ref` links to `parent` (see the module)."""
        if not isinstance(refs, list):
            raise RecordError(
                f"'{where}.subagent_trajectory_ref' is not a list", field=f"{where}.subagent_trajectory_ref"
            )
        for k, ref in enumerate(refs):
            at = f"{where}.subagent_trajectory_ref[{k}]"
            if not isinstance(ref, dict):
                raise RecordError(f"'{at}' is not an object", field=at)
            child = optional_str(ref, "session_id", where=f"{at}.") or optional_str(
                ref, "trajectory_id", where=f"{at}."
            )
            if not child:
                raise RecordError(
                    f"'{at}' names no trajectory (no 'session_id' or 'trajectory_id')", field=at
                )
            labels: dict[str, Any] = {"parent_trace_id": parent}
            path = ref.get("trajectory_path")
            if isinstance(path, str) and path:
                labels["trajectory_path"] = path
            linked.setdefault(child, Episode(trace_id=child, task_id=child, labels=labels))
