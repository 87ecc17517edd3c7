"""RANGE — `paths [P]`, params `{"of": "number"|"magnitude"|"year", "min": x|null, "max": y}`: every
number at a pattern (or the year of every ISO date there) lies within magnitude bounds.

`of: number`: a number v at P breaks the rule when v > max, or when min is set and 0 < v < min (zero
and negative values are the sign codes' business, so a sentinel −1 gets one receipt, not two). The
miner's bounds are powers of ten around the clean values (`output_contracts.codes.range.mine`): a unit
change (cents for dollars, grams for kilograms, ×1000), a saturated int32 (2³¹−1) or a 9999 sentinel
leaves the decades the field lives in, while an ordinary new value does not.

`of: magnitude` (a field that holds negatives too, such as payments and refunds): a number v at P
breaks the rule when |v| > max (`min` is null); the same unit changes and saturations, in either
direction.

`of: year`: a string at P that starts like an ISO date (`YYYY-MM-DD`) breaks the rule when its year is
outside [min, max]: a null turned into the Unix epoch (`1970-01-01`), a `9999-12-31` "forever"
sentinel, a two-digit year read as the first century. Other strings are FORMAT's business.

Per-node code: over a corpus the comparison is made inside the join of leaves to operands (the bounds
travel in a small per-rule table joined to the breaking candidates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import (
    EXACT_INT,
    MEMO_SIZE,
    InlineTest,
    ToolBuilder,
    nothing,
    when,
)
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import KIND_BIT, NUMERIC_BITS, RuleEntry, broken
from output_contracts.codes.nodes import NUMERIC_KINDS, Nodes, Operand, PathFinder
from output_contracts.codes.range import OF, Range

#: A string whose year RANGE reads: `YYYY-MM-DD` at its start.
YEAR_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
_YEAR = re.compile(YEAR_RE)


def year_of(v: str) -> int | None:
    """The year of a string that starts like an ISO date (`YYYY-MM-DD`), else None."""
    return int(v[:4]) if _YEAR.match(v) else None


#: The years of the date prefixes the compiled checker met (`_kept_year`): dates repeat across calls.
_YEARS: dict[str, int | None] = {}


def _kept_year(head: str) -> int | None:
    """`year_of` a string's first ten characters (all it reads), kept in `_YEARS`."""
    y = year_of(head)
    if len(_YEARS) >= MEMO_SIZE:
        _YEARS.clear()
    _YEARS[head] = y
    return y


