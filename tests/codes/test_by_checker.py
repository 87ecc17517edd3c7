"""`output_contracts.codes.mining_frames.by_checker`: the one-group-by path for small inputs (the per-fold rows
crossed with the checkers) and the per-checker path for large ones give the same rows, in the same
checker blocks, and both equal a plain-Python merge of the folds each checker sees."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes import mining_frames as data
from output_contracts.codes.mining_frames import FULL, by_checker, merged_examples

AGGS = [
    pl.col("n").sum(),
    pl.col("v").min().alias("lo"),
    pl.col("v").max().alias("hi"),
    pl.col("t").first(),  # order-dependent: the first row of the group in input order
    merged_examples(),
]


@st.composite
def per_fold(draw: st.DrawFn) -> tuple[pl.DataFrame, int]:
    """Per-fold statistic rows: a key, a fold (some null: a row no fold checker sees), counts, a float,
    a text and example lists."""
    k = draw(st.sampled_from([1, 2, 3, 5]))
    n = draw(st.integers(0, 40))
    row = st.tuples(
        st.integers(0, 3),
        st.one_of(st.none(), st.integers(0, k - 1)) if draw(st.booleans()) else st.integers(0, k - 1),
        st.integers(0, 50),
        st.floats(-1e6, 1e6, allow_nan=False),
        st.text("abc", max_size=3),
        st.lists(st.integers(0, 20), max_size=4),
    )
    rows = draw(st.lists(row, min_size=n, max_size=n))
    frame = pl.DataFrame(
        rows,
        schema={
            "key": pl.Int64,
            "fold": pl.Int32,
            "n": pl.Int64,
            "v": pl.Float64,
            "t": pl.String,
            "ex": pl.List(pl.UInt64),
        },
        orient="row",
    )
    return frame, k


def reference(frame: pl.DataFrame, k: int) -> dict[tuple[int, int], tuple[Any, ...]]:
    """(key, checker) -> (n, lo, hi, t, ex), merged in plain Python: checker -1 sees every row, checker f
    every row of another fold (a null fold is no fold's)."""
    out: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
    for checker in [FULL, *range(k)] if k > 1 else [FULL]:
        for key, fold, n, v, t, ex in frame.iter_rows():
            if checker == FULL or (fold is not None and fold != checker):
                out.setdefault((key, checker), []).append((n, v, t, ex))
    return {
        kc: (
            sum(r[0] for r in rs),
            min(r[1] for r in rs),
            max(r[1] for r in rs),
            rs[0][2],
            sorted({e for r in rs for e in r[3]})[:3],
        )
        for kc, rs in out.items()
    }


def _rows(merged: pl.DataFrame) -> dict[tuple[int, int], tuple[Any, ...]]:
    return {(r[0], r[1]): tuple(r[2:]) for r in merged.iter_rows()}


@settings(max_examples=80, deadline=None)
@given(per_fold())
def test_both_paths_equal_the_reference(case: tuple[pl.DataFrame, int]) -> None:
    frame, k = case
    want = reference(frame, k)
    saved = data.CROSS_ROWS
    try:
        data.CROSS_ROWS = 1 << 30
        crossed = by_checker(frame, ["key"], AGGS, k)
        data.CROSS_ROWS = -1
        per_checker = by_checker(frame, ["key"], AGGS, k)
    finally:
        data.CROSS_ROWS = saved
    for got in (crossed, per_checker):
        assert got.columns == ["key", "checker", "n", "lo", "hi", "t", "ex"]
        assert got.schema == per_checker.schema
        assert _rows(got) == want
        assert got.height == len(want)
        # checker blocks in id order: -1 first, then 0 .. k-1
        assert got["checker"].to_list() == sorted(got["checker"].to_list())


def test_small_inputs_take_one_group_by(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which path runs is decided on rows x checkers: the cross join below the line, not above it."""
    frame = pl.DataFrame(
        {"key": [1, 1, 2], "fold": [0, 1, 1], "n": [1, 2, 3]}, schema_overrides={"fold": pl.Int32}
    )
    calls: list[str] = []
    real_join = pl.LazyFrame.join

    def join(self: pl.LazyFrame, *args: Any, **kw: Any) -> pl.LazyFrame:
        calls.append(kw.get("how", "inner"))
        return real_join(self, *args, **kw)

    monkeypatch.setattr(pl.LazyFrame, "join", join)
    monkeypatch.setattr(data, "CROSS_ROWS", 3 * 4)  # k = 3: four checkers
    small = by_checker(frame, ["key"], [pl.col("n").sum()], 3)
    assert calls == ["cross"]
    monkeypatch.setattr(data, "CROSS_ROWS", 3 * 4 - 1)
    large = by_checker(frame, ["key"], [pl.col("n").sum()], 3)
    assert calls == ["cross"]  # no join on the per-checker path
    assert small.sort("checker", "key").equals(large.sort("checker", "key"))
    # checker 1 sees fold 0 only: key 1 with n = 1
    assert small.filter(pl.col("checker") == 1).select("key", "n").rows() == [(1, 1)]
