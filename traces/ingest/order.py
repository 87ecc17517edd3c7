"""Ingest step 4, the leaves: `leaves.parquet` ordered by task, with each row group's task range.

Why: mining splits a corpus into task parts (every call of a task in one part) when it is too large to
hold at once. With leaves in ingest order a part's rows lie all over the file, so mining had to write
every leaf to a scratch folder, part by part, and read each part back. Ordered by task, a part is a
contiguous run of row groups read straight from the corpus (`output_contracts.mining.data`), and
`corpus.json` records each row group's first and last task so the parts can be planned from the
manifest alone (corpus format 2).

How, with bounded memory and linear cost: each flushed chunk of leaves is sorted by task (stable: a
call's leaves keep their order) and staged as a *sorted run* with its per-task row counts. At commit
the runs' counts give the global task order cut into ranges of about `RANGE_ROWS` rows at task
boundaries; every run is then read once, front to back, handing each range its next rows; a range's
rows are sorted (stable, runs in order: old corpus first, then the new chunks in ingest order) and
appended to the target as row groups. Within a task, leaves keep their ingest order.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from output_contracts.errors import reading
from output_contracts.traces.leaves import LEAF_SCHEMA
from output_contracts.traces.mining_view import ViewStage

#: Leaf rows sorted in memory at once while writing (a range; a single larger task is one range).
RANGE_ROWS = 2_000_000
#: Most rows per row group of `leaves.parquet`; groups end at task boundaries (`group_sizes`).
ROW_GROUP_ROWS = 128 * 1024
#: Rows of a *batch* of a sorted run: the unit that becomes one chunk of the merged frame (a batch's
#: rows taken by one range are one chunk). The merged file's bytes depend on these units (a polars chunk
#: keeps its own categorical dictionary, and the Parquet writer sees one dictionary per chunk), so they
#: stay what the format's files were written with.
_BATCH_ROWS = 64 * 1024
#: Rows of a staged run decoded at a time (a batch is staged as pieces of this size, joined again when
#: read). The merge holds one decoded piece of every run (a run per chunk), so this is memory that grows
#: with the input: whole 64Ki batches held 13M rows for the 200 runs of a 10M-call ingest (1.3 GiB);
#: 4Ki pieces hold 0.8M.
_PIECE_ROWS = 4 * 1024


@dataclass(frozen=True)
class SortedRun:
    """A Parquet file of leaves sorted by task (stable), and its rows per task in that order
    (`task`: String, `n`: UInt32); for a staged Arrow stream (`write_run`), the rows of each of its
    batches, whose pieces the stream holds (None: the file's batches of `_BATCH_ROWS` rows as read)."""

    path: Path
    counts: pl.DataFrame
    batches: tuple[int, ...] | None = None


def task_key() -> pl.Expr:
    """The order of format-2 leaves: `task_id` as a string (never null: a call's task defaults to its
    trace)."""
    return pl.col("task_id").cast(pl.String)


def sort_chunk(leaves: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A chunk of leaves sorted by task (stable), and its rows per task (`SortedRun.counts`)."""
    keyed = leaves.with_columns(task_key().alias("_task")).sort("_task", maintain_order=True)
    counts = keyed.group_by("_task", maintain_order=True).len("n").rename({"_task": "task"})
    return keyed.drop("_task"), counts


def run_counts(leaves: pl.DataFrame) -> pl.DataFrame:
    """Rows per task of leaves already ordered by task (`SortedRun.counts`)."""
    counts = leaves.group_by("task_id", maintain_order=True).len("n")
    return counts.select(task_key().alias("task"), "n")


def file_counts(path: Path) -> pl.DataFrame:
    """Rows per task of a leaves file already sorted by task (a corpus of format 2)."""
    return pl.scan_parquet(path).group_by(task_key().alias("task")).len("n").sort("task").collect()


def restage_unsorted(path: Path, stage: Path) -> list[SortedRun]:
    """Sorted runs of a leaves file in ingest order (a corpus of format 1 being appended to), made
    `RANGE_ROWS` rows at a time: it is converted to format 2 as it is rewritten."""
    runs = []
    pf = pq.ParquetFile(path)
    try:
        for i, batch in enumerate(pf.iter_batches(batch_size=RANGE_ROWS)):
            chunk, counts = sort_chunk(_frame(pa.Table.from_batches([batch])))
            out = stage / f"old-leaves-{i:05d}.arrows"
            with reading(stage, writing=True):
                batches = write_run(chunk, out)
            runs.append(SortedRun(out, counts, batches))
    finally:
        pf.close()
    return runs


def write_run(leaves: pl.DataFrame, path: Path) -> tuple[int, ...]:
    """Stage a sorted run as an Arrow IPC stream (lz4), read once, front to back, at commit, so the
    cheapest encoding wins (Parquet's was a third of the merge's cost); returns the rows of its
    batches (those of `Table.to_batches(_BATCH_ROWS)`), each written as pieces of `_PIECE_ROWS` rows
    so that the reader holds one small piece, not one batch (`_RunReader`)."""
    table = leaves.to_arrow()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    batches = table.to_batches(max_chunksize=_BATCH_ROWS)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema, options=options) as w:
        for b in batches:
            for s in range(0, b.num_rows, _PIECE_ROWS):
                w.write_batch(b.slice(s, _PIECE_ROWS))
    return tuple(b.num_rows for b in batches)


def _batches(path: Path) -> tuple[Iterator[pa.RecordBatch], Any]:
    """The record batches of a run, in order, and what to close when done: a staged Arrow stream, or a
    Parquet file (the leaves of a format-2 corpus being appended to)."""
    if path.suffix == ".parquet":
        pf = pq.ParquetFile(path)
        return pf.iter_batches(batch_size=_BATCH_ROWS), pf
    src = pa.OSFile(str(path), "rb")
    return iter(pa.ipc.open_stream(src)), src


def _frame(table: pa.Table) -> pl.DataFrame:
    """A leaves frame from Arrow, with the corpus leaf schema (categories restored)."""
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    # a corpus of format 1 also has `call_id`: dropped as it is rewritten
    return df.select(list(LEAF_SCHEMA)).cast(LEAF_SCHEMA)  # type: ignore[arg-type]


class _RunReader:
    """Reads one sorted run front to back, `take(n)` rows at a time (one decoded piece buffered)."""

    def __init__(self, run: SortedRun) -> None:
        self._batches, self._file = _batches(run.path)
        self._buf: pa.RecordBatch | None = None
        #: rows left of each batch of the run, the current one first (None: the file's own batches)
        self._left = deque(run.batches) if run.batches is not None else None

    def _piece(self, n: int) -> pa.RecordBatch:
        """Up to `n` rows of the buffered piece, taken off the run."""
        if self._buf is None:
            self._buf = next(self._batches)
        b = self._buf
        if b.num_rows <= n:
            self._buf = None
            return b
        self._buf = b.slice(n)
        return b.slice(0, n)

    def take(self, n: int) -> list[pa.RecordBatch]:
        """The next `n` rows: one record batch per batch of the run they lie in (the chunks of the
        merged frame, as `_BATCH_ROWS` says)."""
        out: list[pa.RecordBatch] = []
        while n > 0:
            if self._left is None:
                b = self._piece(n)
            else:
                while not self._left[0]:  # a batch of no rows has no piece
                    self._left.popleft()
                want = min(n, self._left[0])
                self._left[0] -= want
                parts = []
                while want > 0:  # a piece never crosses its batch's end
                    parts.append(self._piece(want))
                    want -= parts[-1].num_rows
                b = (
                    parts[0]
                    if len(parts) == 1
                    else pa.Table.from_batches(parts).combine_chunks().to_batches()[0]
                )
            out.append(b)
            n -= b.num_rows
        return out

    def close(self) -> None:
        self._file.close()


def group_sizes(task_rows: Sequence[int], limit: int | None = None) -> list[int]:
    """Row-group sizes for consecutive tasks of `task_rows` rows each: whole tasks up to `limit` rows
    (default ROW_GROUP_ROWS) a group, so that a group boundary is a task boundary and mining can cut
    parts there; a task larger than `limit` fills groups of its own, its rest starting the next."""
    limit = ROW_GROUP_ROWS if limit is None else limit
    sizes: list[int] = []
    cur = 0
    for n in task_rows:
        if cur and cur + n > limit:
            sizes.append(cur)
            cur = 0
        cur += n
        while cur > limit:
            sizes.append(limit)
            cur -= limit
    if cur:
        sizes.append(cur)
    return sizes


def _ranges(counts: pl.DataFrame) -> pl.DataFrame:
    """task -> range (dense, in task order): a task goes to the range its first row falls in, so a
    range holds at most RANGE_ROWS rows plus the rest of its last task."""
    start = pl.col("n").cum_sum() - pl.col("n")
    return counts.with_columns(((start // RANGE_ROWS).rank("dense") - 1).cast(pl.UInt32).alias("range"))


def _task_runs(frame: pl.DataFrame) -> tuple[list[int], list[str]]:
    """(rows, task) of each run of equal tasks, in row order (compared on the Categorical's codes: no
    string per row)."""
    runs = frame.get_column("task_id").rle().struct.unnest()
    return runs["len"].to_list(), runs["value"].cast(pl.String).to_list()


def _leaf_arrow_schema() -> pa.Schema:
    return pl.DataFrame(schema=LEAF_SCHEMA).to_arrow().schema


#: Columns of `leaves.parquet` with min/max statistics: those readers filter on (a part's tasks, the
#: tools mined, the side), whose row groups statistics can skip. The others are mixed within every row
#: group, so their statistics skip nothing, and computing them (over every path and string value) was a
#: fifth of the write; reading is faster without them too (docs/performance.md).
LEAF_STATISTICS = ("cid", "tool", "task_id", "side")


def _writer(target: Path) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        target,
        _leaf_arrow_schema(),
        compression="zstd",
        write_statistics=list(LEAF_STATISTICS),
    )


def _write_groups(
    writer: pq.ParquetWriter,
    frame: pl.DataFrame,
    lens: list[int],
    names: list[str],
    view: ViewStage | None,
) -> list[dict[str, Any]]:
    """Append task-ordered leaves (their task runs `lens`, `names`) as row groups that end at task
    boundaries, and stage their view rows in `view` (unless None); returns the groups' `row_groups`
    entries."""
    if view is not None:
        view.add(frame)
    table = frame.to_arrow()
    schema = _leaf_arrow_schema()
    if table.schema != schema:
        table = table.cast(schema)
    ends = list(itertools.accumulate(lens))  # the row after each task's last
    groups = []
    s = 0
    for n in group_sizes(lens):
        writer.write_table(table.slice(s, n), row_group_size=n)
        first, last = names[bisect_right(ends, s)], names[bisect_right(ends, s + n - 1)]
        groups.append({"rows": n, "first_task": first, "last_task": last})
        s += n
    return groups


class DirectLeaves:
    """The leaves of chunks that arrive in task order (each starts at or after the last task written:
    a file written task by task), written straight into the final file's row groups, with no staged
    run and no merge. The first chunk out of order closes it for good; it is then one sorted run,
    the first of this ingest."""

    def __init__(self, path: Path, stage_view: bool = True) -> None:
        self.path = path
        #: the view rows of the file, staged beside it (None: not staged, the file will be merged)
        self.view = ViewStage(path.parent, "view-direct") if stage_view else None
        self.open = True
        self.groups: list[dict[str, Any]] = []
        self._counts: list[pl.DataFrame] = []
        self._last: str | None = None
        self._writer: pq.ParquetWriter | None = None

    def take(self, leaves: pl.DataFrame, counts: pl.DataFrame) -> bool:
        """Append a task-ordered chunk when it continues the file; False (and closed) otherwise."""
        first = counts.get_column("task")[0]
        if not self.open or (self._last is not None and first < self._last):
            # the view rows staged so far are not used: the file is merged with the runs, which stage
            # theirs anew (staging each chunk at once costs one chunk's view in that case, against
            # holding a chunk's frame until the next one shows whether the file goes on)
            self.open = False
            return False
        if self._writer is None:
            self._writer = _writer(self.path)
        lens, names = _task_runs(leaves)
        self.groups += _write_groups(self._writer, leaves, lens, names, self.view)
        self._counts.append(counts)
        self._last = names[-1]
        return True

    def finish(self) -> SortedRun | None:
        """Close the file: the run it holds (None when no chunk went here)."""
        self.open = False
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        return SortedRun(self.path, pl.concat(self._counts))


def write_sorted(
    runs: Sequence[SortedRun], target: Path, view: ViewStage
) -> tuple[int, list[dict[str, Any]]]:
    """Merge sorted runs into one leaves file ordered by task at `target` (zstd), its view rows staged
    in `view`; returns its rows and its row groups (`rows`, `first_task`, `last_task`: the
    `row_groups` of corpus.json)."""
    total = (
        pl.concat([r.counts for r in runs]).group_by("task").agg(pl.col("n").sum()).sort("task")
        if runs
        else pl.DataFrame(schema={"task": pl.String, "n": pl.UInt32})
    )
    ranges = _ranges(total.with_columns(pl.col("n").cast(pl.Int64)))
    n_ranges = ranges["range"].n_unique() if ranges.height else 0  # dense: 0 .. n_ranges - 1
    # rows of each run in each range: the run hands them over in range order
    per_run = [
        dict(
            r.counts.join(ranges.select("task", "range"), on="task")
            .group_by("range")
            .agg(pl.col("n").cast(pl.Int64).sum())
            .iter_rows()
        )
        for r in runs
    ]
    readers = [_RunReader(r) for r in runs]
    rows = 0
    groups: list[dict[str, Any]] = []
    try:
        with reading(target, writing=True):
            writer = _writer(target)
            try:
                for rng in range(n_ranges):
                    # one frame per run (their Arrow string types may differ: polars decides them)
                    taken = [rd.take(per_run[j].get(rng, 0)) for j, rd in enumerate(readers)]
                    frame = pl.concat([_frame(pa.Table.from_batches(b)) for b in taken if b])
                    lens, names = _task_runs(frame)
                    if any(a >= b for a, b in itertools.pairwise(names)):  # runs interleave: sort
                        frame = frame.sort(task_key(), maintain_order=True)
                        lens, names = _task_runs(frame)
                    groups += _write_groups(writer, frame, lens, names, view)
                    rows += frame.height
                    del frame, taken
            finally:
                writer.close()
    finally:
        for rd in readers:
            rd.close()
    return rows, groups
