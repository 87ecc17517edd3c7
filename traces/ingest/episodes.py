"""Ingest's last table: `episodes.parquet`, one row per trace, built and written in slices.

Why a module of its own, and why slices: every trace seen in the calls or declared by an episode format
gets one row, merged from its episode rows (the old corpus's, the spilled ones, the ones held; first
non-null fact wins, source and line of the first) and its calls' facts (first task and source, count,
fault, first line), and the table is ordered by (source rank, line, trace id). Built whole, that table
and its copies (the group-by, the join, the sort, the casts) were the last part of ingest that grew with
the corpus: +556 MiB at 10M calls (1.5M traces). Here:

1. every input row goes, by a hash of its trace id, to one of `n` buckets (spilled to the staging folder
   when `n` > 1), in input order, so a trace's rows all meet in one bucket, in the order they came;
2. each bucket is merged alone and kept, sorted, in a staged file with its order key;
3. the file is written one range of the order key at a time (ranges cut at quantiles of the keys), each
   range read from every bucket's sorted file by row offsets, sorted, and appended in row groups of
   `GROUP_ROWS`.

Memory is then bounded by `SLICE_ROWS` input rows a bucket and `RANGE_ROWS` output rows a range, and
the bytes written depend on neither (`tests/traces/test_ingest_memory.py` ingests with tiny slices and
compares bytes).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from output_contracts.errors import reading
from output_contracts.frames import ExactGroups, write_ipc
from output_contracts.traces.corpus import EPISODE_SCHEMA, LATE_EPISODE_COLUMNS
from output_contracts.traces.ingest.columns import EPISODE_ROW_SCHEMA, episode_frame

#: Calls aggregated at a time into per-trace call facts.
CALL_FACT_ROWS = 500_000
#: Input rows (episode rows and partial call facts) a bucket is sized for.
SLICE_ROWS = 200_000
#: Output rows sorted and written at a time (the last range may hold more: ties are never cut).
RANGE_ROWS = 64 * 1024
#: Rows of a row group of `episodes.parquet`.
GROUP_ROWS = 128 * 1024
#: Rows of a record batch of a bucket's staged merged file (what a range read skips by).
_STAGED_GROUP_ROWS = 16 * 1024
#: Bits of the order key given to the line (the source rank above them).
_LINE_BITS = 40

_FACT_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "c_task": pl.String(),
    "n_calls": pl.Int64(),
    "c_faulty": pl.Boolean(),
    "c_source": pl.String(),
    "c_line": pl.Int64(),
}


#: A bucket's merged rows: `EPISODE_SCHEMA` with the task as text (coded per row group when written).
_MERGED_SCHEMA = EPISODE_SCHEMA | {"task_id": pl.String()}


class _Buckets:
    """Frames split by a hash of their `trace_id` into `n` buckets, each bucket's rows in the order they
    were added. One bucket stays in memory; more are spilled to `folder`, `SLICE_ROWS` rows at a time."""

    def __init__(self, folder: Path, name: str, n: int, schema: Mapping[str, pl.DataType]) -> None:
        self.folder, self.name, self.n, self.schema = folder, name, n, dict(schema)
        self.held: list[pl.DataFrame] = []
        self.n_held = 0
        self.files: list[list[Path]] = [[] for _ in range(n)]

    def add(self, rows: pl.DataFrame) -> None:
        self.held.append(rows)
        self.n_held += rows.height
        if self.n > 1 and self.n_held >= SLICE_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.held or self.n == 1:
            return
        rows = pl.concat(self.held)
        self.held, self.n_held = [], 0
        keyed = rows.with_columns((pl.col("trace_id").hash(seed=0) % self.n).alias("_b"))
        for (b,), part in keyed.partition_by(
            "_b", as_dict=True, include_key=False, maintain_order=True
        ).items():
            path = self.folder / f"{self.name}-{b:05d}-{len(self.files[b]):05d}.arrow"
            write_ipc(part, path, compression=None)
            self.files[b].append(path)

    def bucket(self, b: int) -> pl.DataFrame:
        """Bucket `b`'s rows, in the order added."""
        if self.n == 1:
            frames, self.held = self.held, []
        else:
            frames = [pl.read_ipc(p) for p in self.files[b]]
        return pl.concat(frames) if frames else pl.DataFrame(schema=self.schema)


