"""TYPE — `paths [P]`, params `{"kind": K}`

*Qualifying example*: every node at P. *Holds* when every node has one kind: `int` when all are ints;
`number` when they are floats or a mix of ints and floats — the miner never claims `float`, since a
float field whose values happen to be whole is common (`19.0` serialised as `19`); otherwise `bool`,
`string`, `array` or `object`. *Trivial cases*: a field that is always `null` gets no TYPE rule (it never
carried a value, so it says nothing about the value it will carry); a nullable field (string or null)
gets none either. *Catches*: a number returned as a string (`"4"`), `null` in a typed field.

Checker semantics: every node at P has kind K (`number` = int or float). Expected the kind; observed the
offending value.
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

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a node at the pattern"
SUPPORT = "≥ {min_support} calls"
CONDITIONS = "one kind; never `null` alone"


class TypeMiner(FromStats):
    """The TYPE rule class.

    Judged per pool (`output_contracts.mining.pools`): where several tools return the same object shape, the
    kind is decided over all of them. A pooled member gets the rule when the pool's largest member meets the
    support.
    """

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


#: This folder's miners, in the order the miner runs them.
MINERS = (TypeMiner,)
