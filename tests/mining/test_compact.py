"""Mining merges a class's rows every few parts (`miner.COMPACT_AFTER`), to keep them small: the contract
set is the one mined in one part."""

from __future__ import annotations

import pytest

from output_contracts.codes.contract_set import ContractSet
from output_contracts.traces.corpus import Corpus


def test_compacted_rows_mine_the_same_bytes(
    sample_corpus: Corpus, sample_contracts: ContractSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class's rows merged every two parts (`compact`) give the contract set mined in one part
    (the session's `sample_contracts`: folds 5, seed 13)."""
    from output_contracts.jsonutil import canonical_str
    from output_contracts.mining import miner
    from output_contracts.mining.clean import leaf_rows

    monkeypatch.setattr(miner, "COMPACT_AFTER", 2)
    got = miner.mine(sample_corpus, folds=5, seed=13, part_rows=leaf_rows(sample_corpus) // 7 + 1)
    assert canonical_str(got.to_json()) == canonical_str(sample_contracts.to_json())
    assert any(r.code == "FORMAT" for tc in got.tools.values() for r in tc.rules)
