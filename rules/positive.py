"""POSITIVE — `paths [P]`, params `{}`: every number at a pattern is > 0 (see `output_contracts.rules.sign`)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.rules.base import Operand, PathFinder, is_num
from output_contracts.rules.model import Rule
from output_contracts.rules.sign import Bound


class Positive(Bound):
    name = "POSITIVE"
    short = "POS"
    summary = "a number that was > 0 in every clean result is <= 0"
    node_class = 2
    op = "> 0"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if is_num(v) and v <= 0]

    @staticmethod
    def breaks_expr() -> pl.Expr:
        return pl.col("num") <= 0


CODE = Positive()
