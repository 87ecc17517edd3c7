"""POSITIVE / NONNEG: sign of every number at a pattern; threshold 30 values; only the stronger claim."""

from __future__ import annotations

from pathlib import Path

from tests.mining.helpers import call, find, mine_records


def _recs(values: list) -> list[dict]:
    return [call(f"t{i % 4}", "tool", {"v": v}) for i, v in enumerate(values)]


def test_threshold_boundary(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs([i + 1 for i in range(29)])), "POSITIVE", "/v") is None
    r = find(mine_records(tmp_path, _recs([i + 1 for i in range(30)])), "POSITIVE", "/v")
    assert r is not None and r.support.calls == 30


def test_zero_gives_nonneg_not_positive(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _recs([i % 5 for i in range(40)]))
    assert find(cs, "NONNEG", "/v") is not None
    assert find(cs, "POSITIVE", "/v") is None
    pos = mine_records(tmp_path, _recs([1 + i % 5 for i in range(40)]))
    assert find(pos, "POSITIVE", "/v") is not None
    assert find(pos, "NONNEG", "/v") is None  # never both


def test_one_negative_kills_both(tmp_path: Path) -> None:
    vals = [1 + i % 5 for i in range(40)]
    vals[20] = -0.01
    cs = mine_records(tmp_path, _recs(vals))
    assert find(cs, "NONNEG", "/v") is None and find(cs, "POSITIVE", "/v") is None


def test_counts_values_in_nested_arrays(tmp_path: Path) -> None:
    """10 calls × 3 items = 30 values: enough for `/items/*/price`."""
    recs = [
        call(f"t{i % 3}", "tool", {"items": [{"price": 1.25 + i + j} for j in range(3)]}) for i in range(10)
    ]
    r = find(mine_records(tmp_path, recs), "POSITIVE", "/items/*/price")
    assert r is not None and r.support.calls == 10


def test_constant_and_non_numbers_ignored(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs([3] * 40)), "POSITIVE", "/v") is None
    mixed = mine_records(tmp_path, _recs([None if i % 4 == 0 else 1 + i for i in range(44)]))
    assert find(mixed, "POSITIVE", "/v") is not None  # nulls are TYPE's business
