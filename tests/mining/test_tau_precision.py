"""Contract precision on real tool output: a small run of bench/tau_tools.py (τ-bench's own tools on its
public databases) through ingest, mine --folds 5 and the cross-fitted audit.

The full-size figures (600 tasks, several seeds) are in docs/audit.md, made by bench/tau_precision.py;
this is the same measurement at 150 tasks × 3 trials, so that a change that brings back rules about one
record, short domains or POSITIVE on counts fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from output_contracts.audit.pipeline import audit, open_source
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from tests.loaders import bench_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", params=["retail", "airline"])
def run(request: pytest.FixtureRequest, shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    domain = request.param
    tt, tp = bench_module("tau_tools"), bench_module("tau_precision")
    work = tmp_path_factory.mktemp(f"tau-{domain}")
    src = work / "calls.jsonl.gz"
    tt.write(tt.generate(domain, tasks=150, trials=3, seed=7, data=shared_data), src)
    ingest([src], work / "corpus", registry=shared_data / "tau_bench" / domain / "tools.json")
    corpus = Corpus.open(work / "corpus")
    rep, cs = audit(corpus, work / "ledger", k=5, seed=13, bootstrap=200)
    return domain, tp, rep, cs, work


def test_clean_real_output_is_quiet(run: Any, shared_data: Path) -> None:
    domain, tp, rep, cs, _ = run
    fr, sp = rep["fire_rate"], rep["spurious"]
    assert fr["denominator"] > 3000 and sp["denominator"] == 450  # 150 tasks × 3 episodes
    assert fr["value"] <= 0.005, (domain, fr)
    assert sp["per_100_episodes"]["value"] <= 1.0, (domain, sp)
    # no rule is a fact about one record: no database key, card, variant or product name in a path
    assert tp.id_rules(cs, tp.record_ids(shared_data, domain)) == 0
    # the objects keyed by record ids are maps
    want = {
        "retail": ("get_product_details", "/variants"),
        "airline": ("get_user_details", "/payment_methods"),
    }
    tool, parent = want[domain]
    assert parent in cs.tools[tool].maps


def test_maps_and_pools_keep_detecting(run: Any) -> None:
    """Injected faults (the basic kinds, rate 0.1) into the same corpus: detection stays high (the incident
    suite is measured at full size by bench/tau_precision.py: its rare-event classes need 200-300 tasks)."""
    domain, _tp, _rep, _cs, work = run
    src = open_source(work / "corpus", work / "inj", inject_kinds=["basic"], inject_rate=0.1, inject_seed=7)
    rep, _ = audit(
        src.corpus, work / "ledger-i", k=5, seed=13, bootstrap=0, inject=src.inject, mine_from=src.original
    )
    det = rep["detection"]["overall"]
    assert det["denominator"] > 300
    assert det["value"] >= 0.6, (domain, det)
    by = rep["detection"]["by_kind"]
    for kind in ("type_swap", "null_field", "stale_echo"):
        assert by[kind]["value"] >= 0.85, (domain, kind, by[kind])
