"""DOMAIN — `paths [P]`, params `{"values": [sorted strings]}`: every string at a pattern is one of a
small set of values.

Semantics: every string node at P is one of `values` (other kinds are TYPE's business). Expected the
list; observed the string. A per-node code: over a corpus only string hits are kept inside the join, and
an anti-join with the allowed values finds the ones outside.
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
    outside,
    returned,
)
from output_contracts.jsonutil import canonical_str


@dataclass(frozen=True)
class DomainParams:
    """`{"values": [...]}`: the allowed strings, sorted."""

    values: tuple[str, ...]


class Domain(NodeCode):
    name = "DOMAIN"
    short = "DOM"
    summary = "a string outside the small set of values seen in clean results"
    node_class = 4
    hit_cols = ("cid", "ridx", "path", "kind", "str")

    def params(self, rule: Rule) -> DomainParams:
        values = rule.params.get("values")
        if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
            raise self.bad(rule, "DOMAIN needs params.values, a list of strings")
        return DomainParams(tuple(values))

    def describe(self, rule: Rule) -> str:
        values = [
            v if v and v.strip() == v and "," not in v else repr(v) for v in rule.params.get("values", [])
        ]
        return f"{rule.paths[0] or '(result)'} in {{{', '.join(values)}}}"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        allowed = frozenset(self.params(rule).values)
        return lambda nodes: [
            prefix + p for p, v in nodes.get(key, ()) if isinstance(v, str) and v not in allowed
        ]

    def witness(self, rule: Rule, at: At) -> Violation:
        values = list(self.params(rule).values)
        listed = ", ".join(canonical_str(v) for v in values)
        return Violation(
            self.name,
            rule.id,
            at.path,
            values,
            at.observed,
            True,
            f"{rule.tool} returned {returned(at.path, at.shown)}; every one of {rule.support.calls} clean "
            f"results had one of {listed}",
        )

    def keep(self) -> pl.Expr:
        return pl.col("kbit") == KIND_BIT["string"]

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        allowed = [(e.ridx, self.params(e.rule).values) for e in entries]
        return outside(hits.filter(pl.col("kind") == "string"), allowed, "str")


CODE = Domain()
