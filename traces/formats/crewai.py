"""`crewai`: CrewAI run results, the `CrewOutput` that `Crew.kickoff()` returns (and a single
`TaskOutput`), as pydantic serialises them (`result.model_dump_json()`).

Why this file: CrewAI writes no tool-call trace of its own (`Crew(output_log_file=...)` logs task start
and completion only, no tool usage). The record CrewAI itself keeps of a run's calls is the result's
`tasks_output[].messages` (the agent's whole conversation) with `tool_failures` (each failed call: tool,
arguments, exception message). The OpenInference instrumentation is the other source (read by
`openinference`), but it sees no call of CrewAI's text-action loop, which this file holds.

A record is one `CrewOutput` (`{raw, tasks_output: [...], token_usage}`) or one `TaskOutput`
(`{description, name, expected_output, agent, raw, messages, tool_failures}`), one a line or one a
`.json` file. Each task output is one episode: `trace_id` = `<file name>#<task index>` (CrewAI puts no
run id in its output), `task_id` = the task's `name` (else `description`). Its calls, in message order
(`step`), come in two shapes, as the agent ran:

- **native function calling**: assistant `tool_calls[{id, function: {name, arguments}}]` (arguments JSON
  text) answered by the first later `{role: "tool", tool_call_id, content}` message with that id;
- **text actions (ReAct)**: an assistant message `Thought: ...\\nAction: <tool>\\nAction Input: <JSON
  object>\\nObservation: <result>`: `tool` = the action, `arguments` = the action input, `result` = the
  text after `Observation: ` (decoded when it is a JSON object or array).

Status: a call whose tool and arguments match an entry of the task's `tool_failures` (`tool_name`,
`tool_args`; entries consumed in order) is `error`, `error` = its `failure.message`. Without such an
entry, a result CrewAI wrote as a failure (`Error executing tool: <message>` in native mode; `I
encountered an error ...` in text mode) is `error` with that text (the native prefix removed); any other
is `ok`. Rejects: a call with no answer (no tool message; a text action with no `Observation:`)
`R_UNMATCHED`; action input that is not a JSON object `R_FIELD`;
a tool message answering no call `R_ORPHAN_RESULT` / `R_DUPLICATE_RESULT` / `R_UNKEYED_RESULT`; a record
with messages but no call `R_NO_CALLS`.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any, ClassVar

from output_contracts.jsonutil import canonical_str
from output_contracts.traces.formats.adapter import (
    R_FIELD,
    R_FORMAT,
    R_NO_CALLS,
    R_UNMATCHED,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    decode_result,
    list_of_dicts,
    parse_arguments,
    tool_message_answers,
)
from output_contracts.traces.records import Episode, ToolCall

#: A text action: the tool, its input and the observation CrewAI appended to the same message.
ACTION = re.compile(
    r"^Action:[ \t]*(?P<tool>[^\n]*?)[ \t]*\nAction Input:[ \t]*(?P<args>.*?)\nObservation: ?(?P<obs>.*)\Z",
    re.S | re.M,
)
#: A text action the run never answered (no `Observation:` after it).
ASKED = re.compile(r"^Action:[ \t]*(?P<tool>[^\n]*?)[ \t]*\nAction Input:[ \t]*(?P<args>.*)\Z", re.S | re.M)
NATIVE_ERROR = "Error executing tool: "
TEXT_ERROR = "I encountered an error"


def _is_task_output(record: dict[str, Any]) -> bool:
    return isinstance(record.get("messages"), list) and "agent" in record and "expected_output" in record


def _task_outputs(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    tasks = record.get("tasks_output")
    if (
        isinstance(tasks, list)
        and "raw" in record
        and all(isinstance(t, dict) and _is_task_output(t) for t in tasks)
    ):
        return tasks
    return [record] if _is_task_output(record) else None


class _Failures:
    """A task's `tool_failures`, taken by (tool, arguments) in order."""

    def __init__(self, raw: Any) -> None:
        self._left: list[tuple[str, str, str]] = []
        for f in raw if isinstance(raw, list) else ():
            if isinstance(f, dict) and isinstance(f.get("tool_name"), str):
                failure = f.get("failure")
                msg = failure.get("message") if isinstance(failure, dict) else None
                args = f.get("tool_args") if isinstance(f.get("tool_args"), dict) else {}
                self._left.append(
                    (f["tool_name"], canonical_str(args), msg if isinstance(msg, str) else "error")
                )

    def take(self, tool: str, args: dict[str, Any]) -> str | None:
        key = canonical_str(args)
        for i, (t, a, msg) in enumerate(self._left):
            if t == tool and a == key:
                del self._left[i]
                return msg
        return None


def _outcome(content: Any, failed: str | None) -> tuple[Any, str, str | None]:
    if failed is not None:
        return None, "error", failed
    return crewai_outcome(content)


