"""FORMAT — `paths [P]`, params `{"level": "exact" | "loose" | "charset", "shapes": [sorted shapes]}`

*Qualifying example*: a task with a string node at P. *Holds* per the chance argument below (DOMAIN's
test on shapes, per pool). *Trivial cases*: where DOMAIN holds at the place (subsumed); free text (too
many shapes). *Catches*: id and date format drift (`#w0174651`, `05/01/2024`, `+00:00` for `Z`), case
changes, blank padding, mojibake (`JosÃ©`), sentinel text (`N/A`), truncated ids, a page of text where
a short code belongs (strings over 64 characters have the one shape `…`).

Checker semantics: every string node at P has an allowed shape (charset: every part of it is allowed).
Expected the shapes; observed the string.

**FORMAT: DOMAIN's test on shapes.** A string's shape replaces each character by its class (`A` capital,
`a` small letter, `9` digit, `¤` non-ASCII; punctuation and spaces stay), keeping lengths (`exact`) or
collapsing runs (`loose`). The set of shapes at a place is judged exactly as DOMAIN judges values —
counted in tasks, ≥ 50 tasks, every shape in ≥ 3 tasks, the cross-validated unseen mass ≤ 1% — so the
same Good–Turing argument applies: a set is kept only when no shape is rare, and free text (as many
shapes as values) fails at once. Exact first; loose when the exact set is not closed or when two exact
shapes differ only in run lengths (`Aaa`, `Aaaa`: the lengths seen, not a format). Where DOMAIN holds at
the same place, FORMAT is not emitted (every allowed value has an allowed shape).

*Charset*, the third level, is for random identifiers (`4WQ150`, `Q-3FA9C01B2E`), whose exact and
loose shapes are as many as their values. A string's *parts* are its length paired with each character
class it holds (`4WQ150` → `6:9`, `6:A`); the closed-set test runs on the parts, counted in tasks (the
distinct share and the unseen mass over tasks, not over (part, task) pairs: a rare `-` beside the two
common parts would otherwise be diluted threefold), and a string is allowed when each of its parts is.
The argument is the same on a smaller alphabet: a class or a length seen in fewer than 3 tasks, or only
in one task split, is the edge of an unseen tail and keeps the level from closing. Parts at two lengths
are the lengths seen, not a format (as for exact shapes), so charset is used only where every string has
one length. It is tried last: a place whose exact or loose set is closed keeps that. On τ-bench airline it
gives the reservation ids (`/reservation_id`, `/reservations/*`: `[9A]{6}`, 558 tasks), which no other
level could state; on the sample world the hexadecimal quote, invoice, refund, shipment and tracking ids
and the search cursor.
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
from output_contracts.codes.format import LEVELS
from output_contracts.codes.format.check import charset_keys, exact_shapes, key_parts, loosen_expr
from output_contracts.codes.format.shapes import FORMAT_MAX_LEN
from output_contracts.codes.mining_context import MiningContext, paths_one
from output_contracts.codes.mining_frames import CLS_STR, Leaves, cand_frame, distinct
from output_contracts.jsonutil import canonical_str

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a task with a string at the pattern (pooled)"
SUPPORT = "≥ {min_support} tasks"
CONDITIONS = (
    "DOMAIN's test on the strings' shapes (≤ 8 shapes); exact, else loose, else charset (one length); "
    "not where DOMAIN holds"
)

FORMAT_MAX_SHAPES = 8  # at most this many shapes at a place (per level)
#: What the contract set records of these constants (its `params`).
CONSTANTS = {"max_shapes": FORMAT_MAX_SHAPES, "max_len": FORMAT_MAX_LEN}

#: One row per (pool, charset part, fold, task) of a part's strings.
_CHARSET_COLS = ["pool", "prt", "fold", "task"]


class FormatMiner:
    """The FORMAT rule class.

    The values judged are the strings' shapes, not the strings: `#W0174651` and `#W4817420` are one shape,
    `#A9999999`.

    Keep only if, in the checker's data of the pool (`output_contracts.mining.pools`), the set of shapes
    passes DOMAIN's whole test (`output_contracts.codes.domain.mine.closed_sets`) with FORMAT's own support:
    at least `min_support` FORMAT (50) distinct tasks, at most FORMAT_MAX_SHAPES (8) shapes and one per 10
    (shape, task) pairs, every shape seen in at least 3 tasks, and the cross-validated unseen mass (the
    (shape, task) pairs of shapes seen in one task split only) at most 1%. The exact level is tried first;
    where its set is not closed (names, e-mail addresses: lengths vary), or where two of its shapes differ
    only in the lengths of their runs (`Aaa`, `Aaaa`: a list of the lengths seen, not a format), the loose one
    (runs collapsed); where neither is closed and every string has one length (random identifiers: `4WQ150`),
    the charset one, whose values are a string's parts (`6:9`, `6:A`), its distinct share and unseen mass
    counted over tasks.

    A shape seen in one or two tasks is the visible edge of a tail of unseen ones (Good–Turing), so a set is
    kept only when none is rare; and the split test measures, before the audit does, the share of held-out
    tasks whose shape a set learned without them would reject.

    Not emitted where a DOMAIN rule holds on the same place and checker (every value in the set has an allowed
    shape, so FORMAT could never fire first): `output_contracts.mining.miner.drop_subsumed`.

    Statistics: DOMAIN's monoids, over the shapes, per level: (pool, shape, fold, split) task counts and
    (pool, fold) calls and tasks. Shapes are computed once per distinct string of a part.
    """

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


#: This folder's miners, in the order the miner runs them.
MINERS = (FormatMiner,)
