"""POSITIVE / NONNEG — `paths [P]`, params `{}`

*Qualifying example*: every int or float node at P (other kinds are TYPE's business). *Holds* when the
minimum is > 0 (POSITIVE) or exactly 0 (NONNEG). *Trivial cases*: only the stronger claim is emitted —
never POSITIVE where a 0 was seen (NONNEG is all the data supports), never both; a constant number gets
no sign rule ("always 3" is no evidence about a quantity that never varied). *Catches*: a sign flip, a
negative stock count.

*The first member* (`/payment_history/*0/amount`): where the members of a list have no sign rule as a
whole, their first one may — the original payment of a reservation is positive, a later refund is not.
The same statistics and decision over the members at index 0 of the lists of a plain parent (one `*`),
judged per pool of the member pattern, emitted only where the member pattern has no sign rule in that
checker (it would imply the first member's). On τ-bench airline it states `/payment_history/*0/amount > 0`
for every reservation tool (550 tasks), which catches a `-1` or `0` sentinel in the booking's payment
(airline incident suite 81% → 83%, seeds 1–4), with no clean fire.

Checker semantics: every int/float node at P is > 0 / ≥ 0. Expected `"> 0"` / `">= 0"`; observed the
number.

**POSITIVE on whole numbers: evidence about 0.** On an int field, POSITIVE and NONNEG differ at 0 only,
and whether 0 can occur is a question about the bottom of the data, counted in tasks. Let [2^b, 2^(b+1))
be the lowest octave holding a value. POSITIVE is kept when the empty stretch [0, 2^b) is significant —
of the N2 tasks with a value in the lowest two octaves [2^b, 2^(b+2)), none has one below 2^b, and had
the values been spread evenly over [0, 2^(b+2)) each would have landed there with chance 1/4:
(3/4)^N2 < 1% needs N2 ≥ 17 (item quantities: 1 to 3 in hundreds of tasks, never 0) — or when a legal 0
would be too rare to matter: had 0 been as common as an integer of the lowest octave (N1 tasks there:
N1/2^b tasks with a 0 expected), it would show up in at most 1% of the tasks (cents totals that start at
1,702). Otherwise — a cabin with 2 or 3 seats left in the search results of four tasks — the rule is
NONNEG. Floats keep POSITIVE on their minimum. The statistics (the lowest octave and its task counts)
are monoids: a fold whose own lowest octave is higher has nothing in the merged one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, pooled_stats
from output_contracts.codes.mining_frames import (
    CLS_NUM,
    KIND_CODE,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    low_octave_aggs,
    merged_examples,
)

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a number at the pattern"
SUPPORT = "≥ {min_support} values"
CONDITIONS = "not constant; only the stronger claim; on whole numbers POSITIVE needs evidence about 0 (below)"

#: POSITIVE on an all-int field: chance of an empty stretch below the values by luck alone ...
COUNT_ZERO_CHANCE = 0.01
#: ... or the share of clean tasks a legal 0 would make it misfire in (see the module docstring).
ZERO_COST = 0.01


def signed(ctx: MiningContext, nums: pl.DataFrame) -> pl.DataFrame:
    """The POSITIVE and NONNEG rows of pooled numeric statistics (p_n, p_tasks, p_min, p_max,
    p_n_int_all, p_lowbin, p_n_low1, p_n_low2 per place and checker): the decision of the module
    docstring, for the wildcard patterns and for the first members alike."""
    p = ctx.params
    nums = nums.filter(pl.col("p_min") < pl.col("p_max"))
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
    return pl.concat([pos, nonneg])


class SignMiner(FromStats):
    """The POSITIVE / NONNEG rule class.

    Counts. On a whole-number field, POSITIVE and NONNEG differ at 0 only, and whether 0 can occur is a
    question about the bottom of the data, counted in tasks (a task that reads the same flight five times has
    seen its seat count once). Let [2^b, 2^(b+1)) be the lowest octave holding a value (so nothing lies in
    [0, 2^b)). POSITIVE is kept when either
    - the empty stretch below is significant: of the N2 tasks with a value in the lowest two octaves
      [2^b, 2^(b+2)), none has one in [0, 2^b). Had the values been spread evenly over [0, 2^(b+2)), each of
      those tasks would have landed there with chance 1/4: (3/4)^N2 < COUNT_ZERO_CHANCE (1%) needs N2 >= 17 —
      item quantities (a 1, 2 or 3 in hundreds of tasks, never a 0), response times that start at 12 ms; or
    - a legal 0 would be too rare to matter: had 0 been as common as an integer of the lowest octave (N1 tasks
      there, E0 = N1 / 2^b tasks with a 0 expected), it would show up in at most ZERO_COST (1%) of the tasks —
      cents totals that start at 1,702. 1 task in 100 is one rule's worst case using up the audit's whole
      target (at most 1 spurious receipt per 100 clean episodes).
    Otherwise (a cabin with 2 or 3 seats left, in the search results of four tasks: zeros plausible and, if
    legal, frequent) the rule is NONNEG, which the data does support. Floats are not counts and keep POSITIVE
    on their minimum.

    Judged per pool (`output_contracts.mining.pools`): minimum, maximum, int-ness and support over every
    place of the same object shape, so a refund's negative amount in one tool's output keeps every tool
    returning that payment history from claiming POSITIVE.
    """

    codes = ("POSITIVE", "NONNEG")

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        nums = pooled_stats(ctx).filter(pl.col("cls") == CLS_NUM)
        rows = signed(ctx, nums).with_columns(
            paths_one(),
            pl.lit("{}").alias("params"),
            pl.col("p_n").alias("n"),
            pl.col("p_calls").alias("calls"),
            pl.col("p_tasks").alias("tasks"),
        )
        return cand_frame(rows)


class FirstSignMiner:
    """POSITIVE / NONNEG of the first member of a list (`/payment_history/*0/amount`), where the list's
    members as a whole have no sign rule: the original payment is positive, a later refund is not.

    Candidates: the numeric fields of the members of a list of a plain parent (`A/*/x`, one `*`, no map
    key), read at index 0 (as RELATION's first-member fields). The statistics and the decision are the
    sign rule's, per (part, fold) and merged per checker, judged per pool of the member pattern; emitted
    only where the member pattern itself got no sign rule in that checker (it would imply this one)."""

    codes = ("POSITIVE", "NONNEG")

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """(pid, pos) of the candidate member patterns: `pos` the token position of their index."""
        pats = ctx.data.patterns.filter(
            (pl.col("side") == "result") & pl.col("pid").is_in(ctx.num_pids.implode())
        ).select("pid", "pattern")
        rows = [
            (pid, toks.index("*"))
            for pid, pat in pats.iter_rows()
            if (toks := pat.split("/")).count("*") == 1 and "~*" not in toks
        ]
        if not rows:
            return None
        return pl.DataFrame(rows, schema={"pid": pl.UInt32, "pos": pl.Int64}, orient="row")

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        first = (
            part.scan_paths(plan["pid"].to_list())
            .filter(pl.col("cls") == CLS_NUM)
            .join(plan.lazy(), on="pid")
            .filter(pl.col("path").str.split("/").list.get(pl.col("pos")) == "0")
            .select("cid", "task", "pid", "fold", "num", "code")
        )
        whole = (pl.col("code") == KIND_CODE["int"]) & (pl.col("num") >= 1)
        base = first.group_by("pid", "fold").agg(
            pl.len().alias("n"),
            (pl.col("code") == KIND_CODE["int"]).sum().alias("n_int"),
            pl.col("task").n_unique().alias("tasks"),
            pl.col("num").min().alias("min"),
            pl.col("num").max().alias("max"),
            fold_examples(distinct=False),
        )
        octave = pl.col("num").log(2).floor()
        low = (
            first.filter(whole)
            .select("pid", "fold", "task", octave.alias("oct"))
            .with_columns(pl.col("oct").min().over("pid", "fold").alias("lowbin"))
            .filter(pl.col("oct") <= pl.col("lowbin") + 1)
            .group_by("pid", "fold")
            .agg(
                pl.col("lowbin").first(),
                pl.col("task").filter(pl.col("oct") == pl.col("lowbin")).n_unique().alias("n_low1"),
                pl.col("task").n_unique().alias("n_low2"),
            )
        )
        return base.join(low, on=["pid", "fold"], how="left").collect()

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        merged = by_checker(
            pl.concat(rows),
            ["pid"],
            [
                pl.col("n").sum(),
                pl.col("n_int").sum(),
                pl.col("tasks").sum(),
                pl.col("min").min(),
                pl.col("max").max(),
                merged_examples(),
                *low_octave_aggs(),
            ],
            ctx.data.k,
        ).join(ctx.pools.select(pl.col("pid").cast(pl.UInt32), "tool", "pattern", "pool"), on="pid")
        per = merged.group_by("pool", "checker").agg(
            pl.col("n").max().alias("p_n"),
            pl.col("tasks").max().alias("p_tasks"),
            (pl.col("n_int").sum() == pl.col("n").sum()).alias("p_n_int_all"),
            pl.col("min").min().alias("p_min"),
            pl.col("max").max().alias("p_max"),
            *low_octave_aggs("p_"),
        )
        nums = merged.join(per, on=["pool", "checker"])
        # where the members as a whole already have a sign rule, the first member's is implied
        whole = (
            SignMiner()
            .from_stats(ctx)
            .select("tool", pl.col("paths").list.first().alias("pattern"), "checker")
        )
        rows_out = (
            signed(ctx, nums)
            .join(whole, on=["tool", "pattern", "checker"], how="anti")
            .with_columns(
                pl.concat_list(pl.col("pattern").str.replace("/*", "/*0", literal=True)).alias("paths"),
                pl.lit("{}").alias("params"),
                pl.col("p_n").alias("n"),
                pl.col("p_n").alias("calls"),
                pl.col("p_tasks").alias("tasks"),
            )
        )
        return cand_frame(rows_out)


#: This folder's miners, in the order the miner runs them.
MINERS = (
    SignMiner,
    FirstSignMiner,
)
