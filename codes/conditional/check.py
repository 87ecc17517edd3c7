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
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.echo.check import echo_equal
from output_contracts.codes.relation.check import TOLERANCES, array_of, tol_ok, within
from output_contracts.codes.spec import (
    NUMERIC_KINDS,
    SCALAR_KINDS,
    At,
    Nodes,
    Operand,
    PropertyCode,
    RuleEntry,
    Violation,
    aliases_of,
    empty_hits,
    index_nodes,
    is_num,
    kind_of,
    name,
    op_hits,
)
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.leaves import INDEX_TOKEN, MAP_TOKEN, WILD_TOKENS

SIGNS = ("negative", "zero", "positive")


def sign_of(v: float) -> str:
    return "zero" if v == 0 else ("positive" if v > 0 else "negative")


def cond_key(v: Any) -> str | None:
    """The condition key of a discriminator value: `s:<text>`, `b:true`, `z`, or `n:<sign>` for a
    number; None for a container (never a condition). The polars spelling is `cond_key_expr`."""
    k = kind_of(v)
    if k == "string":
        return "s:" + v
    if k == "bool":
        return "b:true" if v else "b:false"
    if k == "null":
        return "z"
    if k in NUMERIC_KINDS:
        return "n:" + sign_of(float(v))
    return None


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


def value_key(v: Any) -> str | None:
    """A scalar consequent value under ECHO's equality as one string (numbers by value); None for a
    container."""
    k = kind_of(v)
    if k in NUMERIC_KINDS:
        return "n:" + repr(float(v))
    if k == "string":
        return "s:" + v
    if k == "bool":
        return "b:true" if v else "b:false"
    if k == "null":
        return "z"
    return None


@dataclass(frozen=True)
class ConditionalParams:
    """The condition (`keys`: the `cond_key`s it admits) and the consequent (`then`, `value`)."""

    when: dict[str, Any]
    keys: frozenset[str]
    then: str
    value: Any = None
    tol: str = ""  # sum_of: RELATION's tolerance

    def holds(self, v: Any) -> bool:
        """Whether a discriminator value satisfies the condition."""
        return cond_key(v) in self.keys


def sum_of(nodes: Sequence[tuple[str, Any]]) -> float | int:
    """The sum of the numbers among (path, value) nodes (an empty sum is 0), as RELATION's sum_over."""
    total: float | int = 0
    for _p, v in nodes:
        if is_num(v):
            total = total + v
    return total