class RangeCheck(Range, NodeCheck):
    node_class = 7
    hit_cols = ("cid", "ridx", "path", "kind", "num", "str")
    envelope_tmasks = (0, 1)  # number and magnitude bounds (years are read from strings)

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        p = self.params(rule)
        hi = p.max
        if p.of == "year":
            lo_y = -math.inf if p.min is None else p.min

            def years(nodes: Nodes) -> list[str]:
                out = []
                for path, v in nodes.get(key, ()):
                    if type(v) is str:
                        y = year_of(v)
                        if y is not None and (y < lo_y or y > hi):
                            out.append(prefix + path)
                return out

            return years
        if p.of == "magnitude":
            return lambda nodes: [
                prefix + path
                for path, v in nodes.get(key, ())
                if (type(v) is int or type(v) is float) and abs(float(v)) > hi
            ]
        lo = 0.0 if p.min is None else p.min
        return lambda nodes: [
            prefix + path
            for path, v in nodes.get(key, ())
            # as float64, the way a corpus stores numbers (an int beyond 2^53 compares as its nearest double)
            if (type(v) is int or type(v) is float) and (float(v) > hi or 0 < float(v) < lo)
        ]

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        p = self.params(rule)
        hit = b.hit(ri, ops[0].side)
        hi = b.const(p.max)
        # a float, or an int of exact magnitude, compares as its `float()` does: no conversion
        exact = f"({{t}} is float or (-{EXACT_INT} <= {{v}} <= {EXACT_INT}))"
        bounded = abs(p.max) <= EXACT_INT and (p.min is None or abs(p.min) <= EXACT_INT)
        if p.of == "year":
            lo = b.const(-float("inf") if p.min is None else p.min)
            years, year = b.const(_YEARS), b.const(_kept_year)

            def year_lines(v: str, path: str) -> list[str]:
                y = b.name("y")
                return [
                    f"{y} = {years}.get({v}[:10], _MISS)",
                    f"if {y} is _MISS:",
                    f"    {y} = {year}({v}[:10])",
                    f"if {y} is not None and ({y} < {lo} or {y} > {hi}):",
                    f"    {hit(path)}",
                ]

            # only a value of type `str` exactly has a year
            b.test_at(ops[0], ri, InlineTest(year_lines, nothing, nothing, pure=True))
            return True
        # the tests below hold only for a value of type int or float exactly: `on_num`
        if p.of == "magnitude":
            neg = b.const(-p.max)

            def num_cond(v: str, t: str) -> str:
                slow = f"abs(float({v})) > {hi}"
                if not bounded:
                    return slow
                # the exact comparison first, on any int or float: when it holds, so does the
                # `float()` one (rounding to the nearest float keeps order, and the bound is a float)
                return f"({v} > {hi} or {v} < {neg}) and (abs({v}) > {hi} if {exact.format(t=t, v=v)} else {slow})"
        else:
            lo = b.const(0.0 if p.min is None else p.min)

            def num_cond(v: str, t: str) -> str:
                slow = f"(float({v}) > {hi} or 0 < float({v}) < {lo})"
                if not bounded:
                    return slow
                low = "" if p.min is None else f" or 0 < {v} < {lo}"
                return (
                    f"({v} > {hi}{low}) and "
                    f"(({v} > {hi} or 0 < {v} < {lo}) if {exact.format(t=t, v=v)} else {slow})"
                )

        b.test_at(ops[0], ri, InlineTest(nothing, when(hit, num_cond), nothing))
        return True

    def node_mask(self, rule: Rule) -> int:
        """What the bounds are of: 0 a number, 1 a magnitude, 2 a year."""
        return OF.index(self.params(rule).of)

    def node_bounds(self, rule: Rule) -> tuple[float | None, float | None]:
        p = self.params(rule)
        return (p.min, p.max)

    def keep(self) -> pl.Expr:
        # Inside the join: numbers are judged against their rule's bounds (`vectorised` tests them the
        # same way), so only the breaking ones are kept; a string under a year rule is kept when its
        # first four characters, read as a number, fall outside the bounds: a superset of the breaking
        # ones (`vectorised` reads the same year, only where YEAR_RE matches), so the date columns a
        # year rule names do not all go through YEAR_RE.
        num = pl.col("num")
        tmask, hi = pl.col("tmask"), pl.col("hi")
        numeric = ((pl.col("kbit") & NUMERIC_BITS) != 0) & (
            ((tmask == 1) & (num.abs() > hi))
            | ((tmask == 0) & ((num > hi) | ((num > 0) & (num < pl.col("lo").fill_null(0)))))
        )
        y = pl.col("str").str.slice(0, 4).cast(pl.Float64, strict=False)
        year = (
            (tmask == 2)
            & (pl.col("kbit") == KIND_BIT["string"])
            & ((y > hi) | (y < pl.col("lo").fill_null(-math.inf))).fill_null(False)
        )
        return numeric | year

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        ps = [(e.ridx, self.params(e.rule)) for e in entries]
        bounds = pl.DataFrame(
            {
                "ridx": [r for r, _ in ps],
                "year": [p.of == "year" for _, p in ps],
                "mag": [p.of == "magnitude" for _, p in ps],
                "lo": [p.min for _, p in ps],
                "hi": [p.max for _, p in ps],
            },
            schema={
                "ridx": pl.UInt32,
                "year": pl.Boolean,
                "mag": pl.Boolean,
                "lo": pl.Float64,
                "hi": pl.Float64,
            },
        )
        h = hits.join(bounds.lazy(), on="ridx")
        y = (
            pl.when(pl.col("str").str.contains(YEAR_RE))
            .then(pl.col("str").str.slice(0, 4).cast(pl.Float64, strict=False))
            .otherwise(None)
        )
        num_bad = (
            pl.col("kind").cast(pl.String).is_in(NUMERIC_KINDS)
            & ~pl.col("year")
            & (
                pl.when(pl.col("mag"))
                .then(pl.col("num").abs() > pl.col("hi"))
                .otherwise(
                    (pl.col("num") > pl.col("hi"))
                    | ((pl.col("num") > 0) & (pl.col("num") < pl.col("lo").fill_null(0)))
                )
            )
        )
        year_bad = (
            pl.col("year")
            & (pl.col("kind") == "string")
            & y.is_not_null()
            & ((y > pl.col("hi")) | (y < pl.col("lo").fill_null(-math.inf)))
        )
        return broken(h.filter(num_bad | year_bad))


CHECKS = (RangeCheck(),)
