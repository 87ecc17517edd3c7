"""`openhands`: OpenHands event streams (github.com/All-Hands-AI/OpenHands), the native shape.

Two containers of the same events, both detected by their content:

- an evaluation output line (`output.jsonl` of OpenHands' benchmarks): `{instance_id, instruction,
  history: [event, ...], metrics, error, ...}`, one record a line;
- a saved trajectory (`save_trajectory_path`, the replay files of `tests/runtime/trajs/`): a whole-file
  JSON array of events, one record a file.

An event is an action (`{id, source, action, args, tool_call_metadata?}`) or an observation (`{id,
source, observation, content, extras, cause?, success?, tool_call_metadata?}`). (The `atif` adapter
reads OpenHands' ATIF export, a different shape.)

- A **call** is an action carrying `tool_call_metadata {function_name, tool_call_id, model_response}`
  (actions without it, `system`, `message`, `recall`, `change_agent_state`, are not tool calls).
  `tool` = `function_name`; `arguments` = the arguments the model sent: the `function.arguments` (JSON
  text) of the `model_response.choices[].message.tool_calls[]` entry whose `id` is the `tool_call_id`;
  when the event holds no such entry, the action's `args` object as OpenHands stored it (its fields,
  `thought` included).
- Its **result** is the observation whose `cause` is the action's `id` (first unused one after it):
  `content` → `result` (text; a JSON object or array in it decoded, as in the chat formats).
  `status` = `error` with `error` = the content when the observation is `observation: "error"` (an
  `ErrorObservation`) or carries `success: false` (a command that exited non-zero or timed out, as
  OpenHands itself reports it); else `ok`.
- `trace_id` = `task_id` = `instance_id` (evaluation output), else the file name without `.json`;
  `step` = the call's order in the stream; `tool_call_id` and the action's `id` (`event_id`) go to
  `meta`. No reward; the output's `error` (text), when set, goes to the episode labels as `error`.

Rejects: a call no observation answers is `R_UNMATCHED` (always the `finish` call, which ends the run
and has no observation); an observation with `tool_call_metadata`, or whose `cause` is a tool call,
that answers no call before it is `R_ORPHAN_RESULT` (a second one for an answered call
`R_DUPLICATE_RESULT`); an `error` observation with no `cause` (OpenHands refused the model's tool call
before it became an action, e.g. an invalid parameter, so the call itself is not in the stream) is
`R_UNKEYED_RESULT`. Observations with no `cause` otherwise (`agent_state_changed`), or answering
actions that are not tool calls (`recall`, messages), are not tool results and are not counted.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from output_contracts.traces.formats.adapter import (
    Answers,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    answered_call,
    parse_arguments,
)
from output_contracts.traces.records import Episode, ToolCall


def _is_tool_action(e: Any) -> bool:
    meta = e.get("tool_call_metadata") if isinstance(e, dict) else None
    return "action" in e and isinstance(meta, dict) and isinstance(meta.get("function_name"), str)


def _events_of(record: Any) -> list[Any] | None:
    """The event list of a record: the record itself (a saved trajectory) or its `history`."""
    if isinstance(record, list):
        return record
    if isinstance(record, dict) and isinstance(record.get("history"), list):
        return record["history"]
    return None


def _looks_like_event(e: Any) -> bool:
    return isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e)


def _model_arguments(meta: dict[str, Any], where: str) -> dict[str, Any] | None:
    """The arguments of the model's tool call `meta.tool_call_id` in `meta.model_response`, or None."""
    resp = meta.get("model_response")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list):
        return None
    for ci, ch in enumerate(choices):
        msg = ch.get("message") if isinstance(ch, dict) else None
        tcs = msg.get("tool_calls") if isinstance(msg, dict) else None
        if not isinstance(tcs, list):
            continue
        for ti, tc in enumerate(tcs):
            if isinstance(tc, dict) and tc.get("id") == meta.get("tool_call_id"):
                fn = tc.get("function")
                field = f"{where}.model_response.choices[{ci}].message.tool_calls[{ti}].function.arguments"
                return parse_arguments(fn.get("arguments") if isinstance(fn, dict) else None, field=field)
    return None


def _trace_id(record: Any, source: str) -> str:
    iid = record.get("instance_id") if isinstance(record, dict) else None
    if isinstance(iid, str) and iid:
        return iid
    if isinstance(iid, int) and not isinstance(iid, bool):
        return str(iid)
    name = PurePath(source).name
    return name[: -len(".json")] if name.endswith(".json") else name


class OpenHandsAdapter(WholeDocument):
    """OpenHands event streams: an evaluation output line, or a saved trajectory file."""

    name = "openhands"

    def sniff(self, record: Any) -> int:
        events = _events_of(record)
        if not events:
            return 0
        if any(_is_tool_action(e) for e in events if isinstance(e, dict)):
            return 2
        return 1 if _looks_like_event(events[0]) and all(isinstance(e, dict) for e in events[:8]) else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {"history", "tool_call_metadata", "cause", "observation", "action", "function_name", "tool_call_id"}
    )

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        if _events_of(record) is None:
            return "no 'history' list (or array) of OpenHands events"
        return "no action event with tool_call_metadata.function_name"

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        events = _events_of(record)
        where = "history" if isinstance(record, dict) else ""
        if events is None:
            raise RecordError("no 'history' list of events", field="history")
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                raise RecordError(f"'{where}[{i}]' is not an object", field=f"{where}[{i}]")
        trace_id = _trace_id(record, ctx.source)
        tool_ids = {str(e.get("id")) for e in events if _is_tool_action(e)}
        answers = Answers()
        for pos, e in enumerate(events):
            if "observation" not in e:
                continue
            cause = e.get("cause")
            if cause is not None and (str(cause) in tool_ids or e.get("tool_call_metadata")):
                answers.add(str(cause), pos, e)
            elif cause is None and (e.get("observation") == "error" or e.get("tool_call_metadata")):
                answers.add_unkeyed(pos, e)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = 0
        for pos, e in enumerate(events):
            if not _is_tool_action(e):
                continue
            meta = e["tool_call_metadata"]
            loc = f"{where}[{pos}].tool_call_metadata"
            args = _model_arguments(meta, loc)
            if args is None:
                raw = e.get("args")
                args = raw if isinstance(raw, dict) else {}
            answer = answers.take(str(e.get("id")), pos)
            if answer is None:
                dropped.append(
                    DroppedCall(
                        index,
                        f"action {e.get('id')} ({meta['function_name']}) has no observation",
                        e,
                    )
                )
                index += 1
                continue
            failed = answer.get("observation") == "error" or answer.get("success") is False
            calls.append(
                answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=trace_id,
                    tool=meta["function_name"],
                    arguments=args,
                    content=answer.get("content"),
                    failed=failed,
                    step=len(calls),
                    index=index,
                    meta={"tool_call_id": meta.get("tool_call_id"), "event_id": e.get("id")},
                )
            )
            index += 1
        dropped.extend(answers.leftovers("observation"))
        err = record.get("error") if isinstance(record, dict) else None
        labels = {"error": err} if isinstance(err, str) and err else {}
        return Parsed(calls, [Episode(trace_id=trace_id, task_id=trace_id, labels=labels)], dropped)
