"""Ingest's bounded-memory paths write the same bytes as the plain ones (the target: ingest's
peak RSS flat from 1M to 10M calls). Each test runs one ingest with the memory bounds at their plain setting and
one with them forced small on a small input, and compares every corpus file byte for byte
(`corpus.json` included), on the paths the leaves take: sorted runs that interleave (a sorted merge),
runs that do not (a range copied from one run, its chunks passed through), and an append."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import orjson
import polars as pl
import pytest

import output_contracts.traces.ingest.episodes as ingest_episodes
import output_contracts.traces.ingest.order as ingest_order
import output_contracts.traces.ingest.read as ingest_read
from output_contracts.traces.corpus import MANIFEST_FILE
from output_contracts.traces.ingest import ingest


def _corpus_bytes(folder: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert MANIFEST_FILE in files and "leaves.parquet" in files
    return files


def _inputs(repo: Path, tmp_path: Path) -> dict[str, list[Path]]:
    """Sources whose chunks reach commit in different orders: shuffled lines (every run holds every
    range's tasks: a sorted merge), lines by task, descending (each chunk's tasks come before the last
    one's: ranges mostly of one run, passed through unsorted), and an append (old leaves then new)."""
    lines = gzip.decompress((repo / "sample_traces" / "faulty" / "part-1.jsonl.gz").read_bytes())
    rows = lines.splitlines(keepends=True)[:2400]
    shuffled = tmp_path / "shuffled.jsonl"
    random.Random(5).shuffle(rows)
    shuffled.write_bytes(b"".join(rows))
    by_task = tmp_path / "descending.jsonl"
    by_task.write_bytes(b"".join(sorted(rows, key=lambda r: orjson.loads(r)["task_id"], reverse=True)))
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(b"".join(rows[:1000]))
    new.write_bytes(b"".join(rows[1000:]))
    return {"shuffled": [shuffled], "descending": [by_task], "appended": [old, new]}


def _ingest_all(sources: list[Path], out: Path) -> dict[str, bytes]:
    for src in sources:  # one ingest per source: the later ones append
        ingest([src], out, chunk_rows=300)
    return _corpus_bytes(out)


@pytest.mark.parametrize("case", ["shuffled", "descending", "appended"])
def test_bounded_merge_and_episodes_write_the_same_bytes(
    case: str, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = _inputs(repo, tmp_path)[case]
    # small batches and ranges, so a run has many batches and a range takes parts of several
    monkeypatch.setattr(ingest_order, "_BATCH_ROWS", 1500)
    monkeypatch.setattr(ingest_order, "RANGE_ROWS", 6000)
    # the plain paths: a batch staged whole; every call's facts aggregated at once
    monkeypatch.setattr(ingest_order, "_PIECE_ROWS", 1500)
    monkeypatch.setattr(ingest_episodes, "CALL_FACT_ROWS", 10**9)
    # row groups of the episodes file smaller than the ranges below write it in (the same in both runs)
    monkeypatch.setattr(ingest_episodes, "GROUP_ROWS", 53)
    plain = _ingest_all(sources, tmp_path / "plain")
    assert pl.read_parquet(tmp_path / "plain" / "episodes.parquet").height > 300
    # pieces that end inside takes and batches; call facts in batches that cut traces
    monkeypatch.setattr(ingest_order, "_PIECE_ROWS", 97)
    monkeypatch.setattr(ingest_episodes, "CALL_FACT_ROWS", 37)
    # episodes merged in buckets of a few traces, written in ranges that cut the row groups
    monkeypatch.setattr(ingest_episodes, "SLICE_ROWS", 41)
    monkeypatch.setattr(ingest_episodes, "RANGE_ROWS", 29)
    pieces = _ingest_all(sources, tmp_path / "pieces")
    assert sorted(pieces) == sorted(plain)
    for name, data in plain.items():
        assert pieces[name] == data, name


def _step_lines() -> tuple[bytes, dict[int, int]]:
    """Flat lines, 8 traces interleaved: the first 240 carry a `step` (some of them a value nested too
    deeply: a rejected call, which still counts), the next 60 do not; and each step-less line's
    expected step (its trace's calls before it, rejected ones included), by line number."""
    deep = "1"
    for _ in range(1000):
        deep = f"[{deep}]"
    lines, want, seen = [], {}, {}
    for i in range(300):
        t = f"tr-{(i * 5) % 8}"
        step = f'"step": {100 + i}, ' if i < 240 else ""
        arg = deep if i < 240 and i % 37 == 5 else str(i)
        if not step:
            want[i + 1] = seen.get(t, 0)
        seen[t] = seen.get(t, 0) + 1
        lines.append(
            f'{{"trace_id": "{t}", "task_id": "k{i % 3}", {step}"tool": "get", "arguments": {{"a": {arg}}}, '
            f'"result": {{"v": {i % 7}}}, "status": "ok"}}\n'
        )
    return "".join(lines).encode(), want


def test_deferred_step_counts_give_the_same_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, want = _step_lines()
    src = tmp_path / "steps.jsonl"
    src.write_bytes(data)
    out = {}
    for defer in (False, True):
        monkeypatch.setattr(ingest_read, "DEFER_STEP_COUNTS", defer)
        folder = tmp_path / f"defer-{defer}"
        ingest([src], folder, chunk_rows=50)  # the count starts after four chunks were flushed
        out[defer] = _corpus_bytes(folder)
    assert sorted(out[True]) == sorted(out[False])
    for name, data in out[False].items():
        assert out[True][name] == data, name
    calls = pl.read_parquet(tmp_path / "defer-True" / "calls.parquet")
    got = dict(calls.filter(pl.col("line") > 240).select("line", "step").iter_rows())
    assert got == want and len(want) == 60
    assert calls.height == 300 - 7  # lines 6, 43, ... 228: nested too deeply, rejected
