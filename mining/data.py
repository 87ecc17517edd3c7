"""The clean mining data and its per-fold statistics (DESIGN §3).

One pass over `leaves.parquet` (lazy scan, only the needed columns) yields the clean leaves with their
fold. Every rule class then computes *per-fold* statistics that are monoids — counts, sums, min/max,
bottom-3 example ids, distinct counts of things that belong to exactly one fold (calls, tasks) — and
`by_checker` merges them into the statistics of every checker at once: the full checker (id -1) is the
merge of all folds, fold checker f the merge of all folds but f. This is why `--folds 5` costs little
more than `--folds 1`: the expensive pass over the leaves happens once, the merge works on a few
thousand rows.

Clean calls (`clean_calls`): status "ok", from episodes with no labelled fault (no call of the trace
carries `fault`, and `episodes.faulty` is not true), and with `clean="reward"` also from episodes whose
reward is 1.0 where a reward exists (a null reward counts as clean: the format has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from contracts.errors import MiningError
from contracts.mining.folds import fold_table
from contracts.traces.corpus import Corpus

#: Physical codes of the `kind` Enum of leaves.parquet, and the "kind class" used for grouping:
#: int and float share the class "number" so that a field holding both is one group.
KIND_CODE = {"null": 0, "bool": 1, "int": 2, "float": 3, "string": 4, "array": 5, "object": 6}
CLS_NULL, CLS_BOOL, CLS_NUM, CLS_STR, CLS_ARR, CLS_OBJ = 0, 1, 2, 4, 5, 6
CLS_NAME = {0: "null", 1: "bool", 2: "number", 4: "string", 5: "array", 6: "object"}
SCALAR_CLASSES = (CLS_NULL, CLS_BOOL, CLS_NUM, CLS_STR)

FULL = -1  # checker id of the full checker

#: Columns of the materialised clean leaves.
LEAF_COLUMNS = ("cid", "task_id", "tool", "side", "pattern", "kind", "num", "str", "len")


@dataclass(frozen=True)
class MiningData:
    """Clean calls and their leaves, each row tagged with its task's fold.

    `leaves`: cid, task_id, tool (String), side, pattern (String), code (kind code), cls (kind class),
    num, str, len, fold. `calls`: cid, call_id, task_id, tool, fold. `patterns`: the distinct
    (tool, side, pattern) with `wild` (pattern has a `*` token).
    """

    corpus: Corpus
    leaves: pl.DataFrame
    calls: pl.DataFrame
    patterns: pl.DataFrame
    k: int
    clean_cids: pl.DataFrame | None  # None when every call of the scanned tools is clean

    def scan_paths(self) -> pl.LazyFrame:
        """Lazy clean leaves *with* the concrete `path` column (only rule classes that pair array
        instances need it; they filter before collecting)."""
        lf = self.corpus.scan_leaves().select("cid", "tool", "side", "path", "pattern", "kind", "num", "str")
        if self.clean_cids is not None:
            lf = lf.join(self.clean_cids.lazy(), on="cid", how="semi")
        return lf.with_columns(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String)).join(
            self.calls.lazy().select("cid", "fold", "task_id"), on="cid", how="inner"
        )


def clean_calls(corpus: Corpus, clean: str, tools: Sequence[str] | None) -> tuple[pl.DataFrame, bool]:
    """Clean calls (cid, call_id, task_id as String, tool as String) and whether any call was dropped."""
    calls = corpus.scan_calls().select("cid", "call_id", "trace_id", "task_id", "tool", "status", "fault")
    eps = corpus.scan_episodes().select("trace_id", "faulty", "reward")
    bad_traces = (
        calls.filter(pl.col("fault").is_not_null())
        .select("trace_id")
        .unique()
        .join(eps.filter(pl.col("faulty").fill_null(False)).select("trace_id"), on="trace_id", how="full")
        .select(pl.coalesce("trace_id", "trace_id_right").alias("trace_id"))
    )
    if clean == "reward":
        bad_traces = pl.concat(
            [
                bad_traces,
                eps.filter(pl.col("reward").is_not_null() & (pl.col("reward") != 1.0)).select("trace_id"),
            ]
        )
    every = calls.select(pl.len()).collect().item()
    keep = calls.filter(pl.col("status") == "ok").join(bad_traces, on="trace_id", how="anti")
    if tools is not None:
        keep = keep.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    out = keep.select(
        "cid", "call_id", pl.col("task_id").cast(pl.String), pl.col("tool").cast(pl.String)
    ).collect()
    return out, out.height != every


def load(corpus: Corpus, *, clean: str, k: int, seed: int, tools: Sequence[str] | None) -> MiningData:
    """Read the clean mining data once: clean calls, their folds, and their leaves (no `path`)."""
    calls, dropped = clean_calls(corpus, clean, tools)
    if calls.height == 0:
        raise MiningError(
            "no clean calls to mine (every call is an error, faulty or filtered out)",
            source=str(corpus.path),
        )
    if k > 1:
        folds = fold_table(calls["task_id"], seed, k)
        calls = calls.join(folds, on="task_id", how="left")
    else:
        calls = calls.with_columns(pl.lit(0, pl.Int32).alias("fold"))
    calls = calls.sort("cid")
    clean_cids = calls.select("cid") if dropped else None
    lf = corpus.scan_leaves().select(*LEAF_COLUMNS)
    if clean_cids is not None:
        lf = lf.join(clean_cids.lazy(), on="cid", how="semi")
    code = pl.col("kind").to_physical()
    lf = lf.with_columns(
        pl.col("tool").cast(pl.String),
        pl.col("pattern").cast(pl.String),
        code.alias("code"),
        pl.when(code == KIND_CODE["float"]).then(pl.lit(CLS_NUM, pl.UInt8)).otherwise(code).alias("cls"),
    ).drop("kind")
    if k > 1:
        fold_of_task = calls.select(pl.col("task_id").cast(pl.Categorical), "fold").unique()
        lf = lf.join(fold_of_task.lazy(), on="task_id", how="left")
    else:
        lf = lf.with_columns(pl.lit(0, pl.Int32).alias("fold"))
    leaves = lf.collect()
    patterns = (
        leaves.select("tool", "side", "pattern")
        .unique()
        .with_columns(wild=pl.col("pattern").str.contains(r"(^|/)\*(/|$)"))
        .sort("tool", "side", "pattern")
    )
    return MiningData(corpus, leaves, calls, patterns, k, clean_cids)


def checker_frame(k: int) -> pl.DataFrame:
    """One row per checker id: -1 (full), then 0..k-1 when k > 1."""
    ids = [FULL, *range(k)] if k > 1 else [FULL]
    return pl.DataFrame({"checker": ids}, schema={"checker": pl.Int32})


def by_checker(per_fold: pl.DataFrame, keys: Sequence[str], aggs: Sequence[pl.Expr], k: int) -> pl.DataFrame:
    """Merge per-fold statistics into per-checker ones: checker f sees every fold but f; -1 sees all."""
    return (
        per_fold.join(checker_frame(k), how="cross")
        .filter((pl.col("checker") == FULL) | (pl.col("fold") != pl.col("checker")))
        .group_by([*keys, "checker"])
        .agg(aggs)
    )


def merged_examples(col: str = "ex") -> pl.Expr:
    """Merge per-fold bottom-3 example lists into the checker's bottom-3 (a monoid: min-3 of a union)."""
    return pl.col(col).list.explode(keep_nulls=False, empty_as_null=False).unique().sort().head(3).alias(col)


