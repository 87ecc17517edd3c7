"""DATE_ORDER — `paths [A, B]`, params `{"tz": "date" | "naive" | "aware"}`

Values are ISO-8601: dates `YYYY-MM-DD`; date-times `YYYY-MM-DD[T| ]hh:mm[:ss[.fraction]]` without a zone
(`naive`) or with `Z` / `±hh[:mm]` (`aware`, compared as instants: `10:00+02:00` is before `09:30Z`). The
parser (`output_contracts.codes.dates.parse_iso`, vectorised with polars) refuses anything else, including
impossible dates (Feb 30) and hour 24. *Qualifying example*: an instance where both A and B are present —
a call, or with wildcards the same array element (`/flights/*/depart`, `/flights/*/arrive` pair by
index: same prefix up to the last `*`). *Holds* when both parse in the rule's mode and A ≤ B, in every
qualifying instance: so a field mixing naive and aware values, or holding nulls where the other date is
present, gets no rule — naive and aware are never compared silently. *Trivial cases*: at least one
instance with A < B (two always-equal fields are an equality); ≥ 7 tasks (below). Every holding pair is
emitted, including A ≤ C when A ≤ B ≤ C also hold: the middle date may be absent where the outer two are
present. *Catches*: swapped dates, an end before its start.

Checker semantics: A ≤ B in the rule's tz mode; a value that does not parse in that mode is a violation.
Violation path = B's concrete path; expected `">= <A's path> (<A value>)"`; observed B's value.

**DATE_ORDER: 7 tasks.** If two date fields were unrelated, each task would order them one way or the
other with probability about 1/2; seven tasks agreeing by chance has probability 0.5^7 < 1% (Daikon's
ordering test, counted in tasks instead of rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.dates import MODES, le, lt, parse_iso
from output_contracts.codes.mining_context import MiningContext
from output_contracts.codes.mining_frames import (
    CLS_STR,
    FULL,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "an instance with both paths present"
SUPPORT = "≥ {min_support} calls, ≥ {min_tasks} tasks"
CONDITIONS = "A < B at least once"

#: The pattern up to and including its last wildcard token (`*`, or `~*` for a map key).
WILD_PREFIX = r"^(.*(?:^|/)~?\*)(?:/[^*]*)?$"


def date_patterns(ctx: MiningContext) -> pl.DataFrame:
    """(tool, pattern, pid) of result strings that look like ISO dates in at least one clean call."""
    dated = ctx.stats.filter((pl.col("checker") == FULL) & (pl.col("n_date") > 0)).select("tool", "pattern")
    return (
        ctx.data.patterns.filter(pl.col("side") == "result")
        .join(dated.unique(), on=["tool", "pattern"])
        .select("tool", "pattern", "pid")
        .sort("pid")
    )


class DateOrderMiner:
    """The DATE_ORDER rule class.

    Qualifying example: an instance (a call, or an array element) where both A and B are present, whatever
    their kind. It agrees with the rule when both parse in the rule's mode and A <= B; a null, a number, a
    naive time where aware ones are expected, an unparseable string: all are counterexamples, so a field
    mixing naive and aware values gets no rule in either mode.
    """

    codes = ("DATE_ORDER",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        cands = date_patterns(ctx)
        if cands.height < 1:
            return None
        cands = cands.with_columns(
            pl.col("pattern").str.extract(WILD_PREFIX, 1).fill_null("").alias("group")
        ).with_columns(pl.col("group").str.count_matches("/").alias("depth"))
        # Only groups with two or more date-like patterns can hold a pair.
        cands = cands.filter(pl.len().over("tool", "group") >= 2)
        if cands.height == 0:
            return None
        # Integer keys for the pairing join: a group id per (tool, group), the instance as a hash
        # (0 for paths without wildcards), the pattern id; names come back after aggregating.
        return cands.with_columns(pl.struct("tool", "group").rank("dense").cast(pl.UInt32).alias("gid"))

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        cands: pl.DataFrame = plan
        inst = pl.col("path").str.slice(
            0,
            # the pattern after its last `*` has no index, so it ends the path verbatim: cut it off
            pl.col("path").str.len_chars()
            - (pl.col("pattern").str.len_chars() - pl.col("group").str.len_chars()),
        )
        nodes = (
            part.scan_paths(cands["pid"].to_list())
            .join(cands.lazy().select("pid", "gid", "depth", "pattern", "group"), on="pid", how="inner")
            .with_columns(
                pl.when(pl.col("depth") == 0).then(pl.lit(0, pl.UInt64)).otherwise(inst.hash()).alias("ih"),
                pl.when(pl.col("cls") == CLS_STR).then(pl.col("sc")).alias("sc"),
            )
            .select("cid", "task", "fold", "gid", "ih", "pid", "sc", "str")
            .collect()
        )
        # each distinct string parsed once (the calls of a task repeat the same dates), joined back on
        # its code; non-strings (a null code) parse as null strings do
        parsed = parse_iso(
            nodes.select("sc", pl.when(pl.col("sc").is_not_null()).then(pl.col("str")).alias("s")).unique(
                "sc", keep="any"
            ),
            "s",
        ).drop("s")
        nodes = nodes.drop("str").join(parsed, on="sc", how="left", nulls_equal=True).drop("sc")
        b = nodes.select(
            "cid",
            "gid",
            "ih",
            pl.col("pid").alias("b"),
            pl.col("mode").alias("mode_b"),
            pl.col("us").alias("us_b"),
            pl.col("ns").alias("ns_b"),
        )
        pairs = (
            nodes.rename({"pid": "a"})
            .join(b, on=["cid", "gid", "ih"], how="inner")
            .filter(pl.col("a") != pl.col("b"))
        )
        aggs: list[pl.Expr] = [
            pl.len().alias("n_both"),
            pl.col("cid").n_unique().alias("calls"),
            pl.col("task").n_unique().alias("tasks"),
            fold_examples(),
        ]
        le_ab = le(pl.col("us"), pl.col("ns"), pl.col("us_b"), pl.col("ns_b"))
        lt_ab = lt(pl.col("us"), pl.col("ns"), pl.col("us_b"), pl.col("ns_b"))
        for i, m in enumerate(MODES, start=1):
            same = (pl.col("mode") == i) & (pl.col("mode_b") == i)
            aggs.append((same & le_ab).sum().alias(f"ok_{m}"))
            aggs.append((same & lt_ab).sum().alias(f"lt_{m}"))
        return pairs.group_by("a", "b", "fold").agg(aggs)

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None:
            return cand_frame()
        names = ctx.data.patterns.select("pid", "tool", "pattern")
        per_fold = (
            pl.concat(rows)
            .join(names.rename({"pid": "a", "pattern": "pa"}), on="a")
            .join(names.select(pl.col("pid").alias("b"), pl.col("pattern").alias("pb")), on="b")
            .drop("a", "b")
            .rename({"pa": "a", "pb": "b"})
        )
        merged = by_checker(
            per_fold,
            ["tool", "a", "b"],
            [
                pl.col("n_both").sum(),
                pl.col("calls").sum(),
                pl.col("tasks").sum(),
                *[pl.col(f"ok_{m}").sum() for m in MODES],
                *[pl.col(f"lt_{m}").sum() for m in MODES],
                merged_examples(),
            ],
            ctx.data.k,
        ).filter(
            (pl.col("calls") >= ctx.params.needed("DATE_ORDER"))
            & (pl.col("tasks") >= ctx.params.tasks_needed("DATE_ORDER"))
        )
        out = []
        for m in MODES:
            out.append(
                merged.filter((pl.col(f"ok_{m}") == pl.col("n_both")) & (pl.col(f"lt_{m}") > 0)).with_columns(
                    pl.lit("DATE_ORDER").alias("code"),
                    pl.concat_list("a", "b").alias("paths"),
                    pl.lit(f'{{"tz":"{m}"}}').alias("params"),
                    pl.col("calls").alias("n"),
                )
            )
        return cand_frame(pl.concat(out))


#: This folder's miners, in the order the miner runs them.
MINERS = (DateOrderMiner,)
