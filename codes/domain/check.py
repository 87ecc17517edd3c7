"""DOMAIN — `paths [P]`, params `{"values": [sorted strings]}`: every string at a pattern is one of a
small set of values.

Semantics: every string node at P is one of `values` (other kinds are TYPE's business). Expected the
list; observed the string. A per-node code: over a corpus only string hits are kept inside the join, and
an anti-join with the allowed values finds the ones outside.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.domain import Domain
from output_contracts.codes.engine.compiled import InlineTest, ToolBuilder, nothing, when
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import KIND_BIT, RuleEntry, outside
from output_contracts.codes.nodes import Operand, PathFinder


class DomainCheck(Domain, NodeCheck):
    node_class = 4
    hit_cols = ("cid", "ridx", "path", "kind", "str")

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        allowed = frozenset(self.params(rule).values)
        return lambda nodes: [
            prefix + p for p, v in nodes.get(key, ()) if isinstance(v, str) and v not in allowed
        ]

    def keep(self) -> pl.Expr:
        return pl.col("kbit") == KIND_BIT["string"]

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        allowed = [(e.ridx, self.params(e.rule).values) for e in entries]
        return outside(hits.filter(pl.col("kind") == "string"), allowed, "str")

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        hit = b.hit(ri, ops[0].side)
        allowed = b.const(frozenset(self.params(rule).values))
        test = InlineTest(
            lambda v, path: [f"if {v} not in {allowed}:", f"    {hit(path)}"],
            nothing,
            when(hit, lambda v, t: f"isinstance({v}, str) and {v} not in {allowed}"),
        )
        b.test_at(ops[0], ri, test)
        return True


CHECKS = (DomainCheck(),)
