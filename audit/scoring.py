"""Phase 2 of the audit, section by section: the frozen fire events joined with the population and the
truth (`join`), every rate of the report bootstrapped at once (`bootstrap_rates`), then one function per
section of the report (`output_contracts.audit.report_model`), put together by `assemble`.
`output_contracts.audit.pipeline.score` calls `assemble` once it has checked that the population is the one the
ledger froze, and adds the gates.

Memory: nothing here is per call in Python, and no frame is one row per call. The per-call work is one
group_by over the population scan by (task, tool) with conditional counts (organic, fired, in-sample,
labelled), plus semi-joins that pick the fired calls and the labelled calls (both few); tasks are integer
indexes into the sorted task names in the per-task count tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

import output_contracts.audit.stats as stats
from output_contracts.audit.propagation import EPISODE_SCHEMA as PROP_EPISODES
from output_contracts.audit.report_model import (
    AbstentionRow,
    AuditReport,
    ContractsFacts,
    CorpusFacts,
    Coverage,
    Detection,
    FireRate,
    InSample,
    KindRates,
    LedgerAnchor,
    Outcome,
    Params,
    PerEpisodes,
    PopulationFacts,
    Propagation,
    PropagationGroup,
    ReceiptCost,
    RuleRow,
    Spurious,
    SpuriousReceipt,
    ToolRow,
    WitnessedViolation,
    estimate,
    round_figure,
    scaled,
)
from output_contracts.audit.truth import EPISODE_SCHEMA as TRUTH_EPISODES
from output_contracts.audit.truth import Truth

MAX_SPURIOUS_LISTED = 200
LEVEL = 0.95
RATE_SCHEMA = pl.Schema({"key": pl.String(), "task": pl.UInt32(), "num": pl.Float64(), "den": pl.Float64()})
NOT_SHARES = {  # ratios that may exceed 1
    "spurious": False,
    "spurious_nf": False,
    "spurious_fr": False,
    "bytes": False,
    "tokens": False,
}
NONE_RATE = stats.Rate(None, None, None, 0, 0, "none")

Events = Mapping[str, Mapping[str, Any]]  # fire events by call id
Catalog = Mapping[str, Mapping[str, Any]]  # the ledger's rule catalog by rule id


# ------------------------------------------------------------------------------------------------------
# Events, population and truth joined


@dataclass(frozen=True)
class Joined:
    """The frozen events joined with the population and the truth, as small frames; `task` columns are
    indexes into `tasks` (the sorted task names).

    `per_tt`: per (task, tool) `n` checked calls, `org` organic, `org_fired`, `org_ins` (in-sample fires),
    `lab_fired`; `per_task`: the same summed per task. `labelled`: the labelled calls (`fault`, `fired`,
    `pm` = a violation at the faulted path). `fired`: the fired calls (`organic`, `clean`, `ep_reward`,
    `max_support`, receipt `bytes` and `tokens`, `recov`). `episodes`: one row per episode (`clean`)."""

    events: Events
    per_tt: pl.DataFrame
    per_task: pl.DataFrame
    labelled: pl.DataFrame
    fired: pl.DataFrame
    episodes: pl.DataFrame
    tasks: list[str]
    in_sample: frozenset[str] | None
    explained: int = 0  # organic fired calls left out as cross-call echoes of a labelled call (`explained`)


#: The in-sample fired calls: call id -> the earlier calls its violations refer to when every one is a
#: cross-call disagreement (CONSISTENT), else ().
InSampleIds = Mapping[str, tuple[str, ...]]


def _is_in(ids: Sequence[str] | set[str] | frozenset[str]) -> pl.Expr:
    """`call_id` is one of `ids` (sorted, so the expression is the same for the same ids)."""
    return pl.col("call_id").is_in(pl.Series(sorted(ids), dtype=pl.String).implode())


def _faults_frame(truth: Truth) -> pl.DataFrame:
    """`call_id, fault` of every labelled call (the kind only; the paths serve path matching)."""
    rows = [(c, f[0]) for c, f in truth.faults.items()]
    return pl.DataFrame(rows, schema={"call_id": pl.String, "fault": pl.String}, orient="row")


def _fired_frame(events: Events) -> pl.DataFrame:
    """One row per fire event: its largest rule support, receipt size and recovery-tool count."""
    return pl.DataFrame(
        {
            "call_id": list(events),
            "max_support": [max(v["support"] for v in e["violations"]) for e in events.values()],
            "bytes": [e["bytes"] for e in events.values()],
            "tokens": [e["approx_tokens"] for e in events.values()],
            "recov": [e["recovery_tools"] for e in events.values()],
        },
        schema={
            "call_id": pl.String,
            "max_support": pl.Int64,
            "bytes": pl.Int64,
            "tokens": pl.Int64,
            "recov": pl.Int64,
        },
    )


def _per_call_pass(
    pop: pl.LazyFrame, fired: pl.DataFrame, faults: pl.DataFrame, in_sample: frozenset[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The one pass over every checked call, so that nothing is held per call: counts per (task, tool);
    the labelled calls and the fired calls apart (semi-joins, both few)."""
    is_fired = pl.col("call_id").is_in(fired.get_column("call_id").implode())
    is_org = ~pl.col("call_id").is_in(faults.get_column("call_id").implode())
    is_ins = _is_in(in_sample or [])
    per_tt = (
        pop.group_by("task_id", "tool")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            is_org.sum().cast(pl.Int64).alias("org"),
            (is_org & is_fired).sum().cast(pl.Int64).alias("org_fired"),
            (is_org & is_ins).sum().cast(pl.Int64).alias("org_ins"),
            (~is_org & is_fired).sum().cast(pl.Int64).alias("lab_fired"),
        )
        .with_columns(pl.col("task_id").cast(pl.String), pl.col("tool").cast(pl.String))
        .collect()
    )
    lab = (
        pop.join(faults.lazy(), on="call_id", how="inner")
        .with_columns(pl.col("task_id").cast(pl.String), is_fired.alias("fired"))
        .collect()
    )
    fsub = (
        pop.join(fired.lazy(), on="call_id", how="inner")
        .join(faults.lazy(), on="call_id", how="left")
        .with_columns(
            pl.col("task_id").cast(pl.String),
            pl.col("tool").cast(pl.String),
            pl.col("fault").is_null().alias("organic"),
        )
        .collect()
    )
    return per_tt, lab, fsub


