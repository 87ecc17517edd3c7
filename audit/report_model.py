"""The audit report as a tree of frozen values (schema `audit-report`), and the rounding they share.

`output_contracts.audit.pipeline.score` builds an `AuditReport`; the renderers (`output_contracts.audit.report`, the
terminal tables of `output_contracts.cli.audit_cmd`) read its attributes; `AuditReport.to_json()` is the JSON
report, the one written to `--json` and validated against the schema.

Every number is held as the JSON shows it: rates, intervals and derived shares are rounded to twelve
significant digits when the value is made (`estimate`, `scaled`, `round_figure`), so a figure
a renderer prints and a gate compares is the figure in the JSON, to the last digit. Sections mirror the
JSON's nesting and key names; a section's `to_json()` is its fields by name (`Record`), nested values
turned to JSON, tuples to lists. A `Gate` verdict is a section too (`gates`); the number formats its
message uses (`pct`, `num`) live beside it, and the renderers share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from output_contracts.audit import stats

REPORT_VERSION = 1


# The report's own figures (coverage, risk, mean receipt bytes, ...) round exactly as
# `stats.Rate.to_json` rounds the rates beside them: one function, `stats.round_figure`.
round_figure = stats.round_figure


def pct(x: float | None, digits: int = 2) -> str:
    """A share as a percentage string (`0.0123` -> `1.23%`); `n/a` when unmeasurable."""
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


#: The heading of the rules that fired, in every rendering (terminal, Markdown, HTML).
RULES_TITLE = "Rules that fired, organic fires first"


def rule_display_key(
    organic: int, fires: int, tool: str, code: str, rule: str
) -> tuple[int, int, str, str, str]:
    """The order in which every rendering lists the rules that fired: most organic fires first, since on an
    audit with injected faults a fire on an unfaulted call is a false alarm (or an organic problem), which is
    what a user tuning contracts acts on; then all fires; ties by tool, code and rule id, so the order is
    stable. The JSON report keeps its own order (all rules, by fires)."""
    return (-organic, -fires, tool, code, rule)


def num(x: float | None, digits: int = 2) -> str:
    """A plain number with fixed decimals; `n/a` for None."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def _json(value: Any) -> Any:
    """A field's JSON value: records by their `to_json`, tuples and lists as lists, mappings as dicts."""
    if isinstance(value, Record | Gate):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Record:
    """A section of the report whose JSON is its fields by name, in order."""

    def to_json(self) -> dict[str, Any]:
        """The section's JSON object (key order = field order)."""
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}


# ------------------------------------------------------------------------------------------------------
# Figures


@dataclass(frozen=True)
class Interval(Record):
    """A figure with its 95% interval (None: nothing to measure), e.g. receipts per 100 episodes."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Estimate(Interval):
    """A ratio of counts with its interval and how the interval was made (schema `$defs/rate`)."""

    numerator: int
    denominator: int
    method: str


def estimate(rate: stats.Rate) -> Estimate:
    """A rate as the report holds it (rounded as `stats.Rate.to_json` rounds it)."""
    return Estimate(**rate.to_json())


def scaled(rate: stats.Rate, factor: float) -> Interval:
    """A rate in display units (100: per 100 episodes, 1000: per 1,000 calls), rounded after scaling."""
    return Interval(**rate.scaled(factor))


@dataclass(frozen=True)
class FireRate(Estimate):
    """Organic calls with >= 1 violation / organic calls checked; per tool and per property code.

    `cross_call_explained`: organic calls whose only receipts are cross-call disagreements (CONSISTENT)
    with an earlier call that carries a fault label, left out of the numerator: the receipt is right,
    and the fault is the earlier call's (`output_contracts.audit.scoring.explained`)."""

    by_tool: Mapping[str, Estimate]
    by_code: Mapping[str, Estimate]
    cross_call_explained: int = 0


@dataclass(frozen=True)
class InSample(Record):
    """The full checker's fire rate on the same calls (k > 1): the optimistic, non-split figure."""

    fire_rate: Estimate
    fired_calls: int


@dataclass(frozen=True)
class PerEpisodes(Estimate):
    """Fired calls in a set of episodes / those episodes, and the same per 100 of them."""

    per_100_episodes: Interval


