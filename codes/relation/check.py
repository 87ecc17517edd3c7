"""RELATION — `paths [A, X1, ...]`: an exact arithmetic relation between numbers of one call.

Forms: `{"form": "linear", "coef": [c1..], "tol": T}` — A = Σ ci·Xi, ci ∈ {1, −1}; `{"form": "product",
"tol": T}` — A = X1 × X2; `{"form": "sum_over", "tol": T}` — A = Σ of every number at an array-member
pattern (an empty sum is 0; the array itself must be present); `{"form": "count_of", "tol": "exact"}` —
A = the number of members of the array at X1 (`/count = len(/shipments)`; a non-array X1 does not
qualify). Operands without wildcards pair per call;
with wildcards, by index (the same array element, the same map entry). Tolerance: `exact`; `cent`
(|A − rhs| ≤ 0.005 + 1e-9); `rel` (|A − rhs| ≤ 1e-9 · max(1, |A|, |rhs|)). Semantics: every operand
present and numeric ⇒ A within T of the right-hand side. Violation path = A's concrete path; expected
the computed right-hand side; observed A's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import Act, ToolBuilder, num_test, steps
from output_contracts.codes.evaluation import Check
from output_contracts.codes.hits import RuleEntry, broken, display, empty_hits, op_hits
from output_contracts.codes.keys import instance_key, keyed_hits
from output_contracts.codes.nodes import (
    NUMERIC_KINDS,
    Nodes,
    Operand,
    PathFinder,
    is_num,
)
from output_contracts.codes.relation import FORMS, TOLERANCES, Relation, RelationParams, rhs_of
from output_contracts.traces.pointers import INDEX_TOKEN, fixed_index

CENT_TOL = 0.005 + 1e-9
REL_TOL = 1e-9


def within(a: float, rhs: float, tol: str) -> bool:
    """|a − rhs| within the tolerance `tol`."""
    d = abs(a - rhs)
    if tol == "exact":
        return d == 0
    if tol == "cent":
        return d <= CENT_TOL
    return d <= REL_TOL * max(1.0, abs(a), abs(rhs))


def tol_ok(a: pl.Expr, rhs: pl.Expr, tol: str) -> pl.Expr:
    """`within` as a polars expression."""
    d = (a - rhs).abs()
    if tol == "exact":
        return d == 0
    if tol == "cent":
        return d <= CENT_TOL
    return d <= REL_TOL * pl.max_horizontal(pl.lit(1.0), a.abs(), rhs.abs())


def array_of(term: Operand) -> Operand:
    """The array a sum_over term's members lie in (up to its first `*`; a fixed index `*0` before it
    stays part of the array's path)."""
    toks = term.pattern.split("/")
    prefix = "/".join(toks[: toks.index(INDEX_TOKEN)])
    return Operand.of(("$args" if term.side == "arg" else "") + prefix)


# ----------------------------------------------------------------------------------------------------
# The compiled checker's forms (`RelationCheck.compile`)


def relation_expr(b: ToolBuilder, rp: RelationParams, a: str, xs: Sequence[str]) -> str:
    """A condition on variables `a`, `xs` (values or `_MISS`): true when the relation breaks, as
    `_paths` judges one instance: the same operations in the same order (`rhs_of`, `within`)."""
    conds = [num_test(a)]
    vals = []
    for x in xs:
        if rp.form == "count_of":
            conds.append(f"type({x}) is list")
            vals.append(f"len({x})")
        else:
            conds.append(num_test(x))
            vals.append(x)
    if rp.form == "count_of":
        rhs = vals[0]
    elif rp.form == "product":
        rhs = f"({vals[0]} * {vals[1]})"
    else:
        rhs = "0"
        for c, v in zip(rp.coef, vals, strict=True):
            rhs = f"({rhs} {'+' if c == 1 else '-'} {v})"
    return " and ".join(conds) + f" and {outside_tolerance(b, a, rhs, rp.tol)}"


