"""REQUIRED — `paths [P]`, params `{}`

*Qualifying example*: every object node at parent(P) in a clean result (the whole result for a top-level
key; every element object for `/items/*/price`; calls without items do not qualify). *Holds* when each
such object has the key last(P), with any value — **a key holding `null` is present**, a missing key is
not. Mined as (#nodes at P) == (#objects at parent(P)). *Catches*: a result that lost `/order_id`; an
item without `price`. *Trivial cases*: array elements (`/items/*`) are never REQUIRED keys.

Checker semantics: for every node at parent(P) that is an object, the key last(P) is present. Violation
path = parent's concrete path + "/" + key; expected `"present"`; observed `null` with `present: false`.

**REQUIRED: 3 tasks.** Calls of one task tend to share one shape (one customer, one legacy system); a key
seen in 20 calls of 2 tasks may be a property of those tasks. Three tasks is the smallest number that
lets a held-out fold checker still see two.
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, support_ok
from output_contracts.codes.mining_frames import CLS_OBJ, cand_frame, last_token_expr, parent_expr
from output_contracts.traces.pointers import WILD_TOKENS

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "an object at the parent pattern"
SUPPORT = "≥ {min_support} calls, ≥ {min_tasks} tasks"
CONDITIONS = ""


class RequiredMiner(FromStats):
    """The REQUIRED rule class.

    Since a key occurs at most once per object, the rule holds exactly when (#nodes at P) == (#object nodes at
    parent(P)); both counts are fold monoids.
    """

    codes = ("REQUIRED",)

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        s = ctx.stats
        objects = s.filter(pl.col("cls") == CLS_OBJ).select(
            "tool",
            pl.col("pattern").alias("parent"),
            "checker",
            pl.col("n").alias("n_obj"),
            "calls",
            "tasks",
            "ex",
        )
        children = (
            s.filter((pl.col("pattern") != "") & ~last_token_expr().is_in(list(WILD_TOKENS)))
            .group_by("tool", "pattern", "checker")
            .agg(pl.col("n").sum().alias("n_key"))
            .with_columns(parent_expr().alias("parent"))
        )
        rows = (
            children.join(objects, on=["tool", "parent", "checker"], how="inner")
            .filter((pl.col("n_key") == pl.col("n_obj")) & support_ok(ctx, "REQUIRED", n="calls"))
            .with_columns(
                pl.lit("REQUIRED").alias("code"),
                paths_one(),
                pl.lit("{}").alias("params"),
                pl.col("calls").alias("n"),
            )
        )
        return cand_frame(rows)


#: This folder's miners, in the order the miner runs them.
MINERS = (RequiredMiner,)
