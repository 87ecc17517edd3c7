"""`langsmith`: LangSmith / LangChain runs (`run_type: "tool"` runs are the tool calls).

A LangSmith *run* is `{id, name, run_type, inputs, outputs, error, parent_run_id, trace_id, dotted_order,
start_time, end_time, extra, tags, ...}`. Read as users have them:

- one run a line (`client.list_runs()` dumped run by run; the runs a tracer posts), or a `.json` array of
  them;
- a run tree, one a file or one a line: a run whose `child_runs` nest its children (LangChain's
  in-memory tracers, `RunCollectorCallbackHandler` / `collect_runs`, and `RunTree` dumps).

Each run with `run_type == "tool"` is one call; runs of other types (chain, llm, retriever, prompt, parser)
only place the calls in their traces. Field mapping:

- `name` → `tool` (required; else that run is an `R_FIELD` reject);
- `inputs` → `arguments`. LangChain's string envelope `{"input": "<text>"}` (every tool run of
  langchain-core 0.1 to 0.3, and string-input tools later) is unwrapped when the text is a JSON object or a
  Python `str()` of a dict (decoded only when unambiguous, see `pyliteral`): the tool's keyword
  arguments; any other text stays `{"input": "<text>"}`. `inputs` not an object → `R_FIELD`;
- `outputs` → `result`. The `{"output": X}` envelope is unwrapped: `X` a `ToolMessage` (its dict, with
  `type: "tool"`, or its `lc` constructor form) gives its `content` (text blocks joined), `tool_call_id`
  and `status`; `X` text is the result itself. JSON object or array text, and an unambiguous Python
  `str()` of a dict or list (what langchain-core 0.1 records for a tool returning a dict), is decoded.
  Outputs that are not this envelope are the result as they are;
- `error` (text: the exception's repr, with the traceback in newer releases) not empty, or
  `status: "error"` → `status: "error"`, `error` = that text as written, `result` the unwrapped output
  if any. A `ToolMessage` with `status: "error"` (a tool that handled its own error) → `status:
  "error"`, `error` = its content, no result;
- a tool run with neither outputs (null, absent or `{}`) nor error (still running: `status:
  "pending"`) → `R_UNMATCHED`;
- `start_time` → `started_at` (as written); `id`, `parent_run_id` (else the parent in `dotted_order`:
  langchain-core 0.3 posts runs without it) and the call id the model gave
  (`extra.tool_call_id`, else the `ToolMessage`'s `tool_call_id`) → `meta` (`run_id`, `parent_run_id`,
  `tool_call_id`).

Episodes: `trace_id` = the run's `trace_id`; else the root id that starts its `dotted_order`
(`<time>Z<root id>.…`); else (langchain-core 0.1 and other runs without either) the root of its
`parent_run_id` chain: in a tree, the tree's root; on lines, the run's own id when it has no parent,
else its parent's trace (a parent not seen yet is looked up when the file ends; a chain that leaves the
file ends at the last parent it names). `task_id` = the thread the run belongs to (`extra.metadata`
`thread_id`, `session_id` or `conversation_id`, the keys LangSmith groups threads by), else the dataset
example it ran on (`reference_example_id` of the run or of its tree's root), else the trace id. One
episode per trace holding a call. `step` = the call's order in its trace in the file (tree order in a
tree; line order on lines, calls found only when the file ends last).

Calls an `llm` run asked for (`tool_calls` of the `AIMessage` in its `outputs.generations`, langchain-core
0.2 and later) are the same calls as the tool runs that executed them, and are not counted again. One that
no tool run of its trace executed (matched by the tool run's call id, from `extra.tool_call_id` or its
`ToolMessage`; for a tool run without one, by tool name and equal arguments) is reported when the file ends as
`R_UNMATCHED` on the `llm` run's line (`index` = its place in the message's `tool_calls`): the model
asked for it and the file holds no execution (the run stopped, or the export left the tool runs out). A
tool run that is itself a reject still answers its request (one call, one reject).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from output_contracts.jsonutil import canonical_str
from output_contracts.traces.formats.adapter import (
    R_FIELD,
    R_UNMATCHED,
    Adapter,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    items_or_document,
    text_of_blocks,
)
from output_contracts.traces.formats.pyliteral import decode_literal
from output_contracts.traces.records import Episode, ToolCall

#: The run types LangSmith records (`langsmith.schemas.RunTypeEnum`).
RUN_TYPES = frozenset(("tool", "chain", "llm", "retriever", "embedding", "prompt", "parser"))
#: Fields only a run has: one of them with `run_type`, `id`, `name` and `inputs` is certain.
_RUN_MARKS = ("parent_run_id", "trace_id", "dotted_order", "child_runs", "execution_order")
#: `extra.metadata` keys LangSmith groups a thread's traces by.
_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")


def is_run(x: Any) -> bool:
    """A LangSmith run: an object with a known `run_type`, an `id`, a `name` and `inputs`."""
    return (
        isinstance(x, dict)
        and isinstance(x.get("run_type"), str)
        and x["run_type"] in RUN_TYPES
        and isinstance(x.get("id"), str)
        and "inputs" in x
        and isinstance(x.get("name"), str)
    )


def dotted_root(dotted: Any) -> str | None:
    """The root run id that starts a `dotted_order` (`20240101T000000000000Z<uuid>.…`), or None."""
    if not isinstance(dotted, str):
        return None
    first = dotted.split(".", 1)[0]
    z = first.find("Z")
    return first[z + 1 :] or None if z >= 0 else None


def dotted_parent(dotted: Any) -> str | None:
    """The parent run id in a `dotted_order` (its last segment but one), or None for a root."""
    if not isinstance(dotted, str):
        return None
    segs = dotted.split(".")
    if len(segs) < 2:
        return None
    seg = segs[-2]
    z = seg.find("Z")
    return seg[z + 1 :] or None if z >= 0 else None


def own_trace(run: dict[str, Any]) -> str | None:
    """The trace a run names itself: `trace_id`, else the root of its `dotted_order`."""
    t = run.get("trace_id")
    if isinstance(t, str) and t:
        return t
    return dotted_root(run.get("dotted_order"))


def unwrap_arguments(inputs: dict[str, Any]) -> dict[str, Any]:
    """A tool run's `inputs` as arguments: `{"input": text}` holding a dict's JSON or `str()` → that dict."""
    if len(inputs) == 1:
        text = inputs.get("input")
        if isinstance(text, str):
            decoded = decode_literal(text)
            if isinstance(decoded, dict):
                return decoded
    return inputs


def _tool_message(x: Any) -> dict[str, Any] | None:
    """The fields of a `ToolMessage` as a run records it (its dict, or its `lc` constructor form)."""
    if not isinstance(x, dict):
        return None
    if x.get("type") == "tool" and "content" in x:
        return x
    ident = x.get("id")
    kwargs = x.get("kwargs")
    if (
        x.get("lc") == 1
        and x.get("type") == "constructor"
        and isinstance(ident, list)
        and ident[-1:] == ["ToolMessage"]
        and isinstance(kwargs, dict)
    ):
        return kwargs
    return None


class Output(NamedTuple):
    """A tool run's unwrapped output: `result`, whether the output says the call failed (and its text),
    and the call id a `ToolMessage` names."""

    result: Any
    failed: str | None
    tool_call_id: str | None


def unwrap_output(outputs: Any) -> Output:
    """`outputs` without LangChain's `{"output": ...}` envelope and `ToolMessage` (see the docstring)."""
    if isinstance(outputs, dict) and len(outputs) == 1 and "output" in outputs:
        value = outputs["output"]
        msg = _tool_message(value)
        if msg is not None:
            content = text_of_blocks(msg.get("content"))
            cid = msg.get("tool_call_id")
            cid = cid if isinstance(cid, str) and cid else None
            if msg.get("status") == "error":
                text = content if isinstance(content, str) else str(decode_literal(content))
                return Output(None, text, cid)
            return Output(decode_literal(content), None, cid)
        return Output(decode_literal(value), None, None)
    return Output(outputs, None, None)


