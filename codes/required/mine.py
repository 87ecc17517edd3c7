"""REQUIRED: a key present in every object at its parent pattern.

Qualifying example: an object node at parent(P) in a clean result (the whole result for top-level keys).
Counterexample: such an object without the key. Since a key occurs at most once per object, the rule
holds exactly when (#nodes at P) == (#object nodes at parent(P)); both counts are fold monoids.
Missing and null differ: a key whose value is null is present. Support = calls and tasks with an object
at parent(P) (DESIGN §3: >= 20 calls from >= 3 tasks).
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, support_ok
from output_contracts.codes.mining_frames import CLS_OBJ, cand_frame, last_token_expr, parent_expr
from output_contracts.traces.leaves import WILD_TOKENS


class Required(FromStats):
    """The REQUIRED rule class."""

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
