"""`output_contracts.codes.mining_frames.distinct`: the packed-integer `unique` gives the rows `unique` gives."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.mining_frames import distinct

_TYPES = (pl.UInt8, pl.UInt32, pl.Int32, pl.UInt64, pl.Int64)


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    """Frames of 1-4 integer columns whose widths range from a bit to 63 (packed) and past 64 bits
    together (the fallback), with some negative or null values (the fallback too)."""
    n = draw(st.integers(0, 60))
    cols = {}
    for i in range(draw(st.integers(1, 4))):
        dtype = draw(st.sampled_from(_TYPES))
        top = draw(st.sampled_from([1, 3, 1000, 2**20, 2**31 - 1]))
        if dtype in (pl.UInt64, pl.Int64):
            top = draw(st.sampled_from([top, 2**40, 2**62]))
        low = -5 if dtype in (pl.Int32, pl.Int64) and draw(st.booleans()) else 0
        if dtype == pl.UInt8:
            top = min(top, 255)
        values = draw(st.lists(st.integers(low, top), min_size=n, max_size=n))
        if draw(st.integers(0, 9)) == 0 and n:
            values[0] = None  # type: ignore[call-overload]
        cols[f"c{i}"] = pl.Series(values, dtype=dtype)
    return pl.DataFrame(cols)


@settings(max_examples=60, deadline=None)
@given(frames())
def test_distinct_is_unique(frame: pl.DataFrame) -> None:
    cols = frame.columns
    got = distinct(frame, cols)
    want = frame.select(cols).unique()
    assert got.schema == want.schema
    assert got.sort(cols, nulls_last=True).equals(want.sort(cols, nulls_last=True))


def test_distinct_repeats_and_column_order() -> None:
    """Real repeats, columns in any order: (pool, code, fold, task) rows as FORMAT counts them."""
    frame = pl.DataFrame(
        {
            "task": pl.Series([7, 7, 7, 9, 9], dtype=pl.UInt32),
            "pool": pl.Series([1, 1, 2, 1, 1], dtype=pl.UInt32),
            "fold": pl.Series([0, 0, 0, 4, 4], dtype=pl.Int32),
            "sc": pl.Series([5, 5, 5, 2**31, 2**31], dtype=pl.UInt32),
        }
    )
    got = distinct(frame, ["pool", "sc", "fold", "task"]).sort("pool", "task")
    assert got.to_dicts() == [
        {"pool": 1, "sc": 5, "fold": 0, "task": 7},
        {"pool": 1, "sc": 2**31, "fold": 4, "task": 9},
        {"pool": 2, "sc": 5, "fold": 0, "task": 7},
    ]
