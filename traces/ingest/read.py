"""Ingest step 2, reading: one source's bytes -> records -> calls, episodes and rejects in the run.

- **Decompression and lines**: `.gz` files are read through gzip; lines are streamed with a hard cap
  (`MAX_LINE_BYTES`, 16 MiB) so one giant line cannot exhaust memory (its head is kept for the reject).
  A UTF-8 byte-order mark on the first line is dropped.
- **Whole-file documents**: a source whose first non-blank byte is `[`, or that starts with an object
  not ending on its first line (a pretty-printed `.json`), is loaded whole (`whole_document`) and split
  into records by its adapter (a τ-bench array, an OTLP or τ²-bench object). A tool registry, or in a
  folder walk a document no adapter claims, is skipped, not failed.
- **Zip containers**: a file starting with a zip header (an Inspect AI `.eval` log) is read with
  `zipfile` into the JSON document it stands for (`zip_document`).
- **Format detection** looks at the first `SNIFF_RECORDS` records (`formats.detect`); `--format` forces one.
  In a folder walk, a JSON Lines file no adapter claims is skipped with a note naming the two closest
  formats and what each lacks (`detect.closest_phrase`), as is a document its
  adapter says holds no records (`Adapter.skip_note`: a τ²-bench results index).
- **Sessions**: the adapter a source is read with is `adapter.begin()` (a fresh one for session formats,
  whose calls and results are on different lines), and `finish` stages what it still holds when the
  source ends: calls no line answered, each a reject on its own line.
- **Records to the run**: each record goes through its adapter; its calls are staged into the chunk all
  or nothing (`columns.stage_calls`), a bad record becomes one reject (with `R_FORMAT` when it
  clearly belongs to another format, or a mixed-format error under auto-detection), and a call dropped
  from a kept episode becomes a reject with its `index`.
- **Accounting**: every line read is exactly one of ok, rejected or blank (`lines = ok + rejects +
  blank`), checked before the source's report is returned.
"""

from __future__ import annotations

import dataclasses
import gzip
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import orjson

from output_contracts.errors import TraceError, reading
from output_contracts.traces.formats.adapter import (
    R_FORMAT,
    R_JSON,
    R_NOT_OBJECT,
    R_TOO_LONG,
    R_UTF8,
    Adapter,
    Parsed,
    RecordContext,
    RecordError,
)
from output_contracts.traces.formats.detect import (
    SNIFF_RECORDS,
    best_match,
    closest_phrase,
    detect_document,
    detect_records,
    get_adapter,
)
from output_contracts.traces.formats.flat import FlatAdapter
from output_contracts.traces.formats.inspect_ai import read_eval_zip
from output_contracts.traces.ingest.columns import add_call, episode_row, stage_calls
from output_contracts.traces.ingest.run import Run
from output_contracts.traces.ingest.sources import Hashed, Source, SourceReport, skipped_source

MAX_LINE_BYTES = 16 * 1024 * 1024
RAW_LIMIT = 4096
#: The UTF-8 byte-order mark some editors write at the start of a file: not part of the JSON.
_BOM = b"\xef\xbb\xbf"

#: One line as read: (1-based number, bytes, too_long). An over-long line's bytes are its head only.
Line = tuple[int, bytes, bool]


# ---- bytes and lines -------------------------------------------------------------------------------


def open_source(path: Path) -> IO[bytes]:
    """The source's bytes, decompressed when its name ends in `.gz`."""
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def without_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte-order mark: the start of a source, as its JSON begins (its
    first line, the head a whole-file document is sniffed from, or the whole file when a report
    counts its lines)."""
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def _lines(fh: IO[bytes]) -> Iterator[Line]:
    """`(line number, bytes, too_long)`; an over-long line is skipped to its end, its head kept."""
    n = 0
    readline = fh.readline
    while True:
        raw = readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        n += 1
        if n == 1:
            raw = without_bom(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            head = raw[:RAW_LIMIT]
            while raw and not raw.endswith(b"\n"):
                raw = readline(1 << 20)
            yield n, head, True
        else:
            yield n, raw, False


def raw_text(raw: bytes) -> str:
    """A line's bytes as reject text: cut to `RAW_LIMIT`, without its line end, bad UTF-8 replaced."""
    return raw[:RAW_LIMIT].rstrip(b"\r\n").decode("utf-8", "replace")