def _override_rewards(eps: pl.DataFrame, rewards: Mapping[str, float | None]) -> pl.DataFrame:
    """A labels file's rewards replace the corpus's (null included), so clean episodes follow them."""
    if not rewards:
        return eps
    over = pl.DataFrame(
        {"trace_id": list(rewards), "o_reward": list(rewards.values())},
        schema={"trace_id": pl.String, "o_reward": pl.Float64},
    ).with_columns(pl.lit(True).alias("o"))
    return (
        eps.join(over, on="trace_id", how="left")
        .with_columns(
            pl.when(pl.col("o")).then(pl.col("o_reward")).otherwise(pl.col("reward")).alias("reward")
        )
        .drop("o_reward", "o")
    )


def _episodes(pop: pl.LazyFrame, truth: Truth, lab: pl.DataFrame) -> pl.DataFrame:
    """Every episode of the corpus, and any trace only its calls name, with `clean`: no labelled call,
    no episode fault label, reward null or >= 1 (spurious receipts are counted on these)."""
    only_calls = (
        pop.select("trace_id", "task_id")
        .join(truth.episodes.lazy().select("trace_id"), on="trace_id", how="anti")
        .group_by("trace_id")
        .agg(pl.col("task_id").cast(pl.String).min())
        .with_columns(pl.lit(None, pl.Float64).alias("reward"), pl.lit(False).alias("ep_fault"))
        .collect()
    )
    eps = pl.concat([truth.episodes, only_calls.select(list(TRUTH_EPISODES)).cast(TRUTH_EPISODES)])
    eps = _override_rewards(eps, truth.rewards)
    faulty = pl.col("ep_fault") | pl.col("trace_id").is_in(lab.get_column("trace_id").unique().implode())
    full = (pl.col("reward") >= 1.0) & ~pl.col("reward").is_nan()
    full_or_none = pl.col("reward").is_null() | full
    return eps.with_columns(
        (~faulty & full_or_none).alias("clean"),
        (~faulty).alias("unfaulted"),
        (~faulty & full.fill_null(False)).alias("full"),
    ).drop("ep_fault")


