"""The evaluation of the sign codes: every number at a pattern is > 0 (POSITIVE), or >= 0 (NONNEG).

Semantics: every int/float node at P is > 0 (POSITIVE) or >= 0 (NONNEG); other kinds are TYPE's
business. Expected `"> 0"` / `">= 0"`; observed the number. Per-node codes: over a corpus, only the
numbers that break the bound are kept inside the join.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import InlineTest, ToolBuilder, nothing, when
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import NUMERIC_BITS, RuleEntry, broken
from output_contracts.codes.nodes import NUMERIC_KINDS, Operand, PathFinder, is_num
from output_contracts.codes.sign import Nonneg, Positive, Sign


class Bound(Sign, NodeCheck):
    """A sign bound's evaluation: `breaks_expr` on the `num` column; each code writes its `find` with the
    comparison inline (the per-call hot path)."""

    hit_cols = ("cid", "ridx", "path", "kind", "num")

    #: the comparison with 0 that breaks the bound (`<=` for `> 0`)
    breaks: ClassVar[str]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        raise NotImplementedError

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        hit, op = b.hit(ri, ops[0].side), self.breaks
        test = InlineTest(
            nothing,
            when(hit, lambda v, t: f"{v} {op} 0"),
            when(
                hit,
                lambda v, t: (
                    f"(({t} is int or {t} is float) or ({t} not in _KOT and _is_num({v}))) and {v} {op} 0"
                ),
            ),
        )
        b.test_at(ops[0], ri, test)
        return True

    def keep(self) -> pl.Expr:
        return ((pl.col("kbit") & NUMERIC_BITS) != 0) & self.breaks_expr()

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        h = hits.filter(pl.col("kind").cast(pl.String).is_in(NUMERIC_KINDS))
        return broken(h.filter(self.breaks_expr()))


class PositiveCheck(Positive, Bound):
    node_class = 2
    breaks = "<="

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if is_num(v) and v <= 0]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        return pl.col("num") <= 0


class NonnegCheck(Nonneg, Bound):
    node_class = 3
    breaks = "<"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if is_num(v) and v < 0]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        return pl.col("num") < 0


CHECKS = (PositiveCheck(), NonnegCheck())
