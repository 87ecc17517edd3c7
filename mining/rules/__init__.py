"""Rule classes: one module per property code behind a common interface (`base.RuleClass`).

`RULE_CLASSES` is the order the miner runs them in; it is also the documentation order.
"""

from __future__ import annotations

from contracts.mining.rules.date_order import DateOrder
from contracts.mining.rules.domain import Domain
from contracts.mining.rules.echo import Echo
from contracts.mining.rules.kind import Kind
from contracts.mining.rules.relation import Relation
from contracts.mining.rules.required import Required
from contracts.mining.rules.sign import Sign

RULE_CLASSES = (Required, Kind, Sign, Domain, Echo, DateOrder, Relation)

__all__ = ["RULE_CLASSES"]