def _task_index(per_tt: pl.DataFrame, eps: pl.DataFrame) -> tuple[list[str], pl.DataFrame]:
    """The sorted task names (polars String order = Python's sorted) and `task_id -> task` (their index):
    the bootstrap resamples tasks, and integer indexes keep its count tables compact."""
    names = pl.concat([per_tt.get_column("task_id"), eps.get_column("task_id")]).unique().drop_nulls().sort()
    tasks = names.to_list()
    return tasks, pl.DataFrame({"task_id": names, "task": pl.Series(range(len(tasks)), dtype=pl.UInt32)})


def _related(a: str, b: str) -> bool:
    """One path is the other or contains it (dropping `/a` may surface as REQUIRED at `/a`, a swapped
    object at a child); the root relates to every path."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or a == "" or b == ""


def _path_matched(truth: Truth, events: Events) -> set[str]:
    """Labelled calls with a violation at (or above, or below) a faulted path: detection for the right
    reason, not by a violation elsewhere in the result."""
    out = set()
    for cid, (_kind, paths) in truth.faults.items():
        e = events.get(cid)
        if e is not None and any(_related(vp, fp) for vp in e["paths"] for fp in paths):
            out.add(cid)
    return out


def join(
    events: Sequence[Mapping[str, Any]], pop: pl.LazyFrame, truth: Truth, in_sample_ids: InSampleIds | None
) -> Joined:
    """Labels and rewards joined to the frozen events and the population: everything the sections read."""
    ev = {e["call_id"]: e for e in events}
    told = explained(ev, truth)
    in_sample = None
    if in_sample_ids is not None:  # the full checker's fires, less its echoes of labelled calls, the same way
        in_sample = frozenset(
            c
            for c, refs in in_sample_ids.items()
            if not (refs and c not in truth.faults and all(r in truth.faults for r in refs))
        )
    fired = _fired_frame({c: e for c, e in ev.items() if c not in told})
    per_tt, lab, fsub = _per_call_pass(pop, fired, _faults_frame(truth), in_sample)
    eps = _episodes(pop, truth, lab)
    fsub = fsub.join(
        eps.select("trace_id", "clean", "unfaulted", "full", pl.col("reward").alias("ep_reward")),
        on="trace_id",
        how="left",
    )
    tasks, tindex = _task_index(per_tt, eps)

    def with_task(frame: pl.DataFrame) -> pl.DataFrame:
        """`frame` with its tasks' indexes (`task`)."""
        return frame.join(tindex, on="task_id", how="left")

    per_tt = with_task(per_tt)
    per_task = per_tt.group_by("task").agg(pl.col("n", "org", "org_fired", "org_ins").sum())
    lab = with_task(lab).with_columns(_is_in(_path_matched(truth, ev)).alias("pm"))
    return Joined(ev, per_tt, per_task, lab, with_task(fsub), with_task(eps), tasks, in_sample, len(told))


def explained(events: Events, truth: Truth) -> set[str]:
    """Organic fired calls whose every violation is a cross-call disagreement (CONSISTENT) with an
    earlier call that carries a fault label: the receipt is right, the fault is the earlier call's. They
    are not false alarms, and `join` leaves them out of the fired calls (counted apart in the report)."""
    return {
        cid
        for cid, e in events.items()
        if cid not in truth.faults and all(v.get("refers") in truth.faults for v in e["violations"])
    }


# ------------------------------------------------------------------------------------------------------
# Rates: per-task count tables, bootstrapped together


def _part(key: pl.Expr, frame: pl.DataFrame, num: str, den: str) -> pl.DataFrame:
    """`key, task, num, den` rows from two count columns of a per-task frame."""
    return frame.select(
        key.alias("key"),
        "task",
        pl.col(num).cast(pl.Float64).alias("num"),
        pl.col(den).cast(pl.Float64).alias("den"),
    )


