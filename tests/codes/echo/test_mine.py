"""ECHO: a result field equal to an argument; 20 calls; >= 2 distinct argument values."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import call, find, mine_records


def _recs(n: int, res=lambda i: {"id": f"o{i}"}, args=lambda i: {"id": f"o{i}"}) -> list[dict]:
    return [call(f"t{i % 4}", "get", res(i), args(i)) for i in range(n)]


def test_threshold_boundary(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs(19)), "ECHO", "/id", "$args/id") is None
    r = find(mine_records(tmp_path, _recs(20)), "ECHO", "/id", "$args/id")
    assert r is not None and r.support.calls == 20 and len(r.examples) == 3


def test_equal_constants_are_not_an_echo(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _recs(40, res=lambda i: {"cur": "USD"}, args=lambda i: {"cur": "USD"}))
    assert find(cs, "ECHO", "/cur", "$args/cur") is None


def test_one_mismatch_kills(tmp_path: Path) -> None:
    recs = _recs(40, res=lambda i: {"id": f"o{i}" if i != 7 else "stale"})
    assert find(mine_records(tmp_path, recs), "ECHO", "/id", "$args/id") is None


def test_numbers_compare_numerically_strings_do_not(tmp_path: Path) -> None:
    num = _recs(30, res=lambda i: {"q": float(i)}, args=lambda i: {"q": i})
    assert find(mine_records(tmp_path, num), "ECHO", "/q", "$args/q") is not None
    text = _recs(30, res=lambda i: {"q": str(i) if i == 3 else i}, args=lambda i: {"q": i})
    assert find(mine_records(tmp_path, text), "ECHO", "/q", "$args/q") is None


def test_absent_result_is_not_a_counterexample(tmp_path: Path) -> None:
    recs = _recs(40, res=lambda i: {"id": f"o{i}"} if i % 5 else {"other": 1})
    r = find(mine_records(tmp_path, recs), "ECHO", "/id", "$args/id")
    assert r is not None and r.support.calls == 32