def outside_tolerance(b: ToolBuilder, a: str, rhs: str, tol: str) -> str:
    """`not within(a, rhs, tol)` as an expression (rhs an expression without side effects)."""
    if tol == "exact":
        return f"not (abs({a} - {rhs}) == 0)"
    if tol == "cent":
        return f"not (abs({a} - {rhs}) <= {b.const(CENT_TOL)})"
    return f"not {b.const(within)}({a}, {rhs}, {tol!r})"


def _add_to(total: str) -> Act:
    """Add a node to a sum_over's running total when it is a number (`_paths`' sum)."""
    return lambda v, t, path: [f"if {num_test(v)}:", f"    {total} = {total} + {v}"]


def _instance_test(
    rp: RelationParams, ops: Sequence[Operand], b: ToolBuilder
) -> tuple[str, list[list[tuple[str, Any, str]]], str] | None:
    """A relation (not sum_over) whose places are members of one array element (or map entry): the same
    wildcards, the same pattern up to the last one (P), no wildcard below it. Judged at each node of P
    on the places below it (one node each at most), as `_paths` pairs them by their indexes.
    Returns (P, the steps from a node of P to each place, the judged place's path below P)."""
    side = ops[0].side
    if (
        rp.form == "sum_over"
        or not ops[0].wpos
        or any(op.side != side or op.wpos != ops[0].wpos for op in ops)
    ):
        return None
    last = ops[0].wpos[-1]
    toks = [op.pattern.split("/") for op in ops]
    if any(t[: last + 1] != toks[0][: last + 1] for t in toks):
        return None
    prefix = "/".join(toks[0][: last + 1])
    descent = "/".join(INDEX_TOKEN if fixed_index(t) is not None else t for t in toks[0][: last + 1])
    side_maps = b.side_maps(side)
    walks = [steps(descent, t[last + 1 :], side_maps) for t in toks]
    below = "".join("/" + (fixed_index(t) or t) for t in toks[0][last + 1 :])
    return prefix, walks, below


def _element_act(
    b: ToolBuilder, ri: int, pre: str, below: str, walks: list[list[tuple[str, Any, str]]], rp: RelationParams
) -> Act:
    """The lines judging one element at its node: each place followed down from it (keys inline, other
    steps by `follow`, every place before any test, as `follow` was), then the relation's condition."""

    def act(v: str, t: str, path: str) -> list[str]:
        lines = []
        names = []
        one_key: list[tuple[str, str]] = []  # places one key below the element: read under one test
        for st in walks:
            x = b.name("x")
            names.append(x)
            if len(st) == 1 and st[0][0] == "k":
                one_key.append((x, st[0][1]))
            elif all(kind == "k" for kind, _k, _t in st):
                lines.append(f"{x} = {v}")
                for _kind, key, _tok in st:
                    lines.append(f"{x} = {x}.get({key!r}, _MISS) if type({x}) is dict else _MISS")
            else:
                lines.append(f"{x} = _follow({v}, {b.const(st)})")
        if one_key:
            head = [f"if {t} is dict:", *(f"    {x} = {v}.get({key!r}, _MISS)" for x, key in one_key)]
            lines[:0] = [*head, "else:", f"    {' = '.join(x for x, _k in one_key)} = _MISS"]
        lines.append(f"if {relation_expr(b, rp, names[0], names[1:])}:")
        lines.append(f"    out.append(({ri}, {pre}{path} + {below!r}))")
        return lines

    return act