def _thread(run: dict[str, Any]) -> str | None:
    extra = run.get("extra")
    meta = extra.get("metadata") if isinstance(extra, dict) else None
    if isinstance(meta, dict):
        for key in _THREAD_KEYS:
            v = meta.get(key)
            if isinstance(v, str) and v:
                return v
            if isinstance(v, int) and not isinstance(v, bool):
                return str(v)
    return None


def _example(run: dict[str, Any]) -> str | None:
    v = run.get("reference_example_id")
    return v if isinstance(v, str) and v else None


def _ai_tool_calls(outputs: Any) -> list[dict[str, Any]]:
    """The `tool_calls` of the `AIMessage`s in an `llm` run's `outputs.generations` (their `lc`
    constructor form, or plain message dicts)."""
    gens = outputs.get("generations") if isinstance(outputs, dict) else None
    found: list[dict[str, Any]] = []
    if not isinstance(gens, list):
        return found
    for batch in gens:
        for g in batch if isinstance(batch, list) else [batch]:
            msg = g.get("message") if isinstance(g, dict) else None
            if isinstance(msg, dict) and msg.get("lc") == 1 and isinstance(msg.get("kwargs"), dict):
                msg = msg["kwargs"]
            tcs = msg.get("tool_calls") if isinstance(msg, dict) else None
            if isinstance(tcs, list):
                found += (tc for tc in tcs if isinstance(tc, dict))
    return found


