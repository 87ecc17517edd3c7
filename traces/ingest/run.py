"""The state of one ingest run, between reading (which fills it) and commit (which writes it out).

`Run` owns the staging folder's contents while sources are read: the current chunk of calls
(`Columns`), what is already flushed (every `chunk_rows` calls, so memory is bounded by the chunk, not
the input: the calls appended to one staged Parquet file, the leaves as below, with their mining
view staged beside them), the staged `rejects.jsonl`, and one episode-facts row per trace of the
chunk (spilled with it). Reading calls `reject`, `add_episode` and `flush`; commit reads `calls`,
`episodes`, `episode_files` and `n_rejects`. Kept apart from both so neither needs the other's
internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import polars as pl
import pyarrow.parquet as pq

from output_contracts.errors import TraceError, reading
from output_contracts.progress import Progress
from output_contracts.traces.corpus import CALL_SCHEMA, REJECTS_FILE
from output_contracts.traces.ingest.columns import Columns, canon, episode_frame
from output_contracts.traces.ingest.order import DirectLeaves, SortedRun, run_counts, write_run

#: Positions in an `episode_row` of the facts filled from a trace's later rows.
_FACTS = frozenset((1, 2, 3, 4, 7, 8, 9))


@dataclass
class Run:
    """State of one ingest run: staging folder, current chunk, rejects, episode facts."""

    out: Path
    stage: Path
    strict: bool
    chunk_rows: int
    progress: Progress
    #: an ingest into an existing corpus: its leaves are merged with the old ones at commit, so the
    #: direct file's view rows, which only the direct path uses, are not staged
    appending: bool = False
    cols: Columns = field(default_factory=Columns)
    #: the calls of every flushed chunk, in ingest order, in one staged Parquet file
    calls: StagedCalls | None = None
    chunks: int = 0  # chunks flushed
    #: the leaves of chunks that came in task order, straight into the final file's row groups ...
    direct: DirectLeaves | None = None
    #: ... and those of later chunks, staged as sorted runs merged at commit (`order`)
    leaf_runs: list[SortedRun] = field(default_factory=list)
    rejects_fh: IO[bytes] | None = None
    n_rejects: int = 0
    episodes: list[tuple[Any, ...]] = field(default_factory=list)
    #: trace_id -> index in `episodes`. A flat file repeats its episode's facts (reward, tools) on every
    #: call; keeping one row per trace as they arrive makes this grow with traces, not calls (10M calls:
    #: peak RSS 3.7 GiB instead of more than 9 GiB, measured in docs/performance.md) ...
    episode_at: dict[str, int] = field(default_factory=dict)
    #: ... and the rows are spilled with each chunk to a staged file, so they do not grow with the
    #: input at all: a trace whose calls span chunks has a row in each, which `finalize_episodes`
    #: merges by the same first-non-null rule as `add_episode`.
    episode_files: list[Path] = field(default_factory=list)
    #: per flushed chunk, its calls per (source, trace) (`source`, `trace_id`, `n`): what a flat source
    #: needs to count its traces' calls only once a line without a `step` asks for it (`read`)
    trace_files: list[Path] = field(default_factory=list)
    #: The last `tools` tuple seen and its canonical JSON: adapters hand the same tuple object to the
    #: records of an episode (the flat adapter to every record with the same list), so `is` finds it.
    #: The reference is held, so the identity cannot be reused by another tuple.
    _tools_last: tuple[tuple[str, ...], str] | None = None
    #: State adapters share across the run's sources (`carry_over`: calls asked in one source and
    #: answered in a later one), ended by `read.finish_run`.
    carry: dict[str, Any] = field(default_factory=dict)
    #: Sources whose calls another source answered (`carry`'s `answered_sources`, gathered by
    #: `read.finish_run`): they yielded calls, though the calls are written with the answering record.
    answered_elsewhere: set[str] = field(default_factory=set)

    def tools_text(self, tools: tuple[str, ...]) -> str:
        """Canonical JSON of a `tools` tuple (a JSON array), reused while the same tuple comes back."""
        last = self._tools_last
        if last is not None and last[0] is tools:
            return last[1]
        text = canon(list(tools))
        self._tools_last = (tools, text)
        return text

    def trace_calls(self, source: str) -> dict[str, int]:
        """Calls per trace of `source` staged so far: the flushed chunks' and the current one's."""
        out: dict[str, int] = {}
        if self.trace_files:
            flushed = (
                pl.scan_parquet(self.trace_files)
                .filter(pl.col("source") == source)
                .group_by("trace_id")
                .agg(pl.col("n").sum())
                .collect()
            )
            out = dict(zip(flushed["trace_id"].to_list(), flushed["n"].to_list(), strict=True))
        for t, n in self.cols.trace_calls(source).items():
            out[t] = out.get(t, 0) + n
        return out

    def add_episode(self, row: tuple[Any, ...]) -> None:
        """Keep one row per trace: its first row, null facts filled from later rows — the same
        first-non-null rule `finalize_episodes` applies, so the episodes written are unchanged."""
        at = self.episode_at.get(row[0])
        if at is None:
            self.episode_at[row[0]] = len(self.episodes)
            self.episodes.append(row)
            return
        old = self.episodes[at]
        # the common case, a flat file repeating its trace's facts on every line: nothing to fill
        if old[1:5] == row[1:5] and old[7:] == row[7:]:
            return
        # facts: task, reward, labels, tools (1-4) and the run facts trial, agent_cost, user_cost (7-9);
        # source and line (5, 6) stay the first row's
        if any(old[i] is None and row[i] is not None for i in _FACTS):
            self.episodes[at] = tuple(
                row[i] if i in _FACTS and old[i] is None else old[i] for i in range(len(old))
            )

    def reject(self, source: str, line: int, code: str, reason: str, raw: str, **extra: Any) -> None:
        """Stage one line of `rejects.jsonl`; under `strict`, fail with `E_TRACE` naming file and line."""
        if self.strict:
            raise TraceError(reason, code="E_TRACE", source=source, line=line, field=extra.get("field"))
        row = {"source": source, "line": line, "code": code, "error": reason, "raw": raw}
        row.update({k: v for k, v in extra.items() if v is not None})
        if self.rejects_fh is None:
            self.rejects_fh = open(self.stage / REJECTS_FILE, "wb")  # noqa: SIM115 (closed by close_rejects)
        self.rejects_fh.write(orjson.dumps(row, option=orjson.OPT_SORT_KEYS) + b"\n")
        self.n_rejects += 1

    def close_rejects(self) -> None:
        """Close the staged rejects file, if one was opened (idempotent)."""
        if self.rejects_fh is not None and not self.rejects_fh.closed:
            self.rejects_fh.close()

    def flush_if_full(self) -> None:
        """Flush the chunk once it holds `chunk_rows` calls."""
        if self.cols.n >= self.chunk_rows:
            self.flush()

    def spill_episodes(self) -> None:
        """Write the episode rows held to a staged file and forget them."""
        if not self.episodes:
            return
        path = self.stage / f"episodes-{len(self.episode_files):05d}.parquet"
        with reading(self.out, writing=True):
            episode_frame(self.episodes).write_parquet(path)
        self.episode_files.append(path)
        self.episodes = []
        self.episode_at = {}

    def flush(self) -> None:
        """Write the current chunk's calls (appended to the staged calls file), leaves (one part) and
        episode rows, then start a new chunk."""
        if self.cols.n == 0:
            return
        self.spill_episodes()
        calls, leaves = self.cols.frames()
        # the chunk's Python lists are not needed past here: freed before the writers copy the frames
        # (peak RSS is one chunk's lists or its frames and their Arrow copies, not both)
        self.cols.release()
        self.cols = Columns()
        counts = run_counts(leaves)  # leaves come ordered by task: a sorted run
        k = self.chunks
        traces = self.stage / f"traces-{k:05d}.parquet"
        with reading(self.out, writing=True):
            calls.group_by("source", "trace_id").len("n").write_parquet(traces)
        self.trace_files.append(traces)
        lp = self.stage / f"leaves-{k:05d}.arrows"
        if self.direct is None:
            self.direct = DirectLeaves(self.stage / "leaves-direct.parquet", stage_view=not self.appending)
        if self.calls is None:
            self.calls = StagedCalls(self.stage / "calls.parquet")
        with reading(self.out, writing=True):  # a full disk names the corpus being written
            self.calls.write(calls)
            if not self.direct.take(leaves, counts):
                self.leaf_runs.append(SortedRun(lp, counts, write_run(leaves, lp)))
        self.chunks += 1


#: Columns of `calls.parquet` without min/max statistics: the JSON texts, long, whose statistics cost
#: write time and skip nothing.
_CALL_TEXTS = ("arguments", "result", "labels", "meta")
#: Largest dictionary page of `calls.parquet`: results repeat (the same product, the same user), and
#: with Arrow's 1 MiB default a column of long texts falls back to plain pages early; 64 MiB keeps the
#: file within a fifth of what polars' writer made (τ-bench retail: 1.70 against 1.43 MiB per 50,000
#: calls, against 2.5 MiB at the default), and writes faster.
_CALL_DICTIONARY_BYTES = 64 << 20
#: Calls in a row group of `calls.parquet` (the last one fewer): the default chunk's, so that at the
#: default nothing is held between chunks.
CALL_GROUP_ROWS = 50_000


class StagedCalls:
    """The calls of a run, in ingest order, appended chunk by chunk to one Parquet file (zstd): for a new
    corpus it is renamed into place as `calls.parquet` at commit (written once, never read back); when
    appending, it follows the old calls in the commit's streaming concatenation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self._schema = pl.DataFrame(schema=CALL_SCHEMA).to_arrow().schema
        names = self._schema.names
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(
            path,
            self._schema,
            compression="zstd",
            write_statistics=[c for c in names if c not in _CALL_TEXTS],
            dictionary_pagesize_limit=_CALL_DICTIONARY_BYTES,
        )
        self._pending: list[pl.DataFrame] = []
        self._pending_rows = 0

    def write(self, calls: pl.DataFrame) -> None:
        """Append one chunk's calls. Row groups hold exactly `CALL_GROUP_ROWS` calls (the last one fewer),
        whatever the chunk size, so the file's bytes do not depend on `chunk_rows`; what does not fill a
        group is held until the next chunk (none at the default chunk size)."""
        assert self._writer is not None, "written after finish"
        self._pending.append(calls)
        self._pending_rows += calls.height
        while self._pending_rows >= CALL_GROUP_ROWS:
            held = pl.concat(self._pending, rechunk=True)
            self._write_group(held.head(CALL_GROUP_ROWS))
            rest = held.slice(CALL_GROUP_ROWS)
            self._pending, self._pending_rows = [rest], rest.height

    def _write_group(self, calls: pl.DataFrame) -> None:
        if self._writer is None or calls.height == 0:
            return
        table = calls.to_arrow()
        if table.schema != self._schema:
            table = table.cast(self._schema)
        self._writer.write_table(table, row_group_size=table.num_rows)
        self.rows += table.num_rows

    def finish(self) -> Path:
        """Write what is held and close the file (idempotent); its path."""
        if self._writer is not None:
            if self._pending_rows:
                self._write_group(pl.concat(self._pending, rechunk=True))
            self._pending, self._pending_rows = [], 0
            self._writer.close()
            self._writer = None
        return self.path
