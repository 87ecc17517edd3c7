"""The suite's own schedule (tests/conftest.py): the slow-file table names real files, and `slow_first`
deals them so that each worker's share starts with long files and the shares stay even."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SLOW_FILES, slow_first


def test_slow_files_are_test_files(repo: Path) -> None:
    """A renamed or deleted file left in the table would lose its place at the head silently."""
    missing = sorted(f for f in SLOW_FILES if not (repo / f).is_file())
    assert not missing, f"SLOW_FILES names files that do not exist: {missing}"
    assert all(Path(f).name.startswith("test_") for f in SLOW_FILES)


def test_slow_first_deals_longest_first_to_the_least_loaded() -> None:
    files = [*SLOW_FILES, "tests/not_slow.py"]
    lists = slow_first(files, 2)
    assert sorted(f for lst in lists for f in lst) == sorted(SLOW_FILES)  # the others are not dealt
    for lst in lists:
        assert [SLOW_FILES[f] for f in lst] == sorted((SLOW_FILES[f] for f in lst), reverse=True)
    loads = [sum(SLOW_FILES[f] for f in lst) for lst in lists]
    # greedy dealing: the shares differ by at most the longest file
    assert abs(loads[0] - loads[1]) <= max(SLOW_FILES.values())
    assert slow_first(["a.py"], 3) == [[], [], []]


def test_verification_memo_is_shared_between_workers(tmp_path: Path) -> None:
    """`_once` (the suite's memo of `mine(verify=True)`'s check): a second worker (a second memo over
    the same run folder) skips a check the first passed on the same set and data, and a check that
    raised is never marked; another set on the same data is checked."""
    from types import SimpleNamespace

    import polars as pl

    from tests.conftest import _once

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "calls.parquet").write_bytes(b"x")
    frame = pl.DataFrame({"cid": [1, 2], "part": [0, 0]})
    data = SimpleNamespace(corpus=SimpleNamespace(path=corpus), calls=frame, tasks=frame, k=1, tools=None)
    cs = SimpleNamespace(to_json=lambda: {"tools": {}})
    other = SimpleNamespace(to_json=lambda: {"tools": {"t": {}}})
    seen: list[object] = []

    def check(c: object, _d: object) -> None:
        seen.append(c)
        if c is other:
            raise AssertionError("fires")

    shared = tmp_path / "verified"
    first, second = _once(check, shared), _once(check, shared)
    first(cs, data)
    second(cs, data)
    assert seen == [cs]
    for memo in (first, second):
        with pytest.raises(AssertionError, match="fires"):
            memo(other, data)
    assert seen == [cs, other, other]
    assert len(list(shared.iterdir())) == 1
