"""`contracts ingest`: trace files -> the Parquet corpus (DESIGN §2.3).

The pipeline, and why it is shaped so:

- **Sources** are files, folders (walked recursively for `*.jsonl`, `*.jsonl.gz`, `*.json`, `*.json.gz`,
  sorted by path so two runs read in the same order) or `-` (stdin, spooled to a temporary file so it
  can be hashed and read like any file). A source whose sha256 is already in `corpus.json`, or that
  repeats an earlier source of the same run, is skipped: ingest is idempotent.
- **Reading** is streamed line by line with a hard cap (`MAX_LINE_BYTES`, 16 MiB) so one giant line
  cannot exhaust memory. A `.json` file that is one JSON document (a τ-bench array, an OTLP or τ²-bench
  object), or any file whose first byte is `[`, is a whole-file document: it is loaded whole and split
  into records by its adapter.
- **Accounting**: every line read is exactly one of ok, rejected or blank (`lines = ok + rejects +
  blank`, checked before anything is written). For `flat`, ok lines are calls; for episode formats an
  ok line is an episode record and calls are counted separately, as are calls dropped from a kept
  episode (a tool call without a result): those go to `rejects.jsonl` with their `index`.
- **Chunks**: calls and their leaves are built as column lists and flushed to Parquet parts every
  `chunk_rows` calls in a staging folder inside the corpus, so memory stays bounded.
- **Commit**: old files and new parts are concatenated by a streaming polars sink into temporary files
  beside the targets, then renamed; `corpus.json` is written last. An interrupted run leaves the previous
  corpus as it was (the staging folder of a crashed run is removed by the next one).
"""

from __future__ import annotations

import fcntl
import gzip
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import orjson
import polars as pl