def _json_error(raw: bytes, e: Exception, last: bool) -> tuple[str, str]:
    """A specific reason for a line that does not parse: bad UTF-8 or bad JSON (maybe truncated)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return R_UTF8, f"not UTF-8 text: byte 0x{raw[u.start]:02x} at offset {u.start}"
    msg = str(e)
    if last and not raw.endswith(b"\n"):
        return R_JSON, f"invalid JSON (truncated last line?): {msg}"
    return R_JSON, f"invalid JSON: {msg}"


def _kind(v: Any) -> str:
    """What a JSON value is, for a reason: "an array", "a string", ..."""
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(v), "null" if v is None else type(v).__name__
    )


def _raw_of(raw: bytes | None, rec: Any) -> str:
    """Reject text of a record: its line's bytes when it had its own line, else its JSON."""
    if raw is not None:
        return raw_text(raw)
    try:
        return raw_text(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS))
    except TypeError:
        return raw_text(repr(rec).encode())


# ---- whole-file documents --------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """A whole-file JSON source, parsed (a list or an object)."""

    value: Any


@dataclass(frozen=True)
class BrokenDocument:
    """A `[`-document that does not parse: one reject for the whole file."""

    error: str
    line: int
    head: bytes


def whole_document(path: Path) -> Document | BrokenDocument | None:
    """The parsed document when `path` is a whole-file JSON source; None when it is JSON Lines.

    A source is a whole-file document when its first non-blank byte is `[` (a JSON array, minified or
    not), or when it starts with an object that does not end on its first line (a pretty-printed `.json`
    file). Anything else, including a minified object on one line, is read line by line as JSON Lines.
    An array that does not parse is a `BrokenDocument`; an object that does not parse is read line by
    line, so a JSON Lines file whose first line is damaged still has its other lines ingested.
    """
    with open_source(path) as fh:
        head = fh.read(1 << 16)
        if head.startswith(b"PK\x03\x04") and not path.name.endswith(".gz"):
            return zip_document(path)
        head = without_bom(head)
        stripped = head.lstrip()
        first = stripped[:1]
        if first == b"{":
            line1, nl, _ = stripped.partition(b"\n")
            if nl or len(head) < (1 << 16):
                try:
                    orjson.loads(line1)
                    return None
                except orjson.JSONDecodeError:
                    pass
        elif first != b"[":
            return None
        data = head + fh.read()
    try:
        return Document(orjson.loads(data))
    except orjson.JSONDecodeError as e:
        if first == b"[":
            return BrokenDocument(f"invalid JSON document: {e}", max(1, e.lineno), data[:RAW_LIMIT])
        return None


def zip_document(path: Path) -> Document | BrokenDocument:
    """A zip container (an Inspect AI `.eval` log) as the JSON document its members make up; a zip
    that cannot be read, or is not an eval log, is one rejected record."""
    try:
        return Document(read_eval_zip(path))
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError) as e:
        why = "not an Inspect AI eval log (no header.json)" if isinstance(e, KeyError) else str(e)
        return BrokenDocument(f"unreadable zip container: {why}", 1, b"")


_TRACE_KEYS = {"messages", "traj", "resourceSpans", "simulations", "trace_id", "tool", "items"}


def is_registry(doc: Any) -> bool:
    """A tool registry (`{"tools": [...]}` or a list of `{name, parameters|description}`), not traces.

    Registries often sit beside the traces they describe (τ²-bench ships `tools.json` in the same
    folder), so a folder walk must not fail on them; they are reported as skipped.
    """
    if isinstance(doc, dict) and not (_TRACE_KEYS & set(doc)):
        doc = doc.get("tools")
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(
            isinstance(t, dict)
            and isinstance(t.get("name"), str)
            and ("parameters" in t or "description" in t or "input_schema" in t)
            and not (_TRACE_KEYS & set(t))
            for t in doc
        )
    )


@dataclass(frozen=True)
class _NotTraces:
    """A whole-file document that is skipped: the format to report and why."""

    format: str
    note: str


