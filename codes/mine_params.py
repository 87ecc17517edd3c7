"""Mining parameters: support thresholds and the fixed constants behind each chance argument.

Every number here is written into the contract set's `params`, so a contract set says how it was made.
The reasons for each value are in docs/rules.md; in short:

- support counts qualifying examples (calls, or values for POSITIVE/NONNEG/DOMAIN) and distinct tasks,
  never raw rows, because calls from one task are not independent evidence;
- `max_violation_rate` (the "rule of three": 1 − 0.05^(1/n) is the 95% upper bound on a violation rate
  after n clean examples and no violation) can replace the per-class example threshold: a rule is then
  kept when that bound is at most X;
- DATE_ORDER needs 7 distinct tasks: if the two dates were ordered at random per task, seeing the same
  order in 7 independent tasks has chance 0.5^7 < 0.01 (Daikon's ordering test);
- DOMAIN counts tasks, not rows: >= 50 tasks, each value in >= 3 tasks, and a cross-validated
  Good–Turing unseen mass (pairs of values seen in one of 5 task splits only) <= 1%; judged per pool of
  same-shaped objects across tools (`output_contracts.mining.shapes`);
- FORMAT is DOMAIN's test applied to the strings' shapes (`output_contracts.codes.format.check`), at the exact level
  when its set of shapes is closed, else at the loose one, else (strings of one length) at the charset
  one, whose parts are judged per task;
- LENGTH ("never empty") needs 300 distinct tasks with no empty array: after zero events in t tasks the
  95% upper bound on the per-task rate is about 3/t (the rule of three), 1% at t = 300, the audit's
  whole budget of spurious receipts per clean episode. (100 tasks was tried: τ-bench retail's
  `get_user_details` `/orders` was non-empty in 120 tasks of one fold and empty in 4 of 450 held-out
  episodes; 62 of the 500 users have no order.)
- CONSISTENT ("an entity's field never changes within an episode") counts pairs of calls on one entity
  and needs 200 distinct tasks holding such a pair with no change: a claim about a rare event, like
  LENGTH's, so after zero changes in t tasks the 95% upper bound on the per-task rate is about 3/t,
  1.5% at 200 (a thin write tool of τ-bench airline has 80-140 tasks with a repeat in a 600-task corpus
  and gets no rule; the reservation reader, 340, does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.choices import Clean as Clean
from output_contracts.choices import RuleSource as RuleSource
from output_contracts.codes.contract_set import CODES
from output_contracts.codes.format.check import FORMAT_MAX_LEN
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import MiningError

#: Minimum qualifying examples per code (calls; values for POSITIVE and NONNEG; tasks for DOMAIN and
#: FORMAT; arrays for LENGTH).
DEFAULT_MIN_SUPPORT: dict[str, int] = {
    "REQUIRED": 20,
    "TYPE": 20,
    "POSITIVE": 30,
    "NONNEG": 30,
    "DOMAIN": 50,
    "ECHO": 20,
    "DATE_ORDER": 20,
    "RELATION": 30,
    "FORMAT": 50,
    "LENGTH": 30,
    "RANGE": 30,
    "UNIQUE": 30,
    "CONSISTENT": 30,
    "CONDITIONAL": 30,
}

#: Minimum distinct tasks per code (1 where DESIGN §3 sets none).
DEFAULT_MIN_TASKS: dict[str, int] = {
    "REQUIRED": 3,
    "TYPE": 1,
    "POSITIVE": 1,
    "NONNEG": 1,
    "DOMAIN": 2,
    "ECHO": 1,
    "DATE_ORDER": 7,
    "RELATION": 1,
    "FORMAT": 2,
    "LENGTH": 300,
    "RANGE": 200,
    "UNIQUE": 300,
    "CONSISTENT": 200,
    "CONDITIONAL": 30,
}


CLEAN_MODES = tuple(c.value for c in Clean)


RULE_SOURCES = tuple(s.value for s in RuleSource)

DOMAIN_MIN_TASKS = 3  # each value seen in at least this many distinct tasks
DOMAIN_SPLITS = 5  # task splits the value set must be stable across ...
DOMAIN_MAX_UNSEEN = 0.01  # ... : (value, task) pairs of values seen in one split only, at most this share
DOMAIN_MAX_SHARE = 0.1  # distinct values <= (value, task) pairs * this
FORMAT_MAX_SHAPES = 8  # at most this many shapes at a place (per level)
#: RANGE on numbers: the bounds are the powers of ten beyond the extremes times / divided by this, so a
#: bound is never closer than a factor 3 to a clean value (a maximum of 9,500 alone would otherwise give
#: 10,000; the sample world's order totals crossed such a bound in held-out tasks).
RANGE_MARGIN = 3.0
#: RANGE on years: the margin below the earliest decade and above the latest, in years.
YEAR_MARGIN = 10
ECHO_MIN_DISTINCT = 2  # an echo needs >= 2 distinct argument values (equal constants are coincidence)
RELATION_MIN_TUPLES = 5  # Daikon's ternary minimum: >= 5 distinct operand tuples
RELATION_MAX_TERMS = 3
#: RELATION count_of: kept only when the most common length takes at most this share of the qualifying
#: calls and they come from at least COUNT_OF_MIN_TASKS tasks (a coincidence then has chance at most
#: 0.75^30 ~ 2e-4; docs/rules.md).
COUNT_OF_MAX_SHARE = 0.75
COUNT_OF_MIN_TASKS = 30


def violation_bound(n: int) -> float:
    """95% upper bound on the violation rate after `n` examples without a violation: 1 − 0.05^(1/n).

    Rounded to 6 decimals so the contract set reads well; n = 0 gives 1.0 (no evidence at all).
    """
    if n <= 0:
        return 1.0
    return round(1.0 - 0.05 ** (1.0 / n), 6)


def examples_for_rate(x: float) -> int:
    """Smallest n with `violation_bound(n) <= x` (used by `--max-violation-rate`)."""
    if not 0.0 < x < 1.0:
        raise MiningError(f"max_violation_rate must be in (0, 1), got {x}", field="max_violation_rate")
    n = max(1, math.ceil(math.log(0.05) / math.log(1.0 - x)))
    while n > 1 and 1.0 - 0.05 ** (1.0 / (n - 1)) <= x:
        n -= 1
    while 1.0 - 0.05 ** (1.0 / n) > x:
        n += 1
    return n


@dataclass(frozen=True)
class MineParams:
    """Every knob of one mining run, validated."""

    k: int = 1
    seed: int = DEFAULT_SEED
    clean: Clean = Clean.ok
    max_domain: int = 8
    min_support: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_MIN_SUPPORT))
    min_tasks: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_MIN_TASKS))
    max_violation_rate: float | None = None
    tools: tuple[str, ...] | None = None
    rule_source: RuleSource = RuleSource.all

    @classmethod
    def build(
        cls,
        *,
        folds: int,
        seed: int,
        min_support: Mapping[str, int] | None,
        max_domain: int,
        clean: str,
        tools: tuple[str, ...] | None,
        max_violation_rate: float | None,
        rule_source: str = "all",
    ) -> MineParams:
        """Merge user overrides into the defaults, refusing unknown codes and nonsense values."""
        if rule_source not in RULE_SOURCES:
            raise MiningError(
                f"rule_source must be one of {', '.join(RULE_SOURCES)}, got {rule_source!r}",
                field="rule_source",
            )
        if folds < 1:
            raise MiningError(f"folds must be >= 1, got {folds}", field="folds")
        if clean not in CLEAN_MODES:
            raise MiningError(f"clean must be one of {', '.join(CLEAN_MODES)}, got {clean!r}", field="clean")
        if max_domain < 1:
            raise MiningError(f"max_domain must be >= 1, got {max_domain}", field="max_domain")
        sup = dict(DEFAULT_MIN_SUPPORT)
        for code, n in (min_support or {}).items():
            c = code.upper()
            if c not in CODES:
                raise MiningError(
                    f"unknown rule class {code!r} in min_support (known: {', '.join(CODES)})",
                    field="min_support",
                )
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise MiningError(f"min_support {c} must be an integer >= 1, got {n!r}", field="min_support")
            sup[c] = n
        if max_violation_rate is not None:
            examples_for_rate(max_violation_rate)  # validates
        return cls(
            k=folds,
            seed=seed,
            clean=Clean(clean),
            max_domain=max_domain,
            min_support=sup,
            max_violation_rate=max_violation_rate,
            tools=tools,
            rule_source=RuleSource(rule_source),
        )

    @classmethod
    def of(
        cls,
        *,
        folds: int = 1,
        seed: int = DEFAULT_SEED,
        min_support: Mapping[str, int] | None = None,
        max_domain: int = 8,
        clean: str = "ok",
        tools: Sequence[str] | None = None,
        max_violation_rate: float | None = None,
        rule_source: str = "all",
    ) -> MineParams:
        """`build` with the defaults of `contracts mine`: the settings a caller gives, by name."""
        return cls.build(
            rule_source=rule_source,
            folds=folds,
            seed=seed,
            min_support=min_support,
            max_domain=max_domain,
            clean=clean,
            tools=tuple(tools) if tools is not None else None,
            max_violation_rate=max_violation_rate,
        )

    def needed(self, code: str) -> int:
        """Qualifying examples a rule of `code` needs (support threshold, or the violation-bound one)."""
        if self.max_violation_rate is not None:
            return examples_for_rate(self.max_violation_rate)
        return int(self.min_support[code])

    def tasks_needed(self, code: str) -> int:
        return int(self.min_tasks[code])

    def to_json(self) -> dict[str, Any]:
        out = {
            "k": self.k,
            "seed": self.seed,
            "clean": self.clean.value,
            "max_domain": self.max_domain,
            "min_support": dict(sorted(self.min_support.items())),
            "min_tasks": dict(sorted(self.min_tasks.items())),
            "max_violation_rate": self.max_violation_rate,
            "tools": list(self.tools) if self.tools is not None else None,
            "domain": {
                "min_value_tasks": DOMAIN_MIN_TASKS,
                "splits": DOMAIN_SPLITS,
                "max_unseen": DOMAIN_MAX_UNSEEN,
                "max_share": DOMAIN_MAX_SHARE,
            },
            "echo": {"min_distinct": ECHO_MIN_DISTINCT},
            "relation": {
                "min_tuples": RELATION_MIN_TUPLES,
                "max_terms": RELATION_MAX_TERMS,
                "count_of_max_share": COUNT_OF_MAX_SHARE,
                "count_of_min_tasks": COUNT_OF_MIN_TASKS,
            },
            "format": {"max_shapes": FORMAT_MAX_SHAPES, "max_len": FORMAT_MAX_LEN},
            "range": {"margin": RANGE_MARGIN, "year_margin": YEAR_MARGIN},
        }
        if self.rule_source is not RuleSource.all:
            out["rule_source"] = self.rule_source.value  # absent: every source (the default)
        return out
