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
from dataclasses import dataclass

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import (
    KIND_BIT,
    At,
    NodeCode,
    Operand,
    PathFinder,
    RuleEntry,
    Violation,
    broken,
    name,
)

#: The largest minimum a rule may state (it is carried in an 8-bit column of the operand table).
MAX_MIN = 255


@dataclass(frozen=True)
class LengthParams:
    """`{"min": m}`: the least number of elements."""

    min: int


class Length(NodeCode):
    name = "LENGTH"
    short = "LEN"
    summary = "an array shorter than every clean result's (an empty list where there was always one)"
    node_class = 6
    hit_cols = ("cid", "ridx", "path", "kind")

    def params(self, rule: Rule) -> LengthParams:
        m = rule.params.get("min")
        if not (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= MAX_MIN):
            raise self.bad(rule, f"LENGTH needs params.min, an integer in [1, {MAX_MIN}]")
        return LengthParams(m)

    def describe(self, rule: Rule) -> str:
        m = self.params(rule).min
        return f"{rule.paths[0] or '(result)'} has >= {m} item{'s' if m != 1 else ''}"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        m = self.params(rule).min
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if type(v) is list and len(v) < m]

    def witness(self, rule: Rule, at: At) -> Violation:
        m = self.params(rule).min
        n = len(at.observed) if isinstance(at.observed, list) else 0
        return Violation(
            self.name,
            rule.id,
            at.path,
            f">= {m} items",
            at.observed,
            True,
            f"{rule.tool} returned {n} item{'s' if n != 1 else ''} at {name(at.path)}; every one of "
            f"{rule.support.calls} clean results had at least {m}",
        )

    def node_mask(self, rule: Rule) -> int:
        return self.params(rule).min

    def keep(self) -> pl.Expr:
        return (pl.col("kbit") == KIND_BIT["array"]) & (pl.col("len") < pl.col("tmask").cast(pl.Int64))

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        return broken(hits.filter(pl.col("kind") == "array"))


CODE = Length()
