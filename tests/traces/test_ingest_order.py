"""Corpus format 2: `leaves.parquet` ordered by task, each row group's task range in `corpus.json`
(`output_contracts.traces.ingest.order`), and format-1 corpora (leaves in ingest order) still read."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import output_contracts.traces.ingest.order as ingest_order
from output_contracts.errors import TraceError
from output_contracts.jsonutil import write_json
from output_contracts.traces.corpus import (
    CORPUS_FORMAT_VERSION,
    LEAVES_FILE,
    MANIFEST_FILE,
    Corpus,
    verify_corpus,
)
from output_contracts.traces.ingest import corpus_from_records, ingest
from output_contracts.traces.ingest.commit import file_digest
from output_contracts.traces.ingest.order import group_sizes
from output_contracts.traces.leaves import flatten
from tests.worlds import world


def _records(n: int = 120, tasks: int = 9, seed: int = 3) -> list[dict[str, object]]:
    return world(seed, n, tasks, 0.05)


def _leaf_rows_in_call_order(corpus: Corpus) -> pl.DataFrame:
    """The leaves as ingest order had them: by call (calls.parquet order), then node order."""
    calls = corpus.scan_calls().select("cid").with_row_index("crow")
    return (
        corpus.scan_leaves()
        .with_row_index("row")
        .join(calls, on="cid")
        .sort("crow", "row")
        .drop("crow", "row")
        .collect()
    )


def test_leaves_are_ordered_by_task_and_indexed(tmp_path: Path) -> None:
    recs = _records()
    c = corpus_from_records(recs, tmp_path / "c")
    leaves = c.scan_leaves().collect()
    tasks = leaves["task_id"].cast(pl.String)
    assert tasks.is_sorted()
    assert tasks.n_unique() == len({r["task_id"] for r in recs}) == 9
    # within a task, nodes keep ingest order: each call's nodes are contiguous and in document order
    line = dict(c.scan_calls().select("cid", "line").collect().iter_rows())
    for (cid,), g in leaves.group_by("cid", maintain_order=True):
        rec = recs[line[cid] - 1]
        want = [(p, pat, k) for p, pat, k, *_ in flatten(rec["arguments"])]
        want += [(p, pat, k) for p, pat, k, *_ in flatten(rec["result"])]
        got = list(zip(g["path"], g["pattern"].cast(pl.String), g["kind"].cast(pl.String), strict=True))
        assert got == want
    # corpus.json: one entry per row group of the file, with its task range
    groups = c.leaf_groups()
    assert groups is not None
    meta = pq.ParquetFile(c.path / LEAVES_FILE).metadata
    assert [g.rows for g in groups] == [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    start = 0
    for g in groups:
        part = tasks.slice(start, g.rows)
        assert (part[0], part[-1]) == (g.first_task, g.last_task)
        start += g.rows
    assert start == leaves.height == c.manifest()["counts"]["leaves"]
    assert c.manifest()["format_version"] == CORPUS_FORMAT_VERSION


def _ingest_chunked(recs: list[dict[str, object]], out: Path, chunk_rows: int) -> Corpus:
    src = out.with_suffix(".jsonl")
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    ingest([src], out, format="flat", chunk_rows=chunk_rows)
    return Corpus.open(out)


def test_row_groups_end_at_task_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # small chunks (sorted runs), groups and ranges: many of each, one sorted file all the same
    monkeypatch.setattr(ingest_order, "ROW_GROUP_ROWS", 300)
    monkeypatch.setattr(ingest_order, "RANGE_ROWS", 1000)
    recs = _records(200, 40)
    small = _ingest_chunked(recs, tmp_path / "small", 17)
    monkeypatch.undo()
    big = corpus_from_records(recs, tmp_path / "big")
    a, b = small.scan_leaves().collect(), big.scan_leaves().collect()
    assert a.equals(b)  # the same rows in the same order, whatever the group and range sizes
    groups = small.leaf_groups()
    assert groups is not None and len(groups) > 10
    assert all(g.rows <= 300 for g in groups)
    per_task = a.group_by(pl.col("task_id").cast(pl.String), maintain_order=True).len()
    if per_task["len"].max() <= 300:  # no task larger than a group: no task straddles two groups
        assert all(x.last_task != y.first_task for x, y in itertools.pairwise(groups))
    assert verify_corpus(small.path) == []


@given(st.lists(st.integers(1, 50), max_size=40), st.integers(1, 60))
def test_group_sizes_cover_the_tasks_and_cut_between_them(rows: list[int], limit: int) -> None:
    sizes = group_sizes(rows, limit)
    assert sum(sizes) == sum(rows)
    assert all(0 < s <= limit for s in sizes)
    # every task no larger than the limit lies in one group
    bounds = {0}
    acc = 0
    for s in sizes:
        acc += s
        bounds.add(acc)
    start = 0
    for n in rows:
        if n <= limit:
            inner = {b for b in bounds if start < b < start + n}
            assert not inner, (rows, limit, sizes)
        start += n


def test_appending_keeps_the_task_order(tmp_path: Path) -> None:
    recs = _records(150, 12)
    one = corpus_from_records(recs, tmp_path / "one")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs[:70]))
    (src / "b.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs[70:]))
    ingest([src / "a.jsonl"], tmp_path / "two", format="flat")
    ingest([src / "b.jsonl"], tmp_path / "two", format="flat")
    two = Corpus.open(tmp_path / "two")
    assert two.scan_leaves().collect()["task_id"].cast(pl.String).is_sorted()
    # the same nodes, call by call, as one ingest of all the records
    cols = ["tool", "side", "path", "kind", "num", "str"]  # call ids depend on the source file
    assert _leaf_rows_in_call_order(two).select(cols).equals(_leaf_rows_in_call_order(one).select(cols))
    assert verify_corpus(two.path) == []


def make_format_1(corpus: Corpus) -> Corpus:
    """Rewrite a corpus as format 1 wrote it: leaves in ingest order, no row-group index."""
    ids = corpus.scan_calls().select("cid", "call_id").collect()
    leaves = _leaf_rows_in_call_order(corpus)
    leaves = leaves.join(ids, on="cid", maintain_order="left").select("call_id", *leaves.columns)
    f = corpus.path / LEAVES_FILE
    leaves.write_parquet(f, row_group_size=128 * 1024)
    man = corpus.manifest()
    man["format_version"] = 1
    entry = man["files"][LEAVES_FILE]
    entry.pop("row_groups")
    entry["columns"] = [{"name": k, "type": str(v)} for k, v in leaves.schema.items()]  # with call_id
    entry.update(file_digest(f))
    write_json(corpus.path / MANIFEST_FILE, man)
    return Corpus.open(corpus.path)


def test_a_format_1_corpus_still_opens_and_converts_on_append(tmp_path: Path) -> None:
    recs = _records(150, 12)
    c = make_format_1(corpus_from_records(recs[:100], tmp_path / "c"))
    assert c.leaf_groups() is None
    assert not c.scan_leaves().collect()["task_id"].cast(pl.String).is_sorted()
    assert verify_corpus(c.path) == []
    extra = tmp_path / "more.jsonl"
    extra.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs[100:]))
    ingest([extra], c.path, format="flat")
    c2 = Corpus.open(c.path)
    assert c2.manifest()["format_version"] == CORPUS_FORMAT_VERSION and c2.leaf_groups() is not None
    leaves = c2.scan_leaves().collect()
    assert leaves["task_id"].cast(pl.String).is_sorted()
    whole = corpus_from_records(recs, tmp_path / "whole")
    cols = ["tool", "side", "path", "kind", "num", "str"]  # call ids depend on the source file
    assert _leaf_rows_in_call_order(c2).select(cols).equals(_leaf_rows_in_call_order(whole).select(cols))


def test_a_row_group_index_that_does_not_fit_the_file_is_damage(tmp_path: Path) -> None:
    c = corpus_from_records(_records(), tmp_path / "c")
    man = c.manifest()
    groups = man["files"][LEAVES_FILE]["row_groups"]
    groups.append(dict(groups[-1]))
    write_json(c.path / MANIFEST_FILE, man)
    with pytest.raises(TraceError, match="row groups"):
        Corpus.open(c.path)


def test_registry_readers_agree_on_both_formats(tmp_path: Path) -> None:
    """`registry infer` (first appearance of a pattern) and `registry check` (example call ids) read
    leaves in either order, with or without a per-leaf call id, to the same answer."""
    from output_contracts.registry.check import check_registry
    from output_contracts.registry.infer import observed_patterns
    from output_contracts.traces.tool_registry import registry_from_json

    recs = _records(200, 15)
    new = corpus_from_records(recs, tmp_path / "new")
    old = make_format_1(corpus_from_records(recs, tmp_path / "old"))
    assert observed_patterns(new).equals(observed_patterns(old))
    # first appearance: the first call's nodes come first, in document order
    first = observed_patterns(new).head(3).rows()
    assert first == [
        (recs[0]["tool"], "arg", ""),
        (recs[0]["tool"], "arg", "/id"),
        (recs[0]["tool"], "result", ""),
    ]
    declared = {
        "tools": [
            {
                "name": "a",
                "output": {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 5}, "s": {"enum": ["red"]}},
                },
            }
        ]
    }
    reg = registry_from_json(declared, source="tools.json")
    got_new = [d.to_json() for d in check_registry(reg, new).disagreements]
    got_old = [d.to_json() for d in check_registry(reg, old).disagreements]
    assert got_new == got_old
    bound = [d for d in got_new if d["kind"] == "bound"]
    assert bound and all(isinstance(d["example"], str) and len(d["example"]) == 16 for d in bound)


def test_input_already_in_task_order_is_written_as_read(tmp_path: Path) -> None:
    """A file written task by task (the common case) skips both sorts; the result is the same layout."""
    recs = sorted(_records(150, 12), key=lambda r: str(r["task_id"]))
    c = _ingest_chunked(recs, tmp_path / "c", 11)  # every chunk continues the last: written directly
    leaves = c.scan_leaves().collect()
    assert leaves.drop("task_id").equals(_leaf_rows_in_call_order(c).drop("task_id"))
    shuffled = _ingest_chunked(list(reversed(recs)), tmp_path / "r", 11)  # chunks out of order: merged
    # the same tasks in the same order; within a task, calls in their (reversed) ingest order
    assert shuffled.scan_leaves().collect()["task_id"].equals(leaves["task_id"])
    assert verify_corpus(c.path) == []
    # merged from several runs or written from one chunk: the same file rows
    one_chunk = corpus_from_records(list(reversed(recs)), tmp_path / "one")
    assert shuffled.scan_leaves().collect().equals(one_chunk.scan_leaves().collect())
    groups = c.leaf_groups()
    assert groups is not None and verify_corpus(shuffled.path) == []
