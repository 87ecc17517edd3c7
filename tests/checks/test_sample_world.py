"""Acceptance on the sample world: contracts mined from sample_traces/clean against sample_traces/faulty.

* every injected fault whose kind the contracts can see is flagged; `plausible_string` (a wrong value
  that keeps every mined property: right kind, inside the domain, no echo) is invisible by design;
* the cross-fitted replay (5 folds, each call checked by its own task's fold checker) fires on under
  2% of clean calls;
* `check_call` gives exactly the violations of `check_corpus`, call by call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from output_contracts.checks.checker import call_violations, check_corpus
from output_contracts.codes.engine.evaluate import episode_memory
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from output_contracts.traces.tool_registry import load_registry

INVISIBLE_BY_DESIGN = {"plausible_string"}


@pytest.fixture(scope="module")
def world(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sample = repo / "sample_traces"
    if not (sample / "clean").is_dir() or not (sample / "faulty").is_dir():
        pytest.skip("sample_traces/clean and faulty are not generated")
    d = tmp_path_factory.mktemp("sample")
    ingest([sample / "clean"], d / "clean")
    ingest([sample / "faulty"], d / "faulty")
    clean, faulty = Corpus.open(d / "clean"), Corpus.open(d / "faulty")
    reg = load_registry(sample / "tools.json")
    return {
        "clean": clean,
        "faulty": faulty,
        "full": mine(clean, folds=1, seed=13, registry=reg),
        "k5": mine(clean, folds=5, seed=13, registry=reg),
    }


def test_every_visible_fault_kind_is_flagged(world: dict[str, Any]) -> None:
    faulty: Corpus = world["faulty"]
    df = check_corpus(world["full"], faulty)
    calls = faulty.scan_calls().filter(pl.col("status") == "ok").select("cid", "fault").collect()
    fired = df.select("cid").unique().with_columns(pl.lit(True).alias("fired"))
    per = (
        calls.join(fired, on="cid", how="left")
        .with_columns(pl.col("fired").fill_null(False))
        .group_by("fault")
        .agg(pl.len().alias("n"), pl.col("fired").sum().alias("fired"))
    )
    rates = {f: (n, k) for f, n, k in per.iter_rows()}
    kinds = {f for f in rates if f is not None}
    assert len(kinds) >= 8, kinds
    for kind in sorted(kinds - INVISIBLE_BY_DESIGN):
        n, k = rates[kind]
        assert k == n, f"{kind}: flagged {k} of {n}"
    n_clean, k_clean = rates[None]
    assert k_clean / n_clean < 0.02  # unlabelled calls of the faulty episodes rarely fire


def test_cross_fitted_fire_rate_on_clean_is_under_2_percent(world: dict[str, Any]) -> None:
    clean: Corpus = world["clean"]
    df = check_corpus(world["k5"], clean, fold="cross")
    n = clean.scan_calls().filter(pl.col("status") == "ok").select(pl.len()).collect().item()
    assert df["cid"].n_unique() / n < 0.02
    # every row was judged by the fold of its own task
    folds = dict(zip(df["task_id"].to_list(), df["fold"].to_list(), strict=True))
    assert all(world["k5"].fold_of(t) == f for t, f in folds.items())


def test_check_call_equals_check_corpus_on_every_call(world: dict[str, Any]) -> None:
    faulty: Corpus = world["faulty"]
    cs = world["full"]
    df = check_corpus(cs, faulty)
    by_cid: dict[int, list[Any]] = {}
    for r in df.iter_rows(named=True):
        by_cid.setdefault(r["cid"], []).append(
            (r["rule"], r["path"], r["expected"], r["observed"], r["present"], r["detail"])
        )
    calls = (
        faulty.scan_calls()
        .sort("source", "line", "index")
        .select("cid", "call_id", "trace_id", "tool", "status", "arguments", "result")
    )
    n = 0
    memories: dict[str, Any] = {}  # each episode's calls in input order: CONSISTENT compares with them
    for cid, call_id, trace, tool, status, args, res in calls.collect().iter_rows():
        memory = memories.setdefault(trace, episode_memory(cs))
        if status != "ok":
            memory.record(tool, orjson.loads(args), None, call_id, ok=False)
            continue
        vs = call_violations(cs, tool, orjson.loads(args), orjson.loads(res), memory=memory, call_id=call_id)
        got = sorted(
            (v.rule, v.path, canonical_str(v.expected), canonical_str(v.observed), v.present, v.detail)
            for v in vs
        )
        assert got == sorted(by_cid.get(cid, [])), (tool, res)
        n += 1
    assert n > 6000 and df.height > 1000