def _unclaimed(records: list[tuple[int, Any]]) -> bool:
    """True when there are records and no adapter claims any of them: `detect_records` would fail
    with "unknown format" (it fails so only when no record has a best match)."""
    return bool(records) and all(best_match(r)[0] is None for _, r in records)


def _document_records(doc: Any, fmt: str, src: Source) -> tuple[str, Iterable[Any]] | _NotTraces:
    """The format of a whole-file document and its records, or why it is skipped as not traces."""
    if fmt == "auto":
        found = detect_document(doc)
        if found is None:
            return _records_by_sniffing(doc, src)
        fmt = found
    adapter = get_adapter(fmt)
    if adapter.whole_file:
        note = adapter.skip_note(doc)
        if note is not None:
            return _NotTraces(fmt, note)
        return fmt, adapter.records(doc)
    return fmt, (doc if isinstance(doc, list) else [doc])


def _records_by_sniffing(doc: Any, src: Source) -> tuple[str, Iterable[Any]] | _NotTraces:
    """A document no whole-file adapter claims: a registry, a list (or one) of line-format records, or,
    in a folder walk, something else to skip (a folder may hold metadata documents beside its traces;
    a file named on the command line still fails as of unknown format)."""
    if is_registry(doc):
        return _NotTraces("registry", "a tool registry, not traces")
    records = doc if isinstance(doc, list) else [doc]
    sniffed = [(i, r) for i, r in enumerate(records[:SNIFF_RECORDS], 1) if isinstance(r, dict)]
    if src.from_folder and _unclaimed(sniffed):
        why = f"not traces: no format claims it; {closest_phrase([r for _, r in sniffed])}"
        return _NotTraces("unknown", why)
    return detect_records(sniffed, src.name) or "flat", records


# ---- records into the run --------------------------------------------------------------------------


@dataclass
class _Counts:
    """One source's tallies, as `SourceReport` reports them (`dropped` is its `dropped_calls`)."""

    lines: int = 0
    ok: int = 0
    rejects: int = 0
    blank: int = 0
    calls: int = 0
    episodes: int = 0
    dropped: int = 0


#: Whether a flat source defers its step counts (see `_SourceReader.counted`); False counts from the first
#: line, the plain path the tests hold the deferred one to.
DEFER_STEP_COUNTS = True


class _Uncounted(dict[str, int]):
    """`add_call`'s step counts while nothing asks for them: every trace has 0 calls, none is kept."""

    def get(self, key: str, default: Any = None) -> Any:
        return 0

    def __setitem__(self, key: str, value: int) -> None:
        return


_UNCOUNTED = _Uncounted()