class _Request(NamedTuple):
    """A tool call an `llm` run asked for: checked against the tool runs when the file ends."""

    trace: str | None
    anchor: str
    call_id: str | None
    tool: str
    arguments: str  # canonical JSON, to match a tool run that records no call id
    line: int
    position: int
    raw: Any


class _Call(NamedTuple):
    """A tool run read, waiting for its trace when that is known only later."""

    tool: str
    arguments: dict[str, Any]
    result: Any
    status: str
    error: str | None
    task: str | None  # thread or dataset example; None = the trace id
    started_at: str | None
    meta: dict[str, Any]
    source: str
    line: int
    position: int  # the call's `index`: its place among the record's tool runs
    anchor: str  # the run whose `parent_run_id` chain gives the trace when it is known only later


class LangSmithAdapter(Adapter):
    """LangSmith / LangChain runs: one a line, an array of them, or run trees (`child_runs`)."""

    name = "langsmith"
    whole_file = True

    def __init__(self) -> None:
        #: trace of each run placed only through `parent_run_id` (runs without `trace_id`/`dotted_order`)
        self.trace_of: dict[str, str] = {}
        #: parent of each run whose trace was not known when it was read
        self.parent_of: dict[str, str] = {}
        self.waiting: list[_Call] = []
        self.episodes: set[str] = set()
        self.requests: list[_Request] = []
        #: (trace, call id) of every tool run that names its call; (trace, tool, arguments) of the others
        self.executed: set[tuple[str, str]] = set()
        self.executed_plain: dict[tuple[str, str, str], int] = {}
        #: tool runs that are rejects: still the executions of the calls asked for (not rejected twice)
        self.claims: list[tuple[str | None, str, str | None, str, str | None]] = []

    def begin(self) -> Adapter:
        return LangSmithAdapter()

    def sniff(self, record: Any) -> int:
        if not is_run(record):
            return 0
        return 2 if any(k in record for k in _RUN_MARKS) else 1

    #: the words of this format, for naming the closest formats of an unknown file (`detect.py`)
    marks = frozenset(
        {
            "run_type",
            "inputs",
            "outputs",
            "parent_run_id",
            "trace_id",
            "dotted_order",
            "child_runs",
            "execution_order",
        }
    )

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        if is_run(record):
            return "no 'parent_run_id', 'trace_id', 'dotted_order' or 'child_runs' beside 'run_type'"
        return "no run object with 'run_type', 'id', 'name' and 'inputs'"

    def sniff_document(self, doc: Any) -> int:
        if isinstance(doc, list):
            return 2 if doc and all(isinstance(x, dict) for x in doc) and any(map(self.sniff, doc)) else 0
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        return items_or_document(doc)

    # ---- one record -------------------------------------------------------------------------------

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if not is_run(record):
            raise RecordError("not a LangSmith run: no object with 'run_type', 'id', 'name' and 'inputs'")
        calls: list[ToolCall] = []
        episodes: list[Episode] = []
        dropped: list[DroppedCall] = []
        children = record.get("child_runs")
        if isinstance(children, list) and children:
            root = record
            trace = self._trace(root)
            example = _example(root)
            stack: list[tuple[dict[str, Any], str | None]] = [(root, None)]
            index = 0
            while stack:  # pre-order: a run, then its children in the order they started
                run, tree_parent = stack.pop()
                got = self._read(run, ctx, index, tree_parent, example, dropped, root["id"])
                if got is not None:
                    self._place(got, own_trace(run) or trace, calls, episodes)
                elif run.get("run_type") == "tool":
                    self._claim(run, own_trace(run) or trace, root["id"])
                elif run.get("run_type") == "llm":
                    self._requests(run, own_trace(run) or trace, root["id"], ctx.line)
                index += run.get("run_type") == "tool"
                kids = run.get("child_runs")
                if isinstance(kids, list):
                    stack.extend((k, run["id"]) for k in reversed(kids) if is_run(k))
        else:
            got = self._read(record, ctx, 0, None, None, dropped)
            trace = self._trace(record)
            if got is not None:
                self._place(got, trace, calls, episodes)
            elif record.get("run_type") == "tool":
                self._claim(record, trace, record["id"])
            elif record.get("run_type") == "llm":
                self._requests(record, trace, record["id"], ctx.line)
        return Parsed(calls, episodes, dropped)

    def _trace(self, run: dict[str, Any]) -> str | None:
        """A run's trace when it is known now (None = wait for its parent); remembered for its children
        when it came from the `parent_run_id` chain."""
        t = own_trace(run)
        if t is not None:
            return t
        rid: str = run["id"]
        parent = run.get("parent_run_id")
        if not isinstance(parent, str) or not parent:
            self.trace_of[rid] = rid
            return rid
        found = self.trace_of.get(parent)
        if found is not None:
            self.trace_of[rid] = found
        else:
            self.parent_of[rid] = parent
        return found

    def _read(
        self,
        run: dict[str, Any],
        ctx: RecordContext,
        index: int,
        tree_parent: str | None,
        example: str | None,
        dropped: list[DroppedCall],
        anchor: str | None = None,
    ) -> _Call | None:
        """The call of a tool run (None for other runs, and for a tool run that is a reject)."""
        if run.get("run_type") != "tool":
            return None
        rid: str = run["id"]
        tool = run.get("name")
        if not isinstance(tool, str) or not tool:
            dropped.append(DroppedCall(index, f"tool run '{rid}' has no 'name'", run, R_FIELD))
            return None
        inputs = run.get("inputs")
        if not isinstance(inputs, dict):
            reason = f"tool run '{rid}' ({tool}): 'inputs' is not an object"
            dropped.append(DroppedCall(index, reason, run, R_FIELD))
            return None
        err = run.get("error")
        error = err if isinstance(err, str) and err else None
        if error is None and run.get("status") == "error":
            error = "error"
        outputs = run.get("outputs")
        if outputs == {}:  # a RunTree's outputs before `end()` gives any: no output
            outputs = None
        if outputs is None and error is None:
            reason = f"tool run '{rid}' ({tool}) has no outputs and no error (not finished)"
            dropped.append(DroppedCall(index, reason, run, R_UNMATCHED))
            return None
        out = unwrap_output(outputs) if outputs is not None else Output(None, None, None)
        if error is None and out.failed is not None:
            result, status, error = None, "error", out.failed
        else:
            result, status = out.result, ("ok" if error is None else "error")
        extra = run.get("extra")
        cid = extra.get("tool_call_id") if isinstance(extra, dict) else None
        if not isinstance(cid, str) or not cid:
            cid = out.tool_call_id
        parent = run.get("parent_run_id")
        if not isinstance(parent, str) or not parent:
            parent = tree_parent or dotted_parent(run.get("dotted_order"))
        meta: dict[str, Any] = {"run_id": rid, "parent_run_id": parent}
        if cid is not None:
            meta["tool_call_id"] = cid
        started = run.get("start_time")
        return _Call(
            tool=tool,
            arguments=unwrap_arguments(inputs),
            result=result,
            status=status,
            error=error,
            task=_thread(run) or _example(run) or example,
            started_at=started if isinstance(started, str) else None,
            meta=meta,
            source=ctx.source,
            line=ctx.line,
            position=index,
            anchor=anchor if anchor is not None else rid,
        )

    def _requests(self, run: dict[str, Any], trace: str | None, anchor: str, line: int) -> None:
        for k, tc in enumerate(_ai_tool_calls(run.get("outputs"))):
            name, cid = tc.get("name"), tc.get("id")
            self.requests.append(
                _Request(
                    trace,
                    anchor,
                    cid if isinstance(cid, str) and cid else None,
                    name if isinstance(name, str) else "",
                    canonical_str(tc.get("args") if isinstance(tc.get("args"), dict) else {}),
                    line,
                    k,
                    tc,
                )
            )

    def _claim(self, run: dict[str, Any], trace: str | None, anchor: str) -> None:
        """A rejected tool run still answers the request for its call (by id, else tool and arguments)."""
        extra = run.get("extra")
        cid = extra.get("tool_call_id") if isinstance(extra, dict) else None
        inputs = run.get("inputs")
        args = canonical_str(unwrap_arguments(inputs)) if isinstance(inputs, dict) else None
        name = run.get("name")
        self.claims.append(
            (
                trace,
                anchor,
                cid if isinstance(cid, str) and cid else None,
                name if isinstance(name, str) else "",
                args,
            )
        )

    def _place(self, c: _Call, trace: str | None, calls: list[ToolCall], episodes: list[Episode]) -> None:
        if trace is None:
            self.waiting.append(c)
            return
        calls.append(self._call(c, trace, episodes))

    def _call(self, c: _Call, trace: str, episodes: list[Episode]) -> ToolCall:
        cid = c.meta.get("tool_call_id")
        if cid is not None:
            self.executed.add((trace, cid))
        else:
            key = (trace, c.tool, canonical_str(c.arguments))
            self.executed_plain[key] = self.executed_plain.get(key, 0) + 1
        task = c.task if c.task is not None else trace
        if trace not in self.episodes:
            self.episodes.add(trace)
            episodes.append(Episode(trace_id=trace, task_id=task))
        return ToolCall(
            trace_id=trace,
            tool=c.tool,
            arguments=c.arguments,
            result=c.result,
            status=c.status,
            error=c.error,
            task_id=task,
            started_at=c.started_at,
            source=c.source,
            line=c.line,
            index=c.position,
            meta=c.meta,
        )

    def finish(self, ctx: RecordContext) -> Parsed:
        """Calls whose trace is known only through parents read after them (runs listed newest first)."""
        calls: list[ToolCall] = []
        episodes: list[Episode] = []
        for c in self.waiting:
            calls.append(self._call(c, self._root(c.anchor), episodes))
        self.waiting = []
        return Parsed(calls, episodes, self._unexecuted())

    def _unexecuted(self) -> list[DroppedCall]:
        """The calls `llm` runs asked for that no tool run of their trace executed."""
        dropped: list[DroppedCall] = []
        for trace_or_none, anchor, cid, tool, args in self.claims:
            trace = trace_or_none if trace_or_none is not None else self._root(anchor)
            if cid is not None:
                self.executed.add((trace, cid))
            elif args is not None:
                key = (trace, tool, args)
                self.executed_plain[key] = self.executed_plain.get(key, 0) + 1
        self.claims = []
        seen: set[tuple[str, str]] = set()
        for r in self.requests:
            trace = r.trace if r.trace is not None else self._root(r.anchor)
            if r.call_id is not None:
                if (trace, r.call_id) in seen:
                    continue  # the same request in another generation of the run
                seen.add((trace, r.call_id))
                if (trace, r.call_id) in self.executed:
                    continue
            key = (trace, r.tool, r.arguments)
            if self.executed_plain.get(key, 0) > 0:
                self.executed_plain[key] -= 1
                continue
            reason = (
                f"tool call '{r.call_id}' ({r.tool}) requested by an llm run has no tool run in its trace"
            )
            dropped.append(DroppedCall(r.position, reason, r.raw, R_UNMATCHED, line=r.line))
        self.requests = []
        return dropped

    def _root(self, rid: str) -> str:
        """The trace of a run through its `parent_run_id` chain, as far as the file knows it."""
        seen: set[str] = set()
        node = rid
        while node not in seen:
            seen.add(node)
            found = self.trace_of.get(node)
            if found is not None:
                return found
            parent = self.parent_of.get(node)
            if parent is None:
                return node
            node = parent
        return node
