"""Fault injection in bounded memory: the records are read as a stream (twice when the heuristics must
learn first), never held in a list, and the output is written a record at a time.

What is held here: the streamed readers give what reading the whole input at once gave (records, line
numbers, rejects), whatever the chunk and batch sizes; a planting over a stream equals the planting over
the same records in a list; learning reads the input once more only when the kinds asked need it.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.audit import inject as inj
from output_contracts.audit.fault_targets import Target
from output_contracts.audit.inject import (
    Planting,
    inject_file,
    inject_records,
    iter_corpus_records,
    iter_flat,
    least_injected,
)
from output_contracts.errors import TraceError
from output_contracts.traces.ingest import corpus_from_records
from tests.audit.test_inject import world


def whole_file_reading(path: Path) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """(line, record) and (line, error) of a flat file read whole and cut by `bytes.splitlines`."""
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    good, bad = [], []
    for i, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            bad.append((i, "json"))
            continue
        if isinstance(rec, dict) and isinstance(rec.get("tool"), str):
            good.append((i, rec))
        else:
            bad.append((i, "tool"))
    return good, bad


_line = st.one_of(
    st.builds(lambda n: orjson.dumps({"tool": "t", "n": n, "pad": "x" * (n % 40)}), st.integers(0, 99)),
    st.sampled_from([b"", b"  ", b"{not json", b'{"tool": 3}', b"[1, 2]", b'{"tool": "u", "s": "a\\rb"}']),
)
_sep = st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n"])


@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(_line, _sep), max_size=30), st.integers(1, 64), st.booleans(), st.booleans())
def test_streamed_lines_are_the_whole_files_lines(
    lines: list[tuple[bytes, bytes]], chunk: int, gz: bool, last_newline: bool
) -> None:
    import tempfile

    data = b"".join(a + b for a, b in lines)
    if not last_newline and lines:
        data = data[: -len(lines[-1][1])]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("f.jsonl.gz" if gz else "f.jsonl")
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        good, bad = whole_file_reading(path)
        rejects: list[dict[str, Any]] = []
        saved = inj.READ_BYTES
        inj.READ_BYTES = chunk  # lines cut across reads of every size
        try:
            got = list(iter_flat([path], rejects))
        finally:
            inj.READ_BYTES = saved
        assert got == [r for _i, r in good]
        assert [r["line"] for r in rejects] == [i for i, _e in bad]
        assert all(r["source"] == str(path) for r in rejects)
        if bad:  # without a rejects list, the first bad line is the error, with its line
            with pytest.raises(TraceError) as e:
                list(iter_flat([path]))
            assert e.value.line == bad[0][0]


def test_corpus_records_in_batches_are_the_whole_corpus(tmp_path: Path) -> None:
    records = world(12, seed=4)
    corpus = corpus_from_records(records, tmp_path / "c")
    whole = list(iter_corpus_records(corpus, batch=10**9))
    assert len(whole) == len(records) > 100
    for batch in (1, 7, 50):
        assert list(iter_corpus_records(corpus, batch=batch)) == whole


@pytest.mark.parametrize(("kinds", "reads"), [(["incidents"], 1), (["sign_flip"], 2), (["all"], 2)])
def test_a_stream_is_read_once_more_only_to_learn(kinds: list[str], reads: int) -> None:
    records = world(16, seed=2)
    calls: list[int] = []

    def read() -> Any:
        calls.append(1)
        yield from records

    planting = Planting(read, kinds=inj.parse_kinds(kinds), rate=0.3, seed=9)
    streamed = list(planting)
    assert len(calls) == reads
    listed, report = inject_records(records, kinds=inj.parse_kinds(kinds), rate=0.3, seed=9)
    assert streamed == listed and planting.report == report
    assert sum(report.injected.values()) > 10


def test_inject_file_streams_corpus_and_flat_sources_alike(tmp_path: Path) -> None:
    records = world(10, seed=6)
    flat = tmp_path / "in.jsonl"
    flat.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + b"{bad\n")
    corpus = corpus_from_records(records, tmp_path / "c")
    rep_flat = inject_file([flat], tmp_path / "a.jsonl", rate=0.2, seed=1)
    assert [r["line"] for r in rep_flat.rejected] == [len(records) + 1]  # reported once, not per reading
    want, _ = inject_records(records, rate=0.2, seed=1)
    got = [orjson.loads(x) for x in (tmp_path / "a.jsonl").read_bytes().splitlines()]
    assert got == [orjson.loads(orjson.dumps(r, option=orjson.OPT_SORT_KEYS)) for r in want]
    rep_corpus = inject_file([str(corpus.path)], tmp_path / "b.jsonl", rate=0.2, seed=1)
    assert rep_corpus.injected == rep_flat.injected and rep_corpus.records == len(records)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=12))
def test_least_injected_is_the_least_count_among_the_kinds_with_a_target(
    kinds_spec: list[tuple[int, int]],
) -> None:
    kinds = [f"k{i}" for i in range(len(kinds_spec))]
    counts = {k: c for k, (c, _n) in zip(kinds, kinds_spec, strict=True)}
    targets = {
        k: [Target(k, f"/{j}") for j in range(n)] for k, (_c, n) in zip(kinds, kinds_spec, strict=True)
    }
    searched: list[str] = []

    def search(k: str) -> list[Target]:
        searched.append(k)
        return targets[k]

    got = least_injected(kinds, counts, search)
    having = [k for k in kinds if targets[k]]  # what searching every kind finds
    least = min((counts[k] for k in having), default=None)
    assert got == {k: targets[k] for k in having if counts[k] == least}
    assert list(got) == [k for k in kinds if k in got]  # in the kinds' order
    assert all(least is None or counts[k] <= least for k in searched)  # none above the least searched
