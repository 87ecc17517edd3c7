"""The adapter interface: what every trace format module provides, and the helpers they share.

An adapter turns one *record* of its format into canonical `ToolCall`s and `Episode`s. A record is one
line of a JSON Lines file, or, for whole-file formats (a `.json` file holding one array or object, such
as a τ-bench result file), one element the adapter finds inside that document (`records`). Ingest does
the reading, accounting, chunking and writing; adapters only map shapes, so a new format is one module.

A record that cannot be mapped raises `RecordError` with a specific reason and a stable reject code;
ingest turns it into a line of `rejects.jsonl` (or, with `--strict`, an error naming file and line).
A single call inside an otherwise good episode that cannot be used (for instance a tool call with no
matching result) is reported as a `DroppedCall`: the episode is kept, the call goes to the rejects file.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import orjson

from output_contracts.jsonutil import canonical_str
from output_contracts.traces.records import Episode, ToolCall

# Stable reject codes (the `code` field of rejects.jsonl), documented in docs/formats.md.
R_JSON = "R_JSON"  # not valid JSON
R_UTF8 = "R_UTF8"  # bytes are not UTF-8
R_TOO_LONG = "R_TOO_LONG"  # line longer than the limit
R_NOT_OBJECT = "R_NOT_OBJECT"  # valid JSON, but not an object
R_FIELD = "R_FIELD"  # a required field is missing or has the wrong type
R_UNMATCHED = "R_UNMATCHED"  # a tool call without a matching result
R_FORMAT = "R_FORMAT"  # the record does not look like the source's format
R_ORPHAN_RESULT = "R_ORPHAN_RESULT"  # a tool result that answers no call (unknown id, or before its call)
R_DUPLICATE_RESULT = "R_DUPLICATE_RESULT"  # a second result for a call id whose call was already answered
R_UNKEYED_RESULT = "R_UNKEYED_RESULT"  # a tool result without the id that would join it to its call
R_NO_CONTENT = "R_NO_CONTENT"  # a record shows tool activity but holds no content (e.g. exported as events)
R_NO_CALLS = "R_NO_CALLS"  # a record (sample, simulation, session) with agent activity but no tool call

#: Bounds of the fixed-width integers the corpus stores (`step` is an i64 column, OTLP `intValue` an
#: int64, OTLP times a fixed64). JSON integers are unbounded (orjson reads up to 2**64 - 1 as an int), so
#: an adapter checks the range before a value reaches a column: out of range is a reject of its line, not
#: a crash of the whole ingest when the chunk is written.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


class RecordError(Exception):
    """One record cannot be mapped: `reason` says why, `field` names the offending field if any."""

    def __init__(self, reason: str, *, code: str = R_FIELD, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.field = field


@dataclass(frozen=True)
class DroppedCall:
    """A call left out of a kept episode: its position (`index` within the record), reason and JSON."""

    index: int
    reason: str
    raw: Any
    code: str = R_UNMATCHED
    #: The line (record number) the reject names; None = the record being parsed. Session formats
    #: report a call left unanswered at the end of the file on the line of the call itself.
    line: int | None = None


class Parsed(NamedTuple):
    """What one record yields: calls, episodes (for formats that know them) and dropped calls.

    A NamedTuple, not a dataclass: one is made per input line, and tuple creation is several times
    cheaper than a frozen dataclass's `__init__`.
    """

    calls: Sequence[ToolCall]
    episodes: Sequence[Episode] = ()
    dropped: Sequence[DroppedCall] = ()


class RecordContext(NamedTuple):
    """Where a record comes from: `source` (as given), its file's sha256, and its 1-based number."""

    source: str
    sha256: str
    line: int


