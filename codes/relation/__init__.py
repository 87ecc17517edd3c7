"""The RELATION property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import Nodes, Operand, aliases_of, index_nodes, is_num, resolve, side_doc
from output_contracts.codes.spec import Code, Paths, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.pointers import MAP_TOKEN

#: How close A must be to the right-hand side: exactly, to the cent, to 1e-9 relative.
TOLERANCES = ("exact", "cent", "rel")
#: A = Σ ci·Xi, A = X1 × X2, A = Σ of an array's members, A = an array's length.
FORMS = ("linear", "product", "sum_over", "count_of")


@dataclass(frozen=True)
class RelationParams:
    """`{"form", "tol", "coef"?}`: the relation's form, its tolerance and (linear) the coefficient of
    each term."""

    form: str = param({"enum": list(FORMS)})
    tol: str = param({"enum": list(TOLERANCES)})
    coef: tuple[int, ...] = param(
        {"type": "array", "minItems": 1, "maxItems": 3, "items": {"enum": [1, -1]}}, default=()
    )


def rhs_of(p: RelationParams, values: list[Any]) -> float | int:
    """Right-hand side of a linear/product/count_of relation from operand values [X1, X2, ...] (all
    numeric; a count_of's one value is already the array's length)."""
    if p.form == "count_of":
        count: int = values[0]
        return count
    if p.form == "product":
        product: float | int = values[0] * values[1]
        return product
    total: float | int = 0
    for c, v in zip(p.coef, values, strict=True):
        total = total + v if c == 1 else total - v
    return total


@register
class Relation(Code):
    """An arithmetic relation that held exactly in clean results fails.

    *Rule*: `paths = [A, X1, X2, …]` with `params.form`:

    * `linear`, `coef` = [c1, …] with ci ∈ {1, −1}: A = Σ ci·Xi (`A = B`, `A = B + C`, `A = B − C`, up to 3
      terms);
    * `product`: A = X1 × X2;
    * `sum_over`, paths `[A, "/items/*/price"]`: A = Σ of every numeric node at the wildcard pattern (an empty
      array sums to 0; the rule qualifies only when the array itself is present);
    * `count_of`, paths `[A, "/shipments"]`, `tol` always `exact`: A = the number of members of the array at
      X1 (a count that must match its list; qualifies only when X1 is an array).

    `params.tol`: `exact` (|A − rhs| = 0, integer operands), `cent` (|A − rhs| ≤ 0.005 + 1e-9, two-decimal
    amounts), `rel` (|A − rhs| ≤ 1e-9 · max(1, |A|, |rhs|)). Operands may be argument paths. Wildcards
    (other than the `sum_over` term) only with identical positions, paired by index. Qualifies when every
    operand is present and numeric. *Witness*: path = A's concrete path; `expected` = the right-hand side
    computed from the call, `observed` = A's value.
    """

    name = "RELATION"
    short = "REL"
    summary = "an arithmetic relation that held exactly in clean results fails"
    order = 80
    shape = Paths(2, 4)
    params_type = RelationParams
    min_support = 30

    def params(self, rule: Rule) -> RelationParams:
        n = len(rule.paths)
        p = rule.params
        form, tol = p.get("form"), p.get("tol")
        if tol not in TOLERANCES:
            raise self.bad(rule, f"RELATION tol must be one of {', '.join(TOLERANCES)}")
        coef: tuple[int, ...] = ()
        if form == "linear":
            raw = p.get("coef")
            if not (isinstance(raw, list) and len(raw) == n - 1 and all(c in (1, -1) for c in raw)):
                raise self.bad(rule, "linear RELATION needs one coefficient in {1, -1} per term")
            coef = tuple(int(c) for c in raw)
        elif form == "product":
            if n != 3:
                raise self.bad(rule, "product RELATION needs paths [A, X1, X2]")
        elif form == "sum_over":
            if n != 2 or not Operand.of(rule.paths[1]).wpos:
                raise self.bad(rule, "sum_over RELATION needs paths [A, pattern with a wildcard]")
            if MAP_TOKEN in rule.paths[1] or "/*" not in rule.paths[1]:
                raise self.bad(
                    rule, "sum_over RELATION sums array members only (its pattern has a map key '~*')"
                )
        elif form == "count_of":
            if n != 2:
                raise self.bad(rule, "count_of RELATION needs paths [A, array]")
        else:
            raise self.bad(rule, f"unknown RELATION form {form!r}")
        return RelationParams(str(form), str(tol), coef)

    def describe(self, rule: Rule) -> str:
        p = [x or "(result)" for x in rule.paths]
        form, tol = rule.params.get("form"), rule.params.get("tol")
        if form == "product":
            rhs = f"{p[1]} × {p[2]}"
        elif form == "sum_over":
            rhs = f"Σ {p[1]}"
        elif form == "count_of":
            rhs = f"len({p[1]})"
        else:
            rhs = ""
            for i, (c, x) in enumerate(zip(rule.params.get("coef", []), p[1:], strict=False)):
                sign = "-" if c < 0 else "+"
                rhs += (f"-{x}" if c < 0 else x) if i == 0 else f" {sign} {x}"
        return f"{p[0]} = {rhs} ({tol})"

    def witness(self, rule: Rule, at: At) -> Violation:
        ops = at.ops
        a_op = ops[0]
        rp = self.params(rule)
        form = rp.form
        a_key = a_op.key_of(at.raw)
        if form == "sum_over":
            term = ops[1]
            nodes: Nodes = {}
            fixed = aliases_of([term]).get(term.side)
            index_nodes(term.side, side_doc(term.side, at.arguments, at.result), nodes, fixed=fixed)
            rhs: float | int = 0
            for _p, v in nodes.get((term.side, term.pattern), []):
                if is_num(v):
                    rhs = rhs + v
            formula = f"sum of {name(term.display(term.pattern))}"
        else:
            vals = []
            for op in ops[1:]:
                _, v = resolve(side_doc(op.side, at.arguments, at.result), op.concrete(a_key))
                vals.append(v)
            names = [name(op.display(op.pattern)) for op in ops[1:]]
            if form == "count_of":
                rhs = len(vals[0]) if type(vals[0]) is list else 0
                formula = f"the number of {names[0]}"
            elif form == "product":
                rhs = rhs_of(rp, vals)
                formula = " * ".join(names)
            else:
                rhs = rhs_of(rp, vals)
                parts = [names[0] if rp.coef[0] == 1 else f"-{names[0]}"]
                for c, nm in zip(rp.coef[1:], names[1:], strict=True):
                    parts.append(f"{'+' if c == 1 else '-'} {nm}")
                formula = " ".join(parts)
        how = {"exact": "exactly", "cent": "to the cent", "rel": "to 1e-9 relative"}[rp.tol]
        return Violation(
            self.name,
            rule.id,
            at.path,
            rhs,
            at.observed,
            True,
            f"{rule.tool} returned {name(at.path)}={at.shown} but {formula} = {canonical_str(rhs)}; every one "
            f"of {rule.support.calls} clean results had {name(a_op.display(a_op.pattern))} = {formula} {how}",
        )
