"""DATE_ORDER — `paths [A, B]`, params `{"tz": "date" | "naive" | "aware"}`: A <= B as ISO-8601 values.

Semantics: A ≤ B compared in the rule's tz mode (`output_contracts.codes.dates`); a value that does not parse
in that mode is a violation. Instances pair by wildcard keys (the same array element, the same map
entry); paths without wildcards pair per call. Violation path = B's concrete path; expected
`">= <A's path> (<A value>)"`; observed B's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.dates import MODES, TZ_MODES, lt, parse_instant, parse_iso
from output_contracts.codes.keys import instance_key, keyed_hits
from output_contracts.codes.spec import (
    At,
    Nodes,
    Operand,
    PathFinder,
    PropertyCode,
    RuleEntry,
    Violation,
    broken,
    display,
    empty_hits,
    name,
    op_hits,
    resolve,
    side_doc,
)
from output_contracts.jsonutil import canonical_str


@dataclass(frozen=True)
class DateOrderParams:
    """`{"tz": mode}`: how the two values are read and compared (`output_contracts.codes.dates`)."""

    tz: str


class DateOrder(PropertyCode):
    name = "DATE_ORDER"
    short = "DATE"
    summary = "two ISO dates/times that were always ordered A <= B are not"
    n_paths = 2
    hit_cols = ("cid", "ridx", "op", "path", "kind", "str", "skey")

    def params(self, rule: Rule) -> DateOrderParams:
        tz = rule.params.get("tz")
        if tz not in TZ_MODES:
            raise self.bad(rule, f"DATE_ORDER tz must be one of {', '.join(TZ_MODES)}")
        return DateOrderParams(str(tz))

    def describe(self, rule: Rule) -> str:
        p = [x or "(result)" for x in rule.paths]
        return f"{p[0]} <= {p[1]} ({rule.params.get('tz')})"

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


CODE = DateOrder()
