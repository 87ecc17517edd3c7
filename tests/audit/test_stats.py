"""Task-clustered bootstrap, Wilson intervals and the Rate type (output_contracts.audit.stats)."""

from __future__ import annotations

import random
import time

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.audit import stats


def test_splitmix_expression_equals_reference() -> None:
    off = stats.seed_offset(7)
    n_tasks, n_boot = 17, 3
    got = stats.draws(n_tasks, n_boot, 7).sort("b", "t").select("b", "t", pl.col("w").cast(pl.Int64)).rows()
    counts: dict[tuple[int, int], int] = {}
    for i in range(n_tasks * n_boot):
        key = (i // n_tasks, stats.splitmix64(off + i) % n_tasks)
        counts[key] = counts.get(key, 0) + 1
    assert got == sorted((b, t, w) for (b, t), w in counts.items())
    # each resample draws exactly n_tasks tasks
    per_b = stats.draws(n_tasks, n_boot, 7).group_by("b").agg(pl.col("w").sum()).sort("b")
    assert per_b.get_column("w").to_list() == [float(n_tasks)] * n_boot


def test_splitmix_known_value() -> None:
    # SplitMix64 with state 0 -> first output of the reference generator (Vigna)
    assert stats.splitmix64(0) == 0xE220A8397B1DCDAF


def test_wilson_known_values() -> None:
    lo, hi = stats.wilson(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = stats.wilson(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    with pytest.raises(ValueError):
        stats.wilson(0, 0)


def _table(n_tasks: int, seed: int) -> tuple[pl.DataFrame, list[str]]:
    r = random.Random(seed)
    rows = []
    tasks = [f"t{i:04d}" for i in range(n_tasks)]
    for t in tasks:
        for key in ("all", "tool:a", "tool:b"):
            d = r.randint(1, 12)
            rows.append((key, t, sum(r.random() < 0.05 for _ in range(d)), d))
    return pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row"), tasks


def test_rates_deterministic_and_cover_point() -> None:
    table, tasks = _table(120, 1)
    a = stats.rates(table, tasks, n_boot=400, seed=5)
    b = stats.rates(table.reverse(), list(reversed(tasks)), n_boot=400, seed=5)
    assert a == b
    c = stats.rates(table, tasks, n_boot=400, seed=6)
    assert c["all"].low != a["all"].low or c["all"].high != a["all"].high
    for r in a.values():
        assert r.low is not None and r.high is not None and r.value is not None
        assert r.low <= r.value <= r.high
    n = int(table.filter(pl.col("key") == "all").get_column("num").sum())
    assert a["all"].numerator == n


def test_cluster_bootstrap_wider_than_wilson_when_tasks_cluster() -> None:
    # every fire sits in 3 tasks out of 100: the task-level uncertainty is far larger than call-level
    rows = [("all", f"t{i}", 20 if i < 3 else 0, 20) for i in range(100)]
    table = pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row")
    r = stats.rates(table, [f"t{i}" for i in range(100)], n_boot=1000, seed=13)["all"]
    wl, wh = stats.wilson(60, 2000)
    assert r.value == pytest.approx(0.03)
    assert r.high is not None and r.low is not None
    assert (r.high - r.low) > 2 * (wh - wl)


def test_zero_numerator_widened_by_wilson() -> None:
    rows = [("all", f"t{i}", 0, 10) for i in range(30)]
    table = pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row")
    r = stats.rates(table, [f"t{i}" for i in range(30)], n_boot=200, seed=1)["all"]
    assert r.value == 0.0 and r.low == 0.0
    assert r.high == pytest.approx(stats.wilson(0, 300)[1])
    assert r.method == "bootstrap+wilson"


def test_no_bootstrap_gives_wilson() -> None:
    r = stats.make_rate(3, 100, None)
    assert r.method == "wilson"
    assert (r.low, r.high) == pytest.approx(stats.wilson(3, 100))
    assert stats.make_rate(0, 0, None).value is None


def test_bootstrap_speed_1000_resamples_300_tasks() -> None:
    table, tasks = _table(300, 2)
    t0 = time.perf_counter()
    stats.rates(table, tasks, n_boot=1000, seed=13)
    assert time.perf_counter() - t0 < 2.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 8)), min_size=1, max_size=30), st.integers(0, 99))
def test_interval_within_unit_range(counts: list[tuple[int, int]], seed: int) -> None:
    rows = [("k", f"t{i}", min(n, d), d) for i, (n, d) in enumerate(counts)]
    table = pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row")
    r = stats.rates(table, [f"t{i}" for i in range(len(rows))], n_boot=50, seed=seed)["k"]
    assert r.low is not None and r.high is not None and r.value is not None
    assert 0.0 <= r.low <= r.value <= r.high <= 1.0
