"""The ECHO property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import resolve
from output_contracts.codes.spec import Code, Paths
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name
from output_contracts.jsonutil import canonical_str


@register
class Echo(Code):
    """A result field that always echoed an argument differs from it.

    *Rule*: `paths = [R, "$args/A"]` (no wildcards). When both are present and scalar, the result value
    equals the argument value: ints and floats compare numerically (`7` echoes `7.0`), anything else must
    have the same kind and value (`true` does not echo `1`). *Witness*: path = `R`; `expected` = the
    argument value, `observed` = the result value.
    """

    name = "ECHO"
    short = "ECHO"
    summary = "a result field that always echoed an argument differs from it"
    order = 60
    shape = Paths(2, 2, {"prefixItems": [{"not": {"pattern": "^\\$args"}}, {"pattern": "^\\$args/"}]})
    min_support = 20

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} = {rule.paths[1] or '(result)'}"

    def witness(self, rule: Rule, at: At) -> Violation:
        arg = at.ops[1]
        _, a_val = resolve(at.arguments, arg.pattern)
        return Violation(
            self.name,
            rule.id,
            at.path,
            a_val,
            at.observed,
            True,
            f"{rule.tool} returned {name(at.path)}={at.shown} but was called with {arg.display(arg.pattern)}="
            f"{canonical_str(a_val)}; in every one of {rule.support.calls} clean calls the result echoed the "
            "argument",
        )
