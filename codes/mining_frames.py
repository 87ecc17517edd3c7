"""What the miners of the property codes read and return: the clean leaves of one task part (`Leaves`),
the kind classes they are grouped by, the candidate-rule frame every miner returns (`CAND_SCHEMA`), and
the per-fold monoid merge into every checker at once (`by_checker`), with the example-id expressions
and the bounded candidate sample's sizes.

Every rule statistic is a *monoid per fold*: counts, sums, min/max, example ids, and distinct counts of
things that belong to exactly one fold (calls, tasks). `by_checker` merges them into the statistics of
every checker at once: the full checker (id -1) is the merge of all folds, fold checker f the merge of
all folds but f. This is why `--folds 5` costs little more than `--folds 1`. The miner's driver
(`output_contracts.mining`) reads the corpus into `Leaves`, part by part, and runs the code miners over
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

_U64 = pl.UInt64


#: Physical codes of the `kind` Enum of leaves.parquet, and the "kind class" used for grouping:
#: int and float share the class "number" so that a field holding both is one group.
KIND_CODE = {"null": 0, "bool": 1, "int": 2, "float": 3, "string": 4, "array": 5, "object": 6}


CLS_NULL, CLS_BOOL, CLS_NUM, CLS_STR, CLS_ARR, CLS_OBJ = 0, 1, 2, 4, 5, 6


CLS_NAME = {0: "null", 1: "bool", 2: "number", 4: "string", 5: "array", 6: "object"}


SCALAR_CLASSES = (CLS_NULL, CLS_BOOL, CLS_NUM, CLS_STR)


FULL = -1  # checker id of the full checker


#: Calls per (tool, fold), first by call key, whose numbers RELATION proposes candidates from ...
SAMPLE_CALLS = 4000


#: ... and whose scalars refute ECHO candidates (a prefix of the same calls).
ECHO_SAMPLE_CALLS = 64


@dataclass(frozen=True)
class Leaves:
    """Clean leaves of some calls (one task part, the whole corpus, or the sample), tagged with fold.

    `leaves`: cid, task (UInt32 task code), pid (pattern id), side, path (wildcard patterns only, else
    null), code (kind code), cls (kind class), num, str, len, fold, sc (the string's UInt32 code,
    `with_codes`: compare codes only within one part's frame, never across parts or in the sample). `calls`: cid, task, tool, fold of the
    same calls. `patterns`: the corpus-wide pattern table (see `MiningData`)."""

    leaves: pl.DataFrame
    calls: pl.DataFrame
    patterns: pl.DataFrame
    k: int
    n_result: int | None = None  # the first n_result rows are the result side's (None: not ordered)

    def result(self) -> pl.DataFrame:
        """The result-side leaves: a zero-copy slice when they come first, else a filter."""
        if self.n_result is not None:
            return self.leaves.slice(0, self.n_result)
        return self.leaves.filter(pl.col("side") == "result")

    def scan_paths(self, pids: Sequence[int]) -> pl.LazyFrame:
        """Clean leaves of the given patterns with their concrete `path` (kept in memory for wildcard
        patterns only: array instances are paired by index): cid, pid, path, code, cls, num, str, fold,
        task (the leaves' own task codes: compare them only with each other), sc."""
        return (
            self.leaves.lazy()
            .filter(pl.col("pid").is_in(list(pids)))
            .select("cid", "pid", "path", "code", "cls", "num", "str", "fold", "task", "sc")
        )


#: Calls taken at once by `first_calls` (its group-by's memory follows this, not the corpus).
FIRST_CALLS_SLICE = 1_000_000


def first_calls(calls: pl.DataFrame, n: int) -> pl.DataFrame:
    """The first `n` calls of each (tool, fold) by call key (call keys are hashes: a fair sample):
    cid, tool, fold, groups in order of their first call.

    The calls are taken in slices of FIRST_CALLS_SLICE in key order, each cut to its first `n` per
    group, and the cuts cut again: a group's first `n` calls of the whole are among its first `n` of
    the slices up to where they lie, so the result is the same as one group-by over every call, which
    held index lists for all 10M calls of a 10M-call corpus at once."""
    c = calls.select("cid", "tool", "fold")
    if not c["cid"].flags["SORTED_ASC"]:
        c = c.sort("cid")
    heads = [
        c.slice(at, FIRST_CALLS_SLICE).group_by("tool", "fold", maintain_order=True).head(n)
        for at in range(0, max(c.height, 1), FIRST_CALLS_SLICE)
    ]
    return (
        pl.concat(heads).group_by("tool", "fold", maintain_order=True).head(n).select("cid", "tool", "fold")
    )


def distinct(frame: pl.DataFrame, cols: Sequence[str]) -> pl.DataFrame:
    """`frame.select(cols).unique()` (row order unspecified, as there) for integer columns: when their
    values are non-negative, not null, and fit in 63 bits together, as one UInt64 key per row (hashing
    one integer instead of encoding rows measured about 2x faster); otherwise the plain `unique`."""
    widths = []
    for c in cols:
        col = frame[c]
        if not col.dtype.is_integer() or col.null_count() or (col.len() and col.min() < 0):  # type: ignore[operator]
            return frame.select(cols).unique()
        widths.append(max(1, int(col.max() or 0).bit_length()))  # type: ignore[arg-type]
    if sum(widths) > 63:
        return frame.select(cols).unique()
    shifts = [sum(widths[:i]) for i in range(len(cols))]
    key = pl.sum_horizontal(pl.col(c).cast(_U64) * (1 << s) for c, s in zip(cols, shifts, strict=True))
    keys = frame.select(key.alias("k")).to_series().unique()
    return pl.DataFrame(
        {
            c: ((keys // (1 << s)) % (1 << w)).cast(frame[c].dtype)
            for c, s, w in zip(cols, shifts, widths, strict=True)
        }
    )


def checker_frame(k: int) -> pl.DataFrame:
    """One row per checker id: -1 (full), then 0..k-1 when k > 1."""
    ids = [FULL, *range(k)] if k > 1 else [FULL]
    return pl.DataFrame({"checker": ids}, schema={"checker": pl.Int32})


#: Rows of per-fold statistics times checkers up to which `by_checker` groups all the checkers' copies in
#: one group-by: a polars group-by costs about 0.6 ms however few its rows, so a small input paid that
#: k + 1 times (52 merges took 0.24 of the 1.5 CPU-s of a 3,000-call corpus's `mine`).
#: Above it, one group-by per checker, so that the k + 1 copies are never held at once.
CROSS_ROWS = 1 << 16


def by_checker(per_fold: pl.DataFrame, keys: Sequence[str], aggs: Sequence[pl.Expr], k: int) -> pl.DataFrame:
    """Merge per-fold statistics into per-checker ones: checker f sees every fold but f; -1 sees all.

    Rows come in checker blocks (-1, then 0 .. k-1), each in the order of its group-by. A small input is
    crossed with the checkers and grouped once (`CROSS_ROWS`); a large one is grouped per checker, one
    after the other, in one query: a cross join with the checkers would hold k copies of the rows at
    once (at 10M calls FORMAT's per-part shape counts made that 1.1 GiB of mining's peak)."""
    ids = checker_frame(k)
    rows = per_fold.lazy()
    if per_fold.height * ids.height <= CROSS_ROWS and "checker" not in per_fold.columns:
        merged = (
            rows.join(ids.lazy(), how="cross", maintain_order="left_right")  # a group keeps its rows' order
            .filter((pl.col("checker") == FULL) | (pl.col("fold") != pl.col("checker")))
            .group_by(*keys, "checker")
            .agg(aggs)
            .sort("checker", maintain_order=True)
        )
    else:
        merged = pl.concat(
            [
                (rows if c == FULL else rows.filter(pl.col("fold") != c))
                .group_by(keys)
                .agg(aggs)
                .with_columns(pl.lit(c, pl.Int32).alias("checker"))
                for c in ids["checker"].to_list()
            ],
            parallel=False,  # one group-by's tables live at a time
        )
    return merged.select(*keys, "checker", pl.exclude(*keys, "checker")).collect()


def merged_examples(col: str = "ex") -> pl.Expr:
    """Merge per-fold example lists into the checker's: the 3 smallest call keys of the union."""
    return pl.col(col).list.explode(keep_nulls=False, empty_as_null=False).unique().sort().head(3).alias(col)


def fold_examples(col: str = "cid", distinct: bool = True) -> pl.Expr:
    """Up to 3 example call keys of a group (per part and fold): the smallest distinct ones, so that
    neither row order, parallel joins nor the part split changes them. `distinct=False` skips the
    de-duplication where a group has at most one row per call (patterns without wildcards)."""
    c = pl.col(col).unique() if distinct else pl.col(col)
    return c.bottom_k(3).alias("ex")


def low_octave_aggs(prefix: str = "") -> list[pl.Expr]:
    """Merge (lowbin, n_low1, n_low2) rows — per group: the lowest octave b of its whole numbers >= 1,
    and the distinct tasks with one in [2^b, 2^(b+1)) and in [2^b, 2^(b+2)) — into one group's (the sign
    rule's evidence about 0, `output_contracts.codes.sign.mine`). Rows at a higher b have no value in the
    merged lowest octave, and those one octave up have their lowest octave as the merged second one;
    each task belongs to one row (one part and fold), so the counts add up."""
    b = pl.col("lowbin").min()
    return [
        b.alias(f"{prefix}lowbin"),
        pl.col("n_low1").filter(pl.col("lowbin") == b).sum().alias(f"{prefix}n_low1"),
        (
            pl.col("n_low2").filter(pl.col("lowbin") == b).sum()
            + pl.col("n_low1").filter(pl.col("lowbin") == b + 1).sum()
        ).alias(f"{prefix}n_low2"),
    ]


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
