"""The CONDITIONAL property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import (
    NUMERIC_KINDS,
    Nodes,
    Operand,
    aliases_of,
    index_nodes,
    is_num,
    kind_of,
)
from output_contracts.codes.relation import TOLERANCES
from output_contracts.codes.spec import Code, Paths, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.pointers import INDEX_TOKEN, MAP_TOKEN, WILD_TOKENS

#: The signs a numeric discriminator's condition names.
SIGNS = ("negative", "zero", "positive")
#: The consequents that need no value.
FACTS = ("present", "absent", "nonempty", "empty")

#: A result field without wildcards (P and D), and a result pattern over array members (Q).
_PLACE = {"type": "string", "pattern": "^/", "not": {"pattern": "(^|/)(\\*|~\\*)(/|$)"}}
_MEMBERS = {"type": "string", "pattern": "^/.*(^|/)\\*(/|$)", "not": {"pattern": "(^|/)~\\*(/|$)"}}


def _one_key(key: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": [key], "additionalProperties": False, "properties": {key: schema}}


@dataclass(frozen=True)
class WhenThen:
    """The params as a rule writes them: `{"when": W, "then": T}` (`Conditional.params` reads them into
    `ConditionalParams`)."""

    when: Any = param(
        {
            "oneOf": [
                _one_key(
                    "in", {"type": "array", "minItems": 1, "items": {"type": ["string", "boolean", "null"]}}
                ),
                _one_key(
                    "sign",
                    {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": list(SIGNS)}},
                ),
            ]
        }
    )
    then: Any = param(
        {
            "oneOf": [
                {"enum": list(FACTS)},
                _one_key("equals", {"type": ["string", "number", "boolean", "null"]}),
                _one_key("sum", {"enum": list(TOLERANCES)}),
            ]
        }
    )


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


@register
class Conditional(Code):
    """A fact that held whenever a discriminator had some value fails: an order whose status is `delivered`
    without `delivered_at`, a search that reports hits with an empty result list.

    *Rule*: `paths = [P, D]`, two result fields without wildcards (the judged place first, as in every code); `params.when` = `{"in": [values]}` (D is
    one of these strings, booleans or null; sorted by canonical JSON) or `{"sign": [signs]}` (D is a number
    of sign `negative`, `zero` or `positive`); `params.then` = `present`, `absent`, `nonempty`, `empty` or
    `{"equals": c}`. A call whose D is absent or meets no condition is not judged. Otherwise `present` breaks
    when P is missing (observed null, `present: false`), `absent` when P is there, `nonempty`/`empty` when P
    is an array with the wrong emptiness (another kind, or P missing, is not judged), `equals` when P is a
    scalar other than c (ECHO's equality: numbers by value). *Witness*: path = P; `expected` = the consequent
    with its condition (`"present when /status in {delivered}"`), or c for `equals`; `observed` = P's value;
    the detail names D's condition and the support. `contracts rules` shows `/delivered_at present when
    /status in {delivered}`, `/results not empty when /total_hits is positive`.

    *A conservation* (`then` = `{"sum": tol}`, paths `[P, D, Q]` with Q a pattern over array members): P is
    the sum of the numbers at Q within RELATION's tolerance (`exact`, `cent`, `rel`), judged only where Q's
    array is present (an empty one sums to 0) and P is a number: `/payment_history/*0/amount = Σ /items/*/price
    (cent) when /status in {…}` on τ-bench retail, every state but `pending (item modified)`, where a second
    payment settles the difference. *Witness*: `expected` = the sum, `observed` = P.
    """

    name = "CONDITIONAL"
    short = "COND"
    summary = "a fact that held in every clean result with the same discriminator value fails"
    order = 140
    #: [P, D], and [P, D, Q] for a sum
    shape = Paths(2, 3, {"prefixItems": [_PLACE, _PLACE, _MEMBERS]})
    params_type = WhenThen
    min_support = 30
    min_tasks = 30

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
        if then in FACTS:
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
