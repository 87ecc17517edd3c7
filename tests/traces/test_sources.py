"""`open_corpus`: a corpus folder as it is, trace files ingested into a temporary corpus, never a mix."""

from __future__ import annotations

from pathlib import Path

import pytest

from output_contracts.errors import UsageError
from output_contracts.traces.ingest import ingest
from output_contracts.traces.sources import is_corpus, open_corpus

LINE = '{"trace_id": "t", "tool": "x", "arguments": {}, "result": {"a": 1}}\n'


def test_files_are_ingested_into_a_folder_that_goes_away(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(LINE * 3)
    with open_corpus([src]) as c:
        where = c.path
        assert is_corpus(where) and c.scan_calls().collect().height == 3
    assert not where.exists()


def test_a_corpus_folder_is_used_as_it_is(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(LINE)
    ingest([src], tmp_path / "c")
    with open_corpus([tmp_path / "c"]) as c:
        assert c.path == tmp_path / "c"
    assert is_corpus(tmp_path / "c")  # left alone
    kept = tmp_path / "kept"
    with open_corpus([src], keep=kept) as c:
        assert c.path == kept
    assert is_corpus(kept)


def test_a_mix_or_a_missing_source_is_a_usage_error(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(LINE)
    ingest([src], tmp_path / "c")
    with (
        pytest.raises(UsageError, match="give one corpus folder, or trace files"),
        open_corpus([tmp_path / "c", src]),
    ):
        pass
    with pytest.raises(UsageError, match="no such trace file"), open_corpus([tmp_path / "nope.jsonl"]):
        pass
    with pytest.raises(UsageError, match="no source"), open_corpus([]):
        pass
