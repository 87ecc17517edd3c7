"""Shared fixtures: paths to the repository, the sample world and ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_traces"
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* from the current outputs instead of comparing (tests/test_golden.py).",
    )


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data, or skip: the real public data is read in place, never copied into the repo."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA.name!r} beside the repo is absent (../shared/data)")
    return SHARED_DATA
