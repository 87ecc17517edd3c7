"""Mining parameters: support thresholds and the fixed constants behind each chance argument.

Every number here is written into the contract set's `params`, so a contract set says how it was made.
The reasons for each value are in docs/rules.md; in short:

- support counts qualifying examples (calls, or values for POSITIVE/NONNEG/DOMAIN) and distinct tasks,
  never raw rows, because calls from one task are not independent evidence;
- `max_violation_rate` (the "rule of three": 1 − 0.05^(1/n) is the 95% upper bound on a violation rate
  after n clean examples and no violation) can replace the per-class example threshold: a rule is then
  kept when that bound is at most X;
- each code's own thresholds are in its spec (`Code.min_support`, `Code.min_tasks`) and the constants of
  its chance argument in its folder's `mine.py` (`CONSTANTS`), where the argument itself is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.choices import Clean as Clean
from output_contracts.choices import RuleSource as RuleSource
from output_contracts.codes.table import miner_constants, names, specs
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import MiningError


def default_min_support() -> dict[str, int]:
    """Minimum qualifying examples per code (calls; values for POSITIVE and NONNEG; tasks for DOMAIN and
    FORMAT; arrays for LENGTH): each code's spec says its own (`Code.min_support`)."""
    return {c.name: c.min_support for c in specs()}


def default_min_tasks() -> dict[str, int]:
    """Minimum distinct tasks per code (`Code.min_tasks`; 1 where DESIGN §3 sets none)."""
    return {c.name: c.min_tasks for c in specs()}


CLEAN_MODES = tuple(c.value for c in Clean)


RULE_SOURCES = tuple(s.value for s in RuleSource)


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
    min_support: Mapping[str, int] = field(default_factory=default_min_support)
    min_tasks: Mapping[str, int] = field(default_factory=default_min_tasks)
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
        sup = default_min_support()
        for code, n in (min_support or {}).items():
            c = code.upper()
            if c not in names():
                raise MiningError(
                    f"unknown rule class {code!r} in min_support (known: {', '.join(names())})",
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
            # each code folder's constants (its mine.py `CONSTANTS`), under the folder's name
            **miner_constants(),
        }
        if self.rule_source is not RuleSource.all:
            out["rule_source"] = self.rule_source.value  # absent: every source (the default)
        return out
