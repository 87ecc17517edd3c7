"""LENGTH — `paths [P]`, params `{"min": m}`: every array at a pattern has at least m elements.

The miner writes `{"min": 1}`, "never empty": an endpoint that starts answering `[]` (deprecated,
filtered by a permissions change, a failed upstream call swallowed into an empty page) returns a value of
the right type with no field to miss, so no other code sees it.

Semantics: every array node at P has at least `min` elements; other kinds are TYPE's business.
Expected `">= m items"`; observed the array. A per-node code: over a corpus the hit's `len` column is
compared inside the join (the rule's minimum travels in `tmask`, so it is at most 255).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import InlineTest, ToolBuilder, nothing, when
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import KIND_BIT, RuleEntry, broken
from output_contracts.codes.length import Length
from output_contracts.codes.nodes import Operand, PathFinder


class LengthCheck(Length, NodeCheck):
    node_class = 6
    hit_cols = ("cid", "ridx", "path", "kind")

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        m = self.params(rule).min
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if type(v) is list and len(v) < m]

    def node_mask(self, rule: Rule) -> int:
        return self.params(rule).min

    def keep(self) -> pl.Expr:
        return (pl.col("kbit") == KIND_BIT["array"]) & (pl.col("len") < pl.col("tmask").cast(pl.Int64))

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        return broken(hits.filter(pl.col("kind") == "array"))

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        m = b.const(self.params(rule).min)
        test = InlineTest(
            nothing, nothing, when(b.hit(ri, ops[0].side), lambda v, t: f"{t} is list and len({v}) < {m}")
        )
        b.test_at(ops[0], ri, test)
        return True


CHECKS = (LengthCheck(),)
