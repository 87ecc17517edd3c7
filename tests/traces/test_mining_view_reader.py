"""The mining view's string dictionary stays on disk (`View.codes`, `View.texts`, `call_indexes` of
`output_contracts.traces.mining_view_reader`): what it reads is what the view's files hold."""

from __future__ import annotations

import polars as pl
import pytest

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.mining_view import VIEW_STRINGS_FILE
from output_contracts.traces.mining_view_reader import View, call_indexes


def test_view_strings_stay_on_disk(sample_corpus: Corpus) -> None:
    view = View.open(sample_corpus)
    assert view is not None
    strings = pl.read_parquet(sample_corpus.path / VIEW_STRINGS_FILE)["str"]
    picks = pl.Series([strings[len(strings) - 1], strings[0], strings[len(strings) // 2]])
    codes = view.codes(picks)
    assert codes.to_list() == [len(strings) - 1, 0, len(strings) // 2]
    assert view.texts(pl.Series([2, None, 0, 2], dtype=pl.UInt32)).to_list() == [
        strings[2],
        None,
        strings[0],
        strings[2],
    ]
    with pytest.raises(Exception, match="missing from the mining view"):
        view.codes(pl.Series(["\x00 not a value of the corpus"]))
    cids = sample_corpus.scan_calls().select(pl.col("cid").sort()).collect()["cid"]
    assert call_indexes(sample_corpus, cids.gather([5, 0, 9])).to_list() == [5, 0, 9]
