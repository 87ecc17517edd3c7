"""The reference the ingest's mining view is held to (tests/traces/test_view_stage.py): the view built
by reading the finished `leaves.parquet` and `calls.parquet` back, coding every row by value against the
corpus's dictionaries. Ingest builds the same bytes from its frames as it writes them
(`output_contracts.traces.mining_view.ViewStage`, `write_staged`); this slower path is kept here, not in
the package, because nothing but the tests needs it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

import output_contracts.traces.mining_view as mv
from output_contracts.errors import reading
from output_contracts.traces.leaves import tp_expr, tp_patterns
from output_contracts.traces.mining_view import (
    VIEW_FILE,
    VIEW_PATTERNS_FILE,
    VIEW_SCHEMA,
    VIEW_STRINGS_FILE,
    WILD_TOKEN,
)

#: Leaf rows converted at once.
CHUNK_ROWS = 4_000_000


def write_view(leaves: Path, calls: Path, target: Callable[[str], Path]) -> dict[str, dict[str, Any]]:
    """Write the view of the corpus files `leaves` and `calls` to `target(name)` for each of
    `VIEW_FILES`; return the `corpus.json` file entries (rows, columns) of the three."""
    lf = pl.scan_parquet(leaves)
    # distinct categoricals first, then cast: far fewer strings to convert
    patterns = (
        lf.select("tool", "side", "pattern")
        .unique()
        .select(
            pl.col("tool").cast(pl.String), pl.col("side").cast(pl.String), pl.col("pattern").cast(pl.String)
        )
        .unique()
        .sort("tool", "side", "pattern")
        .collect()
    )
    strings = (
        pl.concat(
            [
                lf.select(pl.col("str").drop_nulls().unique()),
                lf.select(pl.col("task_id").unique().cast(pl.String).drop_nulls().alias("str")),
            ]
        )
        .unique()
        .sort("str")
        .collect()
    )
    cids = pl.scan_parquet(calls).select(pl.col("cid").unique().sort()).collect()["cid"]
    rows = int(lf.select(pl.len()).collect().item())
    with reading(target(VIEW_STRINGS_FILE), writing=True):
        mv.write_strings(target(VIEW_STRINGS_FILE), strings["str"])
        patterns.write_parquet(target(VIEW_PATTERNS_FILE))
        schema = pl.DataFrame(schema=VIEW_SCHEMA).to_arrow().schema
        with pq.ParquetWriter(target(VIEW_FILE), schema, compression="zstd") as w:
            for start in range(0, max(rows, 1), CHUNK_ROWS):
                chunk = _view_chunk(lf.slice(start, CHUNK_ROWS), patterns, strings, cids)
                w.write_table(
                    chunk.cast(pl.Schema(VIEW_SCHEMA)).to_arrow().cast(schema),
                    row_group_size=mv.ROW_GROUP_ROWS,
                )
    return mv._entries(rows, strings.height, patterns.height)


def _view_chunk(
    lf: pl.LazyFrame, patterns: pl.DataFrame, strings: pl.DataFrame, cids: pl.Series
) -> pl.DataFrame:
    """The view rows of one slice of leaf rows (in their order)."""
    raw = lf.select(
        "cid",
        pl.col("task_id").to_physical().alias("tcode"),
        tp_expr(),
        "task_id",
        "tool",
        "side",
        "pattern",
        "path",
        "kind",
        "num",
        "str",
        "len",
    ).collect()
    # Categorical codes hold within this one frame only: map them to the files' codes through small
    # tables of their distinct values.
    tp = tp_patterns(raw).join(patterns.with_row_index("lpat"), on=["tool", "side", "pattern"])
    tasks = raw.group_by("tcode").agg(pl.col("task_id").first().cast(pl.String))
    task_code = strings["str"].search_sorted(tasks["task_id"]).cast(pl.UInt32)
    wild = tp.filter(pl.col("pattern").str.contains(WILD_TOKEN))["tp"]
    return raw.select(
        cids.search_sorted(raw["cid"]).cast(pl.UInt32).alias("call"),
        pl.col("tcode").replace_strict(tasks["tcode"], task_code, return_dtype=pl.UInt32).alias("task"),
        pl.col("tp").replace_strict(tp["tp"], tp["lpat"], return_dtype=pl.UInt32).alias("lpat"),
        pl.col("kind").to_physical().cast(pl.UInt8).alias("kind"),
        pl.when(pl.col("tp").is_in(wild.implode())).then(pl.col("path")).alias("path"),
        "num",
        "len",
        # a hash join against the dictionary (nulls match nothing: non-strings stay null)
        raw.select("str")
        .join(strings.with_row_index("code"), on="str", how="left", maintain_order="left")["code"]
        .cast(pl.UInt32)
        .alias("str"),
    )
