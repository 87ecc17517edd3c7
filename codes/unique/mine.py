"""UNIQUE — `paths [A/*]` or `[A/*/f]`, params `{}`

*Qualifying example*: a list instance with ≥ 2 judged items (strings, or numbers below 2^53 in
magnitude); ≥ 30 lists from ≥ 300 tasks, none with a repeat. One rule per list: the scalar items, else
the first string field, else the first numeric field, in pattern order (a distinct count would pick the
id better but is not a monoid over task parts), else — a list of objects none of whose fields is unique on
its own — the composite identity of its items over all their scalar fields (2–16; `/flights/* unique by
(date, destination, flight_number, origin, price)`: a round trip may fly the same flight number twice,
never the same flight). Judged per pool, as LENGTH: the flights of a reservation are one list whichever
tool returns it, so the largest member's lists and tasks are the support and a repeat in any member
refutes every member. Pooling found what per-tool mining missed on τ-bench airline: one clean
`update_reservation_flights` result holds the same flight twice (the tool accepts a repeated flight), so
no tool's `/flights` is unique — per tool, the reader's rule would have fired on the next reservation
read after such an update. *Catches*: pagination drift repeating an item, a join that duplicated a row.

Checker semantics: within one list, no value (composite: no identity) repeats; reported at the second
and later occurrences.

**UNIQUE: 300 tasks.** "Never repeats an item" is, like LENGTH's "never empty", a claim about a rare
event. Tasks are the independent unit; after zero repeats in t tasks the 95% upper bound of the per-task
rate is 1 − 0.05^(1/t) ≈ 3/t, which is 1% — the audit's whole budget of one spurious receipt per 100
clean episodes — at t = 300. A field whose values come from a small set (a quantity, a colour) repeats by
chance within a few hundred lists: the data refutes UNIQUE there, no threshold needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.mining_context import MiningContext, paths_one, support_ok
from output_contracts.codes.mining_frames import (
    CLS_NUM,
    CLS_OBJ,
    CLS_STR,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from output_contracts.codes.unique.items import EXACT_LIMIT, MAX_FIELDS, item_split
from output_contracts.traces.pointers import WILD_TOKENS

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a list with ≥ 2 judged items at `A/*` or `A/*/f` (pooled)"
SUPPORT = "≥ {min_support} lists, ≥ {min_tasks} tasks"
CONDITIONS = "no repeat; one rule per list: a field, else the items' composite identity"


class UniqueMiner:
    """The UNIQUE rule class.

    One rule per list (the same list repeated shows at every one of its fields). (The field with the most
    distinct values would name the id best, but a distinct count is not a monoid over task parts: the choice
    would depend on how the corpus was read.)

    Statistics: per (part, fold, pid): qualifying instances, instances with a repeat, and distinct tasks
    holding a qualifying instance (each task lies in one part and one fold, so they add up).
    """

    codes = ("UNIQUE",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """(pid, after, lid) of the candidate patterns: `A/*` or `A/*/f` result patterns holding a string
        or number in the full checker's data; `lid` is the pid of the list pattern `A/*` of a field that
        takes part in its list's composite candidate (a list of objects with >= 2 such fields), else
        null."""
        held = (
            ctx.stats.filter(pl.col("cls").is_in([CLS_NUM, CLS_STR]) & (pl.col("checker") == -1))
            .select("tool", "pattern")
            .unique()
        )
        pats = ctx.data.patterns.filter((pl.col("side") == "result") & pl.col("wild")).join(
            held, on=["tool", "pattern"]
        )
        rows = [
            (pid, a)
            for pid, pat in pats.select("pid", "pattern").iter_rows()
            if (a := item_split(pat)) is not None
        ]
        if not rows:
            return None
        plan = pl.DataFrame(rows, schema={"pid": pl.UInt32, "after": pl.Int64}, orient="row")
        # composite candidates: the fields of the items of one list of objects
        objects = ctx.stats.filter((pl.col("cls") == CLS_OBJ) & (pl.col("checker") == -1)).select(
            "tool", "pattern"
        )
        lists = (
            ctx.data.patterns.filter(pl.col("side") == "result")
            .join(objects, on=["tool", "pattern"], how="semi")
            .filter(pl.col("pattern").str.ends_with("/*"))
            .select(pl.col("pid").cast(pl.UInt32).alias("lid"), "tool", pl.col("pattern").alias("list"))
        )
        fields = (
            pats.select(pl.col("pid").cast(pl.UInt32), "tool", "pattern")
            .join(plan.filter(pl.col("after") == 1), on="pid")
            .with_columns(pl.col("pattern").str.replace(r"/[^/]*$", "").alias("list"))
            .join(lists, on=["tool", "list"])
        )
        enough = fields.group_by("lid").len().filter(pl.col("len").is_between(2, MAX_FIELDS)).select("lid")
        comp = fields.join(enough, on="lid").select("pid", "lid")
        return plan.join(comp, on="pid", how="left").sort("pid")

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        # The list instance: the concrete path before the last index (`/xs/3` -> `/xs`, `/xs/3/id` ->
        # `/xs`). Where the list's index is the pattern's only wildcard the instance is the pattern's own
        # prefix, one per call, so it is not read from the path at all (`inst` 0); only patterns under
        # another wildcard (nested lists, map keys) cut and hash their paths. The value is a 64-bit
        # hash, and so is the instance (grouping on them is several times faster than on text; a
        # collision could only refute a rule, never admit one). A call lies in one task and one fold, so
        # they are carried, not grouped by.
        path = pl.col("path")
        value = (
            pl.when(pl.col("cls") == CLS_NUM)
            .then(pl.when(pl.col("num") == 0).then(0.0).otherwise(pl.col("num")).hash())
            .otherwise(pl.col("str").hash() ^ pl.lit(0x9E3779B97F4A7C15, pl.UInt64))
        )
        judged = pl.col("cls").is_in([CLS_NUM, CLS_STR]) & (
            (pl.col("cls") == CLS_STR) | (pl.col("num").abs() < EXACT_LIMIT)
        )
        pats = plan.join(ctx.data.patterns.select(pl.col("pid").cast(pl.UInt32), "pattern"), on="pid")
        nested = [
            pid
            for pid, pattern in pats.select("pid", "pattern").iter_rows()
            if sum(t in WILD_TOKENS for t in pattern.split("/")) > 1
        ]
        field = (
            pl.col("pattern").str.len_chars() - pl.col("pattern").str.replace(r"/[^/]*$", "").str.len_chars()
        )
        cuts = pats.select(
            "pid",
            "lid",
            pl.col("pid").is_in(nested).alias("nested"),
            # characters of "/<field>" after the item's index (none for `A/*`)
            pl.when(pl.col("after") == 0).then(0).otherwise(field).cast(pl.UInt32).alias("cut"),
        )
        item = path.str.head(path.str.len_chars() - pl.col("cut"))
        rows = (
            part.result()
            .lazy()
            .filter(judged & pl.col("pid").is_in(plan["pid"].implode()))
            .select("cid", "task", "fold", "pid", "path", value.alias("val"))
            .join(cuts.lazy(), on="pid")
            .collect()
        )
        flat = rows.filter(~pl.col("nested")).with_columns(pl.lit(0, pl.UInt64).alias("inst"))
        deep = rows.filter(pl.col("nested")).with_columns(
            item.str.replace(r"/[0-9]+$", "").hash().alias("inst")
        )
        rows = pl.concat([flat, deep]) if deep.height else flat
        lists = (
            rows.lazy()
            .group_by("cid", "pid", "inst")
            .agg(
                pl.len().alias("items"),
                pl.col("val").n_unique().alias("distinct"),
                pl.col("task").first(),
                pl.col("fold").first(),
            )
            .filter(pl.col("items") >= 2)
        )
        per_list = [
            pl.len().alias("lists"),
            (pl.col("distinct") < pl.col("items")).sum().alias("repeats"),
            pl.col("task").n_unique().alias("tasks"),
            pl.col("cid").n_unique().alias("calls"),
            fold_examples(),
        ]
        single = lists.group_by("pid", "fold").agg(per_list).with_columns(pl.lit(False).alias("comp"))
        if plan.filter(pl.col("lid").is_not_null()).height == 0:
            return single.collect()
        # an item's identity: the XOR of its (field, value) hashes (each field once per item, so nothing
        # cancels; a collision could only refute); per list instance, items vs distinct identities
        items = (
            rows.lazy()
            .filter(pl.col("lid").is_not_null())
            .with_columns(
                (pl.col("pid").cast(pl.UInt64).hash() ^ pl.col("val")).alias("fv"), item.hash().alias("item")
            )
            .group_by("cid", "lid", "inst", "item")
            .agg(pl.col("fv").bitwise_xor().alias("ident"), pl.col("task").first(), pl.col("fold").first())
            .group_by("cid", "lid", "inst")
            .agg(
                pl.len().alias("items"),
                pl.col("ident").n_unique().alias("distinct"),
                pl.col("task").first(),
                pl.col("fold").first(),
            )
            .filter(pl.col("items") >= 2)
        )
        comp = (
            items.group_by(pl.col("lid").alias("pid"), "fold")
            .agg(per_list)
            .with_columns(pl.lit(True).alias("comp"))
        )
        return pl.concat(pl.collect_all([single, comp]))

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        merged = by_checker(
            pl.concat(rows),
            ["pid", "comp"],
            [
                pl.col("lists").sum(),
                pl.col("repeats").sum(),
                pl.col("tasks").sum(),
                pl.col("calls").sum(),
                merged_examples(),
            ],
            ctx.data.k,
        )
        # judged per pool (`output_contracts.mining.pools`): the flights of a reservation are one list whichever
        # tool returns the reservation, so a repeat in any member refutes all, and the largest member's
        # lists and tasks are the support (a lower bound of the pool's)
        pools = ctx.pools.select(pl.col("pid").cast(pl.UInt32), "pool")
        merged = merged.join(pools, on="pid", how="left").with_columns(
            pl.coalesce("pool", pl.col("pid") + 1_000_000_000).alias("pool")
        )
        pooled = merged.group_by("pool", "comp", "checker").agg(
            pl.col("repeats").sum().alias("p_repeats"),
            pl.col("lists").max().alias("p_lists"),
            pl.col("tasks").max().alias("p_tasks"),
            pl.col("calls").max().alias("p_calls"),
        )
        merged = (
            merged.join(pooled, on=["pool", "comp", "checker"])
            .drop("repeats", "lists", "tasks", "calls")
            .rename({"p_repeats": "repeats", "p_lists": "lists", "p_tasks": "tasks", "p_calls": "calls"})
        )
        held_all = merged.filter((pl.col("repeats") == 0) & support_ok(ctx, "UNIQUE", n="lists")).join(
            ctx.data.patterns.select(pl.col("pid").cast(pl.UInt32), "tool", "pattern"), on="pid"
        )
        held = held_all.filter(~pl.col("comp"))
        comps = held_all.filter(pl.col("comp"))
        if held_all.height == 0:
            return cand_frame()
        strings = ctx.stats.filter(pl.col("cls") == CLS_STR).select(
            "tool", "pattern", "checker", pl.lit(True).alias("is_str")
        )
        is_items = pl.col("pattern").str.ends_with("/*")
        best = (
            held.join(strings, on=["tool", "pattern", "checker"], how="left")
            .with_columns(
                pl.when(is_items)
                .then(pl.col("pattern"))
                .otherwise(pl.col("pattern").str.replace(r"/[^/]*$", ""))
                .alias("list"),
                pl.when(is_items).then(0).when(pl.col("is_str")).then(1).otherwise(2).alias("rank"),
            )
            .sort(["rank", "pattern"])
            .group_by("tool", "list", "checker", maintain_order=True)
            .first()
        )
        out = best.with_columns(
            pl.lit("UNIQUE").alias("code"),
            paths_one(),
            pl.lit("{}").alias("params"),
            pl.col("lists").alias("n"),
        )
        # a list's composite identity, where no single field of it is unique in that checker
        fields = (
            plan.filter(pl.col("lid").is_not_null())
            .join(ctx.data.patterns.select(pl.col("pid").cast(pl.UInt32), "pattern"), on="pid")
            .group_by("lid")
            .agg(pl.col("pattern").sort().alias("paths"))
        )
        comp = (
            comps.rename({"pattern": "list"})
            .join(out.select("tool", "list", "checker"), on=["tool", "list", "checker"], how="anti")
            .join(fields, left_on="pid", right_on="lid")
            .with_columns(
                pl.lit("UNIQUE").alias("code"), pl.lit("{}").alias("params"), pl.col("lists").alias("n")
            )
        )
        return pl.concat([cand_frame(out), cand_frame(comp)])


#: This folder's miners, in the order the miner runs them.
MINERS = (UniqueMiner,)