def fold_examples(col: str = "cid") -> pl.Expr:
    """The 3 smallest distinct call keys of a group (per fold)."""
    return pl.col(col).unique().bottom_k(3).sort().alias("ex")


def path_stats(data: MiningData) -> pl.DataFrame:
    """Per (tool, pattern, cls, checker) statistics of RESULT nodes, merged from per-fold ones.

    Columns: n (nodes), n_int (int nodes), calls, tasks (distinct; summed over folds because each call
    and task belongs to one fold), min, max (numbers), ndist (distinct strings, per fold max — only an
    upper-bound screen for DOMAIN candidates), ex (bottom-3 cids).
    """
    per_fold = (
        data.leaves.filter(pl.col("side") == "result")
        .group_by("tool", "pattern", "cls", "fold")
        .agg(
            pl.len().alias("n"),
            (pl.col("code") == KIND_CODE["int"]).sum().alias("n_int"),
            pl.col("cid").n_unique().alias("calls"),
            pl.col("task_id").n_unique().alias("tasks"),
            pl.col("num").min().alias("min"),
            pl.col("num").max().alias("max"),
            pl.col("str").n_unique().alias("ndist"),
            fold_examples(),
        )
    )
    return by_checker(
        per_fold,
        ["tool", "pattern", "cls"],
        [
            pl.col("n").sum(),
            pl.col("n_int").sum(),
            pl.col("calls").sum(),
            pl.col("tasks").sum(),
            pl.col("min").min(),
            pl.col("max").max(),
            pl.col("ndist").max(),
            merged_examples(),
        ],
        data.k,
    )


def parent_expr(col: str = "pattern") -> pl.Expr:
    """Parent pattern of a pattern (`/items/*/price` -> `/items/*`, `/a` -> ``)."""
    return pl.col(col).str.replace(r"/[^/]*$", "")


def last_token_expr(col: str = "pattern") -> pl.Expr:
    return pl.col(col).str.extract(r"/([^/]*)$", 1)


def cand_frame(rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """An empty (or cast) candidate-rule frame with the columns every rule class returns."""
    if rows is None:
        return pl.DataFrame(schema=CAND_SCHEMA)
    return rows.select(list(CAND_SCHEMA)).cast(CAND_SCHEMA)  # type: ignore[arg-type]


#: What every rule class returns: one row per (checker, rule). `params` is canonical JSON text;
#: `n` is the count of qualifying examples the thresholds and max_violation_rate are based on.
CAND_SCHEMA: dict[str, Any] = {
    "checker": pl.Int32,
    "tool": pl.String,
    "code": pl.String,
    "paths": pl.List(pl.String),
    "params": pl.String,
    "calls": pl.Int64,
    "tasks": pl.Int64,
    "n": pl.Int64,
    "ex": pl.List(pl.UInt64),
}
