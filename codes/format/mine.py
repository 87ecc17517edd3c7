"""FORMAT: every string at a pattern has one of a small set of shapes (`output_contracts.codes.format.check`).

Qualifying example: a *task* with a string node at P in a clean result, as for DOMAIN. The values judged
are the strings' shapes, not the strings: `#W0174651` and `#W4817420` are one shape, `#A9999999`.

Keep only if, in the checker's data of the pool (`output_contracts.mining.shapes`), the set of shapes passes
DOMAIN's whole test (`output_contracts.codes.domain.mine.closed_sets`) with FORMAT's own support: at least
`min_support` FORMAT (50) distinct tasks, at most FORMAT_MAX_SHAPES (8) shapes and one per 10
(shape, task) pairs, every shape seen in at least 3 tasks, and the cross-validated unseen mass (the
(shape, task) pairs of shapes seen in one task split only) at most 1%. The exact level is tried first;
where its set is not closed (names, e-mail addresses: lengths vary), or where two of its shapes differ only in the lengths of their
runs (`Aaa`, `Aaaa`: a list of the lengths seen, not a format), the loose one (runs collapsed); where
neither is closed and every string has one length (random identifiers: `4WQ150`), the charset one, whose
values are a string's parts (`6:9`, `6:A`), its distinct share and unseen mass counted over tasks.

Chance argument: the same as DOMAIN's, on shapes. A shape seen in one or two tasks is the visible edge
of a tail of unseen ones (Good–Turing), so a set is kept only when none is rare; and the split test
measures, before the audit does, the share of held-out tasks whose shape a set learned without them
would reject. Free text fails at once: its shapes are as many as its values.

Not emitted where a DOMAIN rule holds on the same place and checker (every value in the set has an
allowed shape, so FORMAT could never fire first): `output_contracts.mining.rule_classes.drop_subsumed`.

Statistics: DOMAIN's monoids, over the shapes, per level: (pool, shape, fold, split) task counts and
(pool, fold) calls and tasks. Shapes are computed once per distinct string of a part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.domain.mine import (
    closed_sets,
    pool_members,
    pool_strings,
    value_tasks,
    value_totals,
)
from output_contracts.codes.format.check import LEVELS, charset_keys, exact_shapes, key_parts, loosen_expr
from output_contracts.codes.mine_params import FORMAT_MAX_SHAPES
from output_contracts.codes.mining_context import MiningContext, paths_one
from output_contracts.codes.mining_frames import CLS_STR, Leaves, cand_frame, distinct
from output_contracts.jsonutil import canonical_str

#: One row per (pool, charset part, fold, task) of a part's strings.
_CHARSET_COLS = ["pool", "prt", "fold", "task"]


class Format:
    """The FORMAT rule class."""

    codes = ("FORMAT",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """Members (pid, pool) of every pool holding strings."""
        strings = ctx.stats.filter(pl.col("cls") == CLS_STR).join(
            ctx.pools.select("tool", "pattern", "pool"), on=["tool", "pattern"]
        )
        cand = strings["pool"].unique()
        if cand.len() == 0:
            return None
        return ctx.pools.filter(pl.col("pool").is_in(cand.implode())).select("pid", "pool").sort("pid")

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        rows = pool_strings(part, plan)
        # (pool, fold) totals once for both levels; the shapes of each distinct string once, joined to
        # the distinct (pool, string code, fold, task) tuples (the calls of a task repeat the same
        # strings). Strings travel as their codes (`sc`): integers to hash, not text.
        totals = value_totals(rows)
        pairs = distinct(rows, ["pool", "sc", "fold", "task"])
        # the exact shape of each distinct string once; everything else of each distinct exact shape once
        # (far fewer: the loose shape and the charset key are functions of the exact shape); the levels'
        # values as small integers through the counting, their text joined back to the counts
        shapes = rows.select("sc", "str").unique("sc", keep="any")
        shapes = shapes.select("sc", exact_shapes(shapes.get_column("str")).alias("exact"))
        ex = (
            shapes.select("exact")
            .unique()
            .sort("exact")
            .with_row_index("eid")
            .with_columns(loosen_expr("exact").alias("loose"))
        )
        lo = ex.select("loose").unique().sort("loose").with_row_index("lid")
        keys = charset_keys(ex, "exact")
        kid = keys.select("key").unique().sort("key").with_row_index("kid")
        ex = ex.join(lo, on="loose").join(keys.join(kid, on="key").select("exact", "kid"), on="exact")
        pairs = pairs.join(shapes.join(ex.select("exact", "eid", "lid", "kid"), on="exact"), on="sc")
        parts = key_parts(kid).join(kid, on="key").select("kid", "part")
        part_ids = parts.select("part").unique().sort("part").with_row_index("prt")
        parts = parts.join(part_ids, on="part").select("kid", "prt")

        def counted(
            col: str, text: pl.DataFrame, name: str, frame: pl.DataFrame | None = None
        ) -> pl.DataFrame:
            ids = (pairs if frame is None else frame).select("pool", pl.col(col).alias("str"), "fold", "task")
            return (
                value_tasks(ids)
                .join(text.select(pl.col(col).alias("str"), pl.col(name).alias("_text")), on="str")
                .with_columns(pl.col("_text").alias("str"))
                .drop("_text")
            )

        charset = distinct(
            distinct(pairs, ["pool", "kid", "fold", "task"]).join(parts, on="kid"), _CHARSET_COLS
        )
        by_level = {
            "exact": counted("eid", ex, "exact"),
            "loose": counted("lid", lo, "loose"),
            "charset": counted("prt", part_ids, "part", charset),
        }
        return pl.concat(
            [pl.concat([by_level[lv], totals]).with_columns(pl.lit(lv).alias("level")) for lv in LEVELS]
        )

    def compact(self, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """The parts' rows merged: distinct tasks and calls of a (pool, value, fold, split, level) add up
        over parts (a task lies in one part), and `finish` only ever sums them."""
        allrows = pl.concat(rows)
        return (
            allrows.group_by("pool", "str", "fold", "split", "level")
            .agg(pl.col("vtasks").sum(), pl.col("calls").sum())
            .select(allrows.columns)
            .cast(allrows.schema)
        )

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        allrows = pl.concat(rows)

        def closed(level: str) -> pl.DataFrame:
            at = allrows.filter(pl.col("level") == level).drop("level")
            return closed_sets(
                ctx, at, "FORMAT", FORMAT_MAX_SHAPES, per_task=level == "charset"
            ).with_columns(pl.lit(level).alias("level"))

        exact = closed("exact")
        # Exact shapes that differ only in run lengths (`Aaa`, `Aaaa`, ...) say the length varies: the
        # exact set is then a list of the lengths seen, not a format; such a place is judged loose.
        fixed = (
            exact.select("pool", "checker", "values")
            .explode("values")
            .group_by("pool", "checker")
            .agg((pl.col("values").n_unique() == loosen_expr("values").n_unique()).alias("fixed"))
            .filter("fixed")
            .select("pool", "checker")
        )
        # Charset parts at more than one length are likewise a list of lengths seen: only strings of one
        # length (random identifiers) are judged by their classes.
        charset = closed("charset")
        one_length = (
            charset.select("pool", "checker", "values")
            .explode("values")
            .group_by("pool", "checker")
            .agg((pl.col("values").str.split(":").list.first().n_unique() == 1).alias("one"))
            .filter("one")
            .select("pool", "checker")
        )
        both = pl.concat(
            [
                exact.join(fixed, on=["pool", "checker"]).with_columns(pl.lit(0).alias("rank")),
                closed("loose").with_columns(pl.lit(1).alias("rank")),
                charset.join(one_length, on=["pool", "checker"]).with_columns(pl.lit(2).alias("rank")),
            ]
        )
        # The most specific closed level per (pool, checker): exact, then loose, then charset.
        best = both.sort("rank").group_by("pool", "checker", maintain_order=True).first()
        best = best.with_columns(
            pl.struct("level", "values")
            .map_elements(
                lambda r: canonical_str({"level": r["level"], "shapes": r["values"]}), return_dtype=pl.String
            )
            .alias("params")
        )
        out = (
            pool_members(ctx)
            .join(best, on=["pool", "checker"])
            .with_columns(pl.lit("FORMAT").alias("code"), paths_one(), pl.col("tasks").alias("n"))
        )
        return cand_frame(out)
