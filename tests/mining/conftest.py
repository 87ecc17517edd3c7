"""Shared fixtures of the mining tests: the sample world ingested once, and its 5-fold contract set."""

from __future__ import annotations

from pathlib import Path

import pytest

from output_contracts.mining import mine
from output_contracts.rules.model import ContractSet
from output_contracts.traces.corpus import Corpus
from tests.conftest import SAMPLE


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    if not (SAMPLE / "planted.json").is_file():
        pytest.skip("sample_traces/planted.json is absent")
    from output_contracts.traces.ingest import ingest

    out = tmp_path_factory.mktemp("sample") / "corpus"
    ingest([SAMPLE / "clean"], out, registry=SAMPLE / "tools.json")
    return Corpus.open(out)


@pytest.fixture(scope="session")
def sample_contracts(sample_corpus: Corpus) -> ContractSet:
    # verify: every checker replayed over its own mining data with the shipped checker (raises on a fire)
    return mine(sample_corpus, folds=5, seed=13, verify=True)


@pytest.fixture(scope="session")
def sample_contracts_file(sample_contracts: ContractSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("sample-cs") / "contracts.json"
    sample_contracts.save(p)
    return p
