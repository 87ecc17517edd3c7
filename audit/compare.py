"""Paired comparison of two agent runs on the same tasks: `contracts compare BASELINE MONITOR`.

The question an experiment with and without an outcome monitor asks is whether the monitor arm
completes more tasks than the baseline arm on the *same* tasks. Both arms are corpora (or trace files
ingested on the fly); this module pairs their episodes and measures (docs/compare.md gives every
definition and denominator):

* **pairing** (`pair_by`): by (task, trial) when every scored episode of both arms records a trial,
  no (task, trial) repeats within an arm and at least one (task, trial) is in both (τ-bench and
  τ²-bench result files record `trial`): one unit per pair of episodes. Otherwise by task: one unit per task both arms ran, each side's value the mean over
  that arm's episodes of the task. Episodes without a reward cannot be scored and are counted apart;
  scored episodes with no partner are counted per arm (`unpaired`), never dropped silently.
* **completion** of a unit: reward >= `threshold` (1.0 by default: full reward); per arm, the mean over
  paired units; the **difference** monitor - baseline in percentage points.
* **intervals**: a task-clustered percentile bootstrap (`stats.bootstrap_intervals`: tasks drawn with
  replacement, every figure recomputed as sum over drawn tasks / units of drawn tasks, all figures from
  the same resamples), so several trials of one task count as one cluster.
* **discordant pairs** W (monitor completes, baseline does not) and L (the reverse) with the exact
  McNemar p-value (two-sided binomial on W vs L, `stats.sign_test_p`); when pairing by task, W and L
  count tasks whose monitor completion is above / below the baseline's (the sign test).
* **strata** by the baseline's per-task completion over its paired units, cut at `strata`.
* **cost per episode** (`agent_cost` + `user_cost`, whichever the episodes record) per arm and the paired
  difference, over units where both sides have a cost.
* **receipts in the monitor arm**: with a contract set, the checker's receipts over the monitor arm's
  calls; without one, the receipts the traces already carry (tool results with an `outcome_contract`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

from output_contracts.audit import stats
from output_contracts.audit.report_model import Record, round_figure
from output_contracts.choices import DEFAULT_STRATA as DEFAULT_STRATA
from output_contracts.choices import PairBy as PairBy
from output_contracts.codes.contract_set import ContractSet
from output_contracts.errors import UsageError
from output_contracts.traces.corpus import Corpus

REPORT_VERSION = 1


# ------------------------------------------------------------------------------------------------------
# Report values


@dataclass(frozen=True)
class Share(Record):
    """A completion share of paired units with its 95% interval (None: nothing to measure) and method."""

    value: float | None
    low: float | None
    high: float | None
    method: str


@dataclass(frozen=True)
class Points(Record):
    """A paired difference in percentage points with its 95% interval."""

    points: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Delta(Record):
    """A paired difference in the data's own unit (cost) with its 95% interval."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Arm(Record):
    """One arm: its episodes, how many were scored and paired, and its completion over the pairs."""

    name: str
    episodes: int
    unscored: int
    scored: int
    paired: int
    unpaired: int
    completed: int
    completion_all: float | None
    completion: Share


@dataclass(frozen=True)
class Difference(Record):
    """Monitor minus baseline over the paired units: points with interval, discordant pairs, p-value."""

    units: int
    tasks: int
    baseline: float | None
    monitor: float | None
    difference: Points
    wins: int
    losses: int
    p_value: float


@dataclass(frozen=True)
class Stratum(Difference):
    """The difference among tasks whose baseline completion falls in [low, high] (see `label`)."""

    label: str
    lower: float
    upper: float


@dataclass(frozen=True)
class Cost(Record):
    """Mean cost per episode (the trace's currency, e.g. USD) per arm and the paired difference."""

    units: int
    parts: tuple[str, ...]
    baseline: float | None
    monitor: float | None
    difference: Delta
    relative: float | None


@dataclass(frozen=True)
class Receipts(Record):
    """Receipts seen in the monitor arm: `checked` (the checker run with a contract set) or
    `delivered` (results that carry an `outcome_contract`)."""

    source: str
    calls: int
    calls_with_receipt: int
    episodes: int
    episodes_with_receipt: int
    paired_units_with_receipt: int


