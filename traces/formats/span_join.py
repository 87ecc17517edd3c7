"""Joining what span-based traces say about tool calls: execution spans, and calls and results that
chat (LLM) spans carry in their message history.

A span-based trace can hold the same call up to three ways: an execution span (OTel `execute_tool`,
OpenInference `TOOL`) that ran it, the chat span whose output asked for it, and every later chat span
that repeats the conversation in its input (with the tool's answer). `join` makes one call of each:

0. **Across traces** (spans without a common parent: each model call its own trace): a trace that holds
   a call id only in its input history or a reply (it did not ask for it) answers the call of the
   latest earlier span of another trace that asked for that id (else a call waiting in `Carry` from an
   earlier record or source of the ingest run); its repeats are dropped, its reply and execution span
   of the id go to the asking trace. With a `Carry`, calls asked and unanswered wait there instead of
   being `R_UNMATCHED` at once; the ingest run rejects those still waiting when it ends.
1. **Mentions** (calls in messages) are de-duplicated by (trace, call id): the first mention counts, the
   repeats in later spans' history are the same call. A mention without an id is de-duplicated by
   (trace, tool, arguments). **Replies** (results in messages) are de-duplicated by (trace, call id,
   content): the same answer repeated in history is one answer; a different answer to an answered id
   is a second result (`R_DUPLICATE_RESULT`).
2. Each **execution span** claims its mention: the one with its call id in the same trace, else (an
   execution span without an id) the first unclaimed mention (in position order) of the same tool with
   equal arguments (any arguments, when the span records none). When the convention records the agent
   step (`group`: the parent span that holds both the model call and the tool runs, as smolagents'
   `Step N` spans do) and the span's step asked for any call of that tool, only that step's mentions are
   candidates: a tool run never claims a call another step asked for.
   The span is the call (its status and result win); it also consumes the reply to its id, and takes
   its result from that reply when the span itself records none (content capture off on tool spans).
3. Every unclaimed mention is a call answered by the first unused reply to its id after it (`Answers`);
   one with no reply is `R_UNMATCHED`. Replies nobody took are `R_ORPHAN_RESULT` (or
   `R_DUPLICATE_RESULT` / `R_UNKEYED_RESULT`).

Everything is ordered by `sort` (span start time, document order, position in the span): that order is
the calls' `index` and, through ingest, their `step`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

from output_contracts.jsonutil import canonical_str
from output_contracts.traces.formats.adapter import (
    R_FIELD,
    R_UNMATCHED,
    Answers,
    DroppedCall,
    RecordContext,
    RecordError,
    decode_result,
    outcome,
    parse_arguments,
)
from output_contracts.traces.records import ToolCall

Sort = tuple[int, int, int]


class Exec(NamedTuple):
    """An execution span: `arguments` None when it does not record them; `error` set when it failed."""

    trace_id: str
    call_id: str | None
    tool: str
    arguments: dict[str, Any] | None
    has_result: bool
    result: Any
    error: str | None
    task_id: str
    started_at: str | None
    sort: Sort
    meta: dict[str, Any]
    raw: Any
    #: `(code, reason)` when the span is unusable (arguments not an object): it still claims its
    #: mention and reply, so the call is one reject, not a reject and a call from the history.
    reject: tuple[str, str] | None = None
    #: The span's parent span (an agent step), when the convention groups a step's model call and its
    #: tool runs under one parent: an execution span without a call id then claims a mention of its
    #: own step (see `join`, step 2).
    group: str | None = None


class Mention(NamedTuple):
    """A tool call requested in a message; `position` orders it against replies of the same record."""

    trace_id: str
    call_id: str | None
    tool: str
    arguments: dict[str, Any]
    position: int
    task_id: str
    started_at: str | None
    sort: Sort
    meta: dict[str, Any]
    raw: Any
    #: The parent span of the span that asked for the call (see `Exec.group`).
    group: str | None = None
    #: True when the call is in a span's output (the model asked for it there), False when it is in a
    #: span's input history (a repeat of a call asked before).
    asked: bool = False


class Reply(NamedTuple):
    """A tool result carried in a message (`call_id` None when it names no call)."""

    trace_id: str
    call_id: str | None
    content: Any
    position: int
    raw: Any


class Bad(NamedTuple):
    """Something that holds agent activity but yields no call (bad arguments, content not exported)."""

    sort: Sort
    code: str
    reason: str
    raw: Any


def mention(
    *,
    trace_id: str,
    span_id: str | None,
    call_id: str | None,
    name: Any,
    raw_args: Any,
    name_field: str,
    args_field: str,
    position: int,
    task_id: str,
    started_at: str | None,
    sort: Sort,
    raw: Any,
    group: str | None = None,
    asked: bool = False,
) -> Mention | Bad:
    """A call requested in a span's message, or why it cannot be one: a missing name is `R_FIELD`
    naming `name_field`, and arguments that are not a JSON object carry `parse_arguments`' reason naming
    `args_field`. Chat-message formats over OTLP (GenAI chat, OpenInference)
    share it so that a call reads the same whichever exporter wrote it."""
    if not isinstance(name, str) or not name:
        return Bad(sort, R_FIELD, f"'{name_field}' is missing", raw)
    try:
        args = {} if raw_args is None else parse_arguments(raw_args, field=args_field)
    except RecordError as e:
        return Bad(sort, e.code, e.reason, raw)
    meta: dict[str, Any] = {"span_id": span_id}
    if call_id is not None:
        meta["tool_call_id"] = call_id
    return Mention(
        trace_id, call_id, name, args, position, task_id, started_at, sort, meta, raw, group, asked
    )


class Waiting(NamedTuple):
    """A call asked in an earlier record and not answered there: the mention, and where its reject
    would be (`source`, `line`, `index`) if nothing answers it before the run ends."""

    mention: Mention
    source: str
    line: int
    at: int
    reason: str


class Carry:
    """What joins across records (and, shared through ingest's run, across sources): the calls asked
    and not yet answered (`waiting`, by call id: the only calls kept), and the ids of calls already
    joined across traces (`settled`, id → owning trace: ids only, so that a later trace's history
    repeating such a call is not a new call)."""

    def __init__(self) -> None:
        self.waiting: dict[str, Waiting] = {}
        self.settled: dict[str, str] = {}
        #: Waiting calls whose id a later unanswered call reused (an answer joins the latest asker):
        #: rejected with the rest when the run ends.
        self.superseded: list[Waiting] = []
        #: The sources whose waiting calls a later source answered: they yielded calls (written with
        #: the answer's record), so ingest's "nothing read" rule counts them as read.
        self.answered_sources: set[str] = set()

    def wait(self, w: Waiting) -> None:
        """Keep `w` waiting for an answer to its id; an earlier call waiting on the same id is
        superseded (it can no longer be answered)."""
        assert w.mention.call_id is not None
        old = self.waiting.get(w.mention.call_id)
        if old is not None:
            self.superseded.append(old)
        self.waiting[w.mention.call_id] = w

    def leftovers(self) -> list[tuple[str, DroppedCall]]:
        """The calls still waiting, as `R_UNMATCHED` rejects on their own sources and lines (in
        source, line, position order), and forget them."""
        out = [
            (w.source, DroppedCall(w.at, w.reason, w.mention.raw, R_UNMATCHED, line=w.line))
            for w in sorted(
                [*self.waiting.values(), *self.superseded], key=lambda w: (w.source, w.line, w.at)
            )
        ]
        self.waiting.clear()
        self.superseded.clear()
        return out


def _cross_trace(
    execs: Sequence[Exec],
    mentions: Sequence[Mention],
    replies: Sequence[Reply],
    carry: Carry | None,
) -> tuple[list[Exec], list[Mention], list[Reply], set[str]]:
    """Phase 0 of `join`: a trace that holds a call id only in its input history or in a reply (it did
    not ask for that call) is answering a call another trace asked (spans without a common parent:
    each model call its own trace). Its mentions of the id are repeats (dropped), its replies and
    execution spans of the id go to the asking trace: the latest earlier mention that asked for the
    id in another trace of this record, else the call waiting in `carry`; an id already `settled`
    across traces is a repeat, dropped whole. Returns the items and the ids joined across traces."""
    asked: dict[str, list[Mention]] = {}
    own: set[tuple[str, str]] = set()
    for m in mentions:
        if m.asked and m.call_id is not None:
            asked.setdefault(m.call_id, []).append(m)
            own.add((m.trace_id, m.call_id))
    first: dict[tuple[str, str], int] = {}
    for m in mentions:
        if m.call_id is not None and (m.trace_id, m.call_id) not in own:
            k = (m.trace_id, m.call_id)
            first[k] = min(first.get(k, m.position), m.position)
    for r in replies:
        if r.call_id is not None and (r.trace_id, r.call_id) not in own:
            k = (r.trace_id, r.call_id)
            first[k] = min(first.get(k, r.position), r.position)
    for e in execs:
        if e.call_id is not None and (e.trace_id, e.call_id) not in own:
            first.setdefault((e.trace_id, e.call_id), 1 << 62)
    if not first:
        return list(execs), list(mentions), list(replies), set()
    owner: dict[tuple[str, str], str | None] = {}  # (trace, id) -> owning trace, None = drop (settled)
    injected: list[Mention] = []
    joined: set[str] = set()
    for (trace, cid), pos in sorted(first.items(), key=lambda kv: (kv[1], kv[0])):
        cands = [m for m in asked.get(cid, ()) if m.trace_id != trace and m.position < pos]
        if cands:
            owner[(trace, cid)] = max(cands, key=lambda m: (m.sort, m.position)).trace_id
            joined.add(cid)
        elif carry is not None and cid in carry.waiting:
            waiting = carry.waiting.pop(cid)
            carry.answered_sources.add(waiting.source)
            w = waiting.mention._replace(position=-1)
            injected.append(w)
            asked[cid] = [w]
            owner[(trace, cid)] = w.trace_id
            joined.add(cid)
        elif carry is not None and cid in carry.settled:
            owner[(trace, cid)] = None
    if not owner:
        return list(execs), list(mentions), list(replies), set()
    ms = injected + [m for m in mentions if m.call_id is None or (m.trace_id, m.call_id) not in owner]
    rs: list[Reply] = []
    for r in replies:
        rk = (r.trace_id, r.call_id) if r.call_id is not None else None
        if rk is None or rk not in owner:
            rs.append(r)
        elif (to := owner[rk]) is not None:
            rs.append(r._replace(trace_id=to))
    es: list[Exec] = []
    for e in execs:
        ek = (e.trace_id, e.call_id) if e.call_id is not None else None
        if ek is None or ek not in owner:
            es.append(e)
        elif (to := owner[ek]) is not None:
            es.append(e._replace(trace_id=to))
    return es, ms, rs, joined


def _args_key(args: dict[str, Any] | None) -> str:
    return canonical_str(args if args is not None else {})


def join(
    ctx: RecordContext,
    execs: Sequence[Exec],
    mentions: Sequence[Mention],
    replies: Sequence[Reply],
    bad: Sequence[Bad] = (),
    *,
    what: str = "tool result",
    carry: Carry | None = None,
) -> tuple[list[ToolCall], list[DroppedCall]]:
    """Calls and rejects of one record (see the module docstring); `what` names replies in reasons.
    With `carry`, calls asked and not answered wait there for a later record instead of being
    `R_UNMATCHED` now, and this record's replies may answer calls waiting from earlier records."""
    # 0. calls one trace asked and another trace answers
    execs, mentions, replies, joined = _cross_trace(execs, mentions, replies, carry)
    # 1. de-duplicate mentions and replies
    unique: dict[tuple[str, str, str], Mention] = {}
    for m in sorted(mentions, key=lambda m: m.position):
        key = (
            (m.trace_id, "id", m.call_id)
            if m.call_id is not None
            else (m.trace_id, m.tool, _args_key(m.arguments))
        )
        unique.setdefault(key, m)
    answers: dict[str, Answers] = {}
    seen_replies: set[tuple[str, str | None, str]] = set()
    for r in sorted(replies, key=lambda r: r.position):
        rkey = (r.trace_id, r.call_id, canonical_str(r.content))
        if rkey in seen_replies:
            continue
        seen_replies.add(rkey)
        a = answers.setdefault(r.trace_id, Answers())
        if r.call_id is None:
            a.add_unkeyed(r.position, r.raw)
        else:
            a.add(r.call_id, r.position, r)

    # 2. execution spans claim their mentions
    claimed: set[tuple[str, str, str]] = set()
    by_id = {k: m for k, m in unique.items() if k[1] == "id"}
    by_tool: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    if any(e.call_id is None for e in execs):
        for k, m in unique.items():
            by_tool.setdefault((m.trace_id, m.tool), []).append(k)
    out: list[tuple[Sort, ToolCall | None, DroppedCall | None]] = []
    holdable: dict[int, Mention] = {}  # id(dropped) -> the asked mention it stands for
    for e in execs:
        mention: Mention | None = None
        if e.call_id is not None:
            k = (e.trace_id, "id", e.call_id)
            if k in by_id and k not in claimed:
                claimed.add(k)
                mention = by_id[k]
        else:
            want = None if e.arguments is None else _args_key(e.arguments)
            candidates = by_tool.get((e.trace_id, e.tool), [])
            # a span of an agent step claims only a mention of that step, when the step has any
            step = e.group is not None and any(unique[k].group == e.group for k in candidates)
            for i, k in enumerate(candidates):
                m = unique[k]
                if step and m.group != e.group:
                    continue
                if k not in claimed and (want is None or _args_key(m.arguments) == want):
                    claimed.add(k)
                    mention = m
                    del candidates[i]  # claimed once: later spans need not step over it
                    break
        call_id = e.call_id if e.call_id is not None else (mention.call_id if mention else None)
        after = mention.position if mention is not None else -1
        reply = answers[e.trace_id].take(call_id, after) if e.trace_id in answers else None
        args = e.arguments if e.arguments is not None else (mention.arguments if mention else {})
        meta = dict(e.meta)
        if call_id is not None:
            meta.setdefault("tool_call_id", call_id)
        if e.reject is not None:
            out.append((e.sort, None, DroppedCall(0, e.reject[1], e.raw, e.reject[0])))
            continue
        if e.error is not None:
            result, status, error = (decode_result(e.result) if e.has_result else None), "error", e.error
        elif e.has_result:
            result, status, error = decode_result(e.result), "ok", None
        elif reply is not None:
            result, status, error = outcome(reply.content)
        else:
            reason = f"{e.tool} span '{e.meta.get('span_id')}' has no result"
            out.append((e.sort, None, DroppedCall(0, reason, e.raw, R_UNMATCHED)))
            continue
        call = ToolCall(
            trace_id=e.trace_id,
            tool=e.tool,
            arguments=args,
            result=result,
            status=status,
            error=error,
            task_id=e.task_id,
            started_at=e.started_at,
            source=ctx.source,
            line=ctx.line,
            meta=meta,
        )
        out.append((e.sort, call, None))

    # 3. the other mentions, answered by replies
    for k, m in unique.items():
        if k in claimed:
            continue
        reply = answers[m.trace_id].take(m.call_id, m.position) if m.trace_id in answers else None
        if reply is None:
            why = "has no id to join a result to" if m.call_id is None else "has no matching result"
            unmatched = DroppedCall(0, f"tool call '{m.call_id}' ({m.tool}) {why}", m.raw)
            if carry is not None and m.call_id is not None and m.asked:
                holdable[id(unmatched)] = m
            out.append((m.sort, None, unmatched))
            continue
        result, status, error = outcome(reply.content)
        call = ToolCall(
            trace_id=m.trace_id,
            tool=m.tool,
            arguments=m.arguments,
            result=result,
            status=status,
            error=error,
            task_id=m.task_id,
            started_at=m.started_at,
            source=ctx.source,
            line=ctx.line,
            meta=m.meta,
        )
        out.append((m.sort, call, None))
    for b in bad:
        out.append((b.sort, None, DroppedCall(0, b.reason, b.raw, b.code)))

    out.sort(key=lambda t: t[0])
    calls: list[ToolCall] = []
    dropped: list[DroppedCall] = []
    for index, (_, kept, drop) in enumerate(out):
        if kept is not None:
            calls.append(dataclasses.replace(kept, index=index))
            if carry is not None and kept.meta.get("tool_call_id") in joined:
                carry.settled[kept.meta["tool_call_id"]] = kept.trace_id
        elif drop is not None:
            if carry is not None and id(drop) in holdable:
                m = holdable[id(drop)]
                carry.wait(Waiting(m, ctx.source, ctx.line, index, drop.reason))
                continue
            dropped.append(dataclasses.replace(drop, index=index))
    n = len(out)
    for a in answers.values():
        for d in a.leftovers(what):
            raw = d.raw.raw if isinstance(d.raw, Reply) else d.raw
            dropped.append(DroppedCall(n + d.index, d.reason, raw, d.code))
    return calls, dropped
