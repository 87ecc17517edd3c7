"""POSITIVE and NONNEG — `paths [P]`, params `{}`: every number at a pattern is > 0, or >= 0.

Semantics: every int/float node at P is > 0 (POSITIVE) or >= 0 (NONNEG); other kinds are TYPE's
business. Expected `"> 0"` / `">= 0"`; observed the number. Per-node codes: over a corpus, only the
numbers that break the bound are kept inside the join.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import (
    NUMERIC_BITS,
    NUMERIC_KINDS,
    At,
    NodeCode,
    Operand,
    PathFinder,
    RuleEntry,
    Violation,
    broken,
    is_num,
    name,
)


class Bound(NodeCode):
    """A sign bound: `breaks_expr` on the `num` column, `op` in text; each subclass writes its `find`
    with the comparison inline (the per-call hot path)."""

    op: ClassVar[str]  # "> 0"
    hit_cols = ("cid", "ridx", "path", "kind", "num")

    @staticmethod
    def breaks_expr() -> pl.Expr:
        raise NotImplementedError

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} {self.op}"

    def witness(self, rule: Rule, at: At) -> Violation:
        return Violation(
            self.name,
            rule.id,
            at.path,
            self.op,
            at.observed,
            True,
            f"{rule.tool} returned {name(at.path)}={at.shown}; every one of {rule.support.calls} clean "
            f"results had {name(at.path)} {self.op}",
        )

    def keep(self) -> pl.Expr:
        return ((pl.col("kbit") & NUMERIC_BITS) != 0) & self.breaks_expr()

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        h = hits.filter(pl.col("kind").cast(pl.String).is_in(NUMERIC_KINDS))
        return broken(h.filter(self.breaks_expr()))


class Positive(Bound):
    name = "POSITIVE"
    short = "POS"
    summary = "a number that was > 0 in every clean result is <= 0"
    node_class = 2
    op = "> 0"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if is_num(v) and v <= 0]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        return pl.col("num") <= 0


class Nonneg(Bound):
    name = "NONNEG"
    short = "NNEG"
    summary = "a number that was >= 0 in every clean result is negative"
    node_class = 3
    op = ">= 0"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if is_num(v) and v < 0]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        return pl.col("num") < 0


POSITIVE = Positive()
NONNEG = Nonneg()
