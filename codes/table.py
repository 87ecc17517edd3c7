"""The table of property codes: one `PropertyCode` per code, in the canonical order of `CODES`, and
`describe` (a rule as people read it: `/total = /subtotal + /tax (cent)`, `/status in {paid, pending}`).

Adding a code is adding its module here (and its rule class in `output_contracts.mining.rule_classes`): see
docs/design.md, "Adding a property code".
"""

from __future__ import annotations

from output_contracts.codes.conditional import check as conditional
from output_contracts.codes.consistent import check as consistent
from output_contracts.codes.contract_set import CODES, Rule
from output_contracts.codes.date_order import check as date_order
from output_contracts.codes.domain import check as domain
from output_contracts.codes.echo import check as echo
from output_contracts.codes.format import check as format
from output_contracts.codes.length import check as length
from output_contracts.codes.range import check as range
from output_contracts.codes.relation import check as relation
from output_contracts.codes.required import check as required
from output_contracts.codes.sign import check as sign
from output_contracts.codes.spec import PropertyCode
from output_contracts.codes.type import check as kind
from output_contracts.codes.unique import check as unique

TABLE: dict[str, PropertyCode] = {
    c.name: c
    for c in (
        required.CODE,
        kind.CODE,
        sign.POSITIVE,
        sign.NONNEG,
        domain.CODE,
        echo.CODE,
        date_order.CODE,
        relation.CODE,
        format.CODE,
        length.CODE,
        range.CODE,
        unique.CODE,
        consistent.CODE,
        conditional.CODE,
    )
}
assert tuple(TABLE) == CODES, "the table must list every code of rules.model.CODES, in order"


def describe(rule: Rule) -> str:
    """A one-line statement of the rule (paths and params), e.g. `/total = /fare + /taxes + /fees`."""
    c = TABLE.get(rule.code)
    if c is not None:
        return c.describe(rule)
    p = tuple(x or "(result)" for x in rule.paths)
    return f"{rule.code} {list(p)} {dict(rule.params)}"


def describe_params(rule: Rule) -> str:
    """What `describe` says after the rule's first path (`= /subtotal + /tax (cent)`, `is int`, ...)."""
    text = describe(rule)
    first = (rule.paths[0] or "(result)") if rule.paths else ""
    if rule.code == "TYPE":
        return str(rule.params.get("kind", ""))
    if rule.code == "REQUIRED":
        return ""
    return text[len(first) :].strip() if first and text.startswith(first) else text