def crewai_outcome(content: Any) -> tuple[Any, str, str | None]:
    """`(result, status, error)` of a tool result as CrewAI words it: `Error executing tool: <m>` (native
    calls) and `I encountered an error ...` (text actions) are failures; anything else is the result."""
    if isinstance(content, str):
        if content.startswith(NATIVE_ERROR):
            return None, "error", content[len(NATIVE_ERROR) :]
        if content.lstrip().startswith(TEXT_ERROR):
            return None, "error", content.strip()
    return decode_result(content), "ok", None


class CrewAIAdapter(WholeDocument):
    """`CrewOutput` / `TaskOutput` documents: one a line or one a file."""

    name = "crewai"
    whole_file: ClassVar[bool] = True

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {
            "tasks_output",
            "raw",
            "token_usage",
            "json_dict",
            "agent",
            "expected_output",
            "messages",
            "tool_failures",
        }
    )

    def lacks(self, record: Any) -> str | None:
        if isinstance(record, dict) and _task_outputs(record) is not None:
            return None
        return "no 'tasks_output' list of task outputs (nor a task output with 'messages', 'agent', 'expected_output')"

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        tasks = _task_outputs(record) if isinstance(record, dict) else None
        if tasks is None:
            raise RecordError(f"not a CrewAI output: {self.lacks(record)}", code=R_FORMAT)
        name = PurePath(ctx.source).name
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        episodes: list[Episode] = []
        index = 0
        for ti, task in enumerate(tasks):
            where = f"tasks_output[{ti}]." if "tasks_output" in record else ""
            trace_id = f"{name}#{ti}"
            task_id = next(
                (v for k in ("name", "description") if isinstance(v := task.get(k), str) and v), trace_id
            )
            msgs = list_of_dicts(task, "messages")
            failures = _Failures(task.get("tool_failures"))
            answers = tool_message_answers(msgs)
            step = 0
            for pos, m in enumerate(msgs):
                if m.get("role") != "assistant":
                    continue
                # (tool, raw arguments, field, answered?, content, raw)
                found: list[tuple[Any, Any, str, bool, Any, Any]] = []
                tcs = m.get("tool_calls")
                for ci, tc in enumerate(tcs if isinstance(tcs, list) else ()):
                    fn = tc.get("function") if isinstance(tc, dict) else None
                    fn = fn if isinstance(fn, dict) else {}
                    ans = answers.take(tc.get("id") if isinstance(tc, dict) else None, pos)
                    found.append(
                        (
                            fn.get("name"),
                            fn.get("arguments"),
                            f"{where}messages[{pos}].tool_calls[{ci}]",
                            ans is not None,
                            ans.get("content") if ans is not None else None,
                            tc,
                        )
                    )
                content = m.get("content")
                act = ACTION.search(content) if isinstance(content, str) and not found else None
                if act is not None:
                    found.append(
                        (
                            act["tool"],
                            act["args"].strip(),
                            f"{where}messages[{pos}].content",
                            True,
                            act["obs"],
                            m,
                        )
                    )
                elif isinstance(content, str) and not found and (asked := ASKED.search(content)) is not None:
                    where_c = f"{where}messages[{pos}].content"
                    found.append((asked["tool"], asked["args"].strip(), where_c, False, None, m))
                for tool, raw_args, field, answered, result, raw in found:
                    i, index, s = index, index + 1, step
                    step += 1
                    if not isinstance(tool, str) or not tool:
                        dropped.append(DroppedCall(i, f"'{field}' names no tool", raw, R_FIELD))
                        continue
                    try:
                        args = parse_arguments(
                            raw_args if raw_args is not None else {}, field=f"{field} arguments"
                        )
                    except RecordError as e:
                        dropped.append(DroppedCall(i, e.reason, raw, R_FIELD))
                        continue
                    if not answered:
                        dropped.append(
                            DroppedCall(
                                i, f"tool call '{tool}' at '{field}' has no tool message", raw, R_UNMATCHED
                            )
                        )
                        continue
                    res, status, error = _outcome(result, failures.take(tool, args))
                    calls.append(
                        ToolCall(
                            trace_id=trace_id,
                            tool=tool,
                            arguments=args,
                            result=res,
                            status=status,
                            error=error,
                            task_id=task_id,
                            step=s,
                            source=ctx.source,
                            line=ctx.line,
                            index=i,
                            meta={"agent": task.get("agent")},
                        )
                    )
            for d in answers.leftovers("tool message"):
                dropped.append(DroppedCall(index + d.index, d.reason, d.raw, d.code))
            index += len(msgs)
            episodes.append(Episode(trace_id=trace_id, task_id=task_id))
        if not calls and not dropped:
            n = sum(len(t.get("messages") or ()) for t in tasks)
            raise RecordError(
                f"CrewAI output with {len(tasks)} task(s) and {n} message(s) holds no tool call",
                code=R_NO_CALLS,
            )
        return Parsed(calls, episodes, dropped)
