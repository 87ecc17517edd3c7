"""CONSISTENT's pairing on integers (`mining.rules.consistent.sighting_pairs`) against the checker's
(`rules.episodes.repeats`): the same pairs, the same previous values, on random episodes."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.consistent.episodes import repeats
from output_contracts.codes.consistent.mine import sighting_pairs

U32, U64 = pl.UInt32, pl.UInt64
COLUMNS = ["cid", "trace", "ord", "vp", "kp", "key", "val", "prev"]


@st.composite
def episodes(draw: Any) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(keys, vals, pairs, touches) of a few episodes of calls in input order: small key, place and
    value sets, so that entities repeat, places are missing and touches fall between sightings."""
    n = draw(st.integers(1, 40))
    traces = sorted(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    keys, vals = [], []
    for ord_, trace in enumerate(traces):
        cid = 1000 + 7 * ord_
        for kp in draw(st.sets(st.integers(0, 2), max_size=2)):
            keys.append((cid, trace, ord_, kp, draw(st.integers(1, 3)), ord_ % 3))
        for vp in draw(st.sets(st.integers(0, 4), max_size=4)):
            vals.append((cid, vp, draw(st.integers(0, 2))))
    pairs = draw(st.sets(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=8))
    touches = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, n), st.integers(1, 3)), max_size=12))
    return (
        pl.DataFrame(
            keys,
            schema={"cid": U64, "trace": U32, "ord": U32, "kp": U32, "key": U64, "extra": pl.Int32},
            orient="row",
        ),
        pl.DataFrame(vals, schema={"cid": U64, "vp": U32, "val": U64}, orient="row"),
        pl.DataFrame(sorted(pairs), schema={"kp": U32, "vp": U32}, orient="row"),
        pl.DataFrame(touches, schema={"trace": U32, "ord": U32, "key": U64}, orient="row"),
    )


def reference(
    keys: pl.DataFrame, vals: pl.DataFrame, pairs: pl.DataFrame, touches: pl.DataFrame
) -> pl.DataFrame:
    rows = keys.join(pairs, on="kp").join(vals, on=["cid", "vp"])
    return (
        repeats(rows.select(COLUMNS[:-1]).lazy(), touches.lazy())
        .filter(pl.col("prev").is_not_null())
        .collect()
        .select(COLUMNS)
        .sort(COLUMNS)
    )


@settings(max_examples=60, deadline=None)
@given(episodes())
def test_pairs_are_the_checker_s(ep: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]) -> None:
    keys, vals, pairs, touches = ep
    got = sighting_pairs(keys, vals, pairs, touches)
    assert got.select(COLUMNS).sort(COLUMNS).equals(reference(keys, vals, pairs, touches))
    # the carried column comes along with its own row
    own = got.join(keys.select("cid", "kp", pl.col("extra").alias("own")), on=["cid", "kp"])
    assert own.height == got.height and (own["extra"] == own["own"]).all()


def test_a_touch_between_voids_and_one_at_either_end_does_not() -> None:
    """Entity 5 seen at place 0 by calls 0, 2, 4 and 6 of one episode; its argument named by calls 1
    (between the first two), 4 (the third sighting's own call) and 6 (the last's own call)."""
    keys = pl.DataFrame(
        {"cid": [10, 12, 14, 16], "trace": [0] * 4, "ord": [0, 2, 4, 6], "kp": [0] * 4, "key": [5] * 4},
        schema={"cid": U64, "trace": U32, "ord": U32, "kp": U32, "key": U64},
    )
    vals = pl.DataFrame(
        {"cid": [10, 12, 14, 16], "vp": [1] * 4, "val": [7, 8, 8, 9]},
        schema={"cid": U64, "vp": U32, "val": U64},
    )
    pairs = pl.DataFrame({"kp": [0], "vp": [1]}, schema={"kp": U32, "vp": U32})
    touches = pl.DataFrame(
        {"trace": [0, 0, 0], "ord": [1, 4, 6], "key": [5, 5, 5]},
        schema={"trace": U32, "ord": U32, "key": U64},
    )
    got = sighting_pairs(keys, vals, pairs, touches).sort("ord")
    assert got.select("ord", "val", "prev").rows() == [(4, 8, 8), (6, 9, 8)]
    assert got.select(COLUMNS).equals(reference(keys, vals, pairs, touches))