class Adapter:
    """Base class of a format adapter.

    `sniff` scores a parsed record: 2 = certainly this format, 1 = plausibly, 0 = no. Detection uses the
    first records of a file (see `output_contracts.traces.formats.detect`). `whole_file` adapters also accept a
    whole `.json` document and split it into records with `records`.
    """

    name: ClassVar[str] = ""
    whole_file: ClassVar[bool] = False
    #: Field names (and values of `type`, `role`, `object`, `kind` and `key` fields) whose presence is
    #: partial evidence of this format: how close a record no format claims comes to this one
    #: (`evidence`, used by the unknown-format error to name the closest formats).
    marks: ClassVar[frozenset[str]] = frozenset()

    def sniff(self, record: Any) -> int:
        raise NotImplementedError

    def lacks(self, record: Any) -> str | None:
        """None when `record` shows this format's defining shape, else a short phrase of what it lacks
        (`"no 'tool' field"`), for the error naming the closest formats of a file no format claims.

        Adapters state their own phrase; this default follows `sniff`: only a certain claim shows the
        shape."""
        return None if self.sniff(record) == 2 else f"not a {self.name} record"

    def evidence(self, vocabulary: frozenset[str]) -> int:
        """How much partial evidence of this format a record's `vocabulary` (see `vocabulary`) holds:
        the number of this format's `marks` in it."""
        return len(self.marks & vocabulary)

    def sniff_document(self, doc: Any) -> int:
        """Score a whole-file document (only whole-file adapters override this)."""
        return 0

    def records(self, doc: Any) -> Iterator[Any]:
        """The records inside a whole-file document, in order."""
        raise NotImplementedError

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        raise NotImplementedError

    def begin(self) -> Adapter:
        """The adapter that reads one source. Stateless adapters are their own reader; session formats
        (one message a line, a call and its result on different lines) return a fresh instance that
        keeps the calls waiting for their results until `finish`."""
        return self

    def finish(self, ctx: RecordContext) -> Parsed:
        """What is left when the source ends (`ctx.line` = its last line): calls no line answered, and
        the episodes of session formats. Stateless adapters have nothing left."""
        return Parsed(())

    def skip_note(self, doc: Any) -> str | None:
        """Why a whole-file document this adapter claims holds no records to read (e.g. a τ²-bench
        results index whose simulations are separate files), or None to read it."""
        return None


# ---- helpers shared by the adapters ----------------------------------------------------------------

#: Fields whose string values count as words of a record's vocabulary (item and message kinds).
_VALUE_KEYS = frozenset({"type", "role", "object", "kind", "key"})


def vocabulary(record: Any, *, depth: int = 4, width: int = 64) -> frozenset[str]:
    """The words a record is made of: the keys of its objects down to `depth` levels (objects inside
    lists count at the list's level), and the string values of their `type`, `role`, `object`, `kind`
    and `key` fields. At most `width` elements of a list are looked at. Only the unknown-format error
    asks (a few records, once), so this is not on any per-record path."""
    words: set[str] = set()

    def walk(v: Any, level: int) -> None:
        if level > depth:
            return
        if isinstance(v, dict):
            for k, x in v.items():
                words.add(k)
                if k in _VALUE_KEYS and isinstance(x, str):
                    words.add(x)
                walk(x, level + 1)
        elif isinstance(v, list):
            for x in v[:width]:
                walk(x, level)

    walk(record, 0)
    return frozenset(words)


def decode_result(value: Any) -> Any:
    """A tool result that is a JSON string holding an object or array is decoded; other values stay.

    Only strings whose first non-blank character is `{` or `[` are tried, and only an object or array
    result is accepted, so `"42"` or `"true"` stay strings: the tool returned text.
    """
    if isinstance(value, str):
        s = value.lstrip()
        if s[:1] in ("{", "["):
            try:
                decoded = orjson.loads(s)
            except orjson.JSONDecodeError:
                return value
            if isinstance(decoded, dict | list):
                return decoded
    return value


def is_error_text(value: Any) -> bool:
    """True for a tool output that reports failure as text: a string starting with `Error:`."""
    return isinstance(value, str) and value.startswith("Error:")


def text_of_blocks(content: Any) -> Any:
    """Collapse a list of `{type: "text", text}` content blocks to their joined text.

    OpenAI and Anthropic both allow message content to be a string or a list of typed parts. A list made
    only of text parts is the same thing as one string; a list holding other parts (images, documents)
    is kept as it is, since no text form would be faithful.
    """
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text") for b in content
    ):
        return "".join(str(b.get("text", "")) for b in content)
    return content


def error_text(value: Any) -> str:
    """An error payload as text: strings as they are, anything else as canonical JSON."""
    return value if isinstance(value, str) else canonical_str(value)


