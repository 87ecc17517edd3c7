"""The LENGTH property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import Code, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name

#: The largest minimum a rule may state (it is carried in an 8-bit column of the operand table).
MAX_MIN = 255


@dataclass(frozen=True)
class LengthParams:
    """`{"min": m}`: the least number of elements."""

    min: int = param({"type": "integer", "minimum": 1, "maximum": MAX_MIN})


@register
class Length(Code):
    """An array shorter than every clean result's: an empty list where there was always at least one item.

    *Rule*: `paths = [P]`, `params.min` = m (the miner writes 1). Every **array** node at `P` has at least m
    elements (other kinds are TYPE's business). *Witness*: `expected` = `">= m items"`, `observed` = the
    array.
    """

    name = "LENGTH"
    short = "LEN"
    summary = "an array shorter than every clean result's (an empty list where there was always one)"
    order = 100
    params_type = LengthParams
    min_support = 30
    min_tasks = 300

    def params(self, rule: Rule) -> LengthParams:
        m = rule.params.get("min")
        if not (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= MAX_MIN):
            raise self.bad(rule, f"LENGTH needs params.min, an integer in [1, {MAX_MIN}]")
        return LengthParams(m)

    def describe(self, rule: Rule) -> str:
        m = self.params(rule).min
        return f"{rule.paths[0] or '(result)'} has >= {m} item{'s' if m != 1 else ''}"

    def witness(self, rule: Rule, at: At) -> Violation:
        m = self.params(rule).min
        n = len(at.observed) if isinstance(at.observed, list) else 0
        return Violation(
            self.name,
            rule.id,
            at.path,
            f">= {m} items",
            at.observed,
            True,
            f"{rule.tool} returned {n} item{'s' if n != 1 else ''} at {name(at.path)}; every one of "
            f"{rule.support.calls} clean results had at least {m}",
        )