@dataclass(frozen=True)
class CompareGate(Record):
    """One CI gate's verdict: `min_gain` (difference in points >= threshold) or `max_p`."""

    metric: str
    op: str
    threshold: float
    value: float | None
    passed: bool

    def message(self) -> str:
        """`difference 17.19 points is below --min-gain 20.00`-style sentence."""
        flag = {"difference_points": "--min-gain", "p_value": "--max-p"}[self.metric]
        shown = "n/a" if self.value is None else f"{self.value:.4g}"
        if self.passed:
            return f"{self.metric} {shown} within {flag} {self.threshold:g}"
        verb = "is below" if self.op == "<" else "exceeds"
        return f"{self.metric} {shown} {verb} {flag} {self.threshold:g}"


@dataclass(frozen=True)
class CompareParams(Record):
    """What the comparison was asked to do."""

    threshold: float
    strata: tuple[float, ...]
    bootstrap: int
    seed: int
    pair_by: str
    paired_by: str


@dataclass(frozen=True)
class CompareReport(Record):
    """The whole comparison (schema `compare-report`)."""

    version: int
    params: CompareParams
    baseline: Arm
    monitor: Arm
    overall: Difference
    strata: tuple[Stratum, ...]
    cost: Cost | None
    receipts: Receipts | None
    gates: tuple[CompareGate, ...]


# ------------------------------------------------------------------------------------------------------
# Reading an arm


def arm_episodes(corpus: Corpus) -> pl.DataFrame:
    """The episodes of one arm: `trace_id`, `task_id` (text), `trial`, `reward`, `cost` and which cost
    parts are recorded (`agent`, `user`): the columns `compare_frames` reads."""
    eps = corpus.scan_episodes().select(
        "trace_id",
        pl.col("task_id").cast(pl.String),
        "trial",
        "reward",
        "agent_cost",
        "user_cost",
    )
    return eps.with_columns(
        pl.when(pl.col("agent_cost").is_null() & pl.col("user_cost").is_null())
        .then(None)
        .otherwise(pl.col("agent_cost").fill_null(0.0) + pl.col("user_cost").fill_null(0.0))
        .alias("cost")
    ).collect()


def _parts(eps: pl.DataFrame) -> set[str]:
    out = set()
    for part in ("agent", "user"):
        col = f"{part}_cost"
        if col in eps.columns and eps.get_column(col).is_not_null().any():
            out.add(part)
    return out


def _trials_usable(eps: pl.DataFrame) -> bool:
    """Every episode records a trial and no (task, trial) repeats."""
    if eps.is_empty() or eps.get_column("trial").is_null().any():
        return False
    return eps.select(pl.struct("task_id", "trial").is_duplicated().any()).item() is False


# ------------------------------------------------------------------------------------------------------
# Pairing


def _units(base: pl.DataFrame, mon: pl.DataFrame, by_trial: bool) -> pl.DataFrame:
    """One row per paired unit: `task_id` (and `trial`), `b`, `m` (completion in [0, 1]), `cb`, `cm`
    (cost or null)."""
    if by_trial:
        keys = ["task_id", "trial"]
        side = {
            "b": base.select(*keys, pl.col("ok").alias("b"), pl.col("cost").alias("cb")),
            "m": mon.select(*keys, pl.col("ok").alias("m"), pl.col("cost").alias("cm")),
        }
    else:
        keys = ["task_id"]
        side = {
            k: f.group_by("task_id").agg(
                pl.col("ok").mean().alias(k), pl.col("cost").drop_nulls().mean().alias("c" + k)
            )
            for k, f in (("b", base), ("m", mon))
        }
    return side["b"].join(side["m"], on=keys, how="inner").select(*keys, "b", "m", "cb", "cm")


def _share(value: float | None, bounds: tuple[float | None, float | None] | None, n: int) -> Share:
    """A completion share; widened by Wilson over the `n` units when the bootstrap cannot say more (a
    share of exactly 0 or 1, or no resamples), as the audit's rates are."""
    if value is None or n == 0:
        return Share(None, None, None, "none")
    lo, hi = bounds if bounds is not None else (None, None)
    method = "bootstrap"
    if lo is None or hi is None:
        lo, hi, method = value, value, "point"
    if value in (0.0, 1.0) or method == "point":
        wl, wh = stats.wilson(round(value * n), n)
        lo, hi = min(lo, wl), max(hi, wh)
        method = "bootstrap+wilson" if method == "bootstrap" else "wilson"
    return Share(round_figure(value), round_figure(min(lo, value)), round_figure(max(hi, value)), method)


