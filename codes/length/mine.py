"""LENGTH — `paths [P]`, params `{"min": 1}`

*Qualifying example*: every array node at P (pooled: the `/items` of an order is one list whichever tool
returns the order); support = arrays (≥ 30) from ≥ 300 distinct tasks. *Holds* when no clean array at
P, in any member of its pool, is empty (the path statistics' `min_len`). *Catches*: an endpoint that
starts answering `[]`.

Checker semantics: every array node at P has at least `min` elements.

**LENGTH: 300 tasks.** "Never empty" is a claim about a rare event. Tasks are the independent unit;
after zero empty arrays in t tasks the 95% upper bound of the per-task rate is 1 − 0.05^(1/t) ≈ 3/t,
which is 1% — the audit's whole budget of one spurious receipt per 100 clean episodes — at t = 300. 100
tasks was tried and failed on real output: τ-bench retail's `get_user_details` `/orders` was non-empty in
the 120 tasks of one fold checker and empty in 4 of 450 held-out episodes (62 of the 500 users have no
order).
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, pooled_stats
from output_contracts.codes.mining_frames import CLS_ARR, cand_frame

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "an array at the pattern (pooled)"
SUPPORT = "≥ {min_support} arrays, ≥ {min_tasks} tasks"
CONDITIONS = "no empty array"


class LengthMiner(FromStats):
    """The LENGTH rule class.

    Judged per pool (`output_contracts.mining.pools`): the `/items` of an order is the same list whichever
    tool returns the order, so the tasks of every member count and an empty list in any member refutes it for
    all (the pool's task count is its largest member's, a lower bound).

    "Never empty" is a claim about a rare event, so the question is not whether the non-emptiness is a
    coincidence but how often a clean call could still return `[]` unseen. Tasks are the independent unit (one
    task re-reads the same records). A search that legitimately finds nothing now and then shows an empty page
    long before 300 tasks and gets no rule.

    The rule states `min 1`: larger minima (a list that always holds at least two items) are sizes of the
    data, not of the interface, and the next clean call may well hold one.
    """

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


#: This folder's miners, in the order the miner runs them.
MINERS = (LengthMiner,)
