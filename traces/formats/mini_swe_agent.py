"""`mini-swe-agent`: mini-swe-agent trajectory files (`*.traj.json`, github.com/SWE-agent/mini-swe-agent).

A whole-file JSON document, one record: `{info: {exit_status, submission, mini_version, config, ...},
messages: [...], trajectory_format: "mini-swe-agent-1" | "mini-swe-agent-1.1", instance_id?}`. The
agent has one tool, a shell: every call is `bash` with `{"command": TEXT}`. Three generations of
`messages`, read by what each message holds:

- **Text actions, 1.x** (`mini-swe-agent-1`; messages `{role, content, timestamp}`): an assistant
  message whose content holds exactly one block matching the run's `info.config.agent.action_regex`
  (default ```` ```bash\\s*\\n(.*?)\\n``` ````) is a call, `command` = the block stripped (as
  mini-swe-agent runs it). Its result is the next user message, rendered by the observation template
  `<returncode>N</returncode>\\n<output>\\nTEXT</output>`: `result` = TEXT (a JSON object/array in it
  decoded, as in the chat formats); a long output rendered as `<warning>`/`<output_head>`/
  `<output_tail>` keeps everything after the return code line. A message with 0 blocks is talk (the
  format-error reply that follows is no result); one with 2 or more blocks is refused by
  mini-swe-agent, which runs none of them: one `R_UNMATCHED` reject for the message.
- **Text actions, 2.x** (`mini-swe-agent-1.1`, text-based models): assistant `extra.actions
  [{command}]`; the results are the following user messages with `extra.returncode`, in order:
  `result` = `extra.raw_output`. A format-error message (`extra.interrupt_type: "FormatError"`) with
  `n_actions` ≥ 2 is one `R_UNMATCHED` reject (the refused response is not in the messages).
- **Tool calling, 2.x** (the default since 2.0): assistant `tool_calls[{id, function: {name,
  arguments}}]` → `tool`, `arguments` (JSON text); answered by `{role: "tool", tool_call_id, content,
  extra: {raw_output, returncode, exception_info}}` (first unused answer after the call):
  `result` = `extra.raw_output`.

Status: `error` when the return code is not 0 or `extra.exception_info` is set; `error` = the
output (else the exception text), no result. A timeout message of 1.x (`The last command <command>…`)
is an error with that message as its text. The submitting call (its output starts with
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`) has no observation: when the message after it is the run's
end (1.x: the last message, a user message; 2.x: the `role: "exit"` message) and the exit status is
`Submitted`, its result is that message's content, the submission. Any other call without an answer
is `R_UNMATCHED`; a tool message answering no call `R_ORPHAN_RESULT` / `R_DUPLICATE_RESULT`.

- `trace_id` = `task_id` = `instance_id` (batch runs), else the file name without `.traj.json` /
  `.json`; `step` = the call's order; `info.exit_status` → episode `labels.exit_status`; no reward.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from output_contracts.traces.formats.adapter import (
    R_UNMATCHED,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    WholeDocument,
    answered_call,
    list_of_dicts,
    parse_arguments,
    tool_message_answers,
)
from output_contracts.traces.records import Episode, ToolCall

DEFAULT_ACTION_REGEX = r"```bash\s*\n(.*?)\n```"
_OBSERVATION = re.compile(r"<returncode>(-?\d+)</returncode>\n(.*)\Z", re.DOTALL)
_OUTPUT = re.compile(r"<output>\n(.*)</output>\s*\Z", re.DOTALL)
_TIMEOUT = "The last command <command>"


def _trace_id(record: dict[str, Any], source: str) -> str:
    iid = record.get("instance_id")
    if isinstance(iid, str) and iid:
        return iid
    name = PurePath(source).name
    for ext in (".traj.json", ".json"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def _action_regex(record: dict[str, Any]) -> re.Pattern[str]:
    info = record.get("info")
    cfg = info.get("config") if isinstance(info, dict) else None
    agent = cfg.get("agent") if isinstance(cfg, dict) else None
    rx = agent.get("action_regex") if isinstance(agent, dict) else None
    try:
        return re.compile(rx if isinstance(rx, str) else DEFAULT_ACTION_REGEX, re.DOTALL)
    except re.error:
        raise RecordError("'info.config.agent.action_regex' is not a valid pattern", field="info") from None


def _outcome(m: dict[str, Any]) -> tuple[Any, bool] | None:
    """`(output, failed)` of an observation message, or None when it is not one."""
    extra = m.get("extra")
    if isinstance(extra, dict) and "returncode" in extra:
        rc, exc = extra.get("returncode"), extra.get("exception_info")
        out = extra.get("raw_output", m.get("content"))
        failed = (rc is not None and rc != 0) or bool(exc)
        if failed and not out and exc:
            out = exc
        return out, failed
    content = m.get("content")
    if not isinstance(content, str):
        return None
    found = _OBSERVATION.match(content)
    if found is not None:
        body = _OUTPUT.match(found.group(2))
        return (body.group(1) if body else found.group(2)), int(found.group(1)) != 0
    if content.startswith(_TIMEOUT):
        return content, True
    return None


class MiniSweAgentAdapter(WholeDocument):
    """mini-swe-agent `.traj.json` files: one record a file."""

    name = "mini-swe-agent"

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            return 0
        fmt = record.get("trajectory_format")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return 2
        info = record.get("info")
        return 2 if isinstance(info, dict) and "mini_version" in info else 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset({"trajectory_format", "mini_version", "info", "messages", "exit_status", "submission"})

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            return "no 'messages' list"
        return "no 'trajectory_format' naming mini-swe-agent (nor 'info.mini_version')"

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not isinstance(record, dict):
            raise RecordError("trajectory is not a JSON object")
        msgs = list_of_dicts(record, "messages")
        trace_id = _trace_id(record, ctx.source)
        info = record.get("info")
        status = info.get("exit_status") if isinstance(info, dict) else None
        submitted = status == "Submitted"
        regex = _action_regex(record)
        answers = tool_message_answers(msgs)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []

        def finish(
            tool: str, args: dict[str, Any], answer: dict[str, Any] | None, after: int, raw: Any
        ) -> None:
            index = len(calls) + len(dropped)
            got = _outcome(answer) if answer is not None else None
            if got is None:
                nxt = msgs[after + 1] if after + 1 < len(msgs) else None
                end = nxt is not None and (
                    nxt.get("role") == "exit" or (after + 2 == len(msgs) and answer is nxt)
                )
                if submitted and end and nxt is not None:
                    got = (nxt.get("content"), False)
                else:
                    dropped.append(
                        DroppedCall(index, f"{tool} call in message {after} has no observation", raw)
                    )
                    return
            out, failed = got
            calls.append(
                answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=trace_id,
                    tool=tool,
                    arguments=args,
                    content=out,
                    failed=failed,
                    step=len(calls),
                    index=index,
                )
            )

        for pos, m in enumerate(msgs):
            role = m.get("role")
            extra = m.get("extra")
            if role == "user" and isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError":
                n = extra.get("n_actions")
                if isinstance(n, int) and n >= 2:
                    why = f"message {pos}: mini-swe-agent refused a response with {n} actions and ran none"
                    dropped.append(DroppedCall(len(calls) + len(dropped), why, m, R_UNMATCHED))
                continue
            if role != "assistant":
                continue
            tcs = m.get("tool_calls")
            if isinstance(tcs, list) and tcs:
                for ti, tc in enumerate(tcs):
                    fn = tc.get("function") if isinstance(tc, dict) else None
                    where = f"messages[{pos}].tool_calls[{ti}]"
                    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                        raise RecordError(
                            f"'{where}.function.name' is missing", field=f"{where}.function.name"
                        )
                    args = parse_arguments(fn.get("arguments"), field=f"{where}.function.arguments")
                    finish(fn["name"], args, answers.take(tc.get("id"), pos), pos, tc)
                continue
            actions = extra.get("actions") if isinstance(extra, dict) else None
            if isinstance(actions, list) and actions:
                # 2.x text mode: the observations are the user messages after it, in order
                follow = [
                    x
                    for x in msgs[
                        pos + 1 : next(
                            (j for j in range(pos + 1, len(msgs)) if msgs[j].get("role") == "assistant"),
                            len(msgs),
                        )
                    ]
                    if x.get("role") == "user"
                    and isinstance(x.get("extra"), dict)
                    and "returncode" in x["extra"]
                ]
                for ai, a in enumerate(actions):
                    cmd = a.get("command") if isinstance(a, dict) else None
                    if not isinstance(cmd, str):
                        raise RecordError(
                            f"'messages[{pos}].extra.actions[{ai}].command' is not a string", field="messages"
                        )
                    finish("bash", {"command": cmd}, follow[ai] if ai < len(follow) else None, pos, a)
                continue
            content = m.get("content")  # 1.x: its models' messages may carry `extra.response`
            if not isinstance(content, str):
                continue
            blocks = regex.findall(content)
            if len(blocks) == 1:
                nxt = msgs[pos + 1] if pos + 1 < len(msgs) and msgs[pos + 1].get("role") == "user" else None
                finish("bash", {"command": blocks[0].strip()}, nxt, pos, m)
            elif len(blocks) > 1:
                why = f"message {pos} holds {len(blocks)} actions: mini-swe-agent refused it and ran none"
                dropped.append(DroppedCall(len(calls) + len(dropped), why, m, R_UNMATCHED))
        dropped.extend(answers.leftovers("tool message"))
        labels = {"exit_status": status} if isinstance(status, str) and status else {}
        return Parsed(calls, [Episode(trace_id=trace_id, task_id=trace_id, labels=labels)], dropped)
