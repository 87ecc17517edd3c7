"""What each rule rests on: the fold checkers holding it, the fewest tasks behind it, and its held-out
violation rate.

`fold_report` says, for each rule, which fold checkers hold it and — given the corpus — how often it fires
on the tasks it was *not* mined from: for every fold f whose checker holds the rule, the calls of fold
f's tasks that violate it, over the ok calls of the rule's tool in fold f. That held-out rate is the
honest estimate of the rule's false-alarm rate on new tasks (the miner guarantees 0 on the mining data
itself).

`tasks_min` is the fewest distinct tasks behind a rule in any checker that holds it (the full one and
the fold checkers), and a rule is *thin* when that number is below `thin_tasks` for its class: the
larger of twice the class's task minimum (the contract set's `params.min_tasks`) and THIN_TASKS (29).
With n clean tasks and no counterexample, 1 − 0.05^(1/n) bounds the share of tasks that break the rule
(95%); below 29 tasks that bound is above 10%, so a thin rule may well fire on one new task in ten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from output_contracts.checks.checker import check_corpus
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.folds import fold_table
from output_contracts.traces.corpus import Corpus

#: Below this many distinct tasks a rule's 95% task-level violation bound exceeds 10% (1 − 0.05^(1/29)).
THIN_TASKS = 29


def thin_tasks(code: str, min_tasks: int | None = None) -> int:
    """Distinct tasks a rule of `code` needs to not be thin (see the module docstring)."""
    need = 1 if min_tasks is None else min_tasks
    return max(THIN_TASKS, 2 * need)


@dataclass(frozen=True)
class FoldPresence:
    """A rule's presence in the fold checkers, and its held-out record where a corpus was given."""

    rule: Rule
    folds: tuple[int, ...]  # fold checkers holding the rule
    heldout_calls: int | None = None  # ok calls of the tool in those folds
    heldout_violations: int | None = None  # of which violate the rule
    tasks_min: int = 0  # fewest distinct tasks behind the rule in a checker holding it
    thin: bool = False  # tasks_min below thin_tasks(code)

    @property
    def heldout_rate(self) -> float | None:
        if not self.heldout_calls or self.heldout_violations is None:
            return None
        return self.heldout_violations / self.heldout_calls


def fold_report(
    cs: ContractSet, corpus: Corpus | None = None, rules: Sequence[Rule] | None = None
) -> list[FoldPresence]:
    """Per rule: the fold checkers holding it, and with `corpus` its held-out violation count and rate."""
    rules = list(rules) if rules is not None else cs.all_rules()
    holders: dict[str, list[int]] = {}
    fewest: dict[str, int] = {}
    for fc in cs.folds:
        for rid in fc.rules:
            holders.setdefault(rid, []).append(fc.fold)
            sup = fc.support.get(rid)
            if sup is not None:
                fewest[rid] = min(fewest.get(rid, sup.tasks), sup.tasks)
    min_tasks = cs.params.get("min_tasks") or {}

    def presence(r: Rule, calls: int | None = None, violations: int | None = None) -> FoldPresence:
        t = min(fewest.get(r.id, r.support.tasks), r.support.tasks) if r.in_full else fewest.get(r.id, 0)
        thin = t < thin_tasks(r.code, min_tasks.get(r.code))
        return FoldPresence(r, tuple(holders.get(r.id, [])), calls, violations, tasks_min=t, thin=thin)

    if corpus is None or not cs.folds:
        return [presence(r) for r in rules]
    calls = (
        corpus.scan_calls()
        .filter(pl.col("status") == "ok")
        .select(pl.col("task_id").cast(pl.String), pl.col("tool").cast(pl.String))
        .collect()
    )
    ft = fold_table(calls["task_id"], cs.seed, cs.k)
    per_fold = calls.join(ft, on="task_id").group_by("tool", "fold").agg(pl.len().alias("n"))
    n_of = {(t, f): n for t, f, n in per_fold.iter_rows()}
    viol = check_corpus(cs, corpus, fold="cross")
    vc = viol.group_by("rule", "fold").agg(pl.col("cid").n_unique().alias("v"))
    v_of = {(r, f): v for r, f, v in vc.iter_rows()}
    out = []
    for r in rules:
        fs = tuple(holders.get(r.id, []))
        n = sum(n_of.get((r.tool, f), 0) for f in fs)
        v = sum(v_of.get((r.id, f), 0) for f in fs)
        out.append(presence(r, n, v))
    return out
