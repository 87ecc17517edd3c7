"""UNIQUE: within one list, no two items hold the same value at P (`contracts.rules.unique`).

Candidates: result patterns `A/*` (lists of scalars) and `A/*/f` (a scalar field of object items)
holding strings or numbers. Qualifying example: a list instance (one list in one call) with at least
two items holding a judged value at P. Keep only if no qualifying instance of the checker's data holds
a repeated value, with at least `min_support` UNIQUE (30) such instances from at least 300 distinct
tasks; then one rule per list (the same list repeated shows at every one of its fields): the scalar
items themselves, else the first string field, else the first numeric field, in pattern order. (The
field with the most distinct values would name the id best, but a distinct count is not a monoid over
task parts: the choice would depend on how the corpus was read.)

Chance argument. "Never repeats" is, like LENGTH's "never empty", a claim about a rare event: after no
repeat in t tasks the 95% upper bound of the per-task rate is 1 − 0.05^(1/t) ≈ 3/t, 1% at 300 tasks,
the audit's whole budget of spurious receipts per clean episode. A field whose values come from a small
set (a quantity, a colour) repeats by chance within a few hundred lists and gets no rule: that is the
data refuting the rule, not a threshold.

Statistics: per (part, fold, pid): qualifying instances, instances with a repeat, and distinct tasks
holding a qualifying instance (each task lies in one part and one fold, so they add up).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from contracts.mining.data import (
    CLS_NUM,
    CLS_STR,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from contracts.mining.rules.base import MiningContext, paths_one, support_ok
from contracts.rules.unique import EXACT_LIMIT, item_split


class Unique:
    """The UNIQUE rule class."""

    codes = ("UNIQUE",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """(pid, after) of the candidate patterns: `A/*` or `A/*/f` result patterns holding a string or
        number in the full checker's data."""
        held = (
            ctx.stats.filter(pl.col("cls").is_in([CLS_NUM, CLS_STR]) & (pl.col("checker") == -1))
            .select("tool", "pattern")
            .unique()
        )
        pats = ctx.data.patterns.filter((pl.col("side") == "result") & pl.col("wild")).join(
            held, on=["tool", "pattern"]
        )
        rows = [
            (pid, a)
            for pid, pat in pats.select("pid", "pattern").iter_rows()
            if (a := item_split(pat)) is not None
        ]
        if not rows:
            return None
        return pl.DataFrame(rows, schema={"pid": pl.UInt32, "after": pl.Int64}, orient="row").sort("pid")

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        # the list instance: the concrete path before the last index (`/xs/3` -> `/xs`, `/xs/3/id` -> `/xs`),
        # and the value, both as 64-bit hashes (grouping on them is several times faster than on text; a
        # collision could only refute a rule, never admit one)
        inst = (
            pl.when(pl.col("after") == 0)
            .then(pl.col("path").str.replace(r"/[0-9]+$", ""))
            .otherwise(pl.col("path").str.replace(r"/[0-9]+/[^/]*$", ""))
            .hash()
        )
        value = (
            pl.when(pl.col("cls") == CLS_NUM)
            .then(pl.when(pl.col("num") == 0).then(0.0).otherwise(pl.col("num")).hash())
            .otherwise(pl.col("str").hash() ^ pl.lit(0x9E3779B97F4A7C15, pl.UInt64))
        )
        judged = pl.col("cls").is_in([CLS_NUM, CLS_STR]) & (
            (pl.col("cls") == CLS_STR) | (pl.col("num").abs() < EXACT_LIMIT)
        )
        lists = (
            part.result()
            .lazy()
            .filter(judged & pl.col("pid").is_in(plan["pid"].implode()))
            .join(plan.lazy().with_columns(pl.col("pid").cast(pl.UInt32)), on="pid")
            .select(
                "cid",
                "task",
                "pid",
                "fold",
                inst.alias("inst"),
                value.alias("val"),
            )
            .group_by("cid", "task", "pid", "fold", "inst")
            .agg(pl.len().alias("items"), pl.col("val").n_unique().alias("distinct"))
            .filter(pl.col("items") >= 2)
        )
        return (
            lists.group_by("pid", "fold")
            .agg(
                pl.len().alias("lists"),
                (pl.col("distinct") < pl.col("items")).sum().alias("repeats"),
                pl.col("task").n_unique().alias("tasks"),
                pl.col("cid").n_unique().alias("calls"),
                fold_examples(),
            )
            .collect()
        )

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        merged = by_checker(
            pl.concat(rows),
            ["pid"],
            [
                pl.col("lists").sum(),
                pl.col("repeats").sum(),
                pl.col("tasks").sum(),
                pl.col("calls").sum(),
                merged_examples(),
            ],
            ctx.data.k,
        )
        held = merged.filter((pl.col("repeats") == 0) & support_ok(ctx, "UNIQUE", n="lists")).join(
            ctx.data.patterns.select(pl.col("pid").cast(pl.UInt32), "tool", "pattern"), on="pid"
        )
        if held.height == 0:
            return cand_frame()
        strings = ctx.stats.filter(pl.col("cls") == CLS_STR).select(
            "tool", "pattern", "checker", pl.lit(True).alias("is_str")
        )
        is_items = pl.col("pattern").str.ends_with("/*")
        best = (
            held.join(strings, on=["tool", "pattern", "checker"], how="left")
            .with_columns(
                pl.when(is_items)
                .then(pl.col("pattern"))
                .otherwise(pl.col("pattern").str.replace(r"/[^/]*$", ""))
                .alias("list"),
                pl.when(is_items).then(0).when(pl.col("is_str")).then(1).otherwise(2).alias("rank"),
            )
            .sort(["rank", "pattern"])
            .group_by("tool", "list", "checker", maintain_order=True)
            .first()
        )
        out = best.with_columns(
            pl.lit("UNIQUE").alias("code"),
            paths_one(),
            pl.lit("{}").alias("params"),
            pl.col("lists").alias("n"),
        )
        return cand_frame(out)
