"""RANGE — `paths [P]`, params `{"of": "number" | "magnitude" | "year", "min": x | null, "max": y}`

*Qualifying example*: every number at P (per pool), or every date-like string at P (all strings there
must be dates); ≥ 30 values from ≥ 200 tasks. A field holding negatives gets `of: magnitude` (the bound
on |v| from its largest magnitude; no lower bound). *Trivial cases*: constant fields.
*Catches*: unit changes, saturation, epoch / far-future sentinel dates.

Checker semantics: a number breaks it above max, or between 0 and min (0 and below are the sign codes');
with `magnitude`, when |v| > max; a date string breaks it when its year is outside [min, max].

**RANGE: 200 tasks, distribution-free.** With tasks as exchangeable draws, the chance that a new task
holds a value above the largest of t earlier tasks' values is at most 1/(t+1), whatever the
distribution; at 200 tasks ≤ 0.5% per bound and place. The bounds sit beyond the extremes by at least a
factor 3 (rounded outward to powers of ten: 12.5–830 gives [1, 10000]), so the real rate is far below
that; a bound right at the next power of ten was tried and the sample world's order totals crossed it in
held-out tasks (a maximum of 9,5xx, a held-out 10,2xx). Years of ISO dates get the earliest decade
minus ten years to the end of the decade after the latest (2019–2024 gives [2000, 2039]), judged per
pool like the numbers (every member's strings date-like; the tasks of the largest member count). What leaves
such bounds is a unit change (×100 cents, ×1000), int32 saturation (2,147,483,647), an epoch or 9999
sentinel date.
"""

from __future__ import annotations

import math

import polars as pl

from output_contracts.codes.mining_context import FromStats, MiningContext, paths_one, pooled_stats
from output_contracts.codes.mining_frames import CLS_NUM, CLS_STR, cand_frame

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a number (pooled) or a date-like string at the pattern"
SUPPORT = "≥ {min_support} values, ≥ {min_tasks} tasks"
CONDITIONS = (
    "numbers: not constant (with negatives: a bound on magnitude only); dates: every string date-like"
)

#: RANGE on numbers: the bounds are the powers of ten beyond the extremes times / divided by this, so a
#: bound is never closer than a factor 3 to a clean value (a maximum of 9,500 alone would otherwise give
#: 10,000; the sample world's order totals crossed such a bound in held-out tasks).
RANGE_MARGIN = 3.0
#: RANGE on years: the margin below the earliest decade and above the latest, in years.
YEAR_MARGIN = 10
#: What the contract set records of these constants (its `params`).
CONSTANTS = {"margin": RANGE_MARGIN, "year_margin": YEAR_MARGIN}

#: No RANGE above this (a bound of 10^300 says nothing, and 10^309 is not a float).
MAX_BOUND = 1e300


def _power_above(x: float) -> float:
    """The least power of ten strictly above x (> 0), exact where log10 rounds."""
    p = 10.0 ** (math.floor(math.log10(x)) + 1)
    while p / 10 > x:
        p /= 10
    while p <= x:
        p *= 10
    return p


def _power_at_or_below(x: float) -> float:
    """The greatest power of ten at or below x (> 0), exact where log10 rounds (0.09999999999999998
    gives 0.01, not 0.1)."""
    p = 10.0 ** math.floor(math.log10(x))
    while p > x:
        p /= 10
    while p * 10 <= x:
        p *= 10
    return p


def _params_number(lo: float | None, hi: float) -> str:
    lo_text = "null" if lo is None else _num(lo)
    return f'{{"max":{_num(hi)},"min":{lo_text},"of":"number"}}'


def _num(x: float) -> str:
    """A bound as JSON: whole numbers below 10^15 as integers, others as the float's shortest repr."""
    return str(int(x)) if 1 <= x < 1e15 else repr(float(x))


