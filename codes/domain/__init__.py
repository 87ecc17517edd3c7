"""The DOMAIN property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import Code, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, returned
from output_contracts.jsonutil import canonical_str


@dataclass(frozen=True)
class DomainParams:
    """`{"values": [...]}`: the allowed strings, sorted."""

    values: tuple[str, ...] = param(
        {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}}
    )


@register
class Domain(Code):
    """A string outside the small set of values seen in clean results.

    *Rule*: `paths = [P]`, `params.values` = the sorted distinct strings. Every **string** node at `P` is one
    of them (other kinds are TYPE's business). *Witness*: `expected` = the list, `observed` = the string.
    """

    name = "DOMAIN"
    short = "DOM"
    summary = "a string outside the small set of values seen in clean results"
    order = 50
    params_type = DomainParams
    min_support = 50
    min_tasks = 2

    def params(self, rule: Rule) -> DomainParams:
        values = rule.params.get("values")
        if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
            raise self.bad(rule, "DOMAIN needs params.values, a list of strings")
        return DomainParams(tuple(values))

    def describe(self, rule: Rule) -> str:
        values = [
            v if v and v.strip() == v and "," not in v else repr(v) for v in rule.params.get("values", [])
        ]
        return f"{rule.paths[0] or '(result)'} in {{{', '.join(values)}}}"

    def witness(self, rule: Rule, at: At) -> Violation:
        values = list(self.params(rule).values)
        listed = ", ".join(canonical_str(v) for v in values)
        return Violation(
            self.name,
            rule.id,
            at.path,
            values,
            at.observed,
            True,
            f"{rule.tool} returned {returned(at.path, at.shown)}; every one of {rule.support.calls} clean "
            f"results had one of {listed}",
        )