from contracts import __version__
from contracts.errors import TraceError
from contracts.jsonutil import canonical_json, file_sha256, sha256_hex, write_json
from contracts.progress import NULL_PROGRESS, Progress
from contracts.schemas import validate
from contracts.traces.corpus import (
    CALL_SCHEMA,
    CALLS_FILE,
    CORPUS_FORMAT_VERSION,
    EPISODE_SCHEMA,
    EPISODES_FILE,
    LEAVES_FILE,
    MANIFEST_FILE,
    REJECTS_FILE,
    SCHEMAS,
    Corpus,
)
from contracts.traces.formats.base import (
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
from contracts.traces.formats.detect import (
    SNIFF_RECORDS,
    best_match,
    detect_document,
    detect_records,
    get_adapter,
)
from contracts.traces.leaves import LEAF_SCHEMA
from contracts.traces.model import Episode, ToolCall, make_call_id
from contracts.traces.registry import load_registry

MAX_LINE_BYTES = 16 * 1024 * 1024
RAW_LIMIT = 4096
REGISTRY_FILE = "tools.json"
STAGING_PREFIX = ".ingest-"
LOCK_FILE = ".ingest.lock"
SOURCE_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
DEFAULT_CHUNK_ROWS = 50_000


@dataclass(frozen=True)
class SourceReport:
    """Accounting for one source.

    `lines` = `ok` + `rejects` + `blank` always holds. `unit` says what a "line" is: a text line, or a
    record (run, simulation, document) of a whole-file format. `calls` are calls written; `episodes`
    counts episode records (0 for flat); `dropped_calls` are calls left out of kept episodes.
    `skipped` sources were not read (`note` says why).
    """

    source: str
    sha256: str
    format: str
    lines: int
    calls: int
    rejects: int
    blank: int
    skipped: bool = False
    ok: int = 0
    episodes: int = 0
    dropped_calls: int = 0
    unit: str = "line"
    bytes: int = 0
    note: str | None = None


@dataclass(frozen=True)
class IngestReport:
    """What one `ingest` run did; `calls`/`episodes`/`rejects` are totals of the whole corpus after it."""

    corpus: Path
    sources: tuple[SourceReport, ...]
    calls: int
    episodes: int
    rejects: int
    leaves: int = 0
    new_calls: int = 0
    changed: bool = False
    registry: str | None = None


# ---- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    name: str
    path: Path
    from_folder: bool = False


def expand_sources(sources: Sequence[str | Path], *, exclude: Path | None = None) -> list[_Source]:
    """Files as given; folders walked recursively for trace files (sorted); `-` for stdin.

    Hidden files and folders (names starting with `.`) and anything inside `exclude` (the corpus being
    written) are not picked up from folders.
    """
    out: list[_Source] = []
    ex = exclude.resolve() if exclude is not None else None
    for s in sources:
        if str(s) == "-":
            out.append(_Source("-", Path("-")))
            continue
        p = Path(s)
        if p.is_dir():
            found = []
            for f in p.rglob("*"):
                rel = f.relative_to(p)
                if any(part.startswith(".") for part in rel.parts) or not f.is_file():
                    continue
                if not f.name.endswith(SOURCE_SUFFIXES):
                    continue
                if ex is not None and (f.resolve() == ex or ex in f.resolve().parents):
                    continue
                found.append(f)
            for f in sorted(found, key=lambda x: x.relative_to(p).as_posix()):
                out.append(_Source(str(f), f, from_folder=True))
        elif p.is_file():
            out.append(_Source(str(p), p))
        else:
            raise TraceError("no such file or folder", code="E_USAGE", source=str(p))
    return out


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def _lines(fh: IO[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """`(line number, bytes, too_long)`; an over-long line is skipped to its end, its head kept."""
    n = 0
    readline = fh.readline
    while True:
        raw = readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        n += 1
        if n == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            head = raw[:RAW_LIMIT]
            while raw and not raw.endswith(b"\n"):
                raw = readline(1 << 20)
            yield n, head, True
        else:
            yield n, raw, False


def _raw_text(raw: bytes) -> str:
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


# ---- column building (the hot path) -----------------------------------------------------------------


def _canon(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return canonical_json(value).decode()


#: CALL_SCHEMA with plain strings for categorical/enum columns: values go in as text, then one cast.
_CALL_ROW_SCHEMA: dict[str, pl.DataType] = {
    k: (pl.String() if isinstance(v, pl.Categorical | pl.Enum) else v) for k, v in CALL_SCHEMA.items()
}
#: The leaf columns the walk produces, in the order of its row tuples (`leaves.Leaf`).
_LEAF_ROW_SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String(),
    "pattern": pl.String(),
    "kind": pl.String(),
    "num": pl.Float64(),
    "str": pl.String(),
    "len": pl.Int64(),
}
_CALL_W = len(_CALL_ROW_SCHEMA)
_LEAF_W = len(_LEAF_ROW_SCHEMA)


def _strided_frame(flat: list[Any], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """The frame of rows laid end to end in `flat` (row-major, `len(schema)` values a row).

    Each column is a strided slice (a C-level copy of pointers) handed to polars as one list: several
    times cheaper than building the frame from row tuples, and no tuple per row is kept alive.
    """
    w = len(schema)
    return pl.DataFrame(
        [pl.Series(name, flat[i::w], dtype=dtype) for i, (name, dtype) in enumerate(schema.items())]
    )


class _Columns:
    """Column values of one chunk of calls, and the leaf rows of their arguments and results.

    This is the hot path. The walk writes each JSON node's six values with one C-level `extend` of a
    short-lived tuple onto one flat list (six appends per node measured slower), inlines scalar children,
    which are most nodes, and reuses the path string as the pattern while no array is crossed (there they
    are equal). Polars takes each column as a strided slice of that list once per chunk (`frames`); the
    call rows are laid out the same way. The call-level columns of leaves (`call_id`, `tool`, ...) are not
    repeated per node in Python but gathered by polars from one (call, side, count) segment per side.
    """

    def __init__(self) -> None:
        self.call_flat: list[Any] = []  # `_CALL_W` values per call, in CALL_SCHEMA order
        self.n = 0
        self.seg_call: list[int] = []
        self.seg_side: list[str] = []
        self.seg_n: list[int] = []
        self.flat: list[Any] = []  # `_LEAF_W` values per leaf row: path, pattern, kind, num, str, len
        self._walk = self._make_walker()

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """The leaf rows as tuples (path, pattern, kind, num, str, len): for tests, not the hot path."""
        f = self.flat
        return list(zip(*(f[i::_LEAF_W] for i in range(_LEAF_W)), strict=True))

    def _make_walker(self) -> Callable[[Any, str, str], None]:
        R = self.flat.extend

        def walk(v: Any, path: str, pat: str) -> None:
            t = type(v)
            if t is dict:
                R((path, pat, "object", None, None, len(v)))
                same = path is pat  # no array above: the pattern is the path itself
                for k, c in v.items():
                    if "~" in k or "/" in k:
                        k = k.replace("~", "~0").replace("/", "~1")
                    p = path + "/" + k
                    q = p if same else pat + "/" + k
                    ct = type(c)
                    if ct is str:
                        R((p, q, "string", None, c, len(c)))
                    elif ct is int:
                        R((p, q, "int", float(c), None, None))
                    elif ct is float:
                        R((p, q, "float", c, None, None))
                    elif ct is bool:
                        R((p, q, "bool", 1.0 if c else 0.0, None, None))
                    elif c is None:
                        R((p, q, "null", None, None, None))
                    else:
                        walk(c, p, q)
            elif t is list:
                R((path, pat, "array", None, None, len(v)))
                q = pat + "/*"
                for i, c in enumerate(v):
                    walk(c, f"{path}/{i}", q)
            elif t is str:
                R((path, pat, "string", None, v, len(v)))
            elif t is bool:
                R((path, pat, "bool", 1.0 if v else 0.0, None, None))
            elif t is int:
                R((path, pat, "int", float(v), None, None))
            elif t is float:
                R((path, pat, "float", v, None, None))
            elif v is None:
                R((path, pat, "null", None, None, None))
            else:
                raise TypeError(f"not a JSON value at '{path}': {t.__name__}")

        return walk

    def add(self, c: ToolCall, call_id: str, step: int) -> None:
        """Append one call and its leaves (arguments, and the result unless it is an error without one)."""
        has_result = not (c.status == "error" and c.result is None)
        flat = self.flat
        base = len(flat)
        try:
            self._walk(c.arguments, "", "")
            n_arg = (len(flat) - base) // _LEAF_W
            if has_result:
                self._walk(c.result, "", "")
            n_res = (len(flat) - base) // _LEAF_W - n_arg
            args_text = _canon(c.arguments)
            result_text = _canon(c.result) if has_result else None
            labels_text = _canon(c.labels) if c.labels else "{}"
            meta_text = _canon(c.meta) if c.meta else None
        except (TypeError, ValueError, RecursionError):
            del flat[base:]
            raise
        fault = c.labels.get("fault") if c.labels else None
        self.call_flat.extend(
            (
                call_id,
                int(call_id, 16),
                c.trace_id,
                c.task,
                step,
                c.tool,
                c.status,
                c.error,
                args_text,
                result_text,
                c.started_at,
                labels_text,
                None if fault is None else str(fault),
                c.source,
                c.line,
                c.index,
                meta_text,
            )
        )
        self.seg_call.append(self.n)
        self.seg_side.append("arg")
        self.seg_n.append(n_arg)
        if has_result:
            self.seg_call.append(self.n)
            self.seg_side.append("result")
            self.seg_n.append(n_res)
        self.n += 1

    def release(self) -> None:
        """Empty every list now: the recursive walker is a reference cycle holding the lists' appends,
        so without this a flushed chunk would stay in memory until the cyclic GC ran."""
        for col in (self.flat, self.call_flat, self.seg_call, self.seg_side, self.seg_n):
            col.clear()

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The chunk as (calls, leaves) frames with the corpus schemas."""
        calls = _strided_frame(self.call_flat, _CALL_ROW_SCHEMA).cast(CALL_SCHEMA)  # type: ignore[arg-type]
        seg = pl.DataFrame(
            {"ci": self.seg_call, "side": self.seg_side, "n": self.seg_n},
            schema={"ci": pl.UInt32(), "side": pl.String(), "n": pl.Int64()},
        )
        rep = seg.select(pl.col("ci").repeat_by("n").explode(), pl.col("side").repeat_by("n").explode())
        head = calls.select("call_id", "cid", "tool", "task_id")[rep["ci"]]
        leaves = _strided_frame(self.flat, _LEAF_ROW_SCHEMA)
        leaves = pl.concat([head, rep.select("side"), leaves], how="horizontal").select(
            [pl.col(k).cast(t) for k, t in LEAF_SCHEMA.items()]
        )
        return calls, leaves


# ---- one run ---------------------------------------------------------------------------------------


@dataclass
class _Counts:
    lines: int = 0
    ok: int = 0
    rejects: int = 0
    blank: int = 0
    calls: int = 0
    episodes: int = 0
    dropped: int = 0


@dataclass
class _Run:
    """State of one ingest run: staging folder, current chunk, rejects, episode facts."""

    out: Path
    stage: Path
    strict: bool
    chunk_rows: int
    progress: Progress
    cols: _Columns = field(default_factory=_Columns)
    parts: list[tuple[Path, Path]] = field(default_factory=list)
    rejects_fh: IO[bytes] | None = None
    n_rejects: int = 0
    episodes: list[tuple[Any, ...]] = field(default_factory=list)
    #: trace_id -> index in `episodes`. A flat file repeats its episode's facts (reward, tools) on every
    #: call; keeping one row per trace as they arrive makes this grow with traces, not calls (10M calls:
    #: peak RSS 3.7 GiB instead of more than 9 GiB, measured in docs/performance.md).
    episode_at: dict[str, int] = field(default_factory=dict)
    #: The last `tools` tuple seen and its canonical JSON: adapters hand the same tuple object to the
    #: records of an episode (the flat adapter to every record with the same list), so `is` finds it.
    #: The reference is held, so the identity cannot be reused by another tuple.
    _tools_last: tuple[tuple[str, ...], str] | None = None

    def tools_text(self, tools: tuple[str, ...]) -> str:
        """Canonical JSON of a `tools` tuple (a JSON array), reused while the same tuple comes back."""
        last = self._tools_last
        if last is not None and last[0] is tools:
            return last[1]
        text = _canon(list(tools))
        self._tools_last = (tools, text)
        return text

    def add_episode(self, row: tuple[Any, ...]) -> None:
        """Keep one row per trace: its first row, null facts filled from later rows — the same
        first-non-null rule `_finalize_episodes` applies, so the episodes written are unchanged."""
        at = self.episode_at.get(row[0])
        if at is None:
            self.episode_at[row[0]] = len(self.episodes)
            self.episodes.append(row)
            return
        old = self.episodes[at]
        if (
            (old[1] is None and row[1] is not None)
            or (old[2] is None and row[2] is not None)
            or (old[3] is None and row[3] is not None)
            or (old[4] is None and row[4] is not None)
        ):
            merged = tuple(n if o is None else o for o, n in zip(old[1:5], row[1:5], strict=True))
            self.episodes[at] = (old[0], *merged, *old[5:])

    def reject(self, source: str, line: int, code: str, reason: str, raw: str, **extra: Any) -> None:
        if self.strict:
            raise TraceError(reason, code="E_TRACE", source=source, line=line, field=extra.get("field"))
        row = {"source": source, "line": line, "code": code, "error": reason, "raw": raw}
        row.update({k: v for k, v in extra.items() if v is not None})
        if self.rejects_fh is None:
            self.rejects_fh = open(self.stage / REJECTS_FILE, "wb")  # noqa: SIM115 (closed by ingest)
        self.rejects_fh.write(orjson.dumps(row, option=orjson.OPT_SORT_KEYS) + b"\n")
        self.n_rejects += 1

    def flush(self) -> None:
        if self.cols.n == 0:
            return
        calls, leaves = self.cols.frames()
        k = len(self.parts)
        cp, lp = self.stage / f"calls-{k:05d}.parquet", self.stage / f"leaves-{k:05d}.parquet"
        # staging parts are read once, at commit: a cheap codec, the final files get zstd
        calls.write_parquet(cp, compression="lz4")
        leaves.write_parquet(lp, compression="lz4")
        self.parts.append((cp, lp))
        self.cols.release()
        self.cols = _Columns()


def _process_source(
    run: _Run, src: _Source, path: Path, sha: str, fmt: str, allow_mixed_error: bool
) -> SourceReport:
    """Read one source into the run; returns its accounting."""
    name = src.name
    c = _Counts()
    steps: dict[str, int] = {}
    size = path.stat().st_size

    def handle(line: int, rec: Any, adapter: Adapter, raw: bytes | None) -> None:
        ctx = RecordContext(name, sha, line)
        try:
            if not isinstance(rec, dict) and not adapter.whole_file:
                raise RecordError(f"record is not a JSON object ({_kind(rec)})", code=R_NOT_OBJECT)
            parsed = adapter.parse(rec, ctx)
            staged = _stage_calls(run, parsed, sha, steps)
        except RecordError as e:
            other, score = best_match(rec)
            code, reason = e.code, e.reason
            if score == 2 and other != adapter.name:
                if allow_mixed_error:
                    raise TraceError(
                        f"mixed formats: this record is {other}, the file was detected as {adapter.name}; "
                        "split the file or pass --format",
                        code="E_FORMAT",
                        source=name,
                        line=line,
                    ) from None
                code, reason = R_FORMAT, f"record looks like {other}, not {adapter.name}: {reason}"
            c.rejects += 1
            run.reject(name, line, code, reason, _raw_of(raw, rec), field=e.field)
            return
        c.ok += 1
        c.calls += staged
        if parsed.episodes:
            c.episodes += 1 if adapter.name != "flat" else 0
            for ep in parsed.episodes:
                run.add_episode(_episode_row(ep, name, line, run.tools_text))
        for d in parsed.dropped:
            c.dropped += 1
            run.reject(name, line, d.code, d.reason, _raw_of(None, d.raw), index=d.index)

    doc = _whole_document(path)
    if isinstance(doc, _BrokenDocument):
        c.lines = 1
        c.rejects = 1
        run.reject(name, doc.line, R_JSON, doc.error, _raw_text(doc.head))
        run.progress.advance(size)
        return _report(src, sha, fmt if fmt != "auto" else "unknown", c, "record", size)
    if doc is not _NO_DOC:
        dfmt = fmt if fmt != "auto" else detect_document(doc)
        if dfmt is None:
            if _is_registry(doc):
                return SourceReport(
                    name, sha, "registry", 0, 0, 0, 0, True, bytes=size, note="a tool registry, not traces"
                )
            records = doc if isinstance(doc, list) else [doc]
            try:
                dfmt = detect_records(
                    ((i, r) for i, r in enumerate(records[:SNIFF_RECORDS], 1) if isinstance(r, dict)), name
                )
            except TraceError as e:
                if not (src.from_folder and "unknown format" in e.message):
                    raise
                # a folder may hold metadata documents beside its traces; named files still fail
                return SourceReport(
                    name,
                    sha,
                    "unknown",
                    0,
                    0,
                    0,
                    0,
                    True,
                    bytes=size,
                    note="not traces: no adapter claims it",
                )
            if dfmt is None:
                dfmt = "flat"
            adapter = get_adapter(dfmt)
            it: Iterable[Any] = records
        else:
            adapter = get_adapter(dfmt)
            it = adapter.records(doc) if adapter.whole_file else (doc if isinstance(doc, list) else [doc])
        for i, rec in enumerate(it, 1):
            c.lines += 1
            handle(i, rec, adapter, None)
            if run.cols.n >= run.chunk_rows:
                run.flush()
        run.progress.advance(size)
        return _report(src, sha, dfmt, c, "record", size)

    with _open(path) as fh:
        lines = _lines(fh)
        head: list[tuple[int, bytes, bool]] = []
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
        lfmt = fmt if fmt != "auto" else (detect_records(parsed_head, name) or "flat")
        adapter = get_adapter(lfmt)
        pending: tuple[int, bytes, bool] | None = None

        def chain() -> Iterator[tuple[int, bytes, bool]]:
            yield from head
            yield from lines

        loads = orjson.loads
        raw_fh: Any = fh.fileobj if isinstance(fh, gzip.GzipFile) else fh
        advanced = 0
        for item in chain():
            # one item of look-ahead tells whether a line is the file's last (truncation diagnosis)
            if pending is not None:
                _line(run, c, pending, False, adapter, handle, loads, name)
            pending = item
            if run.cols.n >= run.chunk_rows:
                run.flush()
            if not item[0] & 0x3FF:
                pos = raw_fh.tell()
                run.progress.advance(pos - advanced)
                advanced = pos
        if pending is not None:
            _line(run, c, pending, True, adapter, handle, loads, name)
        run.progress.advance(max(0, size - advanced))
    return _report(src, sha, lfmt, c, "line", size)


def _line(
    run: _Run,
    c: _Counts,
    item: tuple[int, bytes, bool],
    last: bool,
    adapter: Adapter,
    handle: Callable[[int, Any, Adapter, bytes | None], None],
    loads: Callable[[bytes], Any],
    name: str,
) -> None:
    n, raw, too_long = item
    c.lines += 1
    if too_long:
        c.rejects += 1
        run.reject(name, n, R_TOO_LONG, f"line longer than {MAX_LINE_BYTES} bytes", _raw_text(raw))
        return
    try:
        rec = loads(raw)
    except orjson.JSONDecodeError as e:
        if not raw.strip():
            c.blank += 1
            return
        code, reason = _json_error(raw, e, last)
        c.rejects += 1
        run.reject(name, n, code, reason, _raw_text(raw))
        return
    handle(n, rec, adapter, raw)


def _kind(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(v), "null" if v is None else type(v).__name__
    )


def _raw_of(raw: bytes | None, rec: Any) -> str:
    if raw is not None:
        return _raw_text(raw)
    try:
        return _raw_text(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS))
    except TypeError:
        return _raw_text(repr(rec).encode())


def _stage_calls(run: _Run, parsed: Parsed, sha: str, steps: dict[str, int]) -> int:
    """Add a record's calls to the chunk; all or nothing (a bad value rejects the whole record)."""
    done = 0
    start_n = run.cols.n
    for call in parsed.calls:
        seen = steps.get(call.trace_id, 0)
        step = call.step if call.step is not None else seen
        steps[call.trace_id] = seen + 1
        try:
            run.cols.add(call, make_call_id(sha, call.line, call.index), step)
        except (TypeError, ValueError, RecursionError) as e:
            _truncate(run.cols, start_n)
            why = "is nested too deeply" if isinstance(e, RecursionError) else f"is not JSON-encodable: {e}"
            raise RecordError(f"call {call.index} ({call.tool}) {why}") from None
        done += 1
    return done


def _truncate(cols: _Columns, n: int) -> None:
    """Undo calls appended after the first `n` of this chunk (a record failed half-way)."""
    if cols.n == n:
        return
    keep_segs = sum(1 for ci in cols.seg_call if ci < n)
    keep_leaves = sum(cols.seg_n[:keep_segs])
    del cols.call_flat[n * _CALL_W :]
    for lst in (cols.seg_call, cols.seg_side, cols.seg_n):
        del lst[keep_segs:]
    del cols.flat[keep_leaves * _LEAF_W :]
    cols.n = n


def _episode_row(
    ep: Episode, source: str, line: int, tools_text: Callable[[tuple[str, ...]], str] | None = None
) -> tuple[Any, ...]:
    """The episode facts row of `_Run.episodes`; `tools_text` (e.g. `_Run.tools_text`) canonicalises `tools`."""
    tools = ep.tools
    if tools is None:
        tools_j = None
    else:
        tools_j = tools_text(tools) if tools_text is not None else _canon(list(tools))
    return (
        ep.trace_id,
        ep.task_id,
        ep.reward,
        _canon(ep.labels) if ep.labels else None,
        tools_j,
        source,
        line,
    )


def _report(src: _Source, sha: str, fmt: str, c: _Counts, unit: str, size: int) -> SourceReport:
    if c.lines != c.ok + c.rejects + c.blank:  # the accounting promise, checked not assumed
        raise AssertionError(
            f"{src.name}: lines {c.lines} != ok {c.ok} + rejects {c.rejects} + blank {c.blank}"
        )
    return SourceReport(
        source=src.name,
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


_NO_DOC = object()
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class _BrokenDocument:
    """A `[`-document that does not parse: one reject for the whole file."""

    error: str
    line: int
    head: bytes


def _whole_document(path: Path) -> Any:
    """The parsed document when `path` is a whole-file JSON source, else `_NO_DOC`.

    A source is a whole-file document when its first non-blank byte is `[` (a JSON array, minified or
    not), or when it starts with an object that does not end on its first line (a pretty-printed `.json`
    file). Anything else, including a minified object on one line, is read line by line as JSON Lines.
    An array that does not parse is a `_BrokenDocument`; an object that does not parse is read line by
    line, so a JSON Lines file whose first line is damaged still has its other lines ingested.
    """
    with _open(path) as fh:
        head = fh.read(1 << 16)
        if head.startswith(_BOM):
            head = head[len(_BOM) :]
        stripped = head.lstrip()
        first = stripped[:1]
        if first == b"{":
            line1, nl, _ = stripped.partition(b"\n")
            if nl or len(head) < (1 << 16):
                try:
                    orjson.loads(line1)
                    return _NO_DOC
                except orjson.JSONDecodeError:
                    pass
        elif first != b"[":
            return _NO_DOC
        data = head + fh.read()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if first == b"[":
            return _BrokenDocument(f"invalid JSON document: {e}", max(1, e.lineno), data[:RAW_LIMIT])
        return _NO_DOC


_TRACE_KEYS = {"messages", "traj", "resourceSpans", "simulations", "trace_id", "tool", "items"}


def _is_registry(doc: Any) -> bool:
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


# ---- commit ----------------------------------------------------------------------------------------


def _stdin_to_file(stage: Path) -> Path:
    p = stage / "stdin.jsonl"
    with open(p, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 20)
    return p


def _sink(frames: list[pl.LazyFrame], schema: Mapping[str, pl.DataType], target: Path) -> int:
    """Stream the concatenation of `frames` into `target` via a temp file + rename; returns rows."""
    tmp = target.with_name(f".{target.name}.tmp")
    if frames:
        lf = pl.concat([f.select(list(schema)) for f in frames], how="vertical")
    else:
        lf = pl.DataFrame(schema=dict(schema)).lazy()
    lf.sink_parquet(tmp, row_group_size=128 * 1024)
    rows = pl.scan_parquet(tmp).select(pl.len()).collect().item()
    return int(rows)


def _finalize_episodes(
    calls_path: Path,
    old_episodes: Path | None,
    new_rows: list[tuple[Any, ...]],
    order: dict[str, int],
) -> pl.DataFrame:
    """Episodes of the whole corpus: one per trace seen in calls or declared by an episode format."""
    info_schema = {
        "trace_id": pl.String(),
        "task_id": pl.String(),
        "reward": pl.Float64(),
        "labels": pl.String(),
        "tools": pl.String(),
        "source": pl.String(),
        "line": pl.Int64(),
    }
    frames = [pl.DataFrame(new_rows, schema=info_schema, orient="row")]
    if old_episodes is not None and old_episodes.exists():
        old = pl.read_parquet(old_episodes).select(
            "trace_id",
            pl.col("task_id").cast(pl.String),
            "reward",
            pl.when(pl.col("labels") == "{}").then(None).otherwise(pl.col("labels")).alias("labels"),
            "tools",
            "source",
            "line",
        )
        frames.insert(0, old.cast(info_schema))  # type: ignore[arg-type]
    info = (
        pl.concat(frames)
        .group_by("trace_id", maintain_order=True)
        .agg(
            pl.col("task_id").drop_nulls().first(),
            pl.col("reward").drop_nulls().first(),
            pl.col("labels").drop_nulls().first(),
            pl.col("tools").drop_nulls().first(),
            pl.col("source").first(),
            pl.col("line").first(),
        )
    )
    agg = (
        pl.scan_parquet(calls_path)
        .group_by("trace_id")
        .agg(
            pl.col("task_id").cast(pl.String).first().alias("c_task"),
            pl.len().cast(pl.Int64).alias("n_calls"),
            pl.col("fault").is_not_null().any().alias("c_faulty"),
            pl.col("source").first().alias("c_source"),
            pl.col("line").min().alias("c_line"),
        )
        .collect()
    )
    eps = agg.join(info, on="trace_id", how="full", coalesce=True)
    eps = eps.with_columns(
        pl.coalesce("task_id", "c_task", "trace_id").alias("task_id"),
        pl.col("n_calls").fill_null(0),
        pl.coalesce("source", "c_source").alias("source"),
        pl.coalesce("line", "c_line").alias("line"),
        pl.col("labels").fill_null("{}"),
    ).with_columns(
        (
            pl.col("c_faulty").fill_null(False)
            | pl.col("labels").str.json_path_match("$.fault").is_not_null()
        ).alias("faulty"),
        pl.col("source").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_ord"),
    )
    eps = eps.sort("_ord", "line", "trace_id").select(list(EPISODE_SCHEMA))
    return eps.cast(EPISODE_SCHEMA)  # type: ignore[arg-type]


def ingest(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    format: str = "auto",
    strict: bool = False,
    registry: Path | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress = NULL_PROGRESS,
) -> IngestReport:
    """Ingest `sources` into the corpus folder `out` (created if needed); see the module docstring.

    Raises `TraceError` for unusable input (missing files, unknown or mixed formats, a bad registry, a
    bad line under `strict`); nothing is changed in `out` then.
    """
    out = Path(out)
    if format != "auto":
        get_adapter(format)
    if chunk_rows < 1:
        raise TraceError(f"chunk_rows must be >= 1, got {chunk_rows}", code="E_USAGE", field="chunk_rows")
    if out.exists() and not out.is_dir():
        raise TraceError("output exists and is not a folder", code="E_USAGE", source=str(out))
    if out.exists() and not Corpus.is_corpus(out) and any(not _ours(p) for p in out.iterdir()):
        raise TraceError(
            f"output folder is not empty and holds no {MANIFEST_FILE}; refusing to write into it",
            code="E_USAGE",
            source=str(out),
        )
    reg_bytes: bytes | None = None
    reg_tools = 0
    if registry is not None:
        reg = load_registry(registry)
        reg_tools = len(reg.tools)
        reg_bytes = _registry_bytes(Path(registry))
    srcs = expand_sources(sources, exclude=out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock(out)
    try:
        return _ingest_locked(out, srcs, format, strict, chunk_rows, progress, reg_bytes, reg_tools)
    except BaseException:
        if created and not Corpus.is_corpus(out):
            shutil.rmtree(out, ignore_errors=True)  # a failed first ingest leaves no empty folder behind
        raise
    finally:
        lock.close()


def _lock(out: Path) -> IO[bytes]:
    """An exclusive lock on the corpus for this run: two ingests into one corpus would lose an append."""
    fh = open(out / LOCK_FILE, "wb")  # noqa: SIM115 (closed by the caller)
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise TraceError(
            "another ingest is writing this corpus; wait for it to finish", code="E_USAGE", source=str(out)
        ) from None
    return fh


def _ingest_locked(
    out: Path,
    srcs: list[_Source],
    format: str,
    strict: bool,
    chunk_rows: int,
    progress: Progress,
    reg_bytes: bytes | None,
    reg_tools: int,
) -> IngestReport:
    for stale in out.glob(STAGING_PREFIX + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    manifest = Corpus(out).manifest() if Corpus.is_corpus(out) else None
    known = {s["sha256"]: s["source"] for s in (manifest or {}).get("sources", [])}
    stage = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    run = _Run(out=out, stage=stage, strict=strict, chunk_rows=chunk_rows, progress=progress)
    reports: list[SourceReport] = []
    try:
        sizes = [s.path.stat().st_size for s in srcs if s.name != "-"]
        progress.start("ingest", sum(sizes) if len(sizes) == len(srcs) else None)
        for src in srcs:
            path = _stdin_to_file(stage) if src.name == "-" else src.path
            sha = file_sha256(path)
            size = path.stat().st_size
            if sha in known:
                reports.append(
                    SourceReport(
                        src.name,
                        sha,
                        "-",
                        0,
                        0,
                        0,
                        0,
                        True,
                        bytes=size,
                        note="already ingested" if known[sha] == src.name else f"same bytes as {known[sha]}",
                    )
                )
                continue
            rep = _process_source(run, src, path, sha, format, allow_mixed_error=(format == "auto"))
            if not rep.skipped:
                known[sha] = src.name
            reports.append(rep)
        run.flush()
        if run.rejects_fh is not None:
            run.rejects_fh.close()
        progress.finish()
        new_sources = [r for r in reports if not r.skipped]
        old_reg = (manifest or {}).get("registry")
        reg_changed = reg_bytes is not None and (
            old_reg is None or old_reg.get("sha256") != sha256_hex(reg_bytes)
        )
        changed = bool(new_sources) or reg_changed or manifest is None
        if not changed:
            assert manifest is not None
            counts = manifest["counts"]
            return IngestReport(
                out, tuple(reports), counts["calls"], counts["episodes"], counts["rejects"], counts["leaves"]
            )
        return _commit(out, stage, run, reports, manifest, reg_bytes, reg_tools)
    finally:
        if run.rejects_fh is not None and not run.rejects_fh.closed:
            run.rejects_fh.close()
        shutil.rmtree(stage, ignore_errors=True)
        for name in (*CORPUS_FILES, REGISTRY_FILE):
            (out / f".{name}.tmp").unlink(missing_ok=True)


CORPUS_FILES = (CALLS_FILE, LEAVES_FILE, EPISODES_FILE, REJECTS_FILE, MANIFEST_FILE)


def _ours(p: Path) -> bool:
    """Leftovers of an interrupted ingest (staging folder, temp files), safe to ignore or remove."""
    return (
        p.name.startswith(STAGING_PREFIX)
        or p.name == LOCK_FILE
        or (p.name.startswith(".") and p.name.endswith(".tmp"))
    )


def _registry_bytes(path: Path) -> bytes:
    """The registry to copy: the file's bytes, or a folder's tools merged into one canonical document."""
    if path.is_dir():
        tools: list[Any] = []
        for f in sorted(path.glob("*.json")):
            data = orjson.loads(f.read_bytes())
            tools.extend((data.get("tools") or []) if isinstance(data, dict) else data)
        return orjson.dumps({"tools": tools}, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    return path.read_bytes()


def _commit(
    out: Path,
    stage: Path,
    run: _Run,
    reports: list[SourceReport],
    manifest: dict[str, Any] | None,
    reg_bytes: bytes | None,
    reg_tools: int,
) -> IngestReport:
    """Write every file to a temp name, rename them into place, and write `corpus.json` last."""
    calls_t, leaves_t, eps_t = out / CALLS_FILE, out / LEAVES_FILE, out / EPISODES_FILE
    old = manifest is not None
    calls_frames = ([pl.scan_parquet(calls_t)] if old and calls_t.exists() else []) + [
        pl.scan_parquet(cp) for cp, _ in run.parts
    ]
    leaves_frames = ([pl.scan_parquet(leaves_t)] if old and leaves_t.exists() else []) + [
        pl.scan_parquet(lp) for _, lp in run.parts
    ]
    n_calls = _sink(calls_frames, CALL_SCHEMA, calls_t)
    n_leaves = _sink(leaves_frames, LEAF_SCHEMA, leaves_t)
    all_sources = list((manifest or {}).get("sources", [])) + [
        _source_entry(r) for r in reports if not r.skipped
    ]
    order = {s["source"]: i for i, s in enumerate(all_sources)}
    eps = _finalize_episodes(
        calls_t.with_name(f".{CALLS_FILE}.tmp"), eps_t if old else None, run.episodes, order
    )
    eps.write_parquet(eps_t.with_name(f".{EPISODES_FILE}.tmp"))
    # rejects: old lines then new ones
    rej_tmp = out / f".{REJECTS_FILE}.tmp"
    old_rej = out / REJECTS_FILE
    with open(rej_tmp, "wb") as fh:
        if old and old_rej.exists():
            with open(old_rej, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 20)
        new_rej = stage / REJECTS_FILE
        if new_rej.exists():
            with open(new_rej, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 20)
        fh.flush()
        os.fsync(fh.fileno())
    n_rejects = int(((manifest or {}).get("counts") or {}).get("rejects", 0)) + run.n_rejects
    registry_entry = (manifest or {}).get("registry")
    if reg_bytes is not None:
        (out / f".{REGISTRY_FILE}.tmp").write_bytes(reg_bytes)
        registry_entry = {"file": REGISTRY_FILE, "sha256": sha256_hex(reg_bytes), "tools": reg_tools}
    new_manifest = {
        "format_version": CORPUS_FORMAT_VERSION,
        "generator": f"contracts {__version__}",
        "sources": all_sources,
        "counts": {
            "sources": len(all_sources),
            "calls": n_calls,
            "leaves": n_leaves,
            "episodes": eps.height,
            "rejects": n_rejects,
            "dropped_calls": sum(int(s.get("dropped_calls", 0)) for s in all_sources),
        },
        "files": {
            name: {"rows": rows, "columns": [{"name": k, "type": str(v)} for k, v in SCHEMAS[name].items()]}
            for name, rows in ((CALLS_FILE, n_calls), (LEAVES_FILE, n_leaves), (EPISODES_FILE, eps.height))
        }
        | {REJECTS_FILE: {"rows": n_rejects, "columns": [{"name": k, "type": t} for k, t in REJECT_FIELDS]}},
        "registry": registry_entry,
    }
    validate(new_manifest, "corpus-manifest", source=str(out / MANIFEST_FILE))
    # the commit: renames, then the manifest
    for name in (CALLS_FILE, LEAVES_FILE, EPISODES_FILE, REJECTS_FILE) + (
        (REGISTRY_FILE,) if reg_bytes is not None else ()
    ):
        os.replace(out / f".{name}.tmp", out / name)
    write_json(out / MANIFEST_FILE, new_manifest)
    return IngestReport(
        corpus=out,
        sources=tuple(reports),
        calls=n_calls,
        episodes=eps.height,
        rejects=n_rejects,
        leaves=n_leaves,
        new_calls=sum(r.calls for r in reports),
        changed=True,
        registry=REGISTRY_FILE if registry_entry else None,
    )


#: Fields of a `rejects.jsonl` line and their JSON types (`field` and `index` only when known).
REJECT_FIELDS = (
    ("source", "string"),
    ("line", "integer"),
    ("code", "string"),
    ("error", "string"),
    ("raw", "string"),
    ("field", "string"),
    ("index", "integer"),
)


def _source_entry(r: SourceReport) -> dict[str, Any]:
    d = asdict(r)
    for k in ("skipped", "note"):
        d.pop(k)
    return d


def corpus_from_records(
    records: Iterable[Mapping[str, Any]], out: str | Path, *, name: str = "records.jsonl"
) -> Corpus:
    """Build a corpus from in-memory flat records (for tests and notebooks)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / name
        src.write_bytes(b"".join(orjson.dumps(dict(r)) + b"\n" for r in records))
        ingest([src], out, format="flat")
    return Corpus.open(out)


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "MAX_LINE_BYTES",
    "IngestReport",
    "SourceReport",
    "corpus_from_records",
    "expand_sources",
    "ingest",
]
