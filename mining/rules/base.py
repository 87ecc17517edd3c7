"""The interface every rule class implements, and the context it mines from.

A rule class turns the clean mining data into candidate rules for *every checker at once*: it returns a
frame with one row per (checker, rule) (`contracts.mining.data.CAND_SCHEMA`), where checker -1 is the
full checker and 0..k-1 the fold checkers. Each class computes per-fold monoid statistics and merges
them with `contracts.mining.data.by_checker`, so it never looks at the data more than once per fold
split. The miner then applies nothing else: what a class returns has met its class's keep-only-if.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import polars as pl

from contracts.jsonutil import canonical_str
from contracts.mining.data import MiningData
from contracts.mining.params import MineParams
from contracts.traces.registry import Registry


@dataclass(frozen=True)
class MiningContext:
    """What a rule class may read: the clean data, merged path statistics, parameters and registry."""

    data: MiningData
    stats: pl.DataFrame  # contracts.mining.data.path_stats
    params: MineParams
    registry: Registry | None


class RuleClass(Protocol):
    """One rule class (a module under `contracts.mining.rules`)."""

    codes: Sequence[str]

    def mine(self, ctx: MiningContext) -> pl.DataFrame:
        """Candidate rules per checker (CAND_SCHEMA), each already meeting the class's keep-only-if."""
        ...


def support_ok(ctx: MiningContext, code: str, n: str = "n", tasks: str = "tasks") -> pl.Expr:
    """The support part of keep-only-if: enough qualifying examples and distinct tasks."""
    return (pl.col(n) >= ctx.params.needed(code)) & (pl.col(tasks) >= ctx.params.tasks_needed(code))


def params_json(value: object) -> str:
    """Canonical JSON text of a rule's params (the form rule ids are computed from)."""
    return canonical_str(value)


def paths_one(col: str = "pattern") -> pl.Expr:
    """A one-element `paths` list from a pattern column."""
    return pl.concat_list(pl.col(col)).alias("paths")