class _SourceReader:
    """Feeds one source's records, in order, through `adapter` into the run, counting each line once."""

    def __init__(self, run: Run, h: Hashed, adapter: Adapter, *, mixed_is_error: bool) -> None:
        self.run = run
        self.name = h.source.name
        self.sha = h.sha256
        self.size = h.size
        self.adapter = adapter.begin()
        share = getattr(self.adapter, "carry_over", None)
        if share is not None:  # an adapter that joins across the run's sources
            share(run.carry)
        #: Under auto-detection a record that is certainly another format fails the run (the file mixes
        #: formats); under a forced format it is one `R_FORMAT` reject.
        self.mixed_is_error = mixed_is_error
        self.counts = _Counts()
        self.steps: dict[str, int] = {}  # trace_id -> calls seen, the default `step` of the next
        #: The flat format's record goes straight into the columns (`_flat_record`): no `ToolCall`,
        #: `Episode` or `RecordContext` per line.
        self.flat = self.adapter if isinstance(self.adapter, FlatAdapter) else None
        #: A flat source counts its traces' calls (`steps`) only from its first line without a `step`:
        #: until then `steps` is a `_Uncounted` and the count is what the run staged (`Run.trace_calls`)
        #: plus the calls that failed (`failed`). A dict of every trace grew with the input (1.5M
        #: traces at 10M calls), for a default most flat files never use.
        self.counted = self.flat is None or not DEFER_STEP_COUNTS
        if not self.counted:
            self.steps = _UNCOUNTED
        self.failed: dict[str, int] = {}

    def finish(self, line: int) -> None:
        """The source has ended at `line`: stage what a session adapter still holds (calls no line
        answered, each a reject on its own line; episodes; per-session `R_NO_CALLS`)."""
        run, c = self.run, self.counts
        parsed = self.adapter.finish(RecordContext(self.name, self.sha, line))
        for call in parsed.calls:
            try:
                c.calls += stage_calls(run.cols, Parsed((call,)), self.sha, self.steps)
            except RecordError as e:  # a value that cannot be encoded: that call is a reject
                c.dropped += 1
                run.reject(self.name, call.line, e.code, e.reason, "", index=call.index)
        for ep in parsed.episodes:
            run.add_episode(episode_row(ep, self.name, line, run.tools_text))
        for d in parsed.dropped:
            c.dropped += 1
            at = d.line if d.line is not None else line
            run.reject(self.name, at, d.code, d.reason, _raw_of(None, d.raw), index=d.index)

    def record(self, line: int, rec: Any, raw: bytes | None) -> None:
        """One record (parsed JSON); `raw` is its line's bytes, None for a record of a document."""
        if self.flat is not None:
            self._flat_record(self.flat, line, rec, raw)
            return
        adapter, run, c = self.adapter, self.run, self.counts
        try:
            if not isinstance(rec, dict) and not adapter.whole_file:
                raise RecordError(f"record is not a JSON object ({_kind(rec)})", code=R_NOT_OBJECT)
            parsed = adapter.parse(rec, RecordContext(self.name, self.sha, line))
            staged = stage_calls(run.cols, parsed, self.sha, self.steps)
        except RecordError as e:
            self._bad_record(line, rec, raw, e)
            return
        c.ok += 1
        c.calls += staged
        if parsed.episodes:
            c.episodes += 1 if adapter.name != "flat" else 0
            for ep in parsed.episodes:
                run.add_episode(episode_row(ep, self.name, line, run.tools_text))
        for d in parsed.dropped:
            c.dropped += 1
            at = d.line if d.line is not None else line
            run.reject(self.name, at, d.code, d.reason, _raw_of(None, d.raw), index=d.index)

    def _flat_record(self, flat: FlatAdapter, line: int, rec: Any, raw: bytes | None) -> None:
        """`record` for the flat format, fused: the adapter's validated values (`FlatAdapter.fields`)
        go straight into the columns, with the step, call id, rejects and episode row `record` would
        give through `parse` and `stage_calls` (tests/traces/test_ingest_speed.py compares the two)."""
        run = self.run
        attempted: str | None = None
        try:
            if not isinstance(rec, dict):
                raise RecordError(f"record is not a JSON object ({_kind(rec)})", code=R_NOT_OBJECT)
            trace_id, tool, args, result, status, error, task_id, step, started_at, labels, facts = (
                flat.fields(rec)
            )
            task = task_id if task_id is not None else trace_id
            if step is None and not self.counted:
                self._count_steps()
            attempted = trace_id  # `add_call` counts the call, whether it is added or not
            add_call(
                run.cols,
                self.steps,
                self.sha,
                line,
                0,
                trace_id,
                task,
                step,
                tool,
                status,
                error,
                args,
                result,
                started_at,
                labels,
                self.name,
                None,
                plain=True,  # every value is from `orjson.loads` (a line or a whole-file document)
            )
        except RecordError as e:
            if attempted is not None and not self.counted:
                self.failed[attempted] = self.failed.get(attempted, 0) + 1
            self._bad_record(line, rec, raw, e)
            return
        c = self.counts
        c.ok += 1
        c.calls += 1
        if facts is not None:
            reward, tools, trial, agent_cost, user_cost = facts
            tools_j = None if tools is None else run.tools_text(tools)
            run.add_episode(
                (trace_id, task, reward, None, tools_j, self.name, line, trial, agent_cost, user_cost)
            )

    def _count_steps(self) -> None:
        """Start counting the source's calls per trace: from what is staged and what failed so far."""
        steps = self.run.trace_calls(self.name)
        for t, n in self.failed.items():
            steps[t] = steps.get(t, 0) + n
        self.steps, self.failed, self.counted = steps, {}, True

    def _bad_record(self, line: int, rec: Any, raw: bytes | None, e: RecordError) -> None:
        """A record the adapter refused: one reject, or a mixed-format error (see `mixed_is_error`)."""
        other, score = best_match(rec)
        code, reason = e.code, e.reason
        if score == 2 and other != self.adapter.name:
            if self.mixed_is_error:
                raise TraceError(
                    f"mixed formats: this record is {other}, the file was detected as {self.adapter.name}; "
                    "split the file or pass --format",
                    code="E_FORMAT",
                    source=self.name,
                    line=line,
                ) from None
            code, reason = R_FORMAT, f"record looks like {other}, not {self.adapter.name}: {reason}"
        self.counts.rejects += 1
        self.run.reject(self.name, line, code, reason, _raw_of(raw, rec), field=e.field)

    def document_record(self, n: int, rec: Any) -> None:
        """Record `n` (1-based) of a whole-file document: one "line" of the accounting."""
        self.counts.lines += 1
        self.record(n, rec, None)

    def text_line(self, item: Line, last: bool) -> None:
        """One line of a JSON Lines source: too long, blank, not JSON, or a record."""
        n, raw, too_long = item
        c = self.counts
        c.lines += 1
        if too_long:
            c.rejects += 1
            self.run.reject(
                self.name, n, R_TOO_LONG, f"line longer than {MAX_LINE_BYTES} bytes", raw_text(raw)
            )
            return
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if not raw.strip():
                c.blank += 1
                return
            code, reason = _json_error(raw, e, last)
            c.rejects += 1
            self.run.reject(self.name, n, code, reason, raw_text(raw))
            return
        self.record(n, rec, raw)

    def report(self, fmt: str, unit: str) -> SourceReport:
        """The source's accounting, after checking `lines = ok + rejects + blank`."""
        return _report(self.name, self.sha, fmt, self.counts, unit, self.size)


