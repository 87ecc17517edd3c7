"""CONDITIONAL — `paths [P, D]` or `[P, D, Q]` (result fields; P and D without wildcards, P may name a
fixed member `*0`), params `{"when": W, "then": T}`: a fact about P that holds whenever the discriminator
D has one of some values (P first, as every code names the place it judges first).

`when`: `{"in": [v, ...]}` — D is one of these JSON scalars (strings, booleans, null), sorted by their
canonical JSON; or `{"sign": ["zero" | "positive" | "negative", ...]}` — D is a number of one of these
signs. `then`: `"present"` — P is present; `"absent"` — P is absent; `"nonempty"` / `"empty"` — P, an
array, has at least one / no element; `{"equals": c}` — P, a scalar, equals c (ECHO's equality:
numbers by value, everything else by kind and value); `{"sum": tol}` — P, a number, is the sum of the
numbers at the pattern Q over array members, within RELATION's tolerance `tol` (`exact`, `cent`, `rel`):
a conservation that holds in some states only (`/payment_history/*0/amount = Σ /items/*/price` until
the items of a pending order are modified and a second payment settles the difference).

Examples: `/delivered_at` present when `/status` in {"delivered"}; `/fulfillments` empty when `/status`
in {"pending"}; `/results` nonempty when `/total_hits` is positive; `/currency` equals "EUR" when
`/country` in {"FR", "DE"}. Such a fact is invisible to the unconditional codes because it is false
over all calls (some orders have no `delivered_at`), and it is what catches a field dropped from the
very records that must have it, or an emptied list whose own count says it has items.

Semantics: a call whose D is absent or satisfies no condition is not judged. Otherwise: `present`
breaks when P is absent (observed null, present false); `absent` when P is present; `nonempty` /
`empty` when P is an array of the wrong emptiness (P of another kind or absent is not judged: TYPE's
and REQUIRED's business); `equals` when P is a scalar that differs from c (absent or a container: not
judged); `sum` when P is a number not within `tol` of the sum (the sum is judged, as RELATION's
sum_over, only when Q's array is present: an empty one sums to 0). Violation path = P's concrete path;
expected the consequent (`"present when /status in {delivered}"`, c, or the sum); observed P's value.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.codes.conditional import Conditional, ConditionalParams, sum_of
from output_contracts.codes.contract_set import Rule
from output_contracts.codes.echo.check import echo_bad, echo_equal
from output_contracts.codes.engine.compiled import EXACT_INT, ToolBuilder
from output_contracts.codes.evaluation import Check
from output_contracts.codes.hits import RuleEntry, empty_hits, op_hits
from output_contracts.codes.nodes import (
    NUMERIC_KINDS,
    SCALAR_KINDS,
    Nodes,
    Operand,
    is_num,
    kind_of,
)
from output_contracts.codes.relation.check import TOLERANCES, array_of, tol_ok, within


def cond_key_expr() -> pl.Expr:
    """`cond_key` over hit or leaf columns (kind as a String, num, str)."""
    kind = pl.col("kind")
    num = pl.col("num")
    return (
        pl.when(kind == "string")
        .then(pl.lit("s:") + pl.col("str"))
        .when(kind == "bool")
        .then(pl.when(num != 0).then(pl.lit("b:true")).otherwise(pl.lit("b:false")))
        .when(kind == "null")
        .then(pl.lit("z"))
        .when(kind.is_in(NUMERIC_KINDS))
        .then(
            pl.when(num == 0)
            .then(pl.lit("n:zero"))
            .when(num > 0)
            .then(pl.lit("n:positive"))
            .otherwise(pl.lit("n:negative"))
        )
        .otherwise(None)
    )


def holds_expr(b: ToolBuilder, prm: ConditionalParams, d: str) -> str:
    """`d is not _MISS and prm.holds(d)` as an expression: strings by set membership, floats and ints of
    exact magnitude by sign, anything else through `holds` itself."""
    strs = b.const(frozenset(k[2:] for k in prm.keys if k.startswith("s:")))
    z, pos, neg = ("n:zero" in prm.keys), ("n:positive" in prm.keys), ("n:negative" in prm.keys)
    h = b.const(prm.holds)
    sign = f"({z} if {d} == 0 else ({pos} if {d} > 0 else {neg}))"
    return (
        f"({d} in {strs} if type({d}) is str else ({sign} if (type({d}) is float or (type({d}) is int and "
        f"-{EXACT_INT} <= {d} <= {EXACT_INT})) else ({d} is not _MISS and {h}({d}))))"
    )


def then_expr(b: ToolBuilder, prm: ConditionalParams, v: str) -> str:
    """Whether the judged place's value `v` (or `_MISS`) breaks the consequent, as `paths` judges it."""
    then = prm.then
    if then == "present":
        return f"{v} is _MISS"
    if then == "absent":
        return f"{v} is not _MISS"
    if then == "nonempty":
        return f"(type({v}) is list and len({v}) == 0)"
    if then == "empty":
        return f"(type({v}) is list and len({v}) > 0)"
    val = b.const(prm.value)
    slow = f"({v} is not _MISS and {b.const(echo_bad)}({v}, {val}))"
    if type(prm.value) is str:
        return f"({v} != {val} if type({v}) is str else {slow})"
    return slow


