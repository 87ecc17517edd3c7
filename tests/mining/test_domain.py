"""DOMAIN: small categorical sets; 50 values, <= max_domain, each value 3 times in 2 tasks, Good–Turing."""

from __future__ import annotations

from pathlib import Path

from tests.mining.helpers import call, find, mine_records


def _recs(values: list[str], n_tasks: int = 5) -> list[dict]:
    return [call(f"t{i % n_tasks}", "tool", {"s": v}) for i, v in enumerate(values)]


def test_threshold_boundary(tmp_path: Path) -> None:
    colors = ["red", "green", "blue"]
    assert find(mine_records(tmp_path, _recs([colors[i % 3] for i in range(49)])), "DOMAIN", "/s") is None
    r = find(mine_records(tmp_path, _recs([colors[i % 3] for i in range(50)])), "DOMAIN", "/s")
    assert r is not None and r.params == {"values": ["blue", "green", "red"]}


def test_max_domain(tmp_path: Path) -> None:
    vals = [f"v{i % 9}" for i in range(200)]
    assert find(mine_records(tmp_path, _recs(vals)), "DOMAIN", "/s") is None
    assert find(mine_records(tmp_path, _recs(vals), max_domain=9), "DOMAIN", "/s") is not None


def test_rare_value_rejected(tmp_path: Path) -> None:
    vals = ["a" if i % 2 else "b" for i in range(60)]
    vals[5] = vals[11] = "c"  # seen twice only
    assert find(mine_records(tmp_path, _recs(vals)), "DOMAIN", "/s") is None


def test_value_from_one_task_only_rejected(tmp_path: Path) -> None:
    recs = _recs(["a" if i % 2 else "b" for i in range(60)], n_tasks=6)
    recs += [call("t-solo", "tool", {"s": "c"}) for _ in range(4)]
    assert find(mine_records(tmp_path, recs), "DOMAIN", "/s") is None


def test_ids_and_free_text_rejected(tmp_path: Path) -> None:
    ids = [f"ORD-{i:05d}" for i in range(300)]
    assert find(mine_records(tmp_path, _recs(ids)), "DOMAIN", "/s") is None


def test_non_strings_ignored_and_nested(tmp_path: Path) -> None:
    recs = [
        call(f"t{i % 5}", "tool", {"xs": [{"st": ["ok", "late"][j % 2]} for j in range(3)], "n": None})
        for i in range(20)
    ]
    r = find(mine_records(tmp_path, recs), "DOMAIN", "/xs/*/st")
    assert r is not None and r.params == {"values": ["late", "ok"]}


def test_counterexample_kills_in_fold_checker_only(tmp_path: Path) -> None:
    """A value confined to one task: the full checker has no 2-value domain, the fold checker without
    that task does (the cross-fitting case)."""
    recs = _recs(["a" if i % 2 else "b" for i in range(200)], n_tasks=20)
    recs += [call("t-odd", "tool", {"s": "z"}) for _ in range(5)]
    cs = mine_records(tmp_path, recs, folds=3)
    assert find(cs, "DOMAIN", "/s") is None
    odd = cs.fold_of("t-odd")
    r = find(cs, "DOMAIN", "/s", fold=odd)
    assert r is not None and r.params == {"values": ["a", "b"]}
    assert all(find(cs, "DOMAIN", "/s", fold=f) is None for f in range(3) if f != odd)
