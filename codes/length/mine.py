"""LENGTH: every array at a pattern is non-empty.

Qualifying example: every array node at P in a clean result; support = arrays (>= 30) and distinct
tasks (>= 300). Keep only if no clean array at P is empty (the `min_len` of the path statistics).
Judged per pool (`output_contracts.mining.shapes`): the `/items` of an order is the same list whichever tool
returns the order, so the tasks of every member count and an empty list in any member refutes it for
all (the pool's task count is its largest member's, a lower bound).

Chance argument. "Never empty" is a claim about a rare event, so the question is not whether the
non-emptiness is a coincidence but how often a clean call could still return `[]` unseen. Tasks are the
independent unit (one task re-reads the same records); after zero empty arrays in t tasks, the 95%
upper bound on the share of tasks that meet one is 1 − 0.05^(1/t) ≈ 3/t (the rule of three): at the
default t = 300 it is 1%, the audit's whole budget of one spurious receipt per 100 clean episodes. A
search that legitimately finds nothing now and then shows an empty page long before 300 tasks and gets
no rule.

The rule states `min 1`: larger minima (a list that always holds at least two items) are sizes of the
data, not of the interface, and the next clean call may well hold one.
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, pooled_stats
from output_contracts.codes.mining_frames import CLS_ARR, cand_frame


class Length(FromStats):
    """The LENGTH rule class."""

    codes = ("LENGTH",)

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        p = ctx.params
        enough = (pl.col("p_n") >= p.needed("LENGTH")) & (pl.col("p_tasks") >= p.tasks_needed("LENGTH"))
        rows = (
            pooled_stats(ctx)
            .filter((pl.col("cls") == CLS_ARR) & (pl.col("p_min_len") >= 1) & enough)
            .with_columns(
                pl.lit("LENGTH").alias("code"),
                paths_one(),
                pl.lit('{"min":1}').alias("params"),
                pl.col("p_n").alias("n"),
                pl.col("p_calls").alias("calls"),
                pl.col("p_tasks").alias("tasks"),
            )
        )
        return cand_frame(rows)