class ConditionalCheck(Conditional, Check):
    hit_cols = ("cid", "ridx", "op", "kind", "num", "str", "len")

    def operands(self, rule: Rule) -> list[Operand]:
        """D first (operand 0: the condition), then P (operand 1: the judged place); a sum also reads the
        summed members (2) and their array (3), whose presence makes a call qualify (as RELATION's)."""
        ops = [Operand.of(rule.paths[1]), Operand.of(rule.paths[0])]
        if len(rule.paths) == 3:
            q = Operand.of(rule.paths[2])
            ops += [q, array_of(q)]
        return ops

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        p = self.params(rule)
        d_op, p_op = ops[0], ops[1]
        ds = nodes.get((d_op.side, d_op.pattern))
        if not ds or not p.holds(ds[0][1]):
            return []
        at = nodes.get((p_op.side, p_op.pattern))
        if p.then == "present":
            return [] if at else [p_op.concrete(())]
        if not at:
            return []
        v = at[0][1]
        if p.then == "absent":
            return [p_op.concrete(())]
        if p.then == "sum_of":
            q_op, arr = ops[2], ops[3]
            if not is_num(v) or not any(type(a) is list for _p, a in nodes.get((arr.side, arr.pattern), [])):
                return []
            total = sum_of(nodes.get((q_op.side, q_op.pattern), []))
            return [] if within(v, total, p.tol) else [p_op.concrete(())]
        if p.then in ("nonempty", "empty"):
            if type(v) is not list or (len(v) > 0) == (p.then == "nonempty"):
                return []
            return [p_op.concrete(())]
        if kind_of(v) in SCALAR_KINDS and not echo_equal(v, p.value):
            return [p_op.concrete(())]
        return []

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        if not entries:
            return empty_hits()
        table = pl.DataFrame(
            [(e.ridx, k) for e in entries for k in sorted(self.params(e.rule).keys)],
            schema={"ridx": pl.UInt32, "dkey": pl.String},
            orient="row",
        )
        rows = []
        for e in entries:
            prm = self.params(e.rule)
            v, k = prm.value, kind_of(prm.value)
            wk = "number" if k in NUMERIC_KINDS else k
            wnum = float(v) if k in (*NUMERIC_KINDS, "bool") else None
            rows.append((e.ridx, e.ops[1].concrete(()), prm.then, wk, wnum, v if k == "string" else None))
        rules = pl.DataFrame(
            rows,
            schema={
                "ridx": pl.UInt32,
                "ppath": pl.String,
                "then": pl.String,
                "wkind": pl.String,
                "wnum": pl.Float64,
                "wstr": pl.String,
            },
            orient="row",
        )
        judged = (
            op_hits(hits, 0)
            .with_columns(cond_key_expr().alias("dkey"))
            .join(table.lazy(), on=["ridx", "dkey"], how="semi")
            .select("cid", "ridx")
            .unique()
        )
        p = op_hits(hits, 1).select("cid", "ridx", "kind", "num", "str", "len")
        kind, then, wkind = pl.col("kind"), pl.col("then"), pl.col("wkind")
        numeric = kind.is_in(NUMERIC_KINDS)
        same = (
            pl.when(numeric)
            .then((wkind == "number") & (pl.col("num") == pl.col("wnum")))
            .when(kind == "string")
            .then((wkind == "string") & (pl.col("str") == pl.col("wstr")))
            .when(kind == "bool")
            .then((wkind == "bool") & (pl.col("num") == pl.col("wnum")))
            .otherwise(wkind == "null")
        )
        absent = kind.is_null()
        bad = (
            ((then == "present") & absent)
            | ((then == "absent") & ~absent)
            | ((then == "nonempty") & (kind == "array") & (pl.col("len") == 0))
            | ((then == "empty") & (kind == "array") & (pl.col("len") > 0))
            | ((then == "equals") & kind.is_in(SCALAR_KINDS) & ~same)
        )
        sums = [e for e in entries if self.params(e.rule).then == "sum_of"]
        if sums:
            ids = pl.Series([e.ridx for e in sums], dtype=pl.UInt32).implode()
            total = (
                op_hits(hits, 2)
                .filter(pl.col("ridx").is_in(ids))
                .group_by("cid", "ridx")
                .agg(pl.col("num").filter(numeric).sum().alias("total"))
            )
            arrays = op_hits(hits, 3).filter(kind == "array").select("cid", "ridx").unique()
            tols = pl.DataFrame(
                {"ridx": [e.ridx for e in sums], "tol": [self.params(e.rule).tol for e in sums]},
                schema={"ridx": pl.UInt32, "tol": pl.String},
            )
            summed = (
                judged.join(arrays, on=["cid", "ridx"])
                .join(p.filter(numeric), on=["cid", "ridx"])
                .join(total, on=["cid", "ridx"], how="left")
                .join(tols.lazy(), on="ridx")
                .with_columns(pl.col("total").fill_null(0.0))
            )
            off = pl.lit(False)
            for t in TOLERANCES:
                off = off | ((pl.col("tol") == t) & ~tol_ok(pl.col("num"), pl.col("total"), t))
            broken_sums = summed.filter(off).join(rules.lazy().select("ridx", "ppath"), on="ridx")
            judged = judged.join(tols.lazy().select("ridx"), on="ridx", how="anti")
        j = judged.join(rules.lazy(), on="ridx").join(p, on=["cid", "ridx"], how="left")
        out = j.filter(bad).select(
            "cid", "ridx", pl.col("ppath").alias("path"), (then != "present").alias("present")
        )
        if sums:
            out = pl.concat(
                [
                    out,
                    broken_sums.select(
                        "cid", "ridx", pl.col("ppath").alias("path"), pl.lit(True).alias("present")
                    ),
                ]
            )
        return out

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        prm = self.params(rule)
        if prm.then == "sum_of" or any(op.wpos for op in ops):
            return False
        # no wildcard: D and P one node each, judged after the walk
        d, p = (b.slot(op) for op in ops)
        b.tail += [
            f"    if {holds_expr(b, prm, d)} and {then_expr(b, prm, p)}:",
            f"        out.append(({ri}, {ops[1].display(ops[1].concrete(()))!r}))",
        ]
        return True


CHECKS = (ConditionalCheck(),)