def _grouped(key: pl.Expr, frame: pl.DataFrame, num: pl.Expr, den: pl.Expr) -> pl.DataFrame:
    """`key, task, num, den` rows aggregated per (key, task) from a frame of calls."""
    return (
        frame.group_by(key.alias("key"), "task")
        .agg(num.cast(pl.Float64).alias("num"), den.cast(pl.Float64).alias("den"))
        .select("key", "task", "num", "den")
    )


def fired_codes(events: Events) -> list[str]:
    """The property codes any fire event has, sorted (the rows of the per-code fire rate)."""
    return sorted({c for e in events.values() for c in e["codes"]})


def _organic_parts(j: Joined) -> list[pl.DataFrame]:
    """Fire rate, per tool and in-sample: a row for each task (and tool) with >= 1 organic call."""
    org_task = j.per_task.filter(pl.col("org") > 0)
    parts = [
        _part(pl.lit("fire"), org_task, "org_fired", "org"),
        _part(pl.lit("tool:") + pl.col("tool"), j.per_tt.filter(pl.col("org") > 0), "org_fired", "org"),
    ]
    if j.in_sample is not None:
        parts.append(_part(pl.lit("ins"), org_task, "org_ins", "org"))
    return parts


def _code_parts(j: Joined) -> list[pl.DataFrame]:
    """Per code: organic calls with >= 1 violation of that code / organic calls."""
    rows = [(cid, c) for cid, e in j.events.items() for c in e["codes"]]
    codes = pl.DataFrame(rows, schema={"call_id": pl.String, "code": pl.String}, orient="row")
    org_den = j.per_task.filter(pl.col("org") > 0).select("task", pl.col("org").cast(pl.Float64).alias("den"))
    code_num = (
        j.fired.filter(pl.col("organic"))
        .select("call_id", "task")
        .join(codes, on="call_id")
        .group_by("task", "code")
        .agg(pl.len().cast(pl.Float64).alias("num"))
    )
    return [
        org_den.join(code_num.filter(pl.col("code") == code).drop("code"), on="task", how="left")
        .with_columns(pl.lit("code:" + code).alias("key"), pl.col("num").fill_null(0.0))
        .select("key", "task", "num", "den")
        for code in fired_codes(j.events)
    ]


def _spurious_part(j: Joined, key: str = "spurious", column: str = "clean") -> pl.DataFrame:
    """Fired calls in the episodes marked by `column` / those episodes, per task: `clean` (the gate's
    figure), `unfaulted` (the paper's: no fault, any reward), `full` (no fault, full reward)."""
    return (
        j.episodes.filter(pl.col(column))
        .group_by("task")
        .agg(pl.len().cast(pl.Float64).alias("den"))
        .join(
            j.fired.filter(pl.col(column).fill_null(False))
            .group_by("task")
            .agg(pl.len().cast(pl.Float64).alias("num")),
            on="task",
            how="left",
        )
        .with_columns(pl.lit(key).alias("key"), pl.col("num").fill_null(0.0))
        .select("key", "task", "num", "den")
    )


def _propagation_parts(j: Joined, prop: pl.DataFrame | None) -> list[pl.DataFrame]:
    """Propagating / trackable episodes per task, for organic and labelled fire events."""
    if prop is None or prop.is_empty():
        return []
    tasks = prop.join(j.episodes.select("trace_id", "task"), on="trace_id", how="left")
    return [
        _grouped(pl.lit("prop:" + kind), tasks.filter(pl.col(kind)), pl.col(kind + "_prop").sum(), pl.len())
        for kind in ("organic", "labelled")
        if tasks.get_column(kind).any()
    ]


def _labelled_parts(j: Joined) -> list[pl.DataFrame]:
    """Detection and path match over the labelled calls, overall and per fault kind."""
    lab, kind = j.labelled, pl.col("fault")
    return [
        _grouped(pl.lit("det"), lab, pl.col("fired").sum(), pl.len()),
        _grouped(pl.lit("det:") + kind, lab, pl.col("fired").sum(), pl.len()),
        _grouped(pl.lit("pm"), lab, pl.col("pm").sum(), pl.len()),
        _grouped(pl.lit("pm:") + kind, lab, pl.col("pm").sum(), pl.len()),
    ]


