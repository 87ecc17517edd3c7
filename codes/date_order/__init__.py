"""The DATE_ORDER property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import resolve, side_doc
from output_contracts.codes.spec import Code, Paths, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name
from output_contracts.jsonutil import canonical_str

#: How a rule reads and compares its two values (`output_contracts.codes.dates` parses them).
TZ_MODES = ("aware", "naive", "date")


@dataclass(frozen=True)
class DateOrderParams:
    """`{"tz": mode}`: how the two values are read and compared (`output_contracts.codes.dates`)."""

    tz: str = param({"enum": list(TZ_MODES)})


@register
class DateOrder(Code):
    """Two ISO-8601 dates or times that were always ordered A ≤ B are not.

    *Rule*: `paths = [A, B]`, `params.tz` ∈ `aware | naive | date`. Wildcards are allowed when both paths
    have them at the same positions (`/flights/*/depart`, `/flights/*/arrive`); instances are then paired by
    equal indexes. Qualifies when both are present. Parsing per mode:

    | tz | accepted text |
    |---|---|
    | `date` | `YYYY-MM-DD` |
    | `naive` | `YYYY-MM-DD` + `T` or space + `HH:MM[:SS[.fraction]]`, no zone |
    | `aware` | as `naive`, followed by `Z` or `±HH:MM` (or `±HHMM`); compared as instants in UTC |

    A value that does not parse in the rule's mode (another kind, `2026-02-30`, hour 24, a zone in `naive`
    mode) is a violation too. *Witness*: path = B's concrete path; `expected: ">= <A's concrete path> (<A
    value>)"`; `observed` = B's value.
    """

    name = "DATE_ORDER"
    short = "DATE"
    summary = "two ISO dates/times that were always ordered A <= B are not"
    order = 70
    shape = Paths(2, 2)
    params_type = DateOrderParams
    min_support = 20
    min_tasks = 7

    def params(self, rule: Rule) -> DateOrderParams:
        tz = rule.params.get("tz")
        if tz not in TZ_MODES:
            raise self.bad(rule, f"DATE_ORDER tz must be one of {', '.join(TZ_MODES)}")
        return DateOrderParams(str(tz))

    def describe(self, rule: Rule) -> str:
        p = [x or "(result)" for x in rule.paths]
        return f"{p[0]} <= {p[1]} ({rule.params.get('tz')})"

    def witness(self, rule: Rule, at: At) -> Violation:
        a_op, b_op = at.ops
        a_path = a_op.concrete(b_op.key_of(at.raw))
        _, a_val = resolve(side_doc(a_op.side, at.arguments, at.result), a_path)
        a_shown = a_val if isinstance(a_val, str) else canonical_str(a_val)
        a_name = a_op.display(a_path)
        return Violation(
            self.name,
            rule.id,
            at.path,
            f">= {a_name} ({a_shown})",
            at.observed,
            True,
            f"{rule.tool} returned {name(at.path)}={at.shown} against {name(a_name)}={canonical_str(a_val)}; "
            f"every one of {rule.support.calls} clean results had {name(a_op.display(a_op.pattern))} <= "
            f"{name(b_op.display(b_op.pattern))} ({self.params(rule).tz} ISO-8601)",
        )
