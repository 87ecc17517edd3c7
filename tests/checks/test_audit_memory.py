"""Audit scoring without per-call Python objects (issue 10): the chunked polars digest equals the old
definition, and integer task indexes give the same bootstrap as task names."""

from __future__ import annotations

from unittest import mock

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import contracts.checks.audit as A
from contracts.checks import stats
from contracts.jsonutil import sha256_hex

# polars strings are UTF-8: any code point but the surrogates
IDS = st.lists(st.text(st.characters(codec="utf-8"), max_size=12), max_size=40)


def old_digest(ids: list[str]) -> str:
    return sha256_hex("\n".join(sorted(ids)))


@settings(max_examples=300, deadline=None)
@given(IDS, st.integers(1, 7))
def test_series_digest_is_the_old_definition(ids: list[str], chunk: int) -> None:
    want = old_digest(ids)
    assert A.population_digest(ids) == want
    with mock.patch.object(A, "DIGEST_CHUNK", chunk):  # every chunk boundary, incl. empty ids at one
        assert A.population_digest(pl.Series(ids, dtype=pl.String)) == want
    assert A.population_digest(pl.Series(ids, dtype=pl.String)) == want


def test_digest_orders_by_code_point() -> None:
    ids = ["b", "a", "é", "z", "\U0001f600", "ﬀ", "Z", "a\n", "", "A"]
    assert A.population_digest(pl.Series(ids, dtype=pl.String)) == old_digest(ids)
    assert A.population_digest(pl.Series(ids, dtype=pl.Categorical)) == old_digest(ids)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c:x"]), st.integers(0, 9), st.integers(0, 5), st.integers(0, 5)
        ),
        min_size=1,
        max_size=60,
    ),
    st.integers(0, 5),
)
def test_integer_task_index_same_intervals(rows: list[tuple[str, int, int, int]], extra: int) -> None:
    names = [f"t-{i:02d}é" for i in range(10 + extra)]  # tasks with no row still count as draws
    by_name = pl.DataFrame(
        [(k, names[t], float(n), float(n + d)) for k, t, n, d in rows],
        schema={"key": pl.String, "task": pl.String, "num": pl.Float64, "den": pl.Float64},
        orient="row",
    )
    by_index = by_name.with_columns(
        pl.col("task").replace_strict(names, list(range(len(names))), return_dtype=pl.UInt32)
    )
    a = stats.bootstrap_intervals(by_name, list(reversed(names)), n_boot=50, seed=3)
    b = stats.bootstrap_intervals(by_index, sorted(names), n_boot=50, seed=3)
    assert a == b