class RangeMiner(FromStats):
    """The RANGE rule class.

    Numbers (judged per pool, `output_contracts.mining.pools`, like the sign rules): a field whose clean
    values are all >= 0 and not constant gets `max` = the power of ten strictly above three times its largest
    value and, when every value is > 0, `min` = the power of ten at or below a third of its smallest: values
    from 12.5 to 830 give [1, 10000] (a bound is never within a factor 3 of a clean value). Years (judged per
    pool too: the `/flights/*/date` of every tool that returns a reservation is one field): a string field
    whose every value, in every member of its pool, starts like an ISO date gets the decade of its earliest
    year minus one decade, to the end of the decade after its latest: 2019–2024 gives [2000, 2039].

    Chance argument (distribution-free): of t+1 exchangeable tasks, the new one is the largest with chance
    1/(t+1); the same for the smallest. The same argument holds for |v| on a field with negatives (the largest
    magnitude of t+1 exchangeable tasks is the new one with chance 1/(t+1)).

    Not emitted: a lower bound on fields holding negatives (small magnitudes near zero are ordinary there), on
    constant fields (a value that never varied says nothing about a spread), and where the bounds would be
    implied by another rule (a DOMAIN-valued field has no numbers; the sign codes handle 0 and below).
    """

    codes = ("RANGE",)

    def from_stats(self, ctx: MiningContext) -> pl.DataFrame:
        p = ctx.params
        enough = (pl.col("p_n") >= p.needed("RANGE")) & (pl.col("p_tasks") >= p.tasks_needed("RANGE"))
        nums = pooled_stats(ctx).filter(
            (pl.col("cls") == CLS_NUM) & (pl.col("p_min") < pl.col("p_max")) & enough
        )
        rows = []
        for r in nums.select(
            "tool", "pattern", "checker", "ex", "p_min", "p_max", "p_n", "p_calls", "p_tasks"
        ).iter_rows(named=True):
            top = max(r["p_max"], -r["p_min"])
            if top * RANGE_MARGIN >= MAX_BOUND:
                continue
            hi = _power_above(top * RANGE_MARGIN)
            if r["p_min"] < 0:
                params = f'{{"max":{_num(hi)},"min":null,"of":"magnitude"}}'
            else:
                lo = _power_at_or_below(r["p_min"] / RANGE_MARGIN) if r["p_min"] > 0 else None
                params = _params_number(lo, hi)
            rows.append(
                {
                    **{k: r[k] for k in ("tool", "pattern", "checker", "ex")},
                    "params": params,
                    "n": r["p_n"],
                    "calls": r["p_calls"],
                    "tasks": r["p_tasks"],
                }
            )
        years = pooled_stats(ctx).filter(
            (pl.col("cls") == CLS_STR) & pl.col("p_all_date") & pl.col("p_min_year").is_not_null() & enough
        )
        for r in years.select(
            "tool", "pattern", "checker", "ex", "p_min_year", "p_max_year", "p_n", "p_calls", "p_tasks"
        ).iter_rows(named=True):
            lo = (r["p_min_year"] // 10) * 10 - YEAR_MARGIN
            hi = (r["p_max_year"] // 10) * 10 + 9 + YEAR_MARGIN
            rows.append(
                {
                    **{k: r[k] for k in ("tool", "pattern", "checker", "ex")},
                    "n": r["p_n"],
                    "calls": r["p_calls"],
                    "tasks": r["p_tasks"],
                    "params": f'{{"max":{hi},"min":{lo},"of":"year"}}',
                }
            )
        if not rows:
            return cand_frame()
        schema: dict[str, pl.DataType] = {
            "tool": pl.String(),
            "pattern": pl.String(),
            "checker": pl.Int32(),
            "ex": pl.List(pl.UInt64),
            "params": pl.String(),
            "n": pl.Int64(),
            "calls": pl.Int64(),
            "tasks": pl.Int64(),
        }
        out = pl.DataFrame(rows, schema=schema).with_columns(pl.lit("RANGE").alias("code"), paths_one())
        return cand_frame(out)


#: This folder's miners, in the order the miner runs them.
MINERS = (RangeMiner,)
