"""DOMAIN — `paths [P]`, params `{"values": [sorted strings]}`

*Qualifying example*: every string node at P. *Holds* per the table above and the chance argument below.
*Trivial cases*: ids and free text are excluded by the count tests (most of their values are rare);
a one-value domain is allowed when the value was seen often enough (a currency that is always `"USD"`).
*Catches*: a status outside the set (`"shippped"`, `"ontrac"`).

Checker semantics: every string node at P is one of values. Expected the list; observed the string.

**DOMAIN: counted in tasks, 50 tasks, each value in 3, stable across splits.** A categorical field is a
closed set only if the values seen are all the values there are, and the unit of evidence is the task:
the calls of one task read the same records again and again (a customer's order is read, modified and
read again), so a value seen 40 times in one task has been seen once. Good–Turing estimates the
probability that the next task shows a value never seen before as (values seen in exactly one task) /
(tasks); every value of a kept domain must be seen in ≥ 3 distinct tasks, so that estimate is 0 for
every kept domain, and a free-text field fails it first (its values are almost all seen once). With
few tasks a zero estimate means little, so the domain also needs ≥ 50 tasks and must be *stable across
task splits*: the tasks are dealt into 5 splits (by task order, independent of the folds), and the
(value, task) pairs whose value occurs in one split only — the pairs a set learned without that split
would reject, the cross-validated form of the same estimate — must be ≤ 1% of all pairs. Distinct
values must also stay ≤ pairs/10 and ≤ `--max-domain` (8). On real catalogues the per-tool samples are
what made domains short (`connectivity` learned as {Ethernet, Wi-Fi, wireless} by a write tool that
returns a few dozen orders; the catalogue also has `wired`): pooling is what fixes that, the task counts
are what keep a domain from being closed on one busy task's repetitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.mining_context import MiningContext, paths_one, support_ok
from output_contracts.codes.mining_frames import CLS_STR, Leaves, by_checker, cand_frame

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a task with a string at the pattern (pooled)"
SUPPORT = "≥ {min_support} tasks"
CONDITIONS = (
    "≤ `--max-domain` (8) values and ≤ (value, task) pairs / 10; each value in ≥ 3 tasks; "
    "values seen in one of 5 task splits only ≤ 1% of pairs"
)

DOMAIN_MIN_TASKS = 3  # each value seen in at least this many distinct tasks
DOMAIN_SPLITS = 5  # task splits the value set must be stable across ...
DOMAIN_MAX_UNSEEN = 0.01  # ... : (value, task) pairs of values seen in one split only, at most this share
DOMAIN_MAX_SHARE = 0.1  # distinct values <= (value, task) pairs * this
#: What the contract set records of these constants (its `params`).
CONSTANTS = {
    "min_value_tasks": DOMAIN_MIN_TASKS,
    "splits": DOMAIN_SPLITS,
    "max_unseen": DOMAIN_MAX_UNSEEN,
    "max_share": DOMAIN_MAX_SHARE,
}


def string_values(part: Leaves, pids: list[int]) -> pl.DataFrame:
    """Per (pid, str, fold) of one task part: how many nodes hold each string value at `pids` (what a
    declared enum is tested against: any value outside it refutes it)."""
    return (
        part.leaves.lazy()
        .filter((pl.col("side") == "result") & (pl.col("cls") == CLS_STR) & pl.col("pid").is_in(pids))
        .group_by("pid", "str", "fold")
        .agg(pl.len().alias("count"))
        .collect()
    )


def merge_string_values(ctx: MiningContext, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Per (tool, pattern, str, checker): node counts, merged from the parts' `string_values` rows."""
    per_fold = pl.concat(rows).join(ctx.data.patterns.select("pid", "tool", "pattern"), on="pid")
    return by_checker(per_fold, ["tool", "pattern", "str"], [pl.col("count").sum()], ctx.data.k)


def pool_strings(part: Leaves, members: pl.DataFrame) -> pl.DataFrame:
    """The string nodes of one task part at the members (pid, pool): pool, str, sc (its code), fold,
    task, cid."""
    return (
        part.result()
        .lazy()
        .filter((pl.col("cls") == CLS_STR) & pl.col("pid").is_in(members["pid"].implode()))
        .join(members.lazy(), on="pid")
        .select("pool", "str", "sc", "fold", "task", "cid")
        .collect()
    )


VALUE_COLS = ["pool", "str", "fold", "split", "vtasks", "calls"]


def value_counts(rows: pl.DataFrame) -> pl.DataFrame:
    """Per (pool, str, fold, split) of some string nodes (`pool_strings`): distinct tasks holding each
    value; and per (pool, fold) with a null `str`: distinct calls (`vtasks` holds tasks, `calls` calls)."""
    return pl.concat([value_tasks(rows), value_totals(rows)])


def value_tasks(rows: pl.DataFrame) -> pl.DataFrame:
    """The per-value rows of `value_counts` (from any rows with pool, str, fold, task)."""
    return (
        rows.group_by("pool", "str", "fold", (pl.col("task") % DOMAIN_SPLITS).cast(pl.UInt8).alias("split"))
        .agg(pl.col("task").n_unique().alias("vtasks"))
        .with_columns(pl.lit(0, pl.UInt32).alias("calls"))
        .select(VALUE_COLS)
    )


def value_totals(rows: pl.DataFrame) -> pl.DataFrame:
    """The per-(pool, fold) rows of `value_counts`: distinct tasks and calls, `str` and `split` null."""
    return (
        rows.group_by("pool", "fold")
        .agg(pl.col("task").n_unique().alias("vtasks"), pl.col("cid").n_unique().alias("calls"))
        .with_columns(pl.lit(None, pl.String).alias("str"), pl.lit(None, pl.UInt8).alias("split"))
        .select(VALUE_COLS)
    )


