"""`episodes.parquet` written in slices (`traces/ingest/episodes.py`: rows bucketed by trace, buckets
merged alone, the file written one key range at a time) holds the very rows the whole-table merge held
(`episodes_reference.py`), with slices small enough that a trace's rows and calls are cut across
batches, buckets, ranges and row groups: on random inputs (hypothesis), on ingests of the sample world
(spilled episode rows, an append onto old episodes) and of real τ-bench / τ²-bench trajectories."""

from __future__ import annotations

import gzip
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import output_contracts.traces.ingest.commit as ingest_commit
import output_contracts.traces.ingest.episodes as ingest_episodes
from output_contracts.traces.corpus import CALL_SCHEMA, EPISODE_SCHEMA
from output_contracts.traces.ingest import ingest
from output_contracts.traces.ingest.columns import episode_frame
from tests.traces.episodes_reference import reference_episodes


@contextmanager
def _slices(facts: int, slice_rows: int, range_rows: int, group_rows: int, staged: int) -> Iterator[None]:
    names = ("CALL_FACT_ROWS", "SLICE_ROWS", "RANGE_ROWS", "GROUP_ROWS", "_STAGED_GROUP_ROWS")
    saved = [getattr(ingest_episodes, n) for n in names]
    for n, v in zip(names, (facts, slice_rows, range_rows, group_rows, staged), strict=True):
        setattr(ingest_episodes, n, v)
    try:
        yield
    finally:
        for n, v in zip(names, saved, strict=True):
            setattr(ingest_episodes, n, v)


_CALLS = {c: CALL_SCHEMA[c] for c in ("trace_id", "task_id", "fault", "source", "line")}
_maybe_text = st.none() | st.sampled_from(["a", "b", "é", ""])
_row = st.tuples(
    st.sampled_from([f"t{i}" for i in range(12)]),  # trace
    _maybe_text,  # task
    st.none() | st.floats(0, 1),  # reward
    st.none() | st.sampled_from(['{"fault":"x"}', '{"k":1}']),  # labels
    _maybe_text,  # tools
    st.sampled_from(["s0", "s1", "s9"]),  # source (s9 not in the order: ranked last)
    st.integers(0, 40),  # line
    st.none() | st.integers(0, 3),  # trial
    st.none() | st.floats(0, 2),  # agent cost
    st.none() | st.floats(0, 2),  # user cost
)
_call = st.fixed_dictionaries(
    {
        "trace_id": st.sampled_from([f"t{i}" for i in range(6, 18)]),
        "task_id": st.sampled_from(["a", "c"]),
        "fault": st.none() | st.just("timeout"),
        "source": st.sampled_from(["s0", "s1"]),
        "line": st.integers(0, 40),
    }
)


@settings(max_examples=25, deadline=None)
@given(
    spilled=st.lists(st.lists(_row, max_size=8), max_size=3),
    held=st.lists(_row, max_size=8),
    calls=st.lists(_call, max_size=30),
    sizes=st.tuples(*(st.integers(1, 9) for _ in range(5))),
)
def test_sliced_episodes_equal_the_whole_table_merge(
    tmp_path_factory: pytest.TempPathFactory,
    spilled: list[list[tuple[Any, ...]]],
    held: list[tuple[Any, ...]],
    calls: list[dict[str, Any]],
    sizes: tuple[int, int, int, int, int],
) -> None:
    tmp = tmp_path_factory.mktemp("eps")
    calls_path = tmp / "calls.parquet"
    pl.DataFrame(calls, schema=_CALLS).write_parquet(calls_path)  # typed as in `calls.parquet`
    files = []
    for i, rows in enumerate(spilled):
        files.append(tmp / f"spill-{i}.parquet")
        episode_frame(rows).write_parquet(files[-1])
    order = {"s0": 0, "s1": 1}
    want = reference_episodes(calls_path, None, held, order, files)
    with _slices(*sizes):
        n = ingest_episodes.write_episodes(tmp / "eps.parquet", tmp, calls_path, None, held, order, files)
    got = pl.read_parquet(tmp / "eps.parquet")
    assert n == got.height == want.height
    assert_frame_equal(got, want)


def test_no_trace_writes_an_empty_table(tmp_path: Path) -> None:
    calls = tmp_path / "calls.parquet"
    pl.DataFrame(schema=_CALLS).write_parquet(calls)
    assert ingest_episodes.write_episodes(tmp_path / "e.parquet", tmp_path, calls, None, [], {}) == 0
    got = pl.read_parquet(tmp_path / "e.parquet")
    assert got.height == 0 and got.schema == pl.Schema(EPISODE_SCHEMA)


def _held_to_reference(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every commit's episodes compared with the reference merge of the same inputs; the rows seen."""
    seen: list[int] = []
    real = ingest_episodes.write_episodes

    def both(
        target: Path,
        stage: Path,
        calls_path: Path,
        old: Path | None,
        rows: list[tuple[Any, ...]],
        order: dict[str, int],
        spilled: list[Path],
    ) -> int:
        want = reference_episodes(calls_path, old, list(rows), order, list(spilled))
        n = real(target, stage, calls_path, old, rows, order, spilled)
        assert_frame_equal(pl.read_parquet(target), want)
        seen.append(n)
        return n

    monkeypatch.setattr(ingest_commit, "write_episodes", both)
    monkeypatch.setattr(ingest_episodes, "CALL_FACT_ROWS", 37)
    monkeypatch.setattr(ingest_episodes, "SLICE_ROWS", 41)
    monkeypatch.setattr(ingest_episodes, "RANGE_ROWS", 29)
    monkeypatch.setattr(ingest_episodes, "GROUP_ROWS", 53)
    monkeypatch.setattr(ingest_episodes, "_STAGED_GROUP_ROWS", 7)
    return seen


def test_sample_world_spilled_and_appended(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _held_to_reference(monkeypatch)
    lines = gzip.decompress((repo / "sample_traces" / "faulty" / "part-1.jsonl.gz").read_bytes())
    rows = lines.splitlines(keepends=True)[:1500]
    random.Random(3).shuffle(rows)
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(b"".join(rows[:700]))
    new.write_bytes(b"".join(rows[700:]))
    ingest([old], tmp_path / "c", chunk_rows=100)  # episode rows spilled per chunk
    ingest([new], tmp_path / "c", chunk_rows=100)  # appended: the old episodes come first
    assert len(seen) == 2 and seen[1] > seen[0] > 100


def test_real_trajectories(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _held_to_reference(monkeypatch)
    sources = [
        shared_data / "tau_bench" / "trajectories" / "gpt-4o-airline.json",
        *sorted((shared_data / "tau2_bench" / "telecom" / "trajectories").iterdir()),
        *sorted((shared_data / "formats" / "otel-genai").glob("*.jsonl")),
    ]
    # the otel-genai events file yields no tool call (its content was exported as events): allowed here
    ingest(sources, tmp_path / "c", chunk_rows=50, allow_empty=True)
    eps = pl.read_parquet(tmp_path / "c" / "episodes.parquet")
    assert seen == [eps.height] and eps.height > 100
    assert eps.get_column("reward").is_not_null().sum() > 50  # the τ-bench rewards came through
