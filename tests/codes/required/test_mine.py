"""REQUIRED: presence in every object at the parent pattern; threshold 20 calls from 3 tasks."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import call, find, mine_records, rules


def _calls(n: int, n_tasks: int, result_of=lambda i: {"a": i, "b": "x"}) -> list[dict]:
    return [call(f"t{i % n_tasks}", "tool", result_of(i)) for i in range(n)]


def test_threshold_boundary_calls(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _calls(19, 3)), "REQUIRED", "/a") is None
    r = find(mine_records(tmp_path, _calls(20, 3)), "REQUIRED", "/a")
    assert r is not None and (r.support.calls, r.support.tasks) == (20, 3)
    assert r.max_violation_rate == round(1 - 0.05 ** (1 / 20), 6)


def test_threshold_boundary_tasks(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _calls(40, 2)), "REQUIRED", "/a") is None
    assert find(mine_records(tmp_path, _calls(40, 3)), "REQUIRED", "/a") is not None


def test_one_counterexample_kills(tmp_path: Path) -> None:
    recs = _calls(60, 6, lambda i: {"a": i, "b": "x"} if i != 33 else {"b": "x"})
    cs = mine_records(tmp_path, recs)
    assert find(cs, "REQUIRED", "/a") is None
    assert find(cs, "REQUIRED", "/b") is not None


def test_missing_vs_null(tmp_path: Path) -> None:
    """A key holding null is present; a missing key is not."""
    recs = _calls(40, 4, lambda i: {"a": None if i % 2 else i, "b": "x"})
    cs = mine_records(tmp_path, recs)
    assert find(cs, "REQUIRED", "/a") is not None
    assert find(cs, "TYPE", "/a") is None  # int and null: no stable kind


def test_nested_arrays(tmp_path: Path) -> None:
    """`/items/*/price` is judged per item object; calls with no items do not qualify."""

    def res(i: int) -> dict:
        return {"items": [{"price": 1.5 + j, "sku": f"s{j}"} for j in range(i % 3)]}

    cs = mine_records(tmp_path, _calls(45, 5, res))
    r = find(cs, "REQUIRED", "/items/*/price")
    assert r is not None
    assert r.support.calls == 30  # calls with at least one item object (i % 3 != 0)
    bad = [*_calls(45, 5, res), call("t1", "tool", {"items": [{"price": 2.0}, {"sku": "lonely"}]})]
    cs2 = mine_records(tmp_path, bad)
    assert find(cs2, "REQUIRED", "/items/*/price") is None
    assert find(cs2, "REQUIRED", "/items") is not None


def test_array_elements_are_not_required_keys(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _calls(30, 3, lambda i: {"xs": [1, 2]}))
    assert all(not r.paths[0].endswith("*") for r in rules(cs, "REQUIRED"))
