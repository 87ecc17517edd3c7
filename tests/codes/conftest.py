"""Fixtures the code folders' tests share: `cs_file`, the folder's mined check world (`cs`, from its
conftest.py) saved as a contract-set file, for the tests that load it or hand it to the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from output_contracts.codes.contract_set import ContractSet


@pytest.fixture(scope="module")
def cs_file(cs: ContractSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cs") / "contracts.json"
    cs.save(p)
    return p
