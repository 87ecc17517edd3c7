"""Which calls of a corpus are mining evidence, and its leaves as read before any decoding: what both the
pattern table (`output_contracts.mining.patterns`) and the part reader (`output_contracts.mining.data`)
start from.

Clean calls (`clean_calls`): status "ok", from episodes with no labelled fault (no call of the trace
carries `fault`, and `episodes.faulty` is not true), and with `clean="reward"` also from episodes whose
reward is 1.0 where a reward exists (a null reward counts as clean: the format has none).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import pyarrow.parquet as pq

from output_contracts.traces.corpus import LEAVES_FILE, Corpus


def clean_calls(
    corpus: Corpus, clean: str, tools: Sequence[str] | None, *, ids: bool = True, strings: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(clean calls: cid, call_id, task_id, task, tool; cids of the calls left out of the clean set).

    `ids=False` leaves out call_id (mining at scale keeps no call id strings in memory); `strings=False`
    leaves task_id and tool Categorical (`task` is task_id's code: one string per task, not per call; at
    10M calls the per-call strings were 1.1 GiB of mining's load)."""
    calls = corpus.scan_calls().select("cid", "call_id", "trace_id", "task_id", "tool", "status", "fault")
    if tools is not None:
        calls = calls.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    eps = corpus.scan_episodes().select("trace_id", "faulty", "reward")
    bad_traces = [
        calls.filter(pl.col("fault").is_not_null()).select("trace_id"),
        eps.filter(pl.col("faulty").fill_null(False)).select("trace_id"),
    ]
    if clean == "reward":
        bad_traces.append(
            eps.filter(pl.col("reward").is_not_null() & (pl.col("reward") != 1.0)).select("trace_id")
        )
    bad = pl.concat(bad_traces).unique()
    flagged = calls.with_columns(
        ((pl.col("status") == "ok") & ~pl.col("trace_id").is_in(bad.collect()["trace_id"].implode())).alias(
            "ok"
        )
    )
    both = flagged.select(
        "cid",
        *(["call_id"] if ids else []),
        pl.col("task_id").cast(pl.String) if strings else pl.col("task_id"),
        pl.col("task_id").to_physical().alias("task"),
        pl.col("tool").cast(pl.String) if strings else pl.col("tool"),
        "ok",
    ).collect()
    return both.filter(pl.col("ok")).drop("ok"), both.filter(~pl.col("ok")).select("cid")


def leaf_rows(corpus: Corpus) -> int:
    """Rows of the corpus's leaves file (from the Parquet footer: nothing is read)."""
    return int(pq.ParquetFile(corpus.path / LEAVES_FILE).metadata.num_rows)


def scan_leaves(corpus: Corpus, tools: Sequence[str] | None) -> pl.LazyFrame:
    lf = corpus.scan_leaves().select(
        "cid", "task_id", "tool", "side", "pattern", "path", "kind", "num", "str", "len"
    )
    if tools is not None:
        lf = lf.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    return lf


#: Rows of leaves.parquet decoded at once while reading a part: the decoded strings and categoricals of
#: a chunk are dropped as soon as its compact rows (integer ids) are made.
READ_CHUNK_ROWS = 4_000_000