def _report(name: str, sha: str, fmt: str, c: _Counts, unit: str, size: int) -> SourceReport:
    """The `SourceReport` of tallies `c`; fails loudly if a line was not counted exactly once."""
    if c.lines != c.ok + c.rejects + c.blank:  # the accounting promise, checked not assumed
        raise AssertionError(f"{name}: lines {c.lines} != ok {c.ok} + rejects {c.rejects} + blank {c.blank}")
    return SourceReport(
        source=name,
        sha256=sha,
        format=fmt,
        lines=c.lines,
        calls=c.calls,
        rejects=c.rejects,
        blank=c.blank,
        ok=c.ok,
        episodes=c.episodes,
        dropped_calls=c.dropped,
        unit=unit,
        bytes=size,
    )


# ---- one source ------------------------------------------------------------------------------------


def read_source(run: Run, h: Hashed, fmt: str) -> SourceReport:
    """Read one source into the run (`fmt` is a format name or `auto`); returns its accounting. A file
    that cannot be read or decompressed (a truncated or fake `.gz`) is an `IOFailure` naming it: the run
    is abandoned before anything is committed."""
    with reading(h.source.name):
        doc = whole_document(h.path)
        if doc is None:
            return _read_lines(run, h, fmt)
        if isinstance(doc, BrokenDocument):
            return _read_broken(run, h, fmt, doc)
        return _read_document(run, h, fmt, doc.value)


def finish_run(run: Run, reports: list[SourceReport]) -> list[SourceReport]:
    """After the run's last source: what adapters sharing the run's state (`carry_over`) still hold,
    calls no source answered, each a reject on the line of the source that asked for it and counted in
    that source's report (`dropped_calls`)."""
    dropped: dict[str, int] = {}
    for state in run.carry.values():
        run.answered_elsewhere |= getattr(state, "answered_sources", set())
        for source, d in state.leftovers():
            run.reject(source, d.line or 1, d.code, d.reason, _raw_of(None, d.raw), index=d.index)
            dropped[source] = dropped.get(source, 0) + 1
    run.carry.clear()
    return [
        dataclasses.replace(r, dropped_calls=r.dropped_calls + dropped[r.source])
        if r.source in dropped
        else r
        for r in reports
    ]