def _old_episodes(path: Path) -> Iterator[pl.DataFrame]:
    """The old corpus's episodes as episode rows (`EPISODE_ROW_SCHEMA`), `SLICE_ROWS` at a time."""
    scan = pl.scan_parquet(path)
    n = scan.select(pl.len()).collect().item()
    for start in range(0, n, SLICE_ROWS):
        old = scan.slice(start, SLICE_ROWS).collect()
        # a corpus written before the late columns existed: they are null there
        old = old.with_columns(
            pl.lit(None, dtype=t).alias(c) for c, t in LATE_EPISODE_COLUMNS.items() if c not in old.columns
        ).select(
            "trace_id",
            pl.col("task_id").cast(pl.String),
            "reward",
            pl.when(pl.col("labels") == "{}").then(None).otherwise(pl.col("labels")).alias("labels"),
            "tools",
            "source",
            "line",
            *LATE_EPISODE_COLUMNS,
        )
        yield old.cast(EPISODE_ROW_SCHEMA)  # type: ignore[arg-type]


def _call_facts(calls_path: Path, stage: Path) -> tuple[list[pl.DataFrame | Path], int]:
    """Per trace and batch of `CALL_FACT_ROWS` calls: the batch's first task and source of the trace,
    its calls, whether one has a fault, its first line (merged per trace in file order later). The
    partials, in file order (in memory when there is one batch, else staged files), and their rows."""
    calls = pl.scan_parquet(calls_path)
    n = calls.select(pl.len()).collect().item()
    parts: list[pl.DataFrame | Path] = []
    rows = 0
    for start in range(0, n, CALL_FACT_ROWS):
        part = (
            calls.slice(start, CALL_FACT_ROWS)
            .group_by("trace_id")
            .agg(
                pl.col("task_id").first().cast(pl.String).alias("c_task"),
                pl.len().cast(pl.Int64).alias("n_calls"),
                pl.col("fault").is_not_null().any().alias("c_faulty"),
                pl.col("source").first().cast(pl.String).alias("c_source"),
                pl.col("line").min().alias("c_line"),
            )
            .collect()
        )
        rows += part.height
        if n <= CALL_FACT_ROWS:
            parts.append(part)
        else:
            path = stage / f"episodes-facts-{len(parts):05d}.arrow"
            write_ipc(part, path, compression=None)
            parts.append(path)
    return parts, rows


