"""TYPE — `paths [P]`, params `{"kind": K}`: every node at a pattern has one JSON kind.

Semantics: every node at P has kind K, with `number` meaning int or float. Expected the kind; observed
the offending value. A per-node code: over a corpus, a hit is kept inside the join of leaves to
operands only when its kind is outside the rule's allowed kinds (`tmask`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import KIND_BIT, RuleEntry, broken
from output_contracts.codes.nodes import KIND_OF_TYPE, NUMERIC_KINDS, Operand, PathFinder, kind_of
from output_contracts.codes.type import Type


def allowed_kinds(want: str) -> int:
    """The KIND_BIT mask of the kinds a rule of kind `want` allows."""
    if want == "number":
        return KIND_BIT["int"] | KIND_BIT["float"]
    return KIND_BIT[want]


def _ok(v: Any, want: str) -> bool:
    k = kind_of(v)
    return k in NUMERIC_KINDS if want == "number" else k == want


class TypeCheck(Type, NodeCheck):
    node_class = 1
    keep_by_kind = True
    hit_cols = ("cid", "ridx", "path", "kind")

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        want = self.params(rule).kind
        ok_types = frozenset(
            t for t, k in KIND_OF_TYPE.items() if k == want or (want == "number" and k in NUMERIC_KINDS)
        )

        def type_ok(v: Any) -> bool:
            # The exact types of parsed JSON decide at once; anything else goes through `kind_of`.
            t = type(v)
            if t in ok_types:
                return True
            if t in KIND_OF_TYPE:
                return False
            return _ok(v, want)

        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if not type_ok(v)]

    def node_mask(self, rule: Rule) -> int:
        return allowed_kinds(self.params(rule).kind)

    def keep(self) -> pl.Expr:
        return (pl.col("tmask") & pl.col("kbit")) == 0

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        want = pl.DataFrame(
            {"ridx": [e.ridx for e in entries], "want": [self.params(e.rule).kind for e in entries]},
            schema={"ridx": pl.UInt32, "want": pl.String},
        )
        h = hits.join(want.lazy(), on="ridx")
        kind = pl.col("kind").cast(pl.String)
        bad = (
            pl.when(pl.col("want") == "number")
            .then(~kind.is_in(NUMERIC_KINDS))
            .otherwise(kind != pl.col("want"))
        )
        return broken(h.filter(bad))


CHECKS = (TypeCheck(),)
