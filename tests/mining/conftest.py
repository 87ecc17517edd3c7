"""Shared fixtures of the mining tests: the sample world ingested once, and its 5-fold contract set.

Both are made once per pytest run (`tests/once.py`), by whichever pytest-xdist worker asks first, and
read by the others: the mining tests are spread over the workers, and each worker ingesting and mining
the same sample world again was one of the suite's longest set-ups. The tests only read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from output_contracts.codes.contract_set import ContractSet
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
from tests.conftest import SAMPLE
from tests.once import made_once, run_folder


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    if not (SAMPLE / "planted.json").is_file():
        pytest.skip("sample_traces/planted.json is absent")
    from output_contracts.traces.ingest import ingest

    def make(folder: Path) -> None:
        ingest([SAMPLE / "clean"], folder / "corpus", registry=SAMPLE / "tools.json")

    return Corpus.open(made_once(run_folder(tmp_path_factory), "sample-corpus", make) / "corpus")


@pytest.fixture(scope="session")
def sample_contracts_file(sample_corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mine(sample_corpus, folds=5, seed=13)` saved, mined once per run."""

    def make(folder: Path) -> None:
        # verify: every checker replayed over its own mining data with the shipped checker (raises on a fire)
        mine(sample_corpus, folds=5, seed=13, verify=True).save(folder / "contracts.json")

    return made_once(run_folder(tmp_path_factory), "sample-contracts", make) / "contracts.json"


@pytest.fixture(scope="session")
def sample_contracts(sample_contracts_file: Path) -> ContractSet:
    return ContractSet.load(sample_contracts_file)