def _merge(rows: pl.DataFrame, facts: pl.DataFrame, order: dict[str, int]) -> pl.DataFrame:
    """One bucket's episodes (`EPISODE_SCHEMA` and the order key `_k`), sorted by the table's order."""
    info = rows.group_by("trace_id", maintain_order=True).agg(
        pl.col("task_id").drop_nulls().first(),
        pl.col("reward").drop_nulls().first(),
        pl.col("labels").drop_nulls().first(),
        pl.col("tools").drop_nulls().first(),
        pl.col("source").first(),
        pl.col("line").first(),
        *(pl.col(c).drop_nulls().first() for c in LATE_EPISODE_COLUMNS),
    )
    # concatenated in file order: `first` over a trace's partials is its first call's
    agg = facts.group_by("trace_id").agg(
        pl.col("c_task").first(),
        pl.col("n_calls").sum(),
        pl.col("c_faulty").any(),
        pl.col("c_source").first(),
        pl.col("c_line").min(),
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
    # the order key: source rank, then line (a null line first, as the sort puts it)
    key = (pl.col("_ord") * (1 << _LINE_BITS) + pl.col("line").fill_null(-1) + 1).alias("_k")
    return eps.sort("_ord", "line", "trace_id").select(
        *(pl.col(c).cast(t) for c, t in _MERGED_SCHEMA.items()), key
    )


def _cuts(keys: np.ndarray) -> list[int]:
    """Range starts (after the first range's): keys at every `RANGE_ROWS`-th place of the sorted keys,
    distinct, so equal keys stay in one range."""
    if keys.size <= RANGE_ROWS:
        return []
    keys = np.sort(keys)
    return sorted({int(k) for k in keys[RANGE_ROWS::RANGE_ROWS]} - {int(keys[0])})


def _groups(out: pq.ParquetWriter) -> ExactGroups:
    """`episodes.parquet`'s row groups on `out`. A group's task dictionary is built from its own rows
    (first seen first), so the bytes depend on the rows alone, not on the frames they were cut from."""
    # imported here, at commit, not with the module: pyarrow's compute functions take about 9 MiB
    # (measured), which ingest's reading phase need not carry
    import pyarrow.compute as pc

    schema = out.schema

    def write(frame: pl.DataFrame) -> None:
        table = frame.to_arrow()
        i = table.schema.get_field_index("task_id")
        tasks = pc.dictionary_encode(table.column(i)).cast(schema.field(i).type)
        out.write_table(table.set_column(i, schema.field(i), tasks).cast(schema), row_group_size=GROUP_ROWS)

    return ExactGroups(write, GROUP_ROWS)


def _range(
    merged: Sequence[pl.DataFrame | Path], keys: Sequence[np.ndarray], lo: int | None, hi: int | None
) -> pl.DataFrame | None:
    """The rows of every bucket with an order key in [lo, hi), sorted; None when there is none."""
    pieces = []
    for m, k in zip(merged, keys, strict=True):
        start = 0 if lo is None else int(np.searchsorted(k, lo, "left"))
        stop = k.size if hi is None else int(np.searchsorted(k, hi, "left"))
        if stop > start:
            pieces.append(
                m.slice(start, stop - start) if isinstance(m, pl.DataFrame) else _read_rows(m, start, stop)
            )
    return pl.concat(pieces).sort("_k", "trace_id").drop("_k") if pieces else None


def _read_rows(path: Path, start: int, stop: int) -> pl.DataFrame:
    """Rows [start, stop) of a bucket's merged rows (staged in batches of `_STAGED_GROUP_ROWS`),
    reading only the batches that hold them."""
    with pa.memory_map(str(path)) as source, pa.ipc.open_file(source) as reader:
        first, last = start // _STAGED_GROUP_ROWS, (stop - 1) // _STAGED_GROUP_ROWS
        table = pa.Table.from_batches([reader.get_batch(i) for i in range(first, last + 1)])
        rows = pl.from_arrow(table.slice(start - first * _STAGED_GROUP_ROWS, stop - start))
    assert isinstance(rows, pl.DataFrame)
    return rows


def write_episodes(
    target: Path,
    stage: Path,
    calls_path: Path,
    old_episodes: Path | None,
    new_rows: list[tuple[Any, ...]],
    order: dict[str, int],
    spilled: Sequence[Path] = (),
) -> int:
    """Write the episodes of the whole corpus to `target` (the commit's temp name); returns its rows.
    Inputs: the old corpus's `episodes.parquet` (when appending), `spilled` files of episode rows
    (`episode_frame`) and the rows held (`new_rows`), in that order, and the staged calls file."""
    facts, n_facts = _call_facts(calls_path, stage)
    n_old = pl.scan_parquet(old_episodes).select(pl.len()).collect().item() if old_episodes else 0
    n_spilled = sum(pq.ParquetFile(p).metadata.num_rows for p in spilled)
    n = max(1, math.ceil((n_old + n_spilled + len(new_rows) + n_facts) / SLICE_ROWS))
    ep_buckets = _Buckets(stage, "episodes-rows", n, EPISODE_ROW_SCHEMA)
    if old_episodes is not None:
        for old in _old_episodes(old_episodes):
            ep_buckets.add(old)
    for p in spilled:
        ep_buckets.add(pl.read_parquet(p))
    ep_buckets.add(episode_frame(new_rows))
    ep_buckets.flush()
    fact_buckets = _Buckets(stage, "episodes-facts", n, _FACT_SCHEMA)
    for f in facts:
        fact_buckets.add(f if isinstance(f, pl.DataFrame) else pl.read_ipc(f))
    fact_buckets.flush()
    del facts
    merged: list[pl.DataFrame | Path] = []
    keys: list[np.ndarray] = []
    for b in range(n):
        eps = _merge(ep_buckets.bucket(b), fact_buckets.bucket(b), order)
        keys.append(eps.get_column("_k").to_numpy())
        if n == 1:
            merged.append(eps)
        else:
            path = stage / f"episodes-merged-{b:05d}.arrow"
            write_ipc(eps, path, _STAGED_GROUP_ROWS, compression=None)
            merged.append(path)
        del eps
    bounds: list[int | None] = [None, *_cuts(np.concatenate(keys)), None]
    rows = 0
    schema = pl.DataFrame(schema=EPISODE_SCHEMA).to_arrow().schema
    with reading(target, writing=True), pq.ParquetWriter(target, schema, compression="zstd") as out:
        groups = _groups(out)
        for lo, hi in pairwise(bounds):
            part = _range(merged, keys, lo, hi)
            if part is not None:
                rows += part.height
                groups.add(part)
        groups.close(pl.DataFrame(schema=EPISODE_SCHEMA))
    return rows
