"""DOMAIN: small categorical sets, counted in tasks (>= 50 tasks, each value in >= 3 tasks, stable across
task splits), judged per pool of same-shaped objects across tools."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import call, find, mine_records


def _recs(values: list[str], n_tasks: int | None = None, tool: str = "tool") -> list[dict]:
    """One call per value; call i belongs to task i (or i mod n_tasks). Task names sort in index order
    (`t000`, `t001`, …), so task i is in DOMAIN split i mod 5."""
    n = n_tasks or len(values)
    return [call(f"t{i % n:03d}", tool, {"s": v}) for i, v in enumerate(values)]


COLORS = ["red", "green", "blue"]


def test_threshold_counts_tasks_not_rows(tmp_path: Path) -> None:
    cyc = [COLORS[i % 3] for i in range(49)]
    assert find(mine_records(tmp_path, _recs(cyc)), "DOMAIN", "/s") is None
    # 400 rows from the same 49 tasks are still 49 tasks
    many = [COLORS[i % 3] for i in range(49 * 8)]
    assert find(mine_records(tmp_path, _recs(many, n_tasks=49)), "DOMAIN", "/s") is None
    r = find(mine_records(tmp_path, _recs([COLORS[i % 3] for i in range(50)])), "DOMAIN", "/s")
    assert r is not None and r.params == {"values": ["blue", "green", "red"]}
    assert r.support.tasks == 50 and r.support.calls == 50


def test_max_domain(tmp_path: Path) -> None:
    vals = [f"v{i % 9}" for i in range(200)]
    assert find(mine_records(tmp_path, _recs(vals)), "DOMAIN", "/s") is None
    assert find(mine_records(tmp_path, _recs(vals), max_domain=9), "DOMAIN", "/s") is not None


def test_value_in_two_tasks_rejected(tmp_path: Path) -> None:
    vals = ["a" if i % 2 else "b" for i in range(80)]
    vals[5] = vals[11] = "c"  # two tasks (5 and 11: different splits)
    assert find(mine_records(tmp_path, _recs(vals)), "DOMAIN", "/s") is None
    vals[17] = "c"  # a third task, a third split: now part of the domain
    r = find(mine_records(tmp_path, _recs(vals)), "DOMAIN", "/s")
    assert r is not None and r.params == {"values": ["a", "b", "c"]}


def test_value_repeated_in_one_task_rejected(tmp_path: Path) -> None:
    recs = _recs(["a" if i % 2 else "b" for i in range(60)])
    recs += [call("t-solo", "tool", {"s": "c"}) for _ in range(20)]
    assert find(mine_records(tmp_path, recs), "DOMAIN", "/s") is None


def test_value_confined_to_one_split_rejected(tmp_path: Path) -> None:
    """Three tasks hold 'c', all in split 0 (task indexes 0, 5, 10): a set learned without that split
    misses it for 3 of ~103 (value, task) pairs (> 1%). Spread over splits 0, 1, 2 it is kept."""
    base = ["a" if i % 2 else "b" for i in range(100)]
    together = _recs(base) + [call(f"t{i:03d}", "tool", {"s": "c"}) for i in (0, 5, 10)]
    assert find(mine_records(tmp_path, together), "DOMAIN", "/s") is None
    spread = _recs(base) + [call(f"t{i:03d}", "tool", {"s": "c"}) for i in (0, 1, 2)]
    r = find(mine_records(tmp_path, spread), "DOMAIN", "/s")
    assert r is not None and r.params == {"values": ["a", "b", "c"]}


def test_ids_and_free_text_rejected(tmp_path: Path) -> None:
    ids = [f"ORD-{i:05d}" for i in range(300)]
    assert find(mine_records(tmp_path, _recs(ids)), "DOMAIN", "/s") is None


def test_non_strings_ignored_and_nested(tmp_path: Path) -> None:
    recs = [
        call(f"t{i:03d}", "tool", {"xs": [{"st": ["ok", "late"][j % 2]} for j in range(3)], "n": None})
        for i in range(60)
    ]
    r = find(mine_records(tmp_path, recs), "DOMAIN", "/xs/*/st")
    assert r is not None and r.params == {"values": ["late", "ok"]}


def test_counterexample_kills_in_fold_checker_only(tmp_path: Path) -> None:
    """A value confined to one task: the full checker has no 2-value domain, the fold checker without
    that task does (the cross-fitting case)."""
    recs = _recs(["a" if i % 2 else "b" for i in range(200)], n_tasks=120)
    recs += [call("t-odd", "tool", {"s": "z"}) for _ in range(5)]
    cs = mine_records(tmp_path, recs, folds=3)
    assert find(cs, "DOMAIN", "/s") is None
    odd = cs.fold_of("t-odd")
    r = find(cs, "DOMAIN", "/s", fold=odd)
    assert r is not None and r.params == {"values": ["a", "b"]}
    assert all(find(cs, "DOMAIN", "/s", fold=f) is None for f in range(3) if f != odd)


def _order(status: str, i: int) -> dict:
    return {"order_id": f"o{i}", "status": status, "total": 10 + i}


def test_pool_gives_thin_tools_the_pooled_set(tmp_path: Path) -> None:
    """Two tools return the same order shape. `get_order` (80 tasks) never saw 'returned'; `cancel`
    (12 tasks) did, in three of them. Judged alone, `get_order` would learn {open, shipped} and `cancel`
    nothing (12 tasks < 50); pooled, both get {open, returned, shipped}."""
    recs = [call(f"t{i:03d}", "get_order", _order(["open", "shipped"][i % 2], i)) for i in range(80)]
    recs += [call(f"t{i:03d}", "cancel", _order("returned" if i < 3 else "open", i)) for i in range(12)]
    cs = mine_records(tmp_path, recs)
    for tool in ("get_order", "cancel"):
        r = find(cs, "DOMAIN", "/status", tool=tool)
        assert r is not None and r.params == {"values": ["open", "returned", "shipped"]}, tool
        assert r.support.tasks == 80  # distinct tasks of the pool (the 12 cancel tasks are among them)
    alone = mine_records(tmp_path, recs, tools=["get_order"])
    r = find(alone, "DOMAIN", "/status", tool="get_order")
    assert r is not None and r.params == {"values": ["open", "shipped"]}


def test_different_shapes_do_not_pool(tmp_path: Path) -> None:
    recs = [call(f"t{i:03d}", "get_order", _order(["open", "shipped"][i % 2], i)) for i in range(80)]
    recs += [
        call(f"t{i:03d}", "get_ticket", {"ticket": f"k{i}", "status": ["new", "closed"][i % 2], "prio": 1})
        for i in range(80)
    ]
    cs = mine_records(tmp_path, recs)
    assert find(cs, "DOMAIN", "/status", tool="get_order").params == {"values": ["open", "shipped"]}  # type: ignore[union-attr]
    assert find(cs, "DOMAIN", "/status", tool="get_ticket").params == {"values": ["closed", "new"]}  # type: ignore[union-attr]
