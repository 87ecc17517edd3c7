"""`inspect-ai`: Inspect AI eval logs (github.com/UKGovernmentBEIS/inspect_ai), `.json` or `.eval`.

A log is `{version, status, eval: {task, run_id, ...}, results, samples: [...]}`; the default `.eval`
file is a zip holding the same: `header.json` (everything but the samples) and one `samples/*.json` a
sample (`read_eval_zip`, standard library `zipfile`). A record is one sample, numbered from 1 in file
order. In a sample's `messages`, assistant `tool_calls[{id, function, arguments}]` (`function` the tool
name as a string, `arguments` an object) join `{role: "tool", tool_call_id, content, function, error}`
messages by id (first unused answer after the call):

- `function` → `tool`, `arguments` → `arguments`, the tool message's `content` (text, or text blocks
  joined; a JSON object/array in the text decoded) → `result`;
- `error: {type, message}` → `status: "error"`, `error` = `message`, `meta.error_type` = `type`;
- `trace_id` = `{eval.run_id}/{sample id}/epoch-{epoch}` (`eval.task` when there is no run id),
  `task_id` = the sample id; `reward` = the sample's single score when it is a number or one of
  Inspect's `C`/`I`/`P`/`N` (1, 0, 0.5, 0), else none.

A tool message whose id no call before it made is `R_ORPHAN_RESULT` (the log in Inspect's tests holds
such messages only); a call no tool message answers is `R_UNMATCHED`; a sample with an assistant message
but no tool call and no tool message is rejected whole as `R_NO_CALLS` (the model answered in text).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from output_contracts.traces.formats.adapter import (
    R_NO_CALLS,
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    answered_call,
    list_of_dicts,
    require_str,
    tool_message_answers,
)
from output_contracts.traces.records import Episode, ToolCall

_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def read_eval_zip(path: Path) -> dict[str, Any]:
    """The log a `.eval` zip holds, in the shape of a `.json` log: its header with `samples` added."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        head = "header.json" if "header.json" in names else "_journal/start.json"
        log = orjson.loads(z.read(head))
        if not isinstance(log, dict):
            raise ValueError(f"{head} is not a JSON object")
        log["samples"] = [
            orjson.loads(z.read(n)) for n in names if n.startswith("samples/") and n.endswith(".json")
        ]
    return log


@dataclass(frozen=True)
class _Sample:
    """One sample and the run it belongs to (the prefix of its trace id)."""

    sample: Any
    run: str


def _run_id(log: dict[str, Any]) -> str:
    ev = log.get("eval")
    if isinstance(ev, dict):
        for key in ("run_id", "task", "task_id"):
            v = ev.get(key)
            if isinstance(v, str) and v:
                return v
    return "eval"


def _reward(scores: Any) -> float | None:
    """One score's value as a number (Inspect's letter grades mapped), else None."""
    if not isinstance(scores, dict) or len(scores) != 1:
        return None
    (score,) = scores.values()
    v = score.get("value") if isinstance(score, dict) else None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    return _LETTERS.get(v) if isinstance(v, str) else None


class InspectAIAdapter(Adapter):
    """Inspect AI eval logs: one record a sample."""

    name = "inspect-ai"
    whole_file = True

    marks = frozenset({"eval", "samples", "run_id", "task", "events", "results", "stats"})

    def lacks(self, record: Any) -> str | None:
        ev = record.get("eval") if isinstance(record, dict) else None
        if isinstance(ev, dict) and ("task" in ev or "run_id" in ev):
            return None
        return "no 'eval' object with 'task' or 'run_id'"

    def sniff(self, record: Any) -> int:
        return 2 if self.lacks(record) is None else 0

    def sniff_document(self, doc: Any) -> int:
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        samples = doc.get("samples") if isinstance(doc, dict) else None
        run = _run_id(doc) if isinstance(doc, dict) else "eval"
        for s in samples if isinstance(samples, list) else ():
            yield _Sample(s, run)

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if isinstance(record, _Sample):
            return self._sample(record.sample, record.run, ctx)
        if isinstance(record, dict) and self.sniff(record):  # a whole log on one line
            calls: list[ToolCall] = []
            episodes: list[Episode] = []
            dropped: list[DroppedCall] = []
            for s in self.records(record):
                p = self._sample(s.sample, s.run, ctx, offset=len(calls) + len(dropped))
                calls.extend(p.calls)
                episodes.extend(p.episodes)
                dropped.extend(p.dropped)
            return Parsed(calls, episodes, dropped)
        raise RecordError("not an Inspect AI eval log (no 'eval' object)")

    def _sample(self, sample: Any, run: str, ctx: RecordContext, offset: int = 0) -> Parsed:
        if not isinstance(sample, dict):
            raise RecordError("sample is not a JSON object")
        sid = require_str(sample, "id")
        epoch = sample.get("epoch", 1)
        trace_id = f"{run}/{sid}/epoch-{epoch}"
        messages = list_of_dicts(sample, "messages")
        answers = tool_message_answers(messages)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = offset
        assistant = False
        for mi, m in enumerate(messages):
            if m.get("role") != "assistant":
                continue
            assistant = True
            tcs = m.get("tool_calls")
            for ti, tc in enumerate(tcs if isinstance(tcs, list) else ()):
                where = f"messages[{mi}].tool_calls[{ti}]"
                if not isinstance(tc, dict) or not isinstance(tc.get("function"), str):
                    raise RecordError(f"'{where}.function' is not a tool name", field=f"{where}.function")
                args = tc.get("arguments", {})
                if not isinstance(args, dict):
                    raise RecordError(f"'{where}.arguments' is not an object", field=f"{where}.arguments")
                answer = answers.take(tc.get("id"), mi)
                if answer is None:
                    dropped.append(
                        DroppedCall(
                            index, f"tool call '{tc.get('id')}' ({tc['function']}) has no tool message", tc
                        )
                    )
                    index += 1
                    continue
                err = answer.get("error")
                meta: dict[str, Any] = {"call_id": tc.get("id")}
                if isinstance(err, dict):
                    meta["error_type"] = err.get("type")
                call = answered_call(
                    ctx,
                    trace_id=trace_id,
                    task_id=sid,
                    tool=tc["function"],
                    arguments=args,
                    content=answer.get("content"),
                    failed=isinstance(err, dict),
                    step=len(calls),
                    index=index,
                    meta=meta,
                )
                if isinstance(err, dict) and isinstance(err.get("message"), str):
                    call = _with_error(call, err["message"])
                calls.append(call)
                index += 1
        dropped.extend(answers.leftovers("tool message"))
        if assistant and not calls and not dropped:
            raise RecordError(
                f"sample {sid} (epoch {epoch}) has assistant messages but no tool call: the model answered in text",
                code=R_NO_CALLS,
            )
        ep = Episode(trace_id=trace_id, task_id=sid, reward=_reward(sample.get("scores")))
        return Parsed(calls, [ep], dropped)


def _with_error(call: ToolCall, message: str) -> ToolCall:
    """`call` with Inspect's error message as its `error` (the content is the tool's own output)."""
    return replace(call, error=message, result=None)