def _read_broken(run: Run, h: Hashed, fmt: str, doc: BrokenDocument) -> SourceReport:
    """A whole-file document that does not parse: one record, rejected."""
    run.reject(h.source.name, doc.line, R_JSON, doc.error, raw_text(doc.head))
    run.progress.advance(h.size)
    c = _Counts(lines=1, rejects=1)
    return _report(h.source.name, h.sha256, fmt if fmt != "auto" else "unknown", c, "record", h.size)


def _read_document(run: Run, h: Hashed, fmt: str, doc: Any) -> SourceReport:
    """A whole-file document: its records, numbered from 1, each one "line" of the accounting."""
    found = _document_records(doc, fmt, h.source)
    if isinstance(found, _NotTraces):
        return skipped_source(h.source.name, h.sha256, found.format, h.size, found.note)
    dfmt, records = found
    reader = _SourceReader(run, h, get_adapter(dfmt), mixed_is_error=fmt == "auto")
    n = 0
    for n, rec in enumerate(records, 1):
        reader.document_record(n, rec)
        run.flush_if_full()
    reader.finish(max(n, 1))
    run.progress.advance(h.size)
    return reader.report(dfmt, "record")


def _sniff_head(lines: Iterator[Line]) -> tuple[list[Line], list[tuple[int, Any]]]:
    """The first lines (kept, to be read again) and the objects among them that detection looks at."""
    head: list[Line] = []
    parsed_head: list[tuple[int, Any]] = []
    for item in lines:
        head.append(item)
        if not item[2] and item[1].strip():
            try:
                rec = orjson.loads(item[1])
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                parsed_head.append((item[0], rec))
        if len(parsed_head) >= SNIFF_RECORDS or len(head) >= 4 * SNIFF_RECORDS:
            break
    return head, parsed_head


def _one_document_note(adapter: Adapter, head: list[Line], parsed: list[tuple[int, Any]]) -> str | None:
    """Why a file holding one minified document (one line) that its whole-file adapter would skip is
    skipped (see `Adapter.skip_note`), else None."""
    if (
        not adapter.whole_file
        or len(parsed) != 1
        or any(raw.strip() for n, raw, _ in head if n != parsed[0][0])
    ):
        return None
    return adapter.skip_note(parsed[0][1])


def _read_lines(run: Run, h: Hashed, fmt: str) -> SourceReport:
    """A JSON Lines source, streamed: detect the format from its head, then every line in order."""
    with open_source(h.path) as fh:
        lines = _lines(fh)
        head, parsed_head = _sniff_head(lines)
        if fmt == "auto" and h.source.from_folder and _unclaimed(parsed_head):
            why = (
                f"not traces: no format claims its first {len(parsed_head)} record(s); "
                f"{closest_phrase([r for _, r in parsed_head])}"
            )
            return skipped_source(h.source.name, h.sha256, "unknown", h.size, why)
        lfmt = fmt if fmt != "auto" else (detect_records(parsed_head, h.source.name) or "flat")
        note = _one_document_note(get_adapter(lfmt), head, parsed_head)
        if note is not None:
            return skipped_source(h.source.name, h.sha256, lfmt, h.size, note)
        reader = _SourceReader(run, h, get_adapter(lfmt), mixed_is_error=fmt == "auto")
        text_line = reader.text_line
        raw_fh: Any = fh.fileobj if isinstance(fh, gzip.GzipFile) else fh  # compressed bytes, for progress
        advanced = 0
        pending: Line | None = None
        for item in _chain(head, lines):
            # one item of look-ahead tells whether a line is the file's last (truncation diagnosis)
            if pending is not None:
                text_line(pending, False)
            pending = item
            if run.cols.n >= run.chunk_rows:
                run.flush()
            if not item[0] & 0x3FF:
                pos = raw_fh.tell()
                run.progress.advance(pos - advanced)
                advanced = pos
        if pending is not None:
            text_line(pending, True)
        reader.finish(max(pending[0] if pending is not None else 0, 1))
        run.progress.advance(max(0, h.size - advanced))
    return reader.report(lfmt, "line")


def _chain(head: list[Line], rest: Iterator[Line]) -> Iterator[Line]:
    """The sniffed head again, then the rest of the file."""
    yield from head
    yield from rest
