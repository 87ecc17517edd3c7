"""tests/ mirrors the packages (DESIGN §1, CONVENTIONS 6): a test folder is named for the folder of the
repository whose code it tests (`tests/mining/` for `mining/`, `tests/codes/range/` for `codes/range/`,
`tests/output_contracts/` for the root package), so that the tests of a module are found where its path
says. Fixture folders (`tests/golden/`, `tests/data/`, a folder's own `data/`) hold files, not tests."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO

TESTS = REPO / "tests"
FIXTURES = {"golden", "data"}


def folders_of_tests() -> list[Path]:
    """The folders under tests/ that hold a source file (a folder left with only compiled files, after
    its tests moved away, holds none), fixture folders aside."""
    return sorted(
        d
        for d in TESTS.rglob("*")
        if d.is_dir()
        and "__pycache__" not in d.parts
        and not FIXTURES & set(d.relative_to(TESTS).parts)
        and not d.name.startswith(".")
        and any(f.is_file() for f in d.rglob("*") if "__pycache__" not in f.parts)
    )


def test_each_test_folder_mirrors_a_folder_of_the_repository() -> None:
    unmatched = [
        d.relative_to(REPO).as_posix()
        for d in folders_of_tests()
        if not (REPO / d.relative_to(TESTS)).is_dir()
    ]
    assert unmatched == [], f"test folders that name no folder of the repository: {unmatched}"


def test_each_test_folder_is_a_package() -> None:
    """Without an `__init__.py`, pytest imports a folder's modules by their bare names, which clash as soon
    as two folders hold a file of the same name (`tests/codes/*/test_check.py`)."""
    bare = [d.relative_to(REPO).as_posix() for d in folders_of_tests() if not (d / "__init__.py").is_file()]
    assert bare == []