def outcome(content: Any, *, failed: bool | None = None) -> tuple[Any, str, str | None]:
    """`(result, status, error)` of one tool output.

    `failed` is the format's own error flag (Anthropic `is_error`, τ²-bench `error`); `None` means the
    format has none, and the `Error:` text convention (τ-bench, most agent frameworks) decides. A failed
    call has no result; an ok one has its content decoded when it holds a JSON object or array.
    """
    text = text_of_blocks(content)
    if is_error_text(text) if failed is None else failed:
        return None, "error", error_text(text)
    return decode_result(text), "ok", None


def answered_call(
    ctx: RecordContext,
    *,
    trace_id: str,
    task_id: str,
    tool: str,
    arguments: dict[str, Any],
    content: Any,
    failed: bool | None = None,
    step: int,
    index: int,
    **extra: Any,
) -> ToolCall:
    """The `ToolCall` of a call joined to its answer in an episode format (see `outcome` for `failed`)."""
    result, status, error = outcome(content, failed=failed)
    return ToolCall(
        trace_id=trace_id,
        tool=tool,
        arguments=arguments,
        result=result,
        status=status,
        error=error,
        task_id=task_id,
        step=step,
        source=ctx.source,
        line=ctx.line,
        index=index,
        **extra,
    )


def record_episode(record: dict[str, Any], trace_id: str, task_id: str) -> Episode:
    """The episode of a one-episode-a-line record: its `labels`, `reward`, visible `tools` and run facts
    (`trial`, `agent_cost`, `user_cost`), if given."""
    raw = record.get("labels")
    labels: dict[str, Any] = raw if isinstance(raw, dict) else {}
    trial, agent_cost, user_cost = run_facts(record)
    return Episode(
        trace_id=trace_id,
        task_id=task_id,
        reward=optional_reward(record),
        labels=labels,
        tools=tool_names(record.get("tools")),
        trial=trial,
        agent_cost=agent_cost,
        user_cost=user_cost,
    )


def run_facts(record: dict[str, Any]) -> tuple[int | None, float | None, float | None]:
    """An episode record's optional `trial` (an integer), `agent_cost` and `user_cost` (finite numbers),
    for `contracts compare`. A value of another type is not one of these facts and is ignored, as it was
    before they were read: a file that used the names for something else still ingests as it did."""
    # every line of a flat file asks, so this is hot: absent facts and plain ints answer without a call
    get = record.get
    v = get("trial")
    trial = v if type(v) is int or (isinstance(v, int) and not isinstance(v, bool)) else None
    a, u = get("agent_cost"), get("user_cost")
    return trial, None if a is None else _finite(a), None if u is None else _finite(u)


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        return None
    return float(v)


def require_str(rec: dict[str, Any], key: str, *, where: str = "") -> str:
    """`rec[key]` as a string; integer ids are accepted and written as decimal text."""
    v = rec.get(key)
    if isinstance(v, str) and v != "":
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    what = "missing" if v is None else f"not a string ({type(v).__name__})"
    raise RecordError(f"{where}'{key}' is {what}", field=f"{where}{key}")


def optional_str(rec: dict[str, Any], key: str, *, where: str = "") -> str | None:
    """`rec[key]` as a string, or None when absent/null; ints are stringified, other types refused."""
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    raise RecordError(f"{where}'{key}' must be a string, got {type(v).__name__}", field=f"{where}{key}")


def optional_reward(rec: dict[str, Any], key: str = "reward", *, where: str = "") -> float | None:
    """A finite number or None."""
    v = rec.get(key)
    if v is None:
        return None
    if type(v) is float and math.isfinite(v):  # the common case, first: this runs for every line
        return v
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise RecordError(f"{where}'{key}' must be a number, got {v!r}", field=f"{where}{key}")
    return float(v)


