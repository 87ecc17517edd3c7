"""TYPE: every node at a pattern has one JSON kind.

Qualifying example: every node at P in a clean result. The kind is "int" when every node is an int,
"number" when the nodes are floats or a mix of ints and floats (a float field whose values happen to be
whole is common, so the miner never claims "float"), otherwise the one kind seen (bool, string, array,
object). A pattern holding two kinds (say string and null) gets no TYPE rule. Always-null fields get
none either: a field that never carried a value says nothing about the value it will carry.
Support = calls with a node at P (>= 20).

Judged per pool (`output_contracts.mining.shapes`): where several tools return the same object shape, the
kind is decided over all of them, so a gift card balance that is whole in one tool's mining data and
fractional after a refund in another's is `number` for both. A pooled member gets the rule when the
pool's largest member meets the support. (A "money-like field with many distinct whole values is a
`number`" rule was tried and dropped: whole cents, milliseconds and counts are legitimately `int` and
look the same; evidence across tools and map entries is what tells them apart.)
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.mining_context import (
    FromStats,
    MiningContext,
    paths_one,
    pooled_stats,
    support_ok,
)
from output_contracts.codes.mining_frames import CLS_NAME, CLS_NULL, CLS_NUM, cand_frame


class Kind(FromStats):
    """The TYPE rule class."""

    codes = ("TYPE",)

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        s = pooled_stats(ctx)
        single = s.join(
            s.group_by("tool", "pattern", "checker").agg(pl.len().alias("n_cls")),
            on=["tool", "pattern", "checker"],
        ).filter((pl.col("n_cls") == 1) & (pl.col("p_ncls") == 1) & (pl.col("cls") != CLS_NULL))
        name = (
            pl.when((pl.col("cls") == CLS_NUM) & pl.col("p_n_int_all"))
            .then(pl.lit("int"))
            .otherwise(pl.col("cls").replace_strict(CLS_NAME, return_dtype=pl.String))
        )
        rows = single.filter(support_ok(ctx, "TYPE", n="p_calls", tasks="p_tasks")).with_columns(
            pl.lit("TYPE").alias("code"),
            paths_one(),
            pl.concat_str(pl.lit('{"kind":"'), name, pl.lit('"}')).alias("params"),
            pl.col("p_calls").alias("n"),
            pl.col("p_calls").alias("calls"),
            pl.col("p_tasks").alias("tasks"),
        )
        return cand_frame(rows)
