"""DATE_ORDER — `paths [A, B]`, params `{"tz": "date" | "naive" | "aware"}`: A <= B as ISO-8601 values.

Semantics: A ≤ B compared in the rule's tz mode (`output_contracts.codes.dates`); a value that does not parse
in that mode is a violation. Instances pair by wildcard keys (the same array element, the same map
entry); paths without wildcards pair per call. Violation path = B's concrete path; expected
`">= <A's path> (<A value>)"`; observed B's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.date_order import DateOrder
from output_contracts.codes.dates import MODES, TZ_MODES, lt, parse_instant, parse_iso, str_instant
from output_contracts.codes.engine.compiled import ToolBuilder
from output_contracts.codes.evaluation import Check
from output_contracts.codes.hits import RuleEntry, broken, display, empty_hits, op_hits
from output_contracts.codes.keys import instance_key, keyed_hits
from output_contracts.codes.nodes import Nodes, Operand, PathFinder

#: Instants the compiled checker keeps per mode (timestamps are many: as many as `dates.parse_instant` keeps).
INSTANTS_SIZE = 1 << 16
#: The longest date the patterns accept (`YYYY-MM-DDThh:mm:ss.fffffffff+hh:mm`).
_DATE_MAX_LEN = 35
_INSTANTS: dict[str, dict[str, int | None]] = {tz: {} for tz in TZ_MODES}


def _instant(v: str, tz: str) -> int | None:
    """`parse_instant` of a string in mode `tz`, kept (DATE_ORDER's two places: dates repeat): here, not
    in `parse_instant`'s own cache as well."""
    x = str_instant(v, tz)
    if len(v) <= _DATE_MAX_LEN:  # what can be a date (long text is not kept)
        memo = _INSTANTS[tz]
        if len(memo) >= INSTANTS_SIZE:
            memo.clear()
        memo[v] = x
    return x


class DateOrderCheck(DateOrder, Check):
    hit_cols = ("cid", "ridx", "op", "path", "kind", "str", "skey")

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        tz = self.params(rule).tz  # once per rule, not per call
        return lambda nodes: self._paths(tz, nodes, ops)

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return self._paths(self.params(rule).tz, nodes, ops)

    @staticmethod
    def _paths(tz: str, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        first, b_op = ops[0], ops[1]
        a_by_key: dict[tuple[str, ...], list[Any]] = {}
        for p, v in nodes.get((first.side, first.pattern), []):
            a_by_key.setdefault(first.key_of(p), []).append(v)
        out = []
        for p, v in nodes.get((b_op.side, b_op.pattern), []):
            for a in a_by_key.get(b_op.key_of(p), []):
                ia, ib = parse_instant(a, tz), parse_instant(v, tz)
                if ia is None or ib is None or ia > ib:
                    out.append(b_op.display(p))
        return out

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        # each distinct string read once (a corpus repeats its dates across calls), in every mode at once,
        # as (us, ns) pairs: exactly `parse_instant`'s instants (years 1 to 9999, no Int64 overflow)
        # (strings told apart by their key `skey`, HIT_COLS: an integer on a corpus with a view)
        strings = (
            hits.filter(pl.col("kind") == "string").select("skey", "str").unique(subset="skey").collect()
        )
        parsed = parse_iso(strings, "str").lazy()
        outs = []
        for tz in TZ_MODES:
            sub = [e for e in entries if self.params(e.rule).tz == tz]
            if not sub:
                continue
            h = hits.filter(pl.col("ridx").is_in([e.ridx for e in sub]))
            inst = parsed.filter(pl.col("mode") == MODES.index(tz) + 1).select("skey", "us", "ns")
            # with no wildcard operand the two sides meet on integers alone (`instance_key`)
            key = instance_key(sub)
            a = (
                keyed_hits(op_hits(h, 0), sub, 0, key)
                .join(inst, on="skey", how="left")
                .select("cid", "ridx", *key, pl.col("us").alias("a_us"), pl.col("ns").alias("a_ns"))
            )
            b = keyed_hits(op_hits(h, 1), sub, 1, key).join(inst, on="skey", how="left")
            j = b.join(a, on=["cid", "ridx", *key])
            later = lt(pl.col("us"), pl.col("ns"), pl.col("a_us"), pl.col("a_ns"))
            bad = pl.col("a_us").is_null() | pl.col("us").is_null() | later
            outs.append(display(sub, broken(j.filter(bad)), 1))
        return pl.concat(outs) if outs else empty_hits()

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        if ops[0].wpos or ops[1].wpos:
            return False
        tz = self.params(rule).tz
        memo = b.const(_INSTANTS[tz])  # the same dictionary (cleared, never replaced)
        a, c = b.slot(ops[0]), b.slot(ops[1])
        parse, keep = b.const(parse_instant), b.const(_instant)
        b.tail.append(f"    if {a} is not _MISS and {c} is not _MISS:")
        names = []
        for x in (a, c):
            i = b.name("i")
            names.append(i)
            b.tail.append(
                f"        {i} = {memo}.get({x}, _MISS) if type({x}) is str else {parse}({x}, {tz!r})"
            )
            b.tail.append(f"        if {i} is _MISS:")
            b.tail.append(f"            {i} = {keep}({x}, {tz!r})")
        ia, ib = names
        b.tail.append(f"        if {ia} is None or {ib} is None or {ia} > {ib}:")
        b.tail.append(f"            out.append(({ri}, {ops[1].display(ops[1].concrete(()))!r}))")
        return True


CHECKS = (DateOrderCheck(),)
