"""Task parts read straight from a format-2 corpus (contiguous row groups, no scratch folder), and the
old spill path for format-1 corpora: both mine the same bytes as one whole read."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import output_contracts.traces.ingest.order as ingest_order
from output_contracts.codes.table import names
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.mining.data import Unit, load, plan_parts
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.traces.test_ingest_order import make_format_1
from tests.worlds import world

CODES = names()
LOW = {c: 5 for c in CODES}


def _bytes(corpus: Corpus, **kw: object) -> str:
    return canonical_str(mine(corpus, **kw).to_json())  # type: ignore[arg-type]


def test_plan_parts_cuts_only_between_tasks() -> None:
    units = [Unit(4, "a", "b"), Unit(4, "b", "c"), Unit(4, "d", "e"), Unit(4, "f", "f"), Unit(4, "f", "g")]
    # b straddles units 0-1 and f straddles 3-4: those pairs stay together even past the limit
    assert plan_parts(units, 5) == [Unit(8, "a", "c"), Unit(4, "d", "e"), Unit(8, "f", "g")]
    assert plan_parts(units, 12) == [Unit(12, "a", "e"), Unit(8, "f", "g")]
    assert plan_parts(units, 100) == [Unit(20, "a", "g")]
    assert plan_parts([], 5) == []


@pytest.fixture(scope="module")
def small_groups(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """A corpus whose row groups are small (at most 400 rows), so that parts of whole groups can be
    planned from corpus.json alone."""
    out = tmp_path_factory.mktemp("groups") / "c"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest_order, "ROW_GROUP_ROWS", 400)
        return corpus_from_records(world(11, 400, 30, 0.05), out)


def test_parts_are_contiguous_row_ranges_and_need_no_scratch(
    small_groups: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = small_groups.leaf_groups()
    assert groups is not None and max(g.rows for g in groups) <= 400
    total = leaf_rows(small_groups)

    def no_scratch(*a: object, **k: object) -> str:
        raise AssertionError("a format-2 corpus is read without a scratch folder")

    monkeypatch.setattr(tempfile, "mkdtemp", no_scratch)
    for part_rows in (total // 2 + 1, total // 5 + 1, 450):  # whole groups; 450 < two groups
        data = load(small_groups, clean="ok", k=3, seed=13, tools=None, part_rows=part_rows)
        assert data.whole is None and data.spill is None and data.ranges is not None
        assert data.nparts == len(data.ranges) >= -(-total // part_rows)
        # the ranges tile the file, each starts and ends on a row-group boundary
        bounds = {0}
        acc = 0
        for g in groups:
            acc += g.rows
            bounds.add(acc)
        assert data.ranges[0][0] == 0 and sum(n for _, n in data.ranges) == total
        for (s, n), (s2, _) in zip(data.ranges, data.ranges[1:], strict=False):
            assert s + n == s2 and s2 in bounds
        # a part holds only its own tasks' calls, and every clean call lies in one part
        parts = [data.part(b) for b in range(data.nparts)]
        assert sum(p.calls.height for p in parts) == data.calls.height
        for p in parts:
            assert set(p.leaves["cid"].unique().to_list()) <= set(p.calls["cid"].to_list())
            assert p.leaves.height > 0


def test_parts_mine_the_same_bytes_as_the_whole(small_groups: Corpus) -> None:
    total = leaf_rows(small_groups)
    for k in (1, 3):
        one = _bytes(small_groups, folds=k, min_support=LOW)
        for part_rows in (total // 3 + 1, 450, 90):  # 90: smaller than a group, cut by task
            assert _bytes(small_groups, folds=k, min_support=LOW, part_rows=part_rows) == one


def test_a_format_1_corpus_mines_the_same_bytes(tmp_path: Path) -> None:
    recs = world(5, 300, 20, 0.05)
    new = corpus_from_records(recs, tmp_path / "new")
    old = make_format_1(corpus_from_records(recs, tmp_path / "old"))
    total = leaf_rows(old)
    data = load(old, clean="ok", k=3, seed=13, tools=None, part_rows=total // 3 + 1)
    try:
        assert data.ranges is None and data.spill is not None and data.nparts == 3  # the old path
    finally:
        data.close()
    one = _bytes(new, folds=3, min_support=LOW)
    assert _bytes(old, folds=3, min_support=LOW) == one
    assert _bytes(old, folds=3, min_support=LOW, part_rows=total // 3 + 1) == one
    assert _bytes(new, folds=3, min_support=LOW, part_rows=total // 3 + 1) == one