class DomainMiner:
    """The DOMAIN rule class.

    Qualifying example: a *task* with a string node at P in a clean result (other kinds are TYPE's business).

    Judged per pool (`output_contracts.mining.pools`): where several tools return the same object shape
    (every order-returning tool's `/items/*/options/connectivity`, and the catalogue's variant options), their
    observations are pooled before the value set is judged, and each member gets the pooled set — the set one
    tool alone would have cut short is what each tool gets.

    Keep only if, in the checker's data of the pool:
    - at least `min_support` DOMAIN (50) distinct tasks hold a string there (and `min_tasks`);
    - at most `max_domain` (8) distinct values, and at most 1 per DOMAIN_MAX_SHARE⁻¹ (10) (value, task) pairs;
    - every value seen in at least DOMAIN_MIN_TASKS (3) distinct tasks: a value seen in one or two tasks is
      the visible edge of a tail of values not seen at all (Good–Turing: the unseen mass is estimated by the
      share of values seen once, so a set is closed only when there are none);
    - the set is stable across the checker's task splits: tasks are dealt into DOMAIN_SPLITS (5) splits (by
      task order, independent of the folds), and the (value, task) pairs whose value occurs in one split only
      — the pairs a set learned without that split would reject — must stay below DOMAIN_MAX_UNSEEN (1%). This
      is the cross-validated form of the same Good–Turing estimate, and it is what the audit measures
      afterwards: the share of held-out tasks a value set misses.

    Statistics are monoids per (part, fold, split): value task counts per (pool, value, fold, split) and, per
    (pool, fold), distinct calls and tasks; they merge per checker like every other class.
    """

    codes = ("DOMAIN",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """Members (pid, pool) of the pools where some member, in some checker, has few enough
        distinct strings to be a domain (the per-part distinct count is a lower bound)."""
        strings = ctx.stats.filter(pl.col("cls") == CLS_STR).join(
            ctx.pools.select("tool", "pattern", "pool"), on=["tool", "pattern"]
        )
        cand = strings.filter(pl.col("ndist") <= ctx.params.max_domain)["pool"].unique()
        if cand.len() == 0:
            return None
        return ctx.pools.filter(pl.col("pool").is_in(cand.implode())).select("pid", "pool").sort("pid")

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        return None if plan is None else value_counts(pool_strings(part, plan))

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        ok = closed_sets(ctx, pl.concat(rows), "DOMAIN", ctx.params.max_domain).with_columns(
            pl.col("values").map_elements(_json_list, return_dtype=pl.String).alias("vjson")
        )
        out = (
            pool_members(ctx)
            .join(ok, on=["pool", "checker"])
            .with_columns(
                pl.lit("DOMAIN").alias("code"),
                paths_one(),
                pl.concat_str(pl.lit('{"values":'), pl.col("vjson"), pl.lit("}")).alias("params"),
                pl.col("tasks").alias("n"),
            )
        )
        return cand_frame(out)


def pool_members(ctx: MiningContext) -> pl.DataFrame:
    """Every (tool, pattern, checker) holding strings, with its pool and examples: who gets a pool's set."""
    return (
        ctx.stats.filter(pl.col("cls") == CLS_STR)
        .select("tool", "pattern", "checker", "ex")
        .join(ctx.pools.select("tool", "pattern", "pool"), on=["tool", "pattern"])
    )


def closed_sets(
    ctx: MiningContext, allrows: pl.DataFrame, code: str, max_values: int, per_task: bool = False
) -> pl.DataFrame:
    """Per (pool, checker) whose value set is closed (the keep-only-if above, `code`'s support):
    values (sorted list), tasks, calls. `allrows`: the parts' `value_counts` rows.

    `per_task`: the distinct-value share and the unseen mass are taken over tasks instead of (value, task)
    pairs, for values that come several to a string (FORMAT's charset parts: `4WQ150` is `6:9` and
    `6:A`), where counting pairs would dilute a rare part by the common ones beside it."""
    k = ctx.data.k
    totals = by_checker(
        allrows.filter(pl.col("str").is_null()),
        ["pool"],
        [pl.col("vtasks").sum().alias("tasks"), pl.col("calls").sum().alias("calls")],
        k,
    )
    per_split = by_checker(
        allrows.filter(pl.col("str").is_not_null()),
        ["pool", "str", "split"],
        [pl.col("vtasks").sum()],
        k,
    )
    per_value = per_split.group_by("pool", "str", "checker").agg(
        pl.col("vtasks").sum(),
        pl.len().alias("nsplit"),
    )
    per_pool = per_value.group_by("pool", "checker").agg(
        pl.col("str").sort().alias("values"),
        pl.len().alias("distinct"),
        pl.col("vtasks").min().alias("min_vtasks"),
        pl.col("vtasks").sum().alias("pairs"),
        pl.col("vtasks").filter(pl.col("nsplit") == 1).sum().alias("alone"),
    )
    base = pl.col("tasks") if per_task else pl.col("pairs")
    return per_pool.join(totals, on=["pool", "checker"]).filter(
        support_ok(ctx, code, n="tasks", tasks="tasks")
        & (pl.col("distinct") <= max_values)
        & (pl.col("distinct") <= base * DOMAIN_MAX_SHARE)
        & (pl.col("min_vtasks") >= DOMAIN_MIN_TASKS)
        & (pl.col("alone") <= base * DOMAIN_MAX_UNSEEN)
    )


def _json_list(values: pl.Series) -> str:
    from output_contracts.jsonutil import canonical_str

    return canonical_str(values.to_list())


#: This folder's miners, in the order the miner runs them.
MINERS = (DomainMiner,)
