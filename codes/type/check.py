"""TYPE — `paths [P]`, params `{"kind": K}`: every node at a pattern has one JSON kind.

Semantics: every node at P has kind K, with `number` meaning int or float. Expected the kind; observed
the offending value. A per-node code: over a corpus, a hit is kept inside the join of leaves to
operands only when its kind is outside the rule's allowed kinds (`tmask`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import (
    KIND_BIT,
    KIND_OF_TYPE,
    NUMERIC_KINDS,
    At,
    NodeCode,
    Operand,
    PathFinder,
    RuleEntry,
    Violation,
    broken,
    kind_of,
    returned,
)

KINDS = ("null", "bool", "int", "string", "array", "object", "number")


@dataclass(frozen=True)
class TypeParams:
    """`{"kind": K}`: the one JSON kind every node has (`number` = int or float)."""

    kind: str


def allowed_kinds(want: str) -> int:
    """The KIND_BIT mask of the kinds a rule of kind `want` allows."""
    if want == "number":
        return KIND_BIT["int"] | KIND_BIT["float"]
    return KIND_BIT[want]


def _ok(v: Any, want: str) -> bool:
    k = kind_of(v)
    return k in NUMERIC_KINDS if want == "number" else k == want


class Type(NodeCode):
    name = "TYPE"
    short = "TYPE"
    summary = "a value has another JSON kind than in every clean result"
    node_class = 1
    keep_by_kind = True
    hit_cols = ("cid", "ridx", "path", "kind")

    def params(self, rule: Rule) -> TypeParams:
        kind = rule.params.get("kind")
        if kind not in KINDS:
            raise self.bad(rule, f"TYPE kind {kind!r} is not one of {' '.join(KINDS)}")
        return TypeParams(str(kind))

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} is {rule.params.get('kind')}"

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

    def witness(self, rule: Rule, at: At) -> Violation:
        want = self.params(rule).kind
        art = "an" if want[0] in "aeiou" else "a"
        return Violation(
            self.name,
            rule.id,
            at.path,
            want,
            at.observed,
            True,
            f"{rule.tool} returned {returned(at.path, at.shown)} ({kind_of(at.observed)}); "
            f"every one of {rule.support.calls} clean results had {art} {want} there",
        )

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


CODE = Type()
