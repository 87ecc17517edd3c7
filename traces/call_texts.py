"""Some calls' stored texts (arguments, result, ids, order), read from `calls.parquet` once.

Rendering witnesses (`checks.checker.violation_frame`) reads the arguments and result of the calls
that fired; replaying episodes for CONSISTENT's witnesses (`rules.episodes.episode_witnesses`) reads
every call of the episodes that hold a hit. Each read decompresses the whole `arguments` and `result`
columns, whichever rows it keeps (about 0.4 CPU-s at 1M calls). `audit` renders the in-sample and the
cross-fitted witnesses from one flat pass, so it reads the union once (`CallTexts.read`) and hands it
to both; a caller without one reads as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from output_contracts.traces.corpus import Corpus

#: The columns held, as `calls.parquet` stores them (`tool` as a String).
TEXT_COLUMNS = (
    "cid",
    "call_id",
    "trace_id",
    "tool",
    "status",
    "source",
    "line",
    "index",
    "arguments",
    "result",
)


@dataclass(frozen=True)
class CallTexts:
    """`frame`: the `TEXT_COLUMNS` of the calls held; `cids` their ids, `traces` the episodes (trace ids)
    of which every call is held."""

    frame: pl.DataFrame
    cids: pl.Series
    traces: pl.Series

    @classmethod
    def read(cls, corpus: Corpus, cids: pl.Series, whole_of: pl.Series) -> CallTexts:
        """The calls `cids`, and every call of the episodes of the calls `whole_of`, in one scan."""
        calls = corpus.scan_calls()
        traces = (
            calls.select("cid", "trace_id")
            .filter(pl.col("cid").is_in(whole_of.implode()))
            .select("trace_id")
            .unique()
            .collect()
            .get_column("trace_id")
        )
        frame = (
            calls.filter(pl.col("cid").is_in(cids.implode()) | pl.col("trace_id").is_in(traces.implode()))
            .select(*TEXT_COLUMNS[:3], pl.col("tool").cast(pl.String), *TEXT_COLUMNS[4:])
            .collect()
        )
        return cls(frame, frame.get_column("cid"), traces)

    def has_calls(self, cids: pl.Series) -> bool:
        """Whether every call of `cids` is held."""
        return bool(cids.is_in(self.cids.implode()).all())

    def has_episodes(self, traces: pl.Series) -> bool:
        """Whether every call of each episode of `traces` is held."""
        return bool(traces.is_in(self.traces.implode()).all())