class RelationCheck(Relation, Check):
    hit_cols = ("cid", "ridx", "op", "path", "kind", "num", "len")

    def operands(self, rule: Rule) -> list[Operand]:
        """The paths; a sum_over also reads the array holding the summed members (op 2): a present
        array is what makes an instance qualify (an empty one sums to 0)."""
        ops = super().operands(rule)
        if self.params(rule).form == "sum_over":
            ops.append(array_of(ops[1]))
        return ops

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        rp = self.params(rule)  # once per rule, not per call
        return lambda nodes: self._paths(rp, nodes, ops)

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return self._paths(self.params(rule), nodes, ops)

    @staticmethod
    def _paths(rp: RelationParams, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        first = ops[0]
        here = nodes.get((first.side, first.pattern), [])
        tol = rp.tol
        out: list[str] = []
        if rp.form == "sum_over":
            term = ops[1]
            arr = array_of(term)
            if not [v for _p, v in nodes.get((arr.side, arr.pattern), []) if isinstance(v, list)]:
                return out
            total: float | int = 0
            for _p, v in nodes.get((term.side, term.pattern), []):
                if is_num(v):
                    total = total + v
            return [first.display(p) for p, a in here if is_num(a) and not within(a, total, tol)]
        by_key: list[dict[tuple[str, ...], list[Any]]] = []
        count = rp.form == "count_of"
        for op in ops[1:]:
            d: dict[tuple[str, ...], list[Any]] = {}
            for p, v in nodes.get((op.side, op.pattern), []):
                # a count_of term is the array's length; anything else there does not qualify
                d.setdefault(op.key_of(p), []).append((len(v) if type(v) is list else None) if count else v)
            by_key.append(d)
        for p, a in here:
            key = first.key_of(p)
            vals = [d.get(key, []) for d in by_key]
            if not is_num(a) or any(len(v) != 1 or not is_num(v[0]) for v in vals):
                continue
            if not within(a, rhs_of(rp, [v[0] for v in vals]), tol):
                out.append(first.display(p))
        return out

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        outs = []
        num_kind = pl.col("kind").is_in(NUMERIC_KINDS)
        for tol in TOLERANCES:
            rel = [e for e in entries if self.params(e.rule).tol == tol]
            for form in FORMS:
                sub = [e for e in rel if self.params(e.rule).form == form]
                if not sub:
                    continue
                h = hits.filter(pl.col("ridx").is_in([e.ridx for e in sub]))
                # with no wildcard operand the rows are grouped and joined on integers alone
                # (`instance_key`); a sum over an array pairs by call alone
                key = [] if form == "sum_over" else instance_key(sub)
                base = (
                    keyed_hits(op_hits(h, 0), sub, 0, key)
                    .filter(num_kind)
                    .select("cid", "ridx", *key, "path", pl.col("num").alias("a"))
                )
                if form == "sum_over":
                    terms = op_hits(h, 1)
                    total = terms.group_by("cid", "ridx").agg(
                        pl.col("num").filter(num_kind).sum().alias("rhs")
                    )
                    arrays = op_hits(h, 2).filter(pl.col("kind") == "array").select("cid", "ridx").unique()
                    j = base.join(arrays, on=["cid", "ridx"]).join(total, on=["cid", "ridx"], how="left")
                    j = j.with_columns(pl.col("rhs").fill_null(0.0))
                else:
                    j = base.join(_terms(sub, h, form, num_kind, key), on=["cid", "ridx", *key])
                bad = ~tol_ok(pl.col("a"), pl.col("rhs"), tol)
                outs.append(display(sub, broken(j.filter(bad)), 0))
        if not outs:
            return empty_hits()
        # collected here by the in-memory engine: on these plans (joins and group-bys of the same hits
        # per form) it takes about two thirds of the CPU of the default streaming engine
        return pl.concat(outs).collect(engine="in-memory").lazy()

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        rp = self.params(rule)
        inst = _instance_test(rp, ops, b)
        if inst is not None:
            at, walks, below = inst
            pre = "'$args' + " if ops[0].side == "arg" else ""
            b.act_at(ops[0].side, at, _element_act(b, ri, pre, below, walks, rp))
            return True
        if rp.form != "sum_over" and not any(op.wpos for op in ops):
            # no wildcard: one node each, judged after the walk
            vs = [b.slot(op) for op in ops]
            cond = relation_expr(b, rp, vs[0], vs[1:])
            b.tail += [
                f"    if {cond}:",
                f"        out.append(({ri}, {ops[0].display(ops[0].concrete(()))!r}))",
            ]
            return True
        if rp.form == "sum_over" and not ops[0].wpos and not ops[2].wpos:
            # A and the summed array without wildcards (one node each at most), the members summed as the
            # walk meets them (the order `_paths` adds them in)
            total = b.name("S")
            b.init.append(f"    {total} = 0")
            b.act_at(ops[1].side, ops[1].pattern, _add_to(total))
            a, arr = b.slot(ops[0]), b.slot(ops[2])
            b.tail += [
                f"    if isinstance({arr}, list) and {num_test(a)} and {outside_tolerance(b, a, total, rp.tol)}:",
                f"        out.append(({ri}, {ops[0].display(ops[0].concrete(()))!r}))",
            ]
            return True
        return False


def _terms(
    sub: Sequence[RuleEntry], h: pl.LazyFrame, form: str, num_kind: pl.Expr, key: Sequence[str]
) -> pl.LazyFrame:
    """Per (call, rule, instance key): the right-hand side of complete, all-numeric term groups. `key`:
    ["key"], or [] when no operand has a wildcard (every instance key is "")."""
    as_bits = max(len(e.ops) for e in sub) <= 64  # terms 1 .. 63 as bits of a UInt64
    coef = pl.DataFrame(
        {
            "ridx": [e.ridx for e in sub for _ in e.ops[1:]],
            "op": [i for e in sub for i in range(1, len(e.ops))],
            "c": [
                (CHECK.params(e.rule).coef[i - 1] if form == "linear" else 1)
                for e in sub
                for i in range(1, len(e.ops))
            ],
            "nterms": [len(e.ops) - 1 for e in sub for _ in e.ops[1:]],
            # (bits only while they fit in 64: a rule of more terms counts distinct operands instead)
            "bit": [1 << i if as_bits else 0 for e in sub for i in range(1, len(e.ops))],
            "full": [(1 << len(e.ops)) - 2 if as_bits else 0 for e in sub for _ in e.ops[1:]],
        },
        schema={
            "ridx": pl.UInt32,
            "op": pl.UInt8,
            "c": pl.Float64,
            "nterms": pl.UInt32,
            "bit": pl.UInt64,
            "full": pl.UInt64,
        },
    )
    parts = [
        keyed_hits(op_hits(h, i), sub, i, key).select("cid", "ridx", "op", *key, "kind", "num", "len")
        for i in range(1, max(len(e.ops) for e in sub))
    ]
    if form == "count_of":
        # the term is the array's length; a node of another kind there does not qualify
        num_kind = pl.col("kind") == "array"
        parts = [p.with_columns(pl.col("len").cast(pl.Float64).alias("num")) for p in parts]
    # Plain columns first, so that every aggregation below is a simple one (an expression inside `agg`
    # is evaluated group by group). A product has exactly two terms: the product of a complete group is
    # its first value times its last.
    terms = (
        pl.concat(parts)
        .join(coef.lazy(), on=["ridx", "op"])
        .with_columns((~num_kind).cast(pl.UInt32).alias("nonnum"))
    )
    agg = (
        (pl.col("c") * pl.col("num")).sum()
        if form in ("linear", "count_of")
        else pl.col("num").first() * pl.col("num").last()
    )
    # A group is complete when it holds each of its rule's terms once: `n == nterms` rows whose operand
    # bits (1 << op, op in 1..nterms) sum to all of them, which n powers of two do only when distinct
    # (a repeated one carries, leaving fewer than n bits set). A sum, where counting distinct
    # operands would build a hash set per group.
    return (
        terms.group_by("cid", "ridx", *key)
        .agg(
            agg.alias("rhs"),
            pl.len().alias("n"),
            pl.col("nonnum").sum().alias("nonnum"),
            (pl.col("bit").sum() if as_bits else pl.col("op").n_unique().cast(pl.UInt64)).alias("bits"),
            pl.col("nterms").first(),
            (pl.col("full") if as_bits else pl.col("nterms").cast(pl.UInt64)).first().alias("full"),
        )
        .filter(
            (pl.col("nonnum") == 0) & (pl.col("n") == pl.col("nterms")) & (pl.col("bits") == pl.col("full"))
        )
    )


CHECK = RelationCheck()
CHECKS = (CHECK,)
