"""POSITIVE and NONNEG: every number at a pattern is > 0, or >= 0.

Qualifying example: every int or float node at P in a clean result (other kinds are TYPE's business).
Support = the count of such values (>= 30). Only the strongest true statement is emitted: POSITIVE when
the minimum is > 0, NONNEG when it is exactly 0 — never POSITIVE where NONNEG is all the data supports,
and never both. A field holding one constant number gets no sign rule: "always 3" is not evidence about
the sign of a quantity that never varied.

Counts. On a whole-number field, POSITIVE and NONNEG differ at 0 only, and whether 0 can occur is a
question about the bottom of the data, counted in tasks (a task that reads the same flight five times
has seen its seat count once). Let [2^b, 2^(b+1)) be the lowest octave holding a value (so nothing lies
in [0, 2^b)). POSITIVE is kept when either
- the empty stretch below is significant: of the N2 tasks with a value in the lowest two octaves
  [2^b, 2^(b+2)), none has one in [0, 2^b). Had the values been spread evenly over [0, 2^(b+2)), each of
  those tasks would have landed there with chance 1/4: (3/4)^N2 < COUNT_ZERO_CHANCE (1%) needs
  N2 >= 17 — item quantities (a 1, 2 or 3 in hundreds of tasks, never a 0), response times that start
  at 12 ms; or
- a legal 0 would be too rare to matter: had 0 been as common as an integer of the lowest octave (N1
  tasks there, E0 = N1 / 2^b tasks with a 0 expected), it would show up in at most ZERO_COST (1%) of
  the tasks — cents totals that start at 1,702. 1 task in 100 is one rule's worst case using up the
  audit's whole target (at most 1 spurious receipt per 100 clean episodes).
Otherwise (a cabin with 2 or 3 seats left, in the search results of four tasks: zeros plausible and, if
legal, frequent) the rule is NONNEG, which the data does support. Floats are not counts and keep
POSITIVE on their minimum.

Judged per pool (`contracts.mining.shapes`): minimum, maximum, int-ness and support over every place of
the same object shape, so a refund's negative amount in one tool's output keeps every tool returning
that payment history from claiming POSITIVE.
"""

from __future__ import annotations

import math

import polars as pl

from contracts.mining.data import CLS_NUM, cand_frame
from contracts.mining.rules.base import FromStats, MiningContext, paths_one, pooled_stats

#: POSITIVE on an all-int field: chance of an empty stretch below the values by luck alone ...
COUNT_ZERO_CHANCE = 0.01
#: ... or the share of clean tasks a legal 0 would make it misfire in (see the module docstring).
ZERO_COST = 0.01


class Sign(FromStats):
    """The POSITIVE / NONNEG rule class."""

    codes = ("POSITIVE", "NONNEG")

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        p = ctx.params
        nums = pooled_stats(ctx).filter((pl.col("cls") == CLS_NUM) & (pl.col("p_min") < pl.col("p_max")))
        gap = pl.col("p_n_low2").cast(pl.Float64) * math.log(4 / 3) > math.log(1 / COUNT_ZERO_CHANCE)
        e0 = pl.col("p_n_low1").cast(pl.Float64) / pl.lit(2.0).pow(pl.col("p_lowbin"))
        floor_seen = ~pl.col("p_n_int_all") | gap | (e0 <= ZERO_COST * pl.col("p_tasks").cast(pl.Float64))

        def enough(code: str) -> pl.Expr:
            return (pl.col("p_n") >= p.needed(code)) & (pl.col("p_tasks") >= p.tasks_needed(code))

        pos = nums.filter((pl.col("p_min") > 0) & floor_seen & enough("POSITIVE")).with_columns(
            pl.lit("POSITIVE").alias("code")
        )
        nonneg = nums.filter(
            (pl.col("p_min") >= 0) & ~((pl.col("p_min") > 0) & floor_seen) & enough("NONNEG")
        ).with_columns(pl.lit("NONNEG").alias("code"))
        rows = pl.concat([pos, nonneg]).with_columns(
            paths_one(),
            pl.lit("{}").alias("params"),
            pl.col("p_n").alias("n"),
            pl.col("p_calls").alias("calls"),
            pl.col("p_tasks").alias("tasks"),
        )
        return cand_frame(rows)