def _points(value: float | None, bounds: tuple[float | None, float | None] | None) -> Points:
    if value is None:
        return Points(None, None, None)
    lo, hi = bounds if bounds is not None else (None, None)
    return Points(
        round_figure(100 * value),
        None if lo is None else round_figure(100 * min(lo, value)),
        None if hi is None else round_figure(100 * max(hi, value)),
    )


def _cut_label(lower: float, upper: float, first: bool, last: bool) -> str:
    if first and last:
        return "all"
    if first:
        return f"<= {100 * upper:g}%"
    if last:
        return f">= {100 * lower:g}%"
    return f"{100 * lower:g}-{100 * upper:g}%"


def check_strata(cuts: Sequence[float]) -> tuple[float, ...]:
    """Cut points in (0, 1), strictly increasing (a UsageError naming `--strata` otherwise)."""
    out = tuple(float(c) for c in cuts)
    if any(not 0.0 < c < 1.0 for c in out) or any(a >= b for a, b in pairwise(out)):
        raise UsageError(
            f"strata cut points must be strictly increasing and between 0 and 1, got {list(out)}",
            field="--strata",
        )
    return out


def stratum_expr(rate: pl.Expr, cuts: tuple[float, ...]) -> pl.Expr:
    """The stratum index of a baseline per-task completion: 0 when <= cuts[0]; the last when >= the
    last cut; else i when cuts[i-1] < rate <= cuts[i] (a count of the cuts the rate passes)."""
    if not cuts:
        return pl.lit(0, dtype=pl.Int64)
    passed = [(rate > c).cast(pl.Int64) for c in cuts[:-1]] + [(rate >= cuts[-1]).cast(pl.Int64)]
    return pl.sum_horizontal(passed).cast(pl.Int64)


# ------------------------------------------------------------------------------------------------------
# The comparison


