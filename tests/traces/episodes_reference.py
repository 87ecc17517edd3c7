"""The episodes table as ingest built it before its sliced writer (`traces/ingest/episodes.py`):
the whole table merged, joined and sorted at once. Kept as the reference the sliced writer is held to
(`tests/traces/test_ingest_episodes.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from output_contracts.traces.corpus import EPISODE_SCHEMA, LATE_EPISODE_COLUMNS
from output_contracts.traces.ingest.columns import EPISODE_ROW_SCHEMA, episode_frame

#: The text columns of episode rows coded while they are merged (`finalize_episodes`).
_CODED = ("task_id", "labels", "tools", "source")
#: Calls aggregated at a time by `_call_facts`.
CALL_FACT_ROWS = 500_000


def _coded(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(pl.col(c).cast(pl.Categorical) for c in _CODED)


def _call_facts(calls_path: Path) -> pl.DataFrame:
    """Per trace of the calls file: its first call's task and source, its calls, whether one has a
    fault, its first line. Aggregated `CALL_FACT_ROWS` calls at a time, the partial rows (one per trace
    and batch) merged in file order, so the memory grows with the traces, not the calls: reading every
    call's trace id, task and source at once took 1.3 GiB at 10M calls."""
    calls = pl.scan_parquet(calls_path)
    n = calls.select(pl.len()).collect().item()
    parts = [
        calls.slice(start, CALL_FACT_ROWS)
        .group_by("trace_id")
        .agg(
            pl.col("task_id").first().alias("c_task"),
            pl.len().alias("n_calls"),
            pl.col("fault").is_not_null().any().alias("c_faulty"),
            pl.col("source").first().cast(pl.Categorical).alias("c_source"),
            pl.col("line").min().alias("c_line"),
        )
        .collect()
        for start in range(0, n, CALL_FACT_ROWS)
    ]
    if not parts:  # no call: the schema of an empty aggregation
        return pl.DataFrame(
            schema={
                "trace_id": pl.String,
                "c_task": pl.String,
                "n_calls": pl.Int64,
                "c_faulty": pl.Boolean,
                "c_source": pl.Categorical,
                "c_line": pl.Int64,
            }
        )
    # concatenated in file order: `first` over a trace's partials is its first call's
    return (
        pl.concat(parts)
        .group_by("trace_id")
        .agg(
            pl.col("c_task").first().cast(pl.String),
            pl.col("n_calls").sum().cast(pl.Int64),
            pl.col("c_faulty").any(),
            pl.col("c_source").first(),
            pl.col("c_line").min(),
        )
    )


def reference_episodes(
    calls_path: Path,
    old_episodes: Path | None,
    new_rows: list[tuple[Any, ...]],
    order: dict[str, int],
    spilled: Sequence[Path] = (),
) -> pl.DataFrame:
    """Episodes of the whole corpus: one per trace seen in calls or declared by an episode format.
    `spilled` are files of episode rows (`episode_frame`) that came before `new_rows`."""
    # the texts repeated on every trace's row (its task, labels, tools list, source) held as codes while
    # the rows are merged (the tools list alone is about 100 bytes a trace): text again after
    frames = [_coded(pl.read_parquet(p)) for p in spilled] + [_coded(episode_frame(new_rows))]
    if old_episodes is not None and old_episodes.exists():
        old = pl.read_parquet(old_episodes)
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
        frames.insert(0, _coded(old.cast(EPISODE_ROW_SCHEMA)))  # type: ignore[arg-type]
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
            *(pl.col(c).drop_nulls().first() for c in LATE_EPISODE_COLUMNS),
        )
        # the tools lists and sources stay codes until the last step
        .with_columns(pl.col(c).cast(pl.String) for c in ("task_id", "labels"))
    )
    del frames
    agg = _call_facts(calls_path)
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
        pl.col("source")
        .cast(pl.String)
        .replace_strict(order, default=len(order), return_dtype=pl.Int64)
        .alias("_ord"),
    )
    # joined and sorted while the long texts are codes (the sort copies every column); the cast makes
    # them text once
    eps = eps.sort("_ord", "line", "trace_id").select(list(EPISODE_SCHEMA))
    return eps.cast(EPISODE_SCHEMA)  # type: ignore[arg-type]
