"""k-fold checkers: checker f is exactly what mining without fold f's tasks gives (property test)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_of
from output_contracts.codes.table import names
from output_contracts.errors import MiningError
from output_contracts.mining import mine
from output_contracts.traces.ingest import corpus_from_records
from tests.worlds import world

CODES = names()
LOW = {c: 5 for c in CODES}  # small corpora: low thresholds so that every class has rules to compare


def _signature(cs: ContractSet, fold: int | None) -> set[tuple[str, int, int]]:
    return {(r.id, r.support.calls, r.support.tasks) for r in cs.rules_for(fold)}


def _mine_records(records: list[dict], where: Path) -> ContractSet | None:
    if not records:
        return None
    try:
        return mine(corpus_from_records(records, where), min_support=LOW)
    except MiningError:
        return None


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_calls=st.integers(60, 140),
    n_tasks=st.integers(8, 14),
    breakage=st.sampled_from([0.0, 0.02, 0.08]),
    mine_seed=st.integers(0, 99),
)
def test_fold_checker_equals_mining_the_other_folds(
    seed: int, n_calls: int, n_tasks: int, breakage: float, mine_seed: int
) -> None:
    k = 3
    records = world(seed, n_calls, n_tasks, breakage)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cs = mine(corpus_from_records(records, root / "all"), folds=k, seed=mine_seed, min_support=LOW)
        full = _mine_records(records, root / "full")
        assert full is not None
        assert _signature(cs, None) == _signature(full, None)
        for f in range(k):
            rest = [r for r in records if fold_of(r["task_id"], mine_seed, k) != f]
            alone = _mine_records(rest, root / f"without-{f}")
            expected = _signature(alone, None) if alone is not None else set()
            assert _signature(cs, f) == expected, f"fold {f}"


def test_cross_fitting_is_exercised(tmp_path: Path) -> None:
    """The property above is not vacuous: fold checkers do differ from the full checker here."""
    records = world(3, 140, 10, 0.02)
    cs = mine(corpus_from_records(records, tmp_path / "c"), folds=3, seed=5, min_support=LOW)
    sigs = [_signature(cs, f) for f in range(3)]
    assert any(s != _signature(cs, None) for s in sigs)
    assert all(s for s in sigs)
    with pytest.raises(Exception, match="no fold 3"):
        cs.rules_for(3)