def compare_frames(
    baseline: pl.DataFrame,
    monitor: pl.DataFrame,
    *,
    names: tuple[str, str] = ("baseline", "monitor"),
    threshold: float = 1.0,
    strata: Sequence[float] = DEFAULT_STRATA,
    bootstrap: int = 1000,
    seed: int = 13,
    pair_by: PairBy = PairBy.auto,
    receipts: Receipts | None = None,
    receipt_traces: pl.Series | None = None,
    min_gain: float | None = None,
    max_p: float | None = None,
) -> CompareReport:
    """Compare two arms given as episode frames (`arm_episodes`' columns; `cost` may be absent).

    `receipt_traces` (trace ids of monitor episodes with a receipt) lets the report count paired units
    whose monitor episode had one. A UsageError when the arms share no task, or one has no scored
    episode.
    """
    cuts = check_strata(strata)
    if not math.isfinite(threshold) or threshold < 0.0:
        raise UsageError(f"--threshold must be >= 0, got {threshold}", field="--threshold")
    arms = []
    for role, name, f in zip(("baseline", "monitor"), names, (baseline, monitor), strict=True):
        if "cost" not in f.columns:
            f = f.with_columns(pl.lit(None, dtype=pl.Float64).alias("cost"))
        if "trial" not in f.columns:
            f = f.with_columns(pl.lit(None, dtype=pl.Int64).alias("trial"))
        scored = f.filter(pl.col("reward").is_not_null()).with_columns(
            (pl.col("reward") >= threshold).cast(pl.Float64).alias("ok"),
            pl.col("task_id").cast(pl.String),
        )
        if scored.is_empty():
            raise UsageError(
                f"the {role} arm has no episode with a reward ({f.height} episodes): nothing to compare",
                source=name,
            )
        arms.append((name, f, scored))
    (bn, bf, bs), (mn, mf, ms) = arms
    usable = _trials_usable(bs) and _trials_usable(ms)
    if pair_by == PairBy.trial and not usable:
        raise UsageError(
            "cannot pair by trial: an arm has episodes without a trial, or a (task, trial) twice",
            field="--pair-by",
        )
    by_trial = usable and pair_by != PairBy.task
    units = _units(bs, ms, by_trial)
    if units.is_empty() and by_trial and pair_by == PairBy.auto:
        # trials recorded but never the same ones (trials 0-1 against 2-3): pair the tasks instead
        by_trial = False
        units = _units(bs, ms, by_trial)
    if units.is_empty():
        what = "(task, trial)" if by_trial else "task"
        raise UsageError(
            f"the arms share no {what} ({bs.get_column('task_id').n_unique()} and "
            f"{ms.get_column('task_id').n_unique()} tasks): nothing to pair",
            source=mn,
        )
    keys = ["task_id", "trial"] if by_trial else ["task_id"]
    paired_keys = units.select("task_id").unique() if not by_trial else None

    def paired_count(scored: pl.DataFrame, other: pl.DataFrame) -> int:
        if by_trial:
            return scored.join(other.select(keys), on=keys, how="semi").height
        assert paired_keys is not None
        return scored.join(paired_keys, on="task_id", how="semi").height

    # per-task sums: the bootstrap's table (key, task, num, den)
    task_rate = units.group_by("task_id").agg(
        (pl.col("b").sum() / pl.len()).alias("rate"), pl.len().alias("n")
    )
    units = units.join(
        task_rate.select("task_id", stratum_expr(pl.col("rate"), cuts).alias("s")), on="task_id"
    )
    cost_units = units.filter(pl.col("cb").is_not_null() & pl.col("cm").is_not_null())
    parts: list[pl.DataFrame] = []

    def add(key: str, frame: pl.DataFrame, num: pl.Expr) -> None:
        parts.append(
            frame.group_by("task_id")
            .agg(num.sum().cast(pl.Float64).alias("num"), pl.len().cast(pl.Float64).alias("den"))
            .select(pl.lit(key).alias("key"), pl.col("task_id").alias("task"), "num", "den")
        )

    add("b", units, pl.col("b"))
    add("m", units, pl.col("m"))
    add("d", units, pl.col("m") - pl.col("b"))
    for s in range(len(cuts) + 1):
        add(f"d{s}", units.filter(pl.col("s") == s), pl.col("m") - pl.col("b"))
    if not cost_units.is_empty():
        add("cb", cost_units, pl.col("cb"))
        add("cm", cost_units, pl.col("cm"))
        add("cd", cost_units, pl.col("cm") - pl.col("cb"))
    table = pl.concat(parts)
    tasks = sorted(units.get_column("task_id").unique().to_list())
    intervals = stats.bootstrap_intervals(table, tasks, n_boot=bootstrap, seed=seed)

    def diff(
        frame: pl.DataFrame, key: str
    ) -> tuple[int, int, float | None, float | None, Points, int, int, float]:
        n = frame.height
        if n == 0:
            return 0, 0, None, None, Points(None, None, None), 0, 0, 1.0
        b = frame.get_column("b").mean()
        m = frame.get_column("m").mean()
        d = frame.select((pl.col("m") - pl.col("b")).mean()).item()
        w = frame.filter(pl.col("m") > pl.col("b")).height
        lo = frame.filter(pl.col("m") < pl.col("b")).height
        return (
            n,
            frame.get_column("task_id").n_unique(),
            round_figure(float(b)),  # type: ignore[arg-type]
            round_figure(float(m)),  # type: ignore[arg-type]
            _points(float(d), intervals.get(key)),
            w,
            lo,
            round_figure(stats.sign_test_p(w, lo)) or 0.0,
        )

    overall = Difference(*diff(units, "d"))
    bounds = [0.0, *cuts, 1.0]
    strata_out = tuple(
        Stratum(
            *diff(units.filter(pl.col("s") == s), f"d{s}"),
            label=_cut_label(bounds[s], bounds[s + 1], s == 0, s == len(cuts)),
            lower=bounds[s],
            upper=bounds[s + 1],
        )
        for s in range(len(cuts) + 1)
    )

    def arm(name: str, f: pl.DataFrame, scored: pl.DataFrame, other: pl.DataFrame, key: str) -> Arm:
        paired = paired_count(scored, other)
        done = int(scored.get_column("ok").sum())
        value = overall.baseline if key == "b" else overall.monitor
        return Arm(
            name=name,
            episodes=f.height,
            unscored=f.height - scored.height,
            scored=scored.height,
            paired=paired,
            unpaired=scored.height - paired,
            completed=done,
            completion_all=round_figure(done / scored.height),
            completion=_share(value, intervals.get(key), units.height),
        )

    cost = None
    cost_parts = sorted(_parts(bf) | _parts(mf))
    if not cost_units.is_empty() or cost_parts:
        cb = cost_units.get_column("cb").mean() if not cost_units.is_empty() else None
        cm = cost_units.get_column("cm").mean() if not cost_units.is_empty() else None
        cd = None if cb is None or cm is None else float(cm) - float(cb)  # type: ignore[arg-type]
        lo, hi = intervals.get("cd", (None, None))
        cost = Cost(
            units=cost_units.height,
            parts=tuple(cost_parts),
            baseline=round_figure(None if cb is None else float(cb)),  # type: ignore[arg-type]
            monitor=round_figure(None if cm is None else float(cm)),  # type: ignore[arg-type]
            difference=Delta(
                round_figure(cd),
                None if lo is None or cd is None else round_figure(min(lo, cd)),
                None if hi is None or cd is None else round_figure(max(hi, cd)),
            ),
            relative=round_figure(cd / float(cb)) if cd is not None and cb else None,  # type: ignore[arg-type]
        )
    if receipts is not None:
        hit = (
            ms.filter(pl.col("trace_id").is_in(receipt_traces.implode()))
            if receipt_traces is not None
            else ms.clear()
        )
        receipts = _with_units(receipts, units.join(hit.select(keys).unique(), on=keys, how="semi").height)
    params = CompareParams(
        threshold=threshold,
        strata=cuts,
        bootstrap=bootstrap,
        seed=seed,
        pair_by=pair_by.value,
        paired_by="trial" if by_trial else "task",
    )
    gates: list[CompareGate] = []
    if min_gain is not None:
        v = overall.difference.points
        gates.append(CompareGate("difference_points", "<", min_gain, v, v is not None and v >= min_gain))
    if max_p is not None:
        gates.append(CompareGate("p_value", ">", max_p, overall.p_value, overall.p_value <= max_p))
    return CompareReport(
        version=REPORT_VERSION,
        params=params,
        baseline=arm(bn, bf, bs, ms, "b"),
        monitor=arm(mn, mf, ms, bs, "m"),
        overall=overall,
        strata=strata_out,
        cost=cost,
        receipts=receipts,
        gates=tuple(gates),
    )


