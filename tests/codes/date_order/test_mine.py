"""DATE_ORDER: ISO dates ordered A <= B; 20 calls from 7 tasks; tz modes never mixed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.helpers import call, find, mine_records

T0 = dt.datetime(2024, 3, 1, 8, 0, tzinfo=dt.UTC)


def _pair(i: int) -> tuple[str, str]:
    a = T0 + dt.timedelta(hours=7 * i)
    return a.isoformat().replace("+00:00", "Z"), (a + dt.timedelta(minutes=30 + i)).isoformat()


def _recs(n: int, n_tasks: int, res=None) -> list[dict]:
    res = res or (lambda i: dict(zip(("start", "end"), _pair(i), strict=True)))
    return [call(f"t{i % n_tasks}", "book", res(i)) for i in range(n)]


def test_task_threshold_boundary(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs(40, 6)), "DATE_ORDER", "/start", "/end") is None
    r = find(mine_records(tmp_path, _recs(40, 7)), "DATE_ORDER", "/start", "/end")
    assert r is not None and r.params == {"tz": "aware"} and r.support.tasks == 7


def test_call_threshold_boundary(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs(19, 7)), "DATE_ORDER", "/start", "/end") is None
    assert find(mine_records(tmp_path, _recs(20, 7)), "DATE_ORDER", "/start", "/end") is not None


def test_one_counterexample_kills(tmp_path: Path) -> None:
    def res(i: int) -> dict:
        a, b = _pair(i)
        return {"start": b, "end": a} if i == 13 else {"start": a, "end": b}

    cs = mine_records(tmp_path, _recs(40, 8, res))
    assert find(cs, "DATE_ORDER", "/start", "/end") is None
    assert find(cs, "DATE_ORDER", "/end", "/start") is None


def test_mixed_zones_compare_as_instants(tmp_path: Path) -> None:
    """10:00+02:00 is before 09:30Z although its text sorts after: offsets are applied."""

    def res(i: int) -> dict:
        day = f"2024-04-{1 + i % 28:02d}"
        return {"a": f"{day}T10:00:00+02:00", "b": f"{day}T09:30:00Z"}

    r = find(mine_records(tmp_path, _recs(30, 8, res)), "DATE_ORDER", "/a", "/b")
    assert r is not None and r.params == {"tz": "aware"}


def test_naive_and_aware_never_mixed(tmp_path: Path) -> None:
    def res(i: int) -> dict:
        a, b = _pair(i)
        return {"start": a, "end": b[:19] if i % 2 else b}  # half the ends lose their zone

    cs = mine_records(tmp_path, _recs(40, 8, res))
    assert find(cs, "DATE_ORDER", "/start", "/end") is None
    naive = mine_records(
        tmp_path, _recs(40, 8, lambda i: {k: v[:19] for k, v in zip(("start", "end"), _pair(i), strict=True)})
    )
    assert find(naive, "DATE_ORDER", "/start", "/end").params == {"tz": "naive"}  # type: ignore[union-attr]


def test_dates_and_equal_values(tmp_path: Path) -> None:
    d = mine_records(
        tmp_path,
        _recs(30, 8, lambda i: {"from": f"2024-01-{1 + i % 9:02d}", "to": f"2024-02-{1 + i % 9:02d}"}),
    )
    assert find(d, "DATE_ORDER", "/from", "/to").params == {"tz": "date"}  # type: ignore[union-attr]
    same = mine_records(tmp_path, _recs(30, 8, lambda i: {"x": _pair(i)[0], "y": _pair(i)[0]}))
    assert find(same, "DATE_ORDER", "/x", "/y") is None  # always equal: an equality, not an order


def test_array_instances_pair_by_index(tmp_path: Path) -> None:
    def res(i: int) -> dict:
        legs = []
        for j in range(1 + i % 3):
            a, b = _pair(i + 10 * j)
            legs.append({"depart": a, "arrive": b})
        return {"legs": legs}

    cs = mine_records(tmp_path, _recs(30, 8, res))
    r = find(cs, "DATE_ORDER", "/legs/*/depart", "/legs/*/arrive")
    assert r is not None and r.support.calls == 30
