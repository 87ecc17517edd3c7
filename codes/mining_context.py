"""The interface every rule class implements, and the context it mines from.

A rule class turns the clean mining data into candidate rules for *every checker at once*: it returns a
frame with one row per (checker, rule) (`output_contracts.codes.mining_frames.CAND_SCHEMA`), where checker -1 is the
full checker and 0..k-1 the fold checkers. It works in three steps, so that the corpus can be read one
task part at a time (`output_contracts.mining.data.MiningData.parts`):

- `plan(ctx)`: what to count, decided from corpus-wide facts only (the merged path statistics, the
  pattern table, the bounded candidate sample);
- `scan(ctx, part, plan)`: per-fold monoid statistics of one task part (None when there is nothing to
  count);
- `finish(ctx, plan, rows)`: merge the parts' rows per checker (`output_contracts.codes.mining_frames.by_checker`) and
  keep what meets the class's keep-only-if. The miner applies nothing else.

A class whose rows per part grow with the corpus may also define `compact(rows)`: the parts' rows so
far merged into one frame of the same columns and types (the monoid's own merge, so that `finish` on
it gives exactly what it gives on the rows), which the miner calls every `COMPACT_AFTER` parts; its
memory then follows the distinct keys, not the number of parts.

Because every statistic is a monoid over task parts, the result does not depend on how many parts the
corpus was read in (a test mines the same corpus in one part and in several and compares the bytes).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from output_contracts.codes.mine_params import MineParams
from output_contracts.codes.mining_frames import Leaves, low_octave_aggs
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.mining_view_reader import View
from output_contracts.traces.tool_registry import Registry


class CleanData(Protocol):
    """What a miner may read of the clean mining data besides its parts' leaves (the driver's
    `output_contracts.mining.data.MiningData` is one): the corpus, every clean call (cid, task, tool,
    fold), the pattern table (pid -> tool, side, pattern, wild, kinds) and the ids of some of its
    patterns (`pids`), the number of folds and the corpus's mining view, if it has one."""

    @property
    def corpus(self) -> Corpus: ...
    @property
    def calls(self) -> pl.DataFrame: ...
    @property
    def patterns(self) -> pl.DataFrame: ...
    @property
    def k(self) -> int: ...
    @property
    def view(self) -> View | None: ...
    def pids(self, sel: pl.DataFrame) -> list[int]:
        """Pattern ids of the (tool, pattern[, side]) rows of `sel` (side defaults to result)."""
        ...


@dataclass(frozen=True)
class MiningContext:
    """What a rule class may read: the clean data, merged path statistics, parameters and registry."""

    data: CleanData
    stats: pl.DataFrame  # output_contracts.mining.data.merge_path_stats
    params: MineParams
    registry: Registry | None
    sample: Leaves  # the candidate sample's leaves (`output_contracts.mining.data.sample_filter`)
    num_pids: pl.Series  # ids of the patterns holding a number in some clean call (either side)
    pools: pl.DataFrame  # pid, tool, pattern, pool of result patterns (`output_contracts.mining.pools.pools`)

    @functools.cached_property
    def pooled(self) -> pl.DataFrame:
        """`pooled_stats` of this context, computed once: five rule classes read it."""
        return _pooled_stats(self)


class RuleClass(Protocol):
    """One rule class: a code folder's miner (its `mine.MINERS`, `output_contracts.codes.table.miners`)."""

    @property
    def codes(self) -> Sequence[str]:
        """The property codes this class emits."""
        ...

    def plan(self, ctx: MiningContext) -> Any:
        """What `scan` counts, from corpus-wide facts (None: nothing to count)."""
        ...

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        """Per-fold monoid rows of one task part."""
        ...

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """Candidate rules per checker (CAND_SCHEMA), each already meeting the class's keep-only-if."""
        ...


class FromStats:
    """Base of the classes that need nothing but the merged path statistics (REQUIRED, TYPE, sign)."""

    def plan(self, ctx: MiningContext) -> Any:
        return None

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        return None

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        return self.from_stats(ctx)

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        raise NotImplementedError


def pooled_stats(ctx: MiningContext) -> pl.DataFrame:
    """`_pooled_stats(ctx)`, computed once per context (`MiningContext.pooled`)."""
    return ctx.pooled


def _pooled_stats(ctx: MiningContext) -> pl.DataFrame:
    """The merged path statistics of every (tool, pattern, cls, checker) with its pool's beside them.

    Added columns, per (pool, cls, checker): `p_n`, `p_calls`, `p_tasks` (the largest member's: a
    lower bound of the pool's distinct count, so a threshold met on them is met), `p_n_int_all` (every
    number of every member an int), `p_min`, `p_max`, `p_min_len`, `p_all_date` (every string of every member starts like an ISO date),
    `p_min_year`, `p_max_year`, `p_lowbin`, `p_n_low1`, `p_n_low2` (`output_contracts.codes.mining_frames.low_octave_aggs` over the
    members: task counts summed, an upper bound of the distinct count),
    `p_ncls` (value classes in the pool at this checker). A pattern alone in its pool gets its own
    statistics back (`output_contracts.mining.pools`)."""
    s = ctx.stats.join(ctx.pools.select("tool", "pattern", "pool"), on=["tool", "pattern"], how="left")
    per = s.group_by("pool", "cls", "checker").agg(
        pl.col("n").max().alias("p_n"),
        pl.col("calls").max().alias("p_calls"),
        pl.col("tasks").max().alias("p_tasks"),
        (pl.col("n_int").sum() == pl.col("n").sum()).alias("p_n_int_all"),
        pl.col("min").min().alias("p_min"),
        pl.col("max").max().alias("p_max"),
        pl.col("min_len").min().alias("p_min_len"),
        (pl.col("n_date") == pl.col("n")).all().alias("p_all_date"),
        pl.col("min_year").min().alias("p_min_year"),
        pl.col("max_year").max().alias("p_max_year"),
        *low_octave_aggs("p_"),
    )
    ncls = s.group_by("pool", "checker").agg(pl.col("cls").n_unique().alias("p_ncls"))
    return s.join(per, on=["pool", "cls", "checker"], how="left").join(
        ncls, on=["pool", "checker"], how="left"
    )


def support_ok(ctx: MiningContext, code: str, n: str = "n", tasks: str = "tasks") -> pl.Expr:
    """The support part of keep-only-if: enough qualifying examples and distinct tasks."""
    return (pl.col(n) >= ctx.params.needed(code)) & (pl.col(tasks) >= ctx.params.tasks_needed(code))


def paths_one(col: str = "pattern") -> pl.Expr:
    """A one-element `paths` list from a pattern column."""
    return pl.concat_list(pl.col(col)).alias("paths")