def _receipt_parts(j: Joined) -> list[pl.DataFrame]:
    """Recovery retention over the fired calls; receipt bytes and tokens over every checked call (a
    task's calls that did not fire add 0 bytes)."""
    fsums = j.fired.group_by("task").agg(pl.col("bytes", "tokens").sum())
    cost_rows = j.per_task.select("task", "n").join(fsums, on="task", how="left").fill_null(0)
    return [
        _grouped(pl.lit("recov"), j.fired, (pl.col("recov") >= 2).sum(), pl.len()),
        _part(pl.lit("bytes"), cost_rows, "bytes", "n"),
        _part(pl.lit("tokens"), cost_rows, "tokens", "n"),
    ]


def rate_table(j: Joined, prop: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every rate's per-task counts in one `key, task, num, den` table, so all share the resamples."""
    parts = [
        *_organic_parts(j),
        *_code_parts(j),
        _spurious_part(j),
        _spurious_part(j, "spurious_nf", "unfaulted"),
        _spurious_part(j, "spurious_fr", "full"),
        *_labelled_parts(j),
        *_receipt_parts(j),
        *_propagation_parts(j, prop),
    ]
    nonempty = [p.cast(RATE_SCHEMA) for p in parts if not p.is_empty()]
    return pl.concat(nonempty) if nonempty else pl.DataFrame(schema=RATE_SCHEMA)


@dataclass(frozen=True)
class Rates:
    """Every rate of the report by key: `fire`, `tool:<tool>`, `code:<code>`, `ins`, `spurious`,
    `spurious_nf`, `spurious_fr`, `det`, `det:<kind>`, `pm`, `pm:<kind>`, `recov`, `bytes`, `tokens`,
    `prop:organic`, `prop:labelled`."""

    by_key: Mapping[str, stats.Rate]

    def get(self, key: str, den: int = 0) -> stats.Rate:
        """The key's rate; a key with no count rows is 0 of `den` (Wilson's interval), or unmeasurable."""
        r = self.by_key.get(key)
        if r is not None:
            return r
        return stats.make_rate(0, den, None) if den else NONE_RATE


def bootstrap_rates(j: Joined, *, bootstrap: int, seed: int, prop: pl.DataFrame | None = None) -> Rates:
    """Every rate with its task-clustered bootstrap interval (calls of a task are not independent)."""
    return Rates(
        stats.rates(rate_table(j, prop), j.tasks, n_boot=bootstrap, seed=seed, proportion=NOT_SHARES)
    )


# ------------------------------------------------------------------------------------------------------
# Sections


def population_facts(j: Joined, start: Mapping[str, Any]) -> PopulationFacts:
    """The denominators every figure rests on, for the reader to check the ratios against."""
    corpus = start["corpus"]
    return PopulationFacts(
        calls=int(corpus.get("calls", corpus["checked"])),
        checked=int(j.per_task.get_column("n").sum()),
        organic=int(j.per_task.get_column("org").sum()),
        labelled=j.labelled.height,
        episodes=j.episodes.height,
        clean_episodes=j.episodes.filter(pl.col("clean")).height,
        tasks=len(j.tasks),
        fired_calls=j.fired.height,
    )


def per_tool(j: Joined) -> pl.DataFrame:
    """`tool, checked, organic, fires, labelled, detected`: the per-tool counts (any order)."""
    return j.per_tt.group_by("tool").agg(
        pl.col("n").sum().alias("checked"),
        pl.col("org").sum().alias("organic"),
        pl.col("org_fired").sum().alias("fires"),
        (pl.col("n") - pl.col("org")).sum().alias("labelled"),
        pl.col("lab_fired").sum().alias("detected"),
    )


def fire_rate(rates: Rates, j: Joined, facts: PopulationFacts) -> FireRate:
    """The headline false-alarm figure on organic calls, and where it comes from (tools, codes)."""
    tools = per_tool(j).filter(pl.col("organic") > 0).select("tool", "organic")
    return FireRate(
        **rates.get("fire", facts.organic).to_json(),
        cross_call_explained=j.explained,
        by_tool={t: estimate(rates.get("tool:" + t, n)) for t, n in sorted(tools.iter_rows())},
        by_code={c: estimate(rates.get("code:" + c, facts.organic)) for c in fired_codes(j.events)},
    )


def in_sample(rates: Rates, j: Joined, facts: PopulationFacts) -> InSample | None:
    """The full checker's fire rate on the same calls: the optimistic figure cross-fitting corrects."""
    if j.in_sample is None:
        return None
    return InSample(estimate(rates.get("ins", facts.organic)), len(j.in_sample))


def _per_episodes(rates: Rates, key: str, den: int) -> PerEpisodes:
    r = rates.get(key, den)
    return PerEpisodes(**r.to_json(), per_100_episodes=scaled(r, 100))


def spurious(rates: Rates, facts: PopulationFacts, j: Joined) -> Spurious:
    """Receipts an agent would get in episodes that went right, per clean episode and per 100; and the
    same per episode without a fault (the paper's count) and per full-reward episode (None without
    rewards)."""
    sp = rates.get("spurious", facts.clean_episodes)
    eps = j.episodes
    unfaulted = eps.filter(pl.col("unfaulted")).height
    has_reward = eps.get_column("reward").drop_nulls().len() > 0
    full = eps.filter(pl.col("full")).height
    return Spurious(
        **sp.to_json(),
        per_100_episodes=scaled(sp, 100),
        without_fault=_per_episodes(rates, "spurious_nf", unfaulted),
        full_reward=_per_episodes(rates, "spurious_fr", full) if has_reward else None,
    )


def _outcome(frame: pl.DataFrame) -> Outcome:
    rewards = frame.get_column("reward").drop_nulls().drop_nans()
    full = int((rewards >= 1.0).sum())
    return Outcome(
        episodes=frame.height,
        with_reward=rewards.len(),
        full_reward=full,
        pass_share=round_figure(full / rewards.len()) if rewards.len() else None,
    )


def propagation(rates: Rates, j: Joined, prop: pl.DataFrame | None) -> Propagation:
    """Trackable episodes, the share whose receipted value reappears later, and their outcomes."""
    frame = pl.DataFrame(schema=PROP_EPISODES) if prop is None else prop
    frame = frame.join(j.episodes.select("trace_id", "reward"), on="trace_id", how="left")

    def group(kind: str) -> PropagationGroup:
        mine = frame.filter(pl.col(kind))
        prop_rows = mine.filter(pl.col(kind + "_prop"))
        return PropagationGroup(
            trackable_episodes=mine.height,
            propagating=estimate(rates.get("prop:" + kind, mine.height)),
            outcome_propagating=_outcome(prop_rows),
            outcome_not_propagating=_outcome(mine.filter(~pl.col(kind + "_prop"))),
        )

    return Propagation(organic=group("organic"), labelled=group("labelled"))


def detection(rates: Rates, j: Joined, facts: PopulationFacts) -> Detection:
    """How many labelled faults fire, and how many at the faulted path, overall and per fault kind."""
    kinds = sorted(set(j.labelled.get_column("fault").to_list()))
    return Detection(
        overall=estimate(rates.get("det", facts.labelled)),
        by_kind={kd: estimate(rates.get("det:" + kd)) for kd in kinds},
        path_match=KindRates(
            estimate(rates.get("pm", facts.labelled)), {kd: estimate(rates.get("pm:" + kd)) for kd in kinds}
        ),
    )


def receipt_cost(rates: Rates, j: Joined, facts: PopulationFacts, encoder: str) -> ReceiptCost:
    """What the receipts add to an agent's context: bytes and tokens, in total and per 1,000 calls."""
    n = facts.fired_calls
    total_bytes = int(j.fired.get_column("bytes").sum()) if n else 0
    total_tokens = int(j.fired.get_column("tokens").sum()) if n else 0
    return ReceiptCost(
        encoder=encoder,
        receipts=n,
        bytes=total_bytes,
        approx_tokens=total_tokens,
        mean_bytes_per_receipt=round_figure(total_bytes / n) if n else None,
        bytes_per_1000_calls=scaled(rates.get("bytes", facts.checked), 1000),
        tokens_per_1000_calls=scaled(rates.get("tokens", facts.checked), 1000),
    )


def tools_table(j: Joined, fire: FireRate) -> tuple[ToolRow, ...]:
    """Per tool, sorted by fires: where the false alarms and the detections are."""
    none = estimate(NONE_RATE)
    rows = [
        ToolRow(t, int(c), int(o), int(f), fire.by_tool.get(t, none), int(la), int(d))
        for t, c, o, f, la, d in per_tool(j).iter_rows()
    ]
    return tuple(sorted(rows, key=lambda r: (-r.fires, r.tool)))


def coverage(tools: Sequence[ToolRow], catalog: Mapping[str, Mapping[str, Any]]) -> Coverage:
    """Checked calls and called tools that some rule of the catalog speaks of."""
    ruled = {str(r["tool"]) for r in catalog.values()}
    called = [t for t in tools if t.checked]
    calls = sum(t.checked for t in called if t.tool in ruled)
    checked = sum(t.checked for t in called)
    return Coverage(
        calls=calls,
        checked=checked,
        share=round_figure(calls / checked) if checked else None,
        tools=sum(1 for t in called if t.tool in ruled),
        called_tools=len(called),
        uncovered=tuple(sorted(t.tool for t in called if t.tool not in ruled)),
    )


def _rule_fires(j: Joined) -> dict[str, list[int]]:
    """Per rule: fired calls, organic ones, ones in clean episodes, labelled ones (a fire event of a
    call outside the population counts as neither organic nor clean)."""
    flags = {
        cid: (bool(o), bool(c)) for cid, o, c in j.fired.select("call_id", "organic", "clean").iter_rows()
    }
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for cid, e in j.events.items():
        is_organic, is_clean = flags.get(cid, (False, False))
        for rid in e["rules"]:
            c = counts[rid]
            c[0] += 1
            c[1] += is_organic
            c[2] += is_clean
            c[3] += not is_organic
    return counts


def rules_table(j: Joined, catalog: Catalog) -> tuple[RuleRow, ...]:
    """Every rule of the checkers, sorted by fires: which rules raise the false alarms."""
    counts = _rule_fires(j)
    rows = []
    for r in catalog.values():
        fires, organic, clean, labelled = counts[r["rule"]]
        rows.append(
            RuleRow(
                rule=r["rule"],
                tool=r["tool"],
                code=r["code"],
                paths=tuple(r["paths"]),
                support=int(r["support"]),
                fires=fires,
                organic_fires=organic,
                clean_fires=clean,
                labelled_fires=labelled,
            )
        )
    return tuple(sorted(rows, key=lambda r: (-r.fires, r.rule)))


def support_grid(supports: Sequence[int]) -> list[int]:
    """Thresholds for the abstention curve: 0 and the 10/25/50/75/90% quantiles of the rules' supports
    (nearest rank), so the curve has resolution wherever the rules actually are."""
    if not supports:
        return [0]
    xs = sorted(supports)
    qs = {xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))] for q in (0.1, 0.25, 0.5, 0.75, 0.9)}
    return sorted({0} | qs)