@dataclass(frozen=True)
class Spurious(Estimate):
    """Fired calls in clean episodes / clean episodes, and the same per 100 clean episodes.

    Two more denominators, for comparing like with like (docs/audit.md): `without_fault` is the paper's
    count (fired calls in episodes without an injected or labelled fault, per 100 such episodes, whatever
    their reward); `full_reward` counts only episodes without a fault that got full reward (None when
    the traces carry no reward). `clean` (the figure above) is `full_reward` where rewards exist and
    `without_fault` where none do."""

    per_100_episodes: Interval
    without_fault: PerEpisodes | None = None
    full_reward: PerEpisodes | None = None


@dataclass(frozen=True)
class Outcome(Record):
    """The rewards of a set of episodes: how many have one, how many full (>= 1), and the share."""

    episodes: int
    with_reward: int
    full_reward: int
    pass_share: float | None


@dataclass(frozen=True)
class PropagationGroup(Record):
    """Trackable episodes (a fire event of this kind with a specific observed value) and the share whose
    value reappears in a later call's arguments, with the outcome of each part."""

    trackable_episodes: int
    propagating: Estimate
    outcome_propagating: Outcome
    outcome_not_propagating: Outcome


@dataclass(frozen=True)
class Propagation(Record):
    """Propagation of receipted values (`output_contracts.audit.propagation`), for organic fire events (what an
    agent really met) and labelled ones (injected faults were planted after the run: a placebo)."""

    organic: PropagationGroup
    labelled: PropagationGroup


@dataclass(frozen=True)
class KindRates(Record):
    """A share over labelled calls, overall and per fault kind."""

    overall: Estimate
    by_kind: Mapping[str, Estimate]


@dataclass(frozen=True)
class Detection(KindRates):
    """Labelled calls with >= 1 violation, and (`path_match`) with one at the faulted path."""

    path_match: KindRates


@dataclass(frozen=True)
class ReceiptCost(Record):
    """What the receipts weigh: totals, mean, and per 1,000 calls checked with intervals."""

    encoder: str
    receipts: int
    bytes: int
    approx_tokens: int
    mean_bytes_per_receipt: float | None
    bytes_per_1000_calls: Interval
    tokens_per_1000_calls: Interval


# ------------------------------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True)
class ToolRow(Record):
    """One tool: calls checked, organic, fires, fire rate, labelled and detected calls."""

    tool: str
    checked: int
    organic: int
    fires: int
    fire_rate: Estimate
    labelled: int
    detected: int


@dataclass(frozen=True)
class Coverage(Record):
    """Checked calls, and tools called, that at least one rule of the contract set speaks of: a census of
    this corpus, not an estimate, so it has no interval. A gate that passes while most calls were of
    tools nothing checks says little; this says how much."""

    calls: int  # checked calls of tools with >= 1 rule
    checked: int
    share: float | None
    tools: int  # tools with >= 1 rule among the tools called
    called_tools: int
    uncovered: tuple[str, ...]  # tools called that have no rule, by name


@dataclass(frozen=True)
class RuleRow(Record):
    """One rule of the catalog: its largest fold support and the calls it fired on, by kind of call."""

    rule: str
    tool: str
    code: str
    paths: tuple[str, ...]
    support: int
    fires: int
    organic_fires: int
    clean_fires: int
    labelled_fires: int


@dataclass(frozen=True)
class AbstentionRow(Record):
    """The point figures when only violations of rules with support >= `min_support` count."""

    min_support: int
    rules: int
    fired_calls: int
    coverage: float | None
    risk: float | None
    fire_rate: float | None
    spurious_per_100: float | None
    detection: float | None


@dataclass(frozen=True)
class WitnessedViolation(Record):
    """A violation of a listed receipt, with the witness values the ledger froze."""

    code: str
    rule: str
    path: str
    expected: Any
    observed: Any
    support: int


@dataclass(frozen=True)
class SpuriousReceipt(Record):
    """A fired call in a clean episode, listed for review."""

    call_id: str
    trace_id: str
    task_id: str
    tool: str
    fold: int
    reward: float | None
    violations: tuple[WitnessedViolation, ...]


# ------------------------------------------------------------------------------------------------------
# Facts and anchors


@dataclass(frozen=True)
class CorpusFacts(Record):
    """The audited corpus: its name, digest and number of calls (checked or not)."""

    name: str
    sha256: str
    calls: int


