"""`autogen`: AutoGen AgentChat runs (github.com/microsoft/autogen, `autogen-agentchat` 0.4 to 0.7).

Two shapes, both written by pydantic from AgentChat's own objects:

- a **TaskResult** (`agent.run` / `team.run`): `{"messages": [...], "stop_reason"}`, one document a file
  (`model_dump_json(indent=2)`) or one a line; the record is the whole run;
- the **event stream** of `run_stream`, one item a line (`item.model_dump_json()`): messages and events,
  and, last, the TaskResult of the run;
- an **agent state** (`await agent.save_state()`, dumped with `json.dumps`): `{"type":
  "AssistantAgentState", "llm_context": {"messages": [...]}}`, the model context, where an
  `AssistantMessage` whose `content` is a FunctionCall list plays the request event and a
  `FunctionExecutionResultMessage` the execution event (same items, same mapping). One record, one
  episode. A team's state (`TeamState`, agent states nested per agent) is not read.

Every message has `type` (its class name) and `source` (the agent). A `ToolCallRequestEvent`'s `content`
is a list of `FunctionCall{id, name, arguments}`, a `ToolCallExecutionEvent`'s a list of
`FunctionExecutionResult{call_id, content, is_error?, name?}` (`is_error` and `name` appeared after 0.4.0);
a result answers the call with the same id (`formats.session`: the first unanswered call of that id
before it, in the episode):

- `name` → `tool`; `arguments` (JSON text) → `arguments`; the result's `content` → `result`. AutoGen
  gives the model a tool's return value as text (`str()` of it), so a JSON object/array in the text is
  decoded, and so is a Python dict/list literal when it reads back unambiguously (`pyliteral`);
- `is_error: true` → `status: "error"`, `error` = the content text (`is_error: false` → ok whatever the
  text). Without `is_error` (0.4.0, which writes `Error: {exception}` as the content of a failed call),
  content starting with `Error:` is the error;
- `step` = the call's order in the episode; the call's `id` goes to `meta.call_id`; the request event's
  `created_at` (0.5+) → `started_at`.

Episodes: a TaskResult record, or an agent state, is one episode. Event lines form one episode from the file's first line
(or the line after a TaskResult) up to and including the next TaskResult line. That closing TaskResult
repeats the streamed messages: it is recognised (every message `id` it holds was streamed, or, without
ids as in 0.4, its message types are the streamed ones in order, streaming chunks aside) and not read
again; a TaskResult that does not repeat the stream is read as its own episode. AgentChat writes no run
id, so `trace_id` = `task_id` = `autogen-{first 12 hex of the file's sha256}-{line of the episode's
first record}`; `stop_reason` is the episode label `stop_reason`.

Rejects: a call no result answers `R_UNMATCHED`; a result whose id no call before it has
`R_ORPHAN_RESULT` (a second one `R_DUPLICATE_RESULT`), one without `call_id` `R_UNKEYED_RESULT`; a
call without `id` `R_UNMATCHED` (no result can answer it); an episode where an agent spoke but no tool
was called `R_NO_CALLS` (the episode kept). Lines and messages of other types (classes this reader does not know) are read as messages without
calls; a line without `type` and `source` is `R_FIELD`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from output_contracts.traces.formats.adapter import (
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    parse_arguments,
)
from output_contracts.traces.formats.pyliteral import decode_literal
from output_contracts.traces.formats.session import SessionJoin
from output_contracts.traces.records import Episode, ToolCall

REQUEST = "ToolCallRequestEvent"
EXECUTION = "ToolCallExecutionEvent"
STATE = "AssistantAgentState"
#: The model context's message types (autogen-core) that play the request and execution events.
_CONTEXT = {"AssistantMessage": REQUEST, "FunctionExecutionResultMessage": EXECUTION}
#: AgentChat's message and event classes (the `type` each writes), 0.4 to 0.7.
MESSAGE_TYPES = frozenset(
    {
        "TextMessage",
        "MultiModalMessage",
        "StopMessage",
        "HandoffMessage",
        "ToolCallSummaryMessage",
        "StructuredMessage",
        REQUEST,
        EXECUTION,
        "UserInputRequestedEvent",
        "MemoryQueryEvent",
        "ModelClientStreamingChunkEvent",
        "ThoughtEvent",
        "SelectSpeakerEvent",
        "SelectorEvent",
        "CodeGenerationEvent",
        "CodeExecutionEvent",
    }
)
_CHUNK = "ModelClientStreamingChunkEvent"


def is_message(m: Any) -> bool:
    """An AgentChat message or event: a known `type` and a `source` string."""
    if not isinstance(m, dict):
        return False
    kind = m.get("type")
    return isinstance(kind, str) and kind in MESSAGE_TYPES and isinstance(m.get("source"), str)


def is_task_result(record: Any) -> bool:
    """A TaskResult: `messages` (AgentChat messages, or none) and `stop_reason`."""
    if not isinstance(record, dict) or "stop_reason" not in record:
        return False
    messages = record.get("messages")
    return isinstance(messages, list) and (not messages or any(is_message(m) for m in messages))


def state_messages(record: Any) -> list[Any] | None:
    """The model-context messages of an `AssistantAgentState`, or None when `record` is not one."""
    if not isinstance(record, dict) or record.get("type") != STATE:
        return None
    ctx = record.get("llm_context")
    messages = ctx.get("messages") if isinstance(ctx, dict) else None
    return messages if isinstance(messages, list) else None


@dataclass
class _Stream:
    """The episode the event lines are building: its trace, and what was streamed (for the TaskResult)."""

    trace: str
    ids: set[str] = field(default_factory=set)
    types: list[str] = field(default_factory=list)


class AutoGenAdapter(Adapter):
    """AutoGen AgentChat TaskResults and `run_stream` event lines."""

    name = "autogen"
    whole_file: ClassVar[bool] = True

    def __init__(self) -> None:
        self.join = SessionJoin("episode")
        self.stream: _Stream | None = None

    def begin(self) -> Adapter:
        return AutoGenAdapter()

    def sniff(self, record: Any) -> int:
        if is_task_result(record) or state_messages(record) is not None:
            return 2
        if is_message(record) and "content" in record:
            # `models_usage` is AgentChat's own field; a bare `{type, source, content}` is only plausible
            return 2 if "models_usage" in record else 1
        return 0

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {
            "messages",
            "stop_reason",
            "source",
            "models_usage",
            "ToolCallRequestEvent",
            "ToolCallExecutionEvent",
            "call_id",
            "is_error",
        }
    )

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        return (
            "no TaskResult ('messages' of AgentChat types and 'stop_reason'), no AgentChat event line "
            "and no AssistantAgentState"
        )

    def sniff_document(self, doc: Any) -> int:
        return 2 if is_task_result(doc) or state_messages(doc) is not None else 0

    def records(self, doc: Any) -> Iterator[Any]:
        yield doc

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if is_task_result(record):
            return self._task_result(record, ctx)
        context = state_messages(record)
        if context is not None:
            return self._episode(context, None, ctx, "llm_context.messages")
        if not isinstance(record, dict):
            raise RecordError("record is not a JSON object")
        if not isinstance(record.get("type"), str) or not isinstance(record.get("source"), str):
            # a line of another type (a class newer than this list) still names its type and source
            raise RecordError("not an AgentChat message (no 'type' with a 'source')", field="type")
        episodes: list[Episode] = []
        if self.stream is None:
            self.stream = _Stream(self._trace(ctx))
            ep = self.join.episode(self.stream.trace, self.stream.trace, ctx.line)
            episodes += [ep] if ep is not None else []
        mid = record.get("id")
        if isinstance(mid, str):
            self.stream.ids.add(mid)
        if record["type"] != _CHUNK:
            self.stream.types.append(record["type"])
        calls, dropped = self._message(record, self.stream.trace, ctx, 0, "")
        return Parsed(calls, episodes, dropped)

    def finish(self, ctx: RecordContext) -> Parsed:
        return self.join.finish("FunctionCall")

    @staticmethod
    def _trace(ctx: RecordContext) -> str:
        return f"autogen-{ctx.sha256[:12]}-{ctx.line}"

    def _repeats_stream(self, messages: list[Any]) -> bool:
        """Whether a TaskResult's messages are the ones the open stream episode already gave."""
        s = self.stream
        if s is None or not s.types:
            return False
        ids = [m.get("id") for m in messages if isinstance(m, dict)]
        if ids and all(isinstance(i, str) for i in ids):
            return all(i in s.ids for i in ids)
        types = [m.get("type") for m in messages if isinstance(m, dict) and m.get("type") != _CHUNK]
        return types == s.types

    def _task_result(self, record: dict[str, Any], ctx: RecordContext) -> Parsed:
        messages: list[Any] = record["messages"]
        if self._repeats_stream(messages):
            self.stream = None  # the run's closing TaskResult: its calls were read from the stream
            return Parsed(())
        self.stream = None
        stop = record.get("stop_reason")
        return self._episode(messages, stop if isinstance(stop, str) else None, ctx, "messages")

    def _episode(self, messages: list[Any], stop: str | None, ctx: RecordContext, field: str) -> Parsed:
        """One record's messages as one episode (a TaskResult, an agent state)."""
        trace = self._trace(ctx)
        labels = {"stop_reason": stop} if stop is not None else None
        ep = self.join.episode(trace, trace, ctx.line, labels)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        offset = 0
        for mi, m in enumerate(messages):
            if not isinstance(m, dict):
                raise RecordError(f"'{field}[{mi}]' is not an object", field=f"{field}[{mi}]")
            got_calls, got_dropped = self._message(m, trace, ctx, offset, f"{field}[{mi}].")
            calls += got_calls
            dropped += got_dropped
            content = m.get("content")
            if _kind(m) in (REQUEST, EXECUTION) and isinstance(content, list):
                offset += len(content)
        return Parsed(calls, [ep] if ep is not None else [], dropped)

    def _message(
        self, m: dict[str, Any], trace: str, ctx: RecordContext, offset: int, where: str
    ) -> tuple[list[ToolCall], list[DroppedCall]]:
        """The calls made and answered by one message; `offset` numbers its items within the record."""
        kind = _kind(m)
        join = self.join
        if kind not in (REQUEST, EXECUTION):
            if m.get("source") != "user" and (kind in MESSAGE_TYPES or kind == "AssistantMessage"):
                join.activity(trace)
            return [], []
        content = m.get("content")
        if not isinstance(content, list):
            raise RecordError(f"'{where}content' of a {m.get('type')} is not a list", field=f"{where}content")
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        ts = m.get("created_at")
        for i, item in enumerate(content):
            at = f"{where}content[{i}]"
            if not isinstance(item, dict):
                raise RecordError(f"'{at}' is not an object", field=at)
            index = offset + i
            if kind == REQUEST:
                name = item.get("name")
                if not isinstance(name, str) or not name:
                    raise RecordError(f"'{at}.name' is missing", field=f"{at}.name")
                args = parse_arguments(item.get("arguments"), field=f"{at}.arguments")
                cid = item.get("id")
                if not isinstance(cid, str) or not cid:
                    dropped.append(
                        DroppedCall(index, f"FunctionCall ({name}) has no id: no result can answer it", item)
                    )
                    continue
                join.call(
                    ctx,
                    trace,
                    cid,
                    tool=name,
                    arguments=args,
                    index=index,
                    started_at=ts if isinstance(ts, str) else None,
                    raw=item,
                )
            else:
                flag = item.get("is_error")
                failed = flag if isinstance(flag, bool) else None
                raw = item.get("content")
                got = join.result(
                    trace,
                    item.get("call_id"),
                    content=raw if failed else decode_literal(raw),
                    failed=failed,
                    index=index,
                    raw=item,
                    what="FunctionExecutionResult",
                )
                if isinstance(got, ToolCall):
                    calls.append(got)
                else:
                    dropped.append(got)
        return calls, dropped


def _kind(m: dict[str, Any]) -> Any:
    """A message's type, a model-context message with calls or results read as the matching event."""
    kind = m.get("type")
    if kind in _CONTEXT and (kind != "AssistantMessage" or isinstance(m.get("content"), list)):
        return _CONTEXT[kind]
    return kind