def _abstention_row(j: Joined, s: int, supports: Sequence[int], facts: PopulationFacts) -> AbstentionRow:
    """The point figures when only violations of rules with support >= s count."""
    kept = j.fired.filter(pl.col("max_support") >= s)
    n_kept = kept.height
    n_kept_org = int(kept.get_column("organic").sum()) if n_kept else 0
    n_kept_clean = int(kept.get_column("clean").sum()) if n_kept else 0
    f = facts
    return AbstentionRow(
        min_support=s,
        rules=sum(1 for x in supports if x >= s),
        fired_calls=n_kept,
        coverage=round_figure(n_kept / f.fired_calls) if f.fired_calls else None,
        risk=round_figure(n_kept_org / n_kept) if n_kept else None,
        fire_rate=round_figure(n_kept_org / f.organic) if f.organic else None,
        spurious_per_100=round_figure(100 * n_kept_clean / f.clean_episodes) if f.clean_episodes else None,
        detection=round_figure((n_kept - n_kept_org) / f.labelled) if f.labelled else None,
    )


def abstention(j: Joined, catalog: Catalog, facts: PopulationFacts) -> tuple[AbstentionRow, ...]:
    """Coverage and risk by minimum rule support: what abstaining on thinly supported rules buys."""
    supports = [int(r["support"]) for r in catalog.values()]
    return tuple(_abstention_row(j, s, supports, facts) for s in support_grid(supports))