@dataclass(frozen=True)
class ContractsFacts(Record):
    """The contract set the checkers came from: digest, folds, seed, rule count, where it came from."""

    sha256: str
    k: int
    seed: int
    rules: int
    origin: str


@dataclass(frozen=True)
class Params(Record):
    """How the audit ran: folds, seed, resamples, receipt encoder, level, injection summary."""

    k: int
    seed: int
    bootstrap: int
    encoder: str
    level: float
    inject: Mapping[str, Any] | None


@dataclass(frozen=True)
class PopulationFacts(Record):
    """The denominators: calls, checked, organic and labelled calls, episodes, clean ones, tasks, fires."""

    calls: int
    checked: int
    organic: int
    labelled: int
    episodes: int
    clean_episodes: int
    tasks: int
    fired_calls: int


@dataclass(frozen=True)
class LedgerAnchor(Record):
    """Where the fire events were frozen, and the hashes to check them against later."""

    path: str
    head: str
    root: str
    entries: int


@dataclass(frozen=True)
class Gate:
    """One CI gate's verdict (the JSON has no unit: it follows from the metric)."""

    metric: str
    op: str
    threshold: float
    value: float | None
    low: float | None
    high: float | None
    passed: bool
    unit: str

    def to_json(self) -> dict[str, Any]:
        """The gate's JSON object (without `unit`)."""
        return {
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "passed": self.passed,
        }

    def message(self) -> str:
        """`fire_rate 2.31% [1.90%, 2.80%] exceeds --max-fire-rate 2.00%`-style sentence."""
        fmt = pct if self.unit == "share" else num
        verb = {">": "exceeds", "<": "is below"}[self.op] if not self.passed else "within"
        flag = {
            "fire_rate": "--max-fire-rate",
            "spurious_per_100": "--max-spurious-per-100",
            "coverage": "--min-coverage",
        }.get(self.metric, "--min-detection")
        if self.value is None:
            return f"{self.metric} cannot be measured (no calls to measure it on); {flag} {fmt(self.threshold)} fails"
        span = "" if self.low is None else f" [{fmt(self.low)}, {fmt(self.high)}]"  # a census has no interval
        return f"{self.metric} {fmt(self.value)}{span} {verb} {flag} {fmt(self.threshold)}"


# ------------------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class AuditReport:
    """The whole audit report; `to_json()` is the JSON report (schema `audit-report`)."""

    corpus: CorpusFacts
    contracts: ContractsFacts
    params: Params
    population: PopulationFacts
    fire_rate: FireRate
    in_sample: InSample | None
    spurious: Spurious
    detection: Detection
    recovery_retention: Estimate
    receipt_cost: ReceiptCost
    tools: tuple[ToolRow, ...]
    rules: tuple[RuleRow, ...]
    abstention: tuple[AbstentionRow, ...]
    spurious_receipts: tuple[SpuriousReceipt, ...]
    ledger: LedgerAnchor
    coverage: Coverage
    gates: tuple[Gate, ...] = ()
    version: int = REPORT_VERSION
    propagation: Propagation | None = None

    @property
    def cross_fitted(self) -> bool:
        """Whether each call was judged by a checker mined without its task (k > 1)."""
        return self.params.k > 1

    def to_json(self) -> dict[str, Any]:
        """The JSON report (schema `audit-report`), in the order the keys have always had."""
        return {
            "version": self.version,
            "corpus": self.corpus.to_json(),
            "contracts": self.contracts.to_json(),
            "params": self.params.to_json(),
            "cross_fitted": self.cross_fitted,
            "population": self.population.to_json(),
            "fire_rate": self.fire_rate.to_json(),
            "in_sample": None if self.in_sample is None else self.in_sample.to_json(),
            "spurious": self.spurious.to_json(),
            "detection": self.detection.to_json(),
            "recovery_retention": self.recovery_retention.to_json(),
            "receipt_cost": self.receipt_cost.to_json(),
            "propagation": None if self.propagation is None else self.propagation.to_json(),
            "tools": _json(self.tools),
            "coverage": self.coverage.to_json(),
            "rules": _json(self.rules),
            "abstention": _json(self.abstention),
            "spurious_receipts": _json(self.spurious_receipts),
            "ledger": self.ledger.to_json(),
            "gates": _json(self.gates),
        }
