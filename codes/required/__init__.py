"""The REQUIRED property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from output_contracts.codes.contract_set import Rule, split_side
from output_contracts.codes.spec import Code
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation
from output_contracts.traces.pointers import unescape_token


@register
class Required(Code):
    """A field present in every clean result is missing.

    *Rule*: `paths = [P]`. For every node at the parent of `P` that is an **object**, the key `last(P)` is
    present (any value, `null` included). A parent that is not an object (an array, a string, a missing
    parent) does not qualify — TYPE reports that. *Witness*: path = the parent's concrete path + `/key`;
    `expected: "present"`, `observed: null`, `present: false`.

    ```json
    {"code": "REQUIRED", "path": "/warehouse", "expected": "present", "observed": null, "present": false}
    ```
    """

    name = "REQUIRED"
    short = "REQ"
    summary = "a field present in every clean result is missing"
    order = 10
    min_support = 20
    min_tasks = 3

    def validate(self, rule: Rule) -> None:
        super().validate(rule)
        if split_side(rule.paths[0])[1] == "":
            raise self.bad(rule, "REQUIRED needs a path below the root")

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} present"

    def describe_params(self, rule: Rule) -> str:
        return ""

    def witness(self, rule: Rule, at: At) -> Violation:
        key = unescape_token(at.raw.rpartition("/")[2])
        return Violation(
            self.name,
            rule.id,
            at.path,
            "present",
            None,
            False,
            f"{rule.tool} returned no '{key}' at {at.path}; every one of {rule.support.calls} clean results had it",
        )

    def found(self, observed: str) -> str:
        return "it is missing"