class Conditional(PropertyCode):
    name = "CONDITIONAL"
    short = "COND"
    summary = "a fact that held in every clean result with the same discriminator value fails"
    n_paths = None  # [P, D], and [P, D, Q] for a sum
    hit_cols = ("cid", "ridx", "op", "kind", "num", "str", "len")

    def params(self, rule: Rule) -> ConditionalParams:
        when, then = rule.params.get("when"), rule.params.get("then")
        keys: set[str] = set()
        if isinstance(when, dict) and set(when) == {"in"} and isinstance(when["in"], list) and when["in"]:
            for v in when["in"]:
                k = cond_key(v)
                if k is None or k.startswith("n:"):
                    raise self.bad(rule, "CONDITIONAL when.in lists strings, booleans or null")
                keys.add(k)
        elif (
            isinstance(when, dict)
            and set(when) == {"sign"}
            and isinstance(when["sign"], list)
            and when["sign"]
        ):
            if not all(s in SIGNS for s in when["sign"]):
                raise self.bad(rule, f"CONDITIONAL when.sign lists signs, each one of {', '.join(SIGNS)}")
            keys = {"n:" + s for s in when["sign"]}
        else:
            raise self.bad(rule, 'CONDITIONAL needs params.when, {"in": [values]} or {"sign": [signs]}')
        if isinstance(then, dict) and set(then) == {"equals"} and value_key(then["equals"]) is not None:
            return ConditionalParams(dict(when), frozenset(keys), "equals", then["equals"])
        if isinstance(then, dict) and set(then) == {"sum"} and then["sum"] in TOLERANCES:
            if len(rule.paths) != 3:
                raise self.bad(rule, "a CONDITIONAL sum needs paths [P, D, summed pattern]")
            return ConditionalParams(dict(when), frozenset(keys), "sum_of", None, str(then["sum"]))
        if then in ("present", "absent", "nonempty", "empty"):
            return ConditionalParams(dict(when), frozenset(keys), str(then))
        raise self.bad(
            rule,
            'CONDITIONAL needs params.then, one of present, absent, nonempty, empty, {"equals": scalar} or '
            '{"sum": tolerance}',
        )

    def validate(self, rule: Rule) -> None:
        prm = self.params(rule)
        if len(rule.paths) != (3 if prm.then == "sum_of" else 2):
            raise self.bad(rule, "needs paths [P, D] ([P, D, summed pattern] for sum_of)")
        p, d = rule.paths[:2]
        for x in (p, d):
            if x.startswith("$args") or not x.startswith("/"):
                raise self.bad(rule, f"{x or '(result)'} is not a result field")
            if any(t in WILD_TOKENS for t in x.split("/")):
                raise self.bad(rule, f"{x} has a wildcard")
        if d == p or d.startswith(p + "/"):
            raise self.bad(rule, "P is D or holds it")
        if prm.then == "sum_of":
            q = rule.paths[2]
            if q.startswith("$args") or INDEX_TOKEN not in q.split("/") or MAP_TOKEN in q.split("/"):
                raise self.bad(rule, f"{q} is not a result pattern over array members")

    def condition(self, rule: Rule) -> str:
        """The condition as people read it: `/status in {delivered, shipped}`, `/count is positive`."""
        p = self.params(rule)
        d = rule.paths[1]
        if "sign" in p.when:
            return f"{d} is {' or '.join(p.when['sign'])}"
        shown = ", ".join(v if isinstance(v, str) else canonical_str(v) for v in p.when["in"])
        return f"{d} in {{{shown}}}"

    def consequent(self, rule: Rule) -> str:
        p = self.params(rule)
        if p.then == "equals":
            return f"= {canonical_str(p.value)}"
        if p.then == "sum_of":
            return f"= Σ {rule.paths[2]} ({p.tol})"
        return {"present": "present", "absent": "absent", "nonempty": "not empty", "empty": "empty"}[p.then]

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0]} {self.consequent(rule)} when {self.condition(rule)}"

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

    def witness(self, rule: Rule, at: At) -> Violation:
        p = self.params(rule)
        cond = self.condition(rule)
        present = p.then != "present"
        expected: Any = p.value if p.then == "equals" else f"{self.consequent(rule)} when {cond}"
        if p.then == "sum_of":
            q = Operand.of(rule.paths[2])
            nodes: Nodes = {}
            index_nodes("result", at.result, nodes, fixed=aliases_of([q]).get("result"))
            expected = sum_of(nodes.get(("result", q.pattern), []))
            how = {"exact": "exactly", "cent": "to the cent", "rel": "to 1e-9 relative"}[p.tol]
            return Violation(
                self.name,
                rule.id,
                at.path,
                expected,
                at.observed,
                True,
                f"{rule.tool} returned {name(at.path)}={at.shown} with {cond}, but the sum of "
                f"{name(rule.paths[2])} is {canonical_str(expected)}; in every one of {rule.support.calls} clean "
                f"results with {cond} {name(rule.paths[0])} was that sum {how}",
            )
        what = {
            "present": f"no {name(at.path)}",
            "absent": f"{name(at.path)}={at.shown}",
            "nonempty": f"an empty {name(at.path)}",
            "empty": f"{name(at.path)} with {len(at.observed) if isinstance(at.observed, list) else 0} items",
            "equals": f"{name(at.path)}={at.shown}",
        }[p.then]
        return Violation(
            self.name,
            rule.id,
            at.path,
            expected,
            at.observed if present else None,
            present,
            f"{rule.tool} returned {what} with {cond}; in every one of {rule.support.calls} clean results "
            f"with {cond} it was {self.consequent(rule)}",
        )

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


CODE = Conditional()
