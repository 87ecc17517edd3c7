"""What POSITIVE and NONNEG share: a bound on every number at a pattern (`output_contracts.rules.positive`,
`output_contracts.rules.nonneg`).

Semantics: every int/float node at P is > 0 (POSITIVE) or >= 0 (NONNEG); other kinds are TYPE's
business. Expected `"> 0"` / `">= 0"`; observed the number. Per-node codes: over a corpus, only the
numbers that break the bound are kept inside the join.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import polars as pl

from output_contracts.rules.base import (
    NUMERIC_BITS,
    NUMERIC_KINDS,
    At,
    NodeCode,
    RuleEntry,
    Violation,
    broken,
    name,
)
from output_contracts.rules.model import Rule


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