def _witnessed(v: Mapping[str, Any]) -> WitnessedViolation:
    """A frozen violation as a listed receipt shows it (no presence flag)."""
    return WitnessedViolation(v["code"], v["rule"], v["path"], v["expected"], v["observed"], v["support"])


def spurious_receipts(j: Joined) -> tuple[SpuriousReceipt, ...]:
    """The receipts on clean episodes (up to `MAX_SPURIOUS_LISTED`), for a reviewer to read."""
    rows = (
        j.fired.filter(pl.col("clean"))
        .sort("trace_id", "call_id")
        .select("call_id", "trace_id", "task_id", "tool", "ep_reward")
        .head(MAX_SPURIOUS_LISTED)
    )
    return tuple(
        SpuriousReceipt(
            cid,
            trace,
            task,
            tool,
            int(j.events[cid]["fold"]),
            reward,
            tuple(_witnessed(v) for v in j.events[cid]["violations"]),
        )
        for cid, trace, task, tool, reward in rows.iter_rows()
    )


def corpus_facts(start: Mapping[str, Any], calls: int) -> CorpusFacts:
    """Which corpus was audited (name and digest, as frozen in the ledger)."""
    return CorpusFacts(start["corpus"]["name"], start["corpus"]["sha256"], calls)


def contracts_facts(start: Mapping[str, Any]) -> ContractsFacts:
    """Which contract set judged the calls (digest and origin, as frozen in the ledger)."""
    c = start["contracts"]
    return ContractsFacts(c["sha256"], int(start["k"]), int(start["seed"]), int(c["rules"]), c["origin"])