def parse_arguments(value: Any, *, field: str) -> dict[str, Any]:
    """Tool-call arguments: an object, or a JSON string holding one (OpenAI sends a string)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value.strip() else {}
        except orjson.JSONDecodeError as e:
            raise RecordError(f"'{field}' is not valid JSON: {e}", field=field) from None
    if not isinstance(value, dict):
        raise RecordError(f"'{field}' is not an object ({type(value).__name__})", field=field)
    return value


def tool_names(tools: Any) -> tuple[str, ...] | None:
    """Visible tool names from a `tools` list in any of the usual shapes, or None when absent.

    Accepts plain names, OpenAI chat (`{type: function, function: {name}}`), OpenAI Responses and
    Anthropic (`{name, ...}`). Entries without a name are ignored; names are de-duplicated, order kept.
    """
    if not isinstance(tools, list):
        return None
    names: list[str] = []
    for t in tools:
        name: Any = None
        if isinstance(t, str):
            name = t
        elif isinstance(t, dict):
            fn = t.get("function")
            name = fn.get("name") if isinstance(fn, dict) else t.get("name")
        if isinstance(name, str) and name not in names:
            names.append(name)
    return tuple(names)


def list_of_dicts(rec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """`rec[key]` as a list of objects, or a RecordError naming the first bad element."""
    v = rec.get(key)
    if not isinstance(v, list):
        raise RecordError(f"'{key}' is not a list", field=key)
    for i, item in enumerate(v):
        if not isinstance(item, dict):
            raise RecordError(f"'{key}[{i}]' is not an object", field=f"{key}[{i}]")
    return v


class WholeDocument(Adapter):
    """An adapter for formats whose unit is one whole JSON document a file (a trajectory file): the
    document is scored as a record and is the file's only record."""

    whole_file: ClassVar[bool] = True

    def sniff_document(self, doc: Any) -> int:
        return self.sniff(doc)

    def records(self, doc: Any) -> Iterator[Any]:
        yield doc


class Answers:
    """Results by call id, consumed in order: each call takes the first unused answer after it.

    Ids are not always unique within an episode (τ-bench's recorded trajectories reuse OpenAI call ids
    across turns), so a plain id lookup would join a later call to an earlier call's result. Pairing
    each call with the first not-yet-used answer that comes after it in the transcript is what the
    conversation itself means.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, list[tuple[int, Any]]] = {}
        self._taken: set[str] = set()
        self._unkeyed: list[tuple[int, Any]] = []

    def add(self, key: str, position: int, answer: Any) -> None:
        self._by_id.setdefault(key, []).append((position, answer))

    def add_unkeyed(self, position: int, answer: Any) -> None:
        """A result that carries no id: it can answer no call, and is reported by `leftovers`."""
        self._unkeyed.append((position, answer))

    def take(self, key: Any, after: int) -> Any:
        """The first unused answer for `key` at a position > `after`, or None."""
        if not isinstance(key, str):
            return None
        queue = self._by_id.get(key)
        if not queue:
            return None
        for i, (pos, answer) in enumerate(queue):
            if pos > after:
                del queue[i]
                self._taken.add(key)
                return answer
        return None

    def leftovers(self, what: str) -> list[DroppedCall]:
        """Every answer no call took, as rejects (`index` = the answer's position in the record's
        message or item list): a second answer to an answered id is `R_DUPLICATE_RESULT`, an answer
        whose id no call took (unknown, or placed before its call) `R_ORPHAN_RESULT`, one without an
        id `R_UNKEYED_RESULT`. `what` names the results in the reasons (`tool message`, `tool_result`)."""
        out = [
            DroppedCall(
                pos,
                f"{what} at position {pos} for id '{key}' answers a call that already has its result"
                if key in self._taken
                else f"{what} at position {pos} for id '{key}' answers no call before it",
                answer,
                R_DUPLICATE_RESULT if key in self._taken else R_ORPHAN_RESULT,
            )
            for key, queue in self._by_id.items()
            for pos, answer in queue
        ]
        out += [
            DroppedCall(pos, f"{what} at position {pos} has no id to join it to a call", a, R_UNKEYED_RESULT)
            for pos, a in self._unkeyed
        ]
        return sorted(out, key=lambda d: d.index)


def tool_message_answers(messages: list[dict[str, Any]]) -> Answers:
    """The answers of an OpenAI-style message list: each `role: tool` message under its `tool_call_id`
    (unkeyed when that is not a string), at its position in the list."""
    answers = Answers()
    for pos, m in enumerate(messages):
        if m.get("role") == "tool":
            key = m.get("tool_call_id")
            if isinstance(key, str):
                answers.add(key, pos, m)
            else:
                answers.add_unkeyed(pos, m)
    return answers


def items_or_document(doc: Any) -> Iterator[Any]:
    """The records of a document that is a JSON array of records or one record."""
    if isinstance(doc, list):
        yield from doc
    else:
        yield doc
