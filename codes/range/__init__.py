"""The RANGE property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import Code, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name

#: What the bounds are of: a number, a magnitude (|v|, fields that hold negatives), an ISO date's year.
OF = ("number", "magnitude", "year")


@dataclass(frozen=True)
class RangeParams:
    """`{"of": ..., "min": x|null, "max": y}`."""

    of: str = param({"enum": list(OF)})
    min: float | None = param({"type": ["number", "null"]})
    max: float = param({"type": "number"})


def num_text(x: float | None) -> str:
    """A bound as the rule's description writes it (whole numbers without a fraction)."""
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else repr(x)


@register
class Range(Code):
    """A number (or a date's year) outside the orders of magnitude of every clean result.

    *Rule*: `paths = [P]`, `params.of` ∈ `number | magnitude | year`, `params.min` (a number or null),
    `params.max`. `number`: a number v at `P` breaks the rule when v > max, or when min is set and 0 < v <
    min (0 and negative values are the sign codes' business). The miner's bounds are powers of ten around
    the clean values, never within a factor 3 of one: values from 12.5 to 830 give min 1, max 10000.
    `magnitude` (fields that hold negatives too, such as payments with refunds; min is null): v breaks it
    when |v| > max. `year`: a string at `P` starting `YYYY-MM-DD`
    breaks it when its year is outside [min, max] (the miner: the earliest decade minus ten years to the end
    of the decade after the latest). *Witness*: `expected` = the bound in words (`<= 1000`, `in [10, 1000]`,
    `in [-10000, 10000]`, `year in [2000, 2039]`), `observed` = the value.
    """

    name = "RANGE"
    short = "RNG"
    summary = "a number (or a date's year) outside the orders of magnitude of every clean result"
    order = 110
    params_type = RangeParams
    min_support = 30
    min_tasks = 200

    def params(self, rule: Rule) -> RangeParams:
        p = rule.params
        of, lo, hi = p.get("of"), p.get("min"), p.get("max")

        def num(x: object) -> bool:
            return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)

        if of not in OF:
            raise self.bad(rule, f"RANGE needs params.of, one of {', '.join(OF)}")
        if not num(hi) or not (lo is None or (num(lo) and lo <= hi)):
            raise self.bad(rule, "RANGE needs params.max, a number, and params.min, null or a number <= max")
        if of == "magnitude" and (lo is not None or hi <= 0):  # type: ignore[operator]
            raise self.bad(rule, "RANGE of magnitude needs params.min null and params.max > 0")
        return RangeParams(str(of), None if lo is None else float(lo), float(hi))  # type: ignore[arg-type]

    def describe(self, rule: Rule) -> str:
        p = self.params(rule)
        what = rule.paths[0] or "(result)"
        if p.of == "year":
            return f"year of {what} in [{num_text(p.min)}, {num_text(p.max)}]"
        if p.of == "magnitude":
            return f"|{what}| <= {num_text(p.max)}"
        if p.min is None:
            return f"{what} <= {num_text(p.max)}"
        return f"{what} in [{num_text(p.min)}, {num_text(p.max)}] when > 0"

    def witness(self, rule: Rule, at: At) -> Violation:
        p = self.params(rule)
        if p.of == "year":
            expected = f"year in [{num_text(p.min)}, {num_text(p.max)}]"
        elif p.of == "magnitude":
            expected = f"in [-{num_text(p.max)}, {num_text(p.max)}]"
        else:
            expected = (
                f"<= {num_text(p.max)}" if p.min is None else f"in [{num_text(p.min)}, {num_text(p.max)}]"
            )
        seen = f"{name(at.path)}={at.shown}"
        return Violation(
            self.name,
            rule.id,
            at.path,
            expected,
            at.observed,
            True,
            f"{rule.tool} returned {seen}; every one of {rule.support.calls} clean results had {expected}",
        )
