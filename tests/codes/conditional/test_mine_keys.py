"""CONDITIONAL mines on 64-bit keys where it used texts: the condition key (`_cond_hash`) and the
consequent's value (`value_hash`) must split leaves into exactly the groups their texts (`_cond_expr`,
`value_expr`) do, and the text made once per group must be the group's text."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.conditional.mine import _cond_expr, _cond_hash
from output_contracts.codes.consistent.episodes import value_expr, value_hash
from output_contracts.codes.mining_frames import CLS_ARR, CLS_BOOL, CLS_NULL, CLS_NUM, CLS_STR

LEAF = st.one_of(
    st.tuples(st.just(CLS_STR), st.none(), st.sampled_from(["", "a", "b", "s:a", "z", "n:zero", "b:true"])),
    st.tuples(st.just(CLS_BOOL), st.sampled_from([0.0, 1.0]), st.none()),
    st.tuples(st.just(CLS_NULL), st.none(), st.none()),
    st.tuples(st.just(CLS_NUM), st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0]), st.none()),
    st.tuples(st.just(CLS_ARR), st.none(), st.none()),
)


def _frame(leaves: list[tuple[Any, ...]]) -> pl.DataFrame:
    return pl.DataFrame(
        leaves, schema={"cls": pl.UInt8, "num": pl.Float64, "str": pl.String}, orient="row"
    ).with_row_index("i")


def _partition(frame: pl.DataFrame, key: pl.Expr) -> set[tuple[int, ...]]:
    """The rows grouped by `key` (null keys left out), as a set of row-index tuples."""
    groups = frame.with_columns(key.alias("k")).filter(pl.col("k").is_not_null()).group_by("k").agg("i")
    return {tuple(sorted(ix)) for ix in groups["i"].to_list()}


@settings(max_examples=40, deadline=None)
@given(st.lists(LEAF, max_size=30))
def test_hash_keys_group_as_their_texts(leaves: list[tuple[Any, ...]]) -> None:
    f = _frame(leaves)
    assert _partition(f, _cond_hash()) == _partition(f, _cond_expr())
    cls = pl.col("cls")
    text = value_expr(cls == CLS_NULL, cls == CLS_BOOL, pl.lit(False), cls == CLS_STR)
    hashed = value_hash(cls == CLS_NULL, cls == CLS_BOOL, pl.lit(False), cls == CLS_STR)
    assert _partition(f, hashed) == _partition(f, text)
    # the text of a group, made from its first row, is every row's text
    per_group = (
        f.with_columns(_cond_hash().alias("k"), _cond_expr().alias("t"))
        .filter(pl.col("k").is_not_null())
        .group_by("k")
        .agg(pl.col("t").n_unique().alias("texts"), pl.col("cls", "num", "str").first())
        .with_columns(_cond_expr().alias("first"))
    )
    assert (per_group["texts"] == 1).all()
    whole = f.with_columns(_cond_hash().alias("k"), _cond_expr().alias("t")).filter(pl.col("k").is_not_null())
    assert (
        whole.join(per_group.select("k", "first"), on="k").filter(pl.col("t") != pl.col("first")).height == 0
    )
