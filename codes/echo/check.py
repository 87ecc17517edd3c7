"""ECHO — `paths [R, "$args/A"]` (no wildcards), params `{}`: a result field equals an argument.

Semantics: when both are present and scalar, the result value equals the argument value — numbers
numerically (`3 == 3.0`), everything else by kind and value (`"3" != 3`). Violation path = R's concrete
path; expected the argument value; observed the result value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.echo import Echo
from output_contracts.codes.engine.compiled import ToolBuilder
from output_contracts.codes.evaluation import Check
from output_contracts.codes.hits import RuleEntry, broken, display, op_hits
from output_contracts.codes.nodes import NUMERIC_KINDS, SCALAR_KINDS, Nodes, Operand, kind_of


def echo_equal(r: Any, a: Any) -> bool:
    """Equality as ECHO means it: numbers numerically, anything else by kind and value."""
    kr, ka = kind_of(r), kind_of(a)
    if kr in NUMERIC_KINDS and ka in NUMERIC_KINDS:
        return float(r) == float(a)
    return kr == ka and r == a


def echo_bad(r: Any, a: Any) -> bool:
    """Whether a result value breaks the echo of an argument value: both scalars, not equal as ECHO
    means it (what the compiled checker tests)."""
    return kind_of(r) in SCALAR_KINDS and kind_of(a) in SCALAR_KINDS and not echo_equal(r, a)


class EchoCheck(Echo, Check):
    hit_cols = ("cid", "ridx", "op", "path", "kind", "num", "str")

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        first, arg = ops[0], ops[1]
        args_at = nodes.get((arg.side, arg.pattern), [])
        out = []
        for p, r in nodes.get((first.side, first.pattern), []):
            for _q, a in args_at:
                if kind_of(r) in SCALAR_KINDS and kind_of(a) in SCALAR_KINDS and not echo_equal(r, a):
                    out.append(first.display(p))
        return out

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        r = op_hits(hits, 0).filter(pl.col("kind").is_in(SCALAR_KINDS))
        a = (
            op_hits(hits, 1)
            .filter(pl.col("kind").is_in(SCALAR_KINDS))
            .select(
                "cid",
                "ridx",
                pl.col("kind").alias("akind"),
                pl.col("num").alias("anum"),
                pl.col("str").alias("astr"),
            )
        )
        j = r.join(a, on=["cid", "ridx"])
        both_num = pl.col("kind").is_in(NUMERIC_KINDS) & pl.col("akind").is_in(NUMERIC_KINDS)
        same = (pl.col("kind") == pl.col("akind")) & (
            (pl.col("kind") == "null")
            | ((pl.col("kind") == "bool") & (pl.col("num") == pl.col("anum")))
            | ((pl.col("kind") == "string") & (pl.col("str") == pl.col("astr")))
        )
        equal = pl.when(both_num).then(pl.col("num") == pl.col("anum")).otherwise(same)
        return display(entries, broken(j.filter(~equal)), 0)

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        if ops[0].wpos or ops[1].wpos:
            return False
        a, c = b.slot(ops[0]), b.slot(ops[1])
        bad = b.const(echo_bad)
        b.tail += [
            f"    if {a} is not _MISS and {c} is not _MISS and not (type({a}) is type({c}) and {a} == {c}):",
            f"        if {bad}({a}, {c}):",
            f"            out.append(({ri}, {ops[0].display(ops[0].concrete(()))!r}))",
        ]
        return True


CHECKS = (EchoCheck(),)
