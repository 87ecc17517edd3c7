"""Shared fixtures: paths to the repository, the sample world and ../shared/data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_traces"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist workers inherit `COLUMNS`/`LINES` (80x24) that a plain `pytest` run does not have;
    the CLI wraps sentences where `COLUMNS` says how wide the reader is, so every test starts as a pipe
    without them, and a test that wants a width passes it in its own environment."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* from the current outputs instead of comparing (tests/test_golden.py).",
    )
    parser.addoption(
        "--update-readme",
        action="store_true",
        default=False,
        help="Rewrite the output of README examples that differ (tests/cli/test_readme.py).",
    )


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session", autouse=True)
def _mine_verifies() -> Iterator[None]:
    """Every `mine()` / `mine_dask()` in the tests runs the full checker pass unless it says
    `verify=False`: the library's default is the cheap path (each rule class holds on its mining data by
    construction, docs/design.md "Verification"), and the whole suite re-proves that on every corpus it
    mines, beside the property tests of tests/mining/test_verify_by_construction.py."""
    from output_contracts.mining.distributed import mine_dask
    from output_contracts.mining.miner import mine

    saved = [(f, dict(f.__kwdefaults__ or {})) for f in (mine, mine_dask)]
    for f, kw in saved:
        f.__kwdefaults__ = {**kw, "verify": True}
    yield
    for f, kw in saved:
        f.__kwdefaults__ = kw


#: Set to 1 to make a test that needs ../shared/data fail, not skip, when the folder is absent.
REQUIRE_SHARED = "CONTRACTS_REQUIRE_SHARED_DATA"
_SHARED_SKIPS: list[str] = []


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data, or skip: the real public data is read in place, never copied into the repo.

    A skip is never silent: the run ends with a line counting them. With CONTRACTS_REQUIRE_SHARED_DATA=1
    the test fails instead (for a CI that mounts the data). It is not tied to `CI=true`: a fresh clone on
    a machine without ../shared is a legitimate place to run the suite, and those tests cannot run there."""
    if not SHARED_DATA.is_dir():
        msg = f"real data folder ../shared/data beside the repo is absent ({SHARED_DATA})"
        if os.environ.get(REQUIRE_SHARED) == "1":
            pytest.fail(f"{msg}; {REQUIRE_SHARED}=1 requires it")
        _SHARED_SKIPS.append(msg)
        pytest.skip(msg)
    return SHARED_DATA


def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = [
        r
        for r in terminalreporter.stats.get("skipped", [])
        if "../shared/data beside the repo is absent" in str(getattr(r, "longrepr", ""))
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} tests skipped because ../shared/data (the real τ-bench, τ²-bench and BFCL "
            f"data) is absent; set {REQUIRE_SHARED}=1 to make them fail instead",
            yellow=True,
        )
