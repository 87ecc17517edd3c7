"""Audit scoring without per-call Python objects (bounded memory): the chunked polars digest equals the old
definition, and integer task indexes give the same bootstrap as task names."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import output_contracts.audit.pipeline as A
from output_contracts.audit import stats
from output_contracts.jsonutil import sha256_hex

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


def test_checker_batches_are_detached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch's violations are kept detached (`output_contracts.frames.detach`: one chunk a column, own
    string data): kept as returned, a batch's few rows held that batch's leaves, and a 10M-call audit
    grew ~85 MiB a batch."""
    from output_contracts.codes.engine import evaluate as checker
    from output_contracts.frames import detach
    from output_contracts.mining import mine
    from tests.helpers import call, corpus
    from tests.output_contracts.test_frames import held_bytes

    def records(bad_every: int) -> list[dict[str, object]]:
        out = []
        for i in range(400):
            price = -1.5 if bad_every and i % bad_every == 0 else 2.5 + i
            items = [{"a_long_price_field_name": price if j == 2 else 1.0 + j} for j in range(8)]
            out.append(call(f"task-{i % 80:03d}", "list_items", {"items": items}))
        return out

    cs = mine(corpus(tmp_path, records(0), name="clean"), folds=1, seed=13)
    faulty = corpus(tmp_path, records(10), name="faulty")
    kept: list[pl.DataFrame] = []

    def spy(value: pl.DataFrame) -> pl.DataFrame:
        out = detach(value)
        kept.append(out)
        return out

    monkeypatch.setattr(checker, "detach", spy)
    found, _, _ = checker.find_violations(cs, faulty, batch_calls=50)
    assert found.height == 40 and set(found["path"]) == {"/items/2/a_long_price_field_name"}
    assert len(kept) == 8  # 400 calls in batches of about 50
    assert sum(k.height for k in kept) == 40
    for k in kept:
        assert all(k[c].n_chunks() == 1 for c in k.columns)
        assert held_bytes(k["path"]) <= 2 * sum(len(p) for p in k["path"].to_list()) + 16 * k.height
