"""Rule classes: one module per property code behind a common interface (`base.RuleClass`).

`RULE_CLASSES` is the order the miner runs them in; it is also the documentation order.
"""

from __future__ import annotations

import polars as pl

from output_contracts.codes.conditional.mine import Conditional
from output_contracts.codes.consistent.mine import Consistent
from output_contracts.codes.date_order.mine import DateOrder
from output_contracts.codes.domain.mine import Domain
from output_contracts.codes.echo.mine import Echo
from output_contracts.codes.format.mine import Format
from output_contracts.codes.length.mine import Length
from output_contracts.codes.range.mine import Range
from output_contracts.codes.relation.mine import Relation
from output_contracts.codes.required.mine import Required
from output_contracts.codes.sign.mine import FirstSign, Sign
from output_contracts.codes.type.mine import Kind
from output_contracts.codes.unique.mine import Unique

RULE_CLASSES = (
    Required,
    Kind,
    Sign,
    FirstSign,
    Domain,
    Echo,
    DateOrder,
    Relation,
    Format,
    Length,
    Range,
    Unique,
    Consistent,
    Conditional,
)

#: A code whose rule is implied by another's on the same place (tool, paths, checker): the implied rule
#: could never fire first, so it is not emitted (FORMAT under DOMAIN: an allowed value has an allowed
#: shape).
SUBSUMED_BY: dict[str, tuple[str, ...]] = {"FORMAT": ("DOMAIN",)}


def drop_subsumed(cands: pl.DataFrame) -> pl.DataFrame:
    """Candidate rules (CAND_SCHEMA) without those `SUBSUMED_BY` another candidate at the same place."""
    place = pl.concat_str(
        pl.col("checker"), pl.col("tool"), pl.col("paths").list.join("\x00"), separator="\x01"
    )
    out = cands.with_columns(place.alias("_place"))
    for code, by in SUBSUMED_BY.items():
        implying = out.filter(pl.col("code").is_in(by))["_place"].unique().implode()
        out = out.filter(~((pl.col("code") == code) & pl.col("_place").is_in(implying)))
    return out.drop("_place")


__all__ = ["RULE_CLASSES", "SUBSUMED_BY", "drop_subsumed"]
