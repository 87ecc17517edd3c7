"""DOMAIN: every string at a pattern is one of a small set of values.

Qualifying example: every string node at P in a clean result (other kinds are TYPE's business).
Keep only if, in the checker's data: at least 50 string values; at most `max_domain` (8) distinct
values and at most n/10; every value seen >= 3 times in >= 2 distinct tasks; and the Good–Turing
estimate of the unseen mass, (values seen once) / n, below 1%. Ids and free text fail these at once
(most values are rare), which is how they are excluded; a value seen twice in one task is not yet part
of a domain, it is an accident.

Statistics: candidate patterns are screened with the per-(part, fold) distinct count (a checker's
distinct count is at least the largest of its parts'), then value counts per (pattern, value, fold)
are counted part by part and merged per checker like every other monoid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from contracts.mining.data import CLS_STR, Leaves, by_checker, cand_frame
from contracts.mining.params import (
    DOMAIN_MAX_SHARE,
    DOMAIN_MAX_UNSEEN,
    DOMAIN_MIN_COUNT,
    DOMAIN_MIN_TASKS,
)
from contracts.mining.rules.base import MiningContext, paths_one, support_ok


def value_counts(part: Leaves, pids: list[int]) -> pl.DataFrame:
    """Per (pid, str, fold) of one task part: count and distinct tasks of each string value at `pids`."""
    return (
        part.leaves.filter(
            (pl.col("side") == "result") & (pl.col("cls") == CLS_STR) & pl.col("pid").is_in(pids)
        )
        .group_by("pid", "str", "fold")
        .agg(pl.len().alias("count"), pl.col("task").n_unique().alias("vtasks"))
    )


def merge_value_counts(ctx: MiningContext, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Per (tool, pattern, str, checker): count and distinct tasks, merged from the parts' rows."""
    per_fold = pl.concat(rows).join(ctx.data.patterns.select("pid", "tool", "pattern"), on="pid")
    return by_checker(
        per_fold, ["tool", "pattern", "str"], [pl.col("count").sum(), pl.col("vtasks").sum()], ctx.data.k
    )


class Domain:
    """The DOMAIN rule class."""

    codes = ("DOMAIN",)

    def plan(self, ctx: MiningContext) -> tuple[pl.DataFrame, list[int]] | None:
        strings = ctx.stats.filter(pl.col("cls") == CLS_STR)
        screened = strings.filter(
            (pl.col("ndist") <= ctx.params.max_domain) & support_ok(ctx, "DOMAIN", n="n")
        )
        if screened.height == 0:
            return None
        return screened, ctx.data.pids(screened)

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        return None if plan is None else value_counts(part, plan[1])

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None:
            return cand_frame()
        screened = plan[0]
        per = (
            merge_value_counts(ctx, rows)
            .group_by("tool", "pattern", "checker")
            .agg(
                pl.col("str").sort().alias("values"),
                pl.len().alias("distinct"),
                pl.col("count").min().alias("min_count"),
                pl.col("vtasks").min().alias("min_vtasks"),
                (pl.col("count") == 1).sum().alias("singletons"),
            )
        )
        rows_ = (
            screened.join(per, on=["tool", "pattern", "checker"], how="inner")
            .filter(
                (pl.col("distinct") <= ctx.params.max_domain)
                & (pl.col("distinct") <= pl.col("n") * DOMAIN_MAX_SHARE)
                & (pl.col("min_count") >= DOMAIN_MIN_COUNT)
                & (pl.col("min_vtasks") >= DOMAIN_MIN_TASKS)
                & (pl.col("singletons") < pl.col("n") * DOMAIN_MAX_UNSEEN)
            )
            .with_columns(
                pl.lit("DOMAIN").alias("code"),
                paths_one(),
                pl.concat_str(
                    pl.lit('{"values":'),
                    pl.col("values").map_elements(_json_list, return_dtype=pl.String),
                    pl.lit("}"),
                ).alias("params"),
            )
        )
        return cand_frame(rows_)


def _json_list(values: pl.Series) -> str:
    from contracts.jsonutil import canonical_str

    return canonical_str(values.to_list())
