"""Why a tool got no rules: coverage made visible.

A tool with calls in the corpus and not one rule in the full checker is checked by nothing, and a gate
that passes over it says nothing about it. `uncovered` names each such tool with the fact that explains
it, in this order: no clean call at all; fewer clean calls than any rule class needs; results with no
JSON structure (plain text or bare scalars); otherwise, every candidate was refuted or lacked its
class's support.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.mine_params import MineParams
from output_contracts.codes.table import names
from output_contracts.mining.clean import clean_calls
from output_contracts.traces.corpus import Corpus


@dataclass(frozen=True)
class ToolGap:
    """A tool with calls and no rule: its call counts and the reason, one sentence."""

    tool: str
    calls: int
    clean_calls: int
    tasks: int
    reason: str

    def to_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "clean_calls": self.clean_calls,
            "tasks": self.tasks,
            "reason": self.reason,
        }


def uncovered(corpus: Corpus, contracts: ContractSet, params: MineParams) -> list[ToolGap]:
    """Every tool of `corpus` (within `params.tools`) with no rule in `contracts`' full checker."""
    covered = {r.tool for r in contracts.rules_for(None)}
    calls = corpus.scan_calls().select(pl.col("tool").cast(pl.String))
    if params.tools is not None:
        calls = calls.filter(pl.col("tool").is_in(list(params.tools)))
    totals = dict(calls.group_by("tool").agg(pl.len()).collect().iter_rows())
    gaps = sorted(t for t in totals if t not in covered)
    if not gaps:
        return []
    clean, _ = clean_calls(corpus, params.clean.value, gaps, ids=False)
    per_tool = {
        t: (n, k) for t, n, k in clean.group_by("tool").agg(pl.len(), pl.col("task").n_unique()).iter_rows()
    }
    # the JSON kinds of the clean results' roots, per tool
    roots = (
        corpus.scan_leaves()
        .filter(
            (pl.col("side") == "result")
            & (pl.col("path") == "")
            & pl.col("cid").is_in(clean["cid"].implode())
        )
        .group_by(pl.col("tool").cast(pl.String))
        .agg(pl.col("kind").cast(pl.String).unique().sort())
        .collect()
    )
    kinds = {t: list(k) for t, k in roots.iter_rows()}
    least = min(params.needed(c) for c in names())
    out = []
    for t in gaps:
        n_clean, tasks = per_tool.get(t, (0, 0))
        seen = kinds.get(t, [])
        if n_clean == 0:
            why = f"no clean call: its {totals[t]:,} call(s) are errors or belong to faulty episodes"
        elif n_clean < least:
            why = f"{_calls(n_clean)}: fewer than any rule class needs (at least {least})"
        elif seen and not set(seen) & {"object", "array"}:
            why = f"its results are {' or '.join(seen)}, not JSON objects or lists: no field for a rule to hold on"
        else:
            why = (
                f"{_calls(n_clean)} from {tasks:,} task(s): no candidate held on every one with its "
                "class's support (thresholds: docs/rules.md)"
            )
        out.append(ToolGap(t, totals[t], n_clean, tasks, why))
    return out


def _calls(n: int) -> str:
    return f"{n:,} clean call" + ("" if n == 1 else "s")
