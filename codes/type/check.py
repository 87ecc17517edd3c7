"""TYPE — `paths [P]`, params `{"kind": K}`: every node at a pattern has one JSON kind.

Semantics: every node at P has kind K, with `number` meaning int or float. Expected the kind; observed
the offending value. A per-node code: over a corpus, a hit is kept inside the join of leaves to
operands only when its kind is outside the rule's allowed kinds (`tmask`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import InlineTest, ToolBuilder, nothing, when
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import KIND_BIT, RuleEntry, broken
from output_contracts.codes.nodes import KIND_OF_TYPE, NUMERIC_KINDS, Operand, PathFinder, kind_of
from output_contracts.codes.type import Type


def allowed_kinds(want: str) -> int:
    """The KIND_BIT mask of the kinds a rule of kind `want` allows."""
    if want == "number":
        return KIND_BIT["int"] | KIND_BIT["float"]
    return KIND_BIT[want]


def holding_types(want: str) -> frozenset[type]:
    """The value types of kind `want` (a type outside them is judged by its kind, `kind_of`)."""
    return frozenset(
        t for t, k in KIND_OF_TYPE.items() if k == want or (want == "number" and k in NUMERIC_KINDS)
    )


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

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        want = self.params(rule).kind
        holding = holding_types(want)
        hit = b.hit(ri, ops[0].side)
        ok = b.const(holding)
        wk = b.const(want)
        # a str, int or float is a type `KIND_OF_TYPE` names: it holds exactly when its type is held
        on_str: Callable[[str, str], list[str]] = nothing if str in holding else (lambda v, path: [hit(path)])
        nums = holding & {int, float}
        on_num: Callable[[str, str, str], list[str]]
        if nums == {int, float}:
            on_num = nothing
        elif nums:
            other_t = "float" if int in nums else "int"
            on_num = lambda v, t, path: [f"if {t} is {other_t}:", f"    {hit(path)}"]  # noqa: E731
        else:
            on_num = lambda v, t, path: [hit(path)]  # noqa: E731
        # one type that holds (object, array, bool, null...): `is not` instead of a set's lookup
        (only,) = holding if len(holding) == 1 else (None,)
        held = f"is not {only.__name__ if only in (bool, dict, list, str, int, float) else b.const(only)}"
        other = when(
            hit,
            lambda v, t: (
                f"{t} {held if only is not None else 'not in ' + ok} and ({t} in _KOT or not _type_ok({v}, {wk}))"
            ),
        )
        test = InlineTest(
            on_str, on_num, other, other_kind=not holding & {str, int, float}, kinds=(holding, want)
        )
        b.test_at(ops[0], ri, test)
        return True


CHECKS = (TypeCheck(),)
