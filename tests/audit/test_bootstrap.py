"""The bootstrap's resample sums as a matrix product of draw counts (`stats._resample_sums`) give the
intervals the draw-by-draw gather gave, bit for bit: the reference below is the implementation they
replaced, kept here to hold the new one to it (integer counts, fractions, several chunks)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.audit import stats


def draw_indexes(n_tasks: int, b0: int, b1: int, seed: int) -> pl.Series:
    """The draws of resamples b0..b1-1 in polars (`stats.draws`' stream, resample-major): the reference
    `stats.draw_indexes_np` is held to."""
    i = pl.int_range(b0 * n_tasks, b1 * n_tasks, dtype=pl.UInt64)
    drawn = stats._splitmix_expr(i + stats._u64(stats.seed_offset(seed))) % stats._u64(n_tasks)
    return pl.select(drawn.cast(pl.UInt32).alias("t")).to_series()


def reference(
    table: pl.DataFrame,
    tasks: list[str],
    *,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    max_rows: int = 4_000_000,
) -> dict[str, tuple[float | None, float | None]]:
    """`stats.bootstrap_intervals` before the matrix product (string task names only)."""
    if n_boot <= 0 or not tasks or table.is_empty():
        return {}
    order = sorted(set(tasks))
    n = len(order)
    index = pl.DataFrame({"task": order, "t": pl.Series(range(n), dtype=pl.UInt32)})
    indexed = table.join(index, on="task", how="inner")
    keyed = indexed.group_by("key", "t").agg(
        pl.col("num").cast(pl.Float64).sum(), pl.col("den").cast(pl.Float64).sum()
    )
    keys = sorted(set(keyed.get_column("key").to_list()))
    full = pl.DataFrame({"t": pl.Series(range(n), dtype=pl.UInt32)})
    cols: dict[str, pl.Series] = {}
    ref: dict[str, tuple[str | None, str]] = {}

    def intern(s: pl.Series, prefix: str) -> str:
        for name, col in cols.items():
            if name[0] == prefix and col.equals(s):
                return name
        name = f"{prefix}{len(cols)}"
        cols[name] = s.alias(name)
        return name

    for key in keys:
        part = full.join(keyed.filter(pl.col("key") == key).drop("key"), on="t", how="left").sort("t")
        num_s = part.get_column("num").fill_null(0.0)
        den_s = part.get_column("den").fill_null(0.0)
        ref[key] = (None if not num_s.ne(0).any() else intern(num_s, "n"), intern(den_s, "d"))
    dense = pl.DataFrame(list(cols.values()))
    per_chunk = max(1, max_rows // n)
    sums = []
    for b0 in range(0, n_boot, per_chunk):
        b1 = min(n_boot, b0 + per_chunk)
        idx = draw_indexes(n, b0, b1, seed)
        sums.append(dense.select(pl.all().gather(idx).reshape((b1 - b0, n)).arr.sum()))
    per_b = pl.concat(sums)
    alpha = (1 - level) / 2
    out: dict[str, tuple[float | None, float | None]] = {}
    for key in keys:
        nc, dc = ref[key]
        num_e = pl.lit(0.0) if nc is None else pl.col(nc)
        r = per_b.filter(pl.col(dc) > 0).select((num_e / pl.col(dc)).alias("r"))
        if r.is_empty():
            out[key] = (None, None)
            continue
        q = r.select(
            pl.col("r").quantile(alpha, interpolation="linear").alias("lo"),
            pl.col("r").quantile(1 - alpha, interpolation="linear").alias("hi"),
        ).row(0)
        out[key] = (q[0], q[1])
    return out


def _table(
    rng: np.random.Generator, n_tasks: int, n_keys: int, fractions: bool
) -> tuple[pl.DataFrame, list[str]]:
    tasks = [f"task-{i}" for i in range(n_tasks)]
    rows = []
    for k in range(n_keys):
        for t in tasks:
            if rng.random() < 0.7:
                den = float(rng.integers(0, 30))
                num = float(rng.integers(0, int(den) + 1)) if k % 3 else 0.0  # some all-zero numerators
                if fractions:
                    num, den = num * 0.37, den + 0.1
                rows.append((f"k{k % 7}" if k >= 7 else f"k{k}", t, num, den))
    rows += [("zero", t, 0.0, 0.0) for t in tasks[:3]]  # never a denominator: no interval
    return pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row"), tasks


@pytest.mark.parametrize("fractions", [False, True])
@pytest.mark.parametrize(
    ("n_tasks", "n_boot", "max_rows"), [(1, 20, 4_000_000), (57, 300, 4_000_000), (211, 250, 5_000)]
)
def test_matrix_sums_equal_the_gathered_draws(
    fractions: bool, n_tasks: int, n_boot: int, max_rows: int
) -> None:
    table, tasks = _table(np.random.default_rng(n_tasks), n_tasks, 12, fractions)
    want = reference(table, tasks, n_boot=n_boot, seed=7, max_rows=max_rows)
    got = stats.bootstrap_intervals(table, tasks, n_boot=n_boot, seed=7, max_rows=max_rows)
    assert want and got == want
    assert got["zero"] == (None, None)
    # one task: every resample draws it, the intervals collapse; more: real widths
    assert any(lo is not None and hi is not None and lo < hi for lo, hi in got.values()) == (n_tasks > 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.integers(1, 40), st.integers(0, 2**32))
def test_numpy_draws_equal_the_polars_stream(n_tasks: int, n_boot: int, seed: int) -> None:
    b0 = n_boot // 3
    got = stats.draw_indexes_np(n_tasks, b0, n_boot, seed)
    assert got.tolist() == draw_indexes(n_tasks, b0, n_boot, seed).to_list()


def test_the_audits_own_table_at_scale() -> None:
    """The shape the audit draws (thousands of tasks, 1,000 resamples, shared denominators, counts)."""
    rng = np.random.default_rng(21)
    n = 3000
    tasks = [f"t{i:05d}" for i in range(n)]
    calls = rng.integers(1, 40, n).astype(float)
    rows = [("fire", t, float(rng.binomial(int(c), 0.01)), c) for t, c in zip(tasks, calls, strict=True)]
    rows += [("bytes", t, float(rng.integers(0, 5000)), c) for t, c in zip(tasks, calls, strict=True)]
    table = pl.DataFrame(rows, schema=["key", "task", "num", "den"], orient="row")
    assert stats.bootstrap_intervals(table, tasks, n_boot=1000, seed=13) == reference(
        table, tasks, n_boot=1000, seed=13
    )


def test_cache_sized_chunks_cut_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact path's chunks of about CACHE_DRAWS draws: any chunk size (here 17 resamples of 57 tasks,
    the last chunk short) gives the sums of one chunk of every resample."""
    table, tasks = _table(np.random.default_rng(5), 57, 12, False)
    want = stats.bootstrap_intervals(table, tasks, n_boot=300, seed=3)
    monkeypatch.setattr(stats, "CACHE_DRAWS", 1000)
    got = stats.bootstrap_intervals(table, tasks, n_boot=300, seed=3)
    assert got == want == reference(table, tasks, n_boot=300, seed=3)
