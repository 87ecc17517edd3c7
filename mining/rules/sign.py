"""POSITIVE and NONNEG: every number at a pattern is > 0, or >= 0.

Qualifying example: every int or float node at P in a clean result (other kinds are TYPE's business).
Support = the count of such values (>= 30). Only the strongest true statement is emitted: POSITIVE when
the minimum is > 0, NONNEG when it is exactly 0 — never POSITIVE where NONNEG is all the data supports,
and never both. A field holding one constant number gets no sign rule: "always 3" is not evidence about
the sign of a quantity that never varied.
"""

from __future__ import annotations

import polars as pl

from contracts.mining.data import CLS_NUM, cand_frame
from contracts.mining.rules.base import FromStats, MiningContext, paths_one


class Sign(FromStats):
    """The POSITIVE / NONNEG rule class."""

    codes = ("POSITIVE", "NONNEG")

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        p = ctx.params
        nums = ctx.stats.filter((pl.col("cls") == CLS_NUM) & (pl.col("min") < pl.col("max")))
        pos = nums.filter(
            (pl.col("min") > 0)
            & (pl.col("n") >= p.needed("POSITIVE"))
            & (pl.col("tasks") >= p.tasks_needed("POSITIVE"))
        ).with_columns(pl.lit("POSITIVE").alias("code"))
        nonneg = nums.filter(
            (pl.col("min") == 0)
            & (pl.col("n") >= p.needed("NONNEG"))
            & (pl.col("tasks") >= p.tasks_needed("NONNEG"))
        ).with_columns(pl.lit("NONNEG").alias("code"))
        rows = pl.concat([pos, nonneg]).with_columns(paths_one(), pl.lit("{}").alias("params"))
        return cand_frame(rows)
