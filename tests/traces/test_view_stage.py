"""Ingest builds the mining view from the leaf frames as it writes them (`mining_view.ViewStage`,
`write_staged`): its three files must be byte for byte what `view_reference.write_view`
builds by reading the finished `leaves.parquet` and `calls.parquet` back, on every path the leaves take
(written directly, merged from sorted runs, appended to an old corpus) and across row-group and frame
bounds."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

import output_contracts.traces.ingest.order as ingest_order
import output_contracts.traces.mining_view as mv
from output_contracts.traces.corpus import CALLS_FILE, LEAVES_FILE, Corpus
from output_contracts.traces.ingest import ingest

from .view_reference import write_view


def assert_view_is_reference(corpus: Path, tmp_path: Path) -> None:
    """The corpus's view files equal `write_view`'s from its leaves and calls files, and the manifest
    entries agree."""
    ref = tmp_path / f"ref-{corpus.name}"
    ref.mkdir()
    entries = write_view(corpus / LEAVES_FILE, corpus / CALLS_FILE, lambda n: ref / n)
    for name in mv.VIEW_FILES:
        assert (corpus / name).read_bytes() == (ref / name).read_bytes(), name
    files = Corpus.open(corpus).manifest()["files"]
    for name, entry in entries.items():
        assert {k: files[name][k] for k in entry} == entry, name
    assert entries[mv.VIEW_FILE]["rows"] == files[LEAVES_FILE]["rows"] > 0


def test_view_of_direct_merged_and_appended_leaves(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged: list[str] = []
    add = mv.ViewStage.add

    def spy(self: mv.ViewStage, leaves: pl.DataFrame) -> None:
        staged.append(self.name)
        add(self, leaves)

    monkeypatch.setattr(mv.ViewStage, "add", spy)
    # row groups of the view smaller than a frame, so groups are cut across staged frames
    monkeypatch.setattr(mv, "ROW_GROUP_ROWS", 997)
    monkeypatch.setattr(ingest_order, "RANGE_ROWS", 20_000)
    clean = repo / "sample_traces" / "clean" / "part-1.jsonl.gz"
    faulty = repo / "sample_traces" / "faulty" / "part-1.jsonl.gz"
    # written directly: chunks in task order
    ingest([clean], tmp_path / "direct", chunk_rows=4000)
    assert staged == ["view-direct"] * 3
    # chunks out of task order (the file's lines reversed): sorted runs merged at commit
    staged.clear()
    rev = tmp_path / "reversed.jsonl"
    rev.write_bytes(b"".join(reversed(gzip.decompress(faulty.read_bytes()).splitlines(keepends=True))))
    ingest([rev], tmp_path / "merged", chunk_rows=2000)
    # the first chunk went to the direct file (its view staged at once), which the second closed; the
    # merge staged every row again
    assert staged.count("view-direct") == 1 and staged.count("view-merged") > 2  # in several ranges
    # appended: the old corpus's leaves merged with the new run's
    ingest([clean], tmp_path / "appended")
    ingest([faulty], tmp_path / "appended")
    for name in ("direct", "merged", "appended"):
        assert_view_is_reference(tmp_path / name, tmp_path)


def test_union_in_value_ranges_is_the_whole_union(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit unions the frames' strings one value range at a time (memory bounded at 10M calls):
    cut into many ranges, with row groups cut across ranges and frames, the corpus is byte for byte the
    one built with a single range, and the reference's."""
    faulty = repo / "sample_traces" / "faulty" / "part-1.jsonl.gz"
    monkeypatch.setattr(mv, "STRINGS_GROUP_ROWS", 1009)
    ingest([faulty], tmp_path / "one", chunk_rows=3000)
    ranges: list[int] = []
    cuts = mv._cuts

    def spy(stage: mv.ViewStage) -> pl.Series:
        c = cuts(stage)
        ranges.append(c.len() + 1)
        return c

    monkeypatch.setattr(mv, "_cuts", spy)
    monkeypatch.setattr(mv, "UNION_STRINGS", 700)
    monkeypatch.setattr(mv, "SAMPLE_EVERY", 3)
    ingest([faulty], tmp_path / "many", chunk_rows=3000)
    n_strings = Corpus.open(tmp_path / "many").manifest()["files"][mv.VIEW_STRINGS_FILE]["rows"]
    assert ranges and ranges[0] > 5 and n_strings > 3 * 1009  # many ranges, several row groups
    for name in mv.VIEW_FILES:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes(), name
    assert_view_is_reference(tmp_path / "many", tmp_path)
    strings = pl.read_parquet(tmp_path / "many" / mv.VIEW_STRINGS_FILE)["str"]
    assert strings.is_sorted() and strings.n_unique() == strings.len() == n_strings