def run_params(start: Mapping[str, Any], bootstrap: int) -> Params:
    """The settings that make the report reproducible (the seed is the ledger's)."""
    return Params(
        k=int(start["k"]),
        seed=int(start["seed"]),
        bootstrap=bootstrap,
        encoder=start.get("encoder", "v2"),
        level=LEVEL,
        inject=start.get("inject"),
    )


def assemble(
    start: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    in_sample_ids: InSampleIds | None,
    ledger: LedgerAnchor,
    pop: pl.LazyFrame,
    truth: Truth,
    *,
    bootstrap: int,
    seed: int,
    prop: pl.DataFrame | None = None,
) -> AuditReport:
    """The report (gates not yet evaluated) from the ledger's `audit.start` body, its fire events and
    in-sample ids, the population scan and the truth; `prop`: the trackable episodes
    (`output_contracts.audit.propagation.propagation_episodes`), None when not measured."""
    j = join(events, pop, truth, in_sample_ids)
    rates = bootstrap_rates(j, bootstrap=bootstrap, seed=seed, prop=prop)
    facts = population_facts(j, start)
    catalog = {r["rule"]: r for r in start["rules"]}
    fire = fire_rate(rates, j, facts)
    tools = tools_table(j, fire)
    return AuditReport(
        corpus=corpus_facts(start, facts.calls),
        contracts=contracts_facts(start),
        params=run_params(start, bootstrap),
        population=facts,
        fire_rate=fire,
        in_sample=in_sample(rates, j, facts),
        spurious=spurious(rates, facts, j),
        detection=detection(rates, j, facts),
        recovery_retention=estimate(rates.get("recov", facts.fired_calls)),
        receipt_cost=receipt_cost(rates, j, facts, start.get("encoder", "v2")),
        tools=tools,
        rules=rules_table(j, catalog),
        abstention=abstention(j, catalog, facts),
        spurious_receipts=spurious_receipts(j),
        ledger=ledger,
        coverage=coverage(tools, catalog),
        propagation=propagation(rates, j, prop),
    )
