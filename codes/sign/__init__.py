"""The POSITIVE and NONNEG property codes: one property (the sign of a number) at two strengths, mined
by one decision (`mine.py`: the stronger claim the data supports, never both), so one folder."""

from __future__ import annotations

from typing import ClassVar

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import Code
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name


class Sign(Code):
    """A sign bound on every number at a pattern (`op`: `> 0` or `>= 0`)."""

    op: ClassVar[str]
    min_support = 30

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} {self.op}"

    def witness(self, rule: Rule, at: At) -> Violation:
        return Violation(
            self.name,
            rule.id,
            at.path,
            self.op,
            at.observed,
            True,
            f"{rule.tool} returned {name(at.path)}={at.shown}; every one of {rule.support.calls} clean "
            f"results had {name(at.path)} {self.op}",
        )


@register
class Positive(Sign):
    """A number that was > 0 in every clean result is ≤ 0.

    *Rule*: `paths = [P]`. Every int or float node at `P` is `> 0`; other kinds are not judged (TYPE's
    business). *Witness*: `expected: "> 0"`, `observed` = the number.
    """

    name = "POSITIVE"
    short = "POS"
    summary = "a number that was > 0 in every clean result is <= 0"
    order = 30
    op = "> 0"


@register
class Nonneg(Sign):
    """A number that was ≥ 0 in every clean result is negative.

    *Rule*: `paths = [P]`. Every int or float node at `P` is `>= 0`. *Witness*: `expected: ">= 0"`,
    `observed` = the number.

    ```json
    {"code": "NONNEG", "path": "/available", "expected": ">= 0", "observed": -3, "present": true,
     "detail": "lookup_inventory returned available=-3; every one of 412 clean results had available >= 0"}
    ```
    """

    name = "NONNEG"
    short = "NNEG"
    summary = "a number that was >= 0 in every clean result is negative"
    order = 40
    op = ">= 0"