def _with_units(r: Receipts, n: int) -> Receipts:
    return Receipts(r.source, r.calls, r.calls_with_receipt, r.episodes, r.episodes_with_receipt, n)


def delivered_receipts(corpus: Corpus) -> tuple[Receipts, pl.Series]:
    """Receipts the monitor arm's traces already carry: tool results that are objects with an
    `outcome_contract` key (the shape `check` appends, DESIGN section 4); and the trace ids that have one."""
    calls = corpus.scan_calls().select("trace_id", "result")
    hit = (
        calls.filter(pl.col("result").str.contains("outcome_contract", literal=True).fill_null(False))
        .filter(pl.col("result").str.json_path_match("$.outcome_contract").is_not_null())
        .select("trace_id")
        .collect()
    )
    n_calls = calls.select(pl.len()).collect().item()
    n_eps = corpus.scan_episodes().select(pl.len()).collect().item()
    traces = hit.get_column("trace_id").unique().sort()
    return Receipts("delivered", int(n_calls), hit.height, int(n_eps), traces.len(), 0), traces


def checked_receipts(contracts: ContractSet, corpus: Corpus) -> tuple[Receipts, pl.Series]:
    """Receipts the checker gives the monitor arm's calls under `contracts` (the full checker, as
    `contracts check` runs it): calls checked, calls with a receipt, episodes with one; and their trace ids."""
    from output_contracts.checks.checker import check_corpus, corpus_counts

    found = check_corpus(contracts, corpus)
    counts = corpus_counts(contracts, corpus)
    n_eps = corpus.scan_episodes().select(pl.len()).collect().item()
    traces = found.get_column("trace_id").unique().sort()
    calls_hit = found.get_column("cid").n_unique()
    return Receipts("checked", counts.calls_checked, calls_hit, int(n_eps), traces.len(), 0), traces


def compare(
    baseline: Corpus,
    monitor: Corpus,
    *,
    contracts: ContractSet | None = None,
    **options: Any,
) -> CompareReport:
    """`compare_frames` over two corpora, with the monitor arm's receipts: checked under `contracts`
    when given, else those its traces carry."""
    rec, traces = (
        checked_receipts(contracts, monitor) if contracts is not None else delivered_receipts(monitor)
    )
    return compare_frames(
        arm_episodes(baseline), arm_episodes(monitor), receipts=rec, receipt_traces=traces, **options
    )
