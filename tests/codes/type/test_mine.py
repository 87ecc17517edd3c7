"""TYPE: one kind per pattern; int vs float; threshold 20 calls."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import call, find, mine_records


def _recs(values: list) -> list[dict]:
    return [call(f"t{i % 4}", "tool", {"v": v}) for i, v in enumerate(values)]


def test_int_number_and_threshold(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs(list(range(19)))), "TYPE", "/v") is None
    r = find(mine_records(tmp_path, _recs(list(range(20)))), "TYPE", "/v")
    assert r is not None and r.params == {"kind": "int"}


def test_int_and_float_is_number_never_float(tmp_path: Path) -> None:
    mixed = mine_records(tmp_path, _recs([i if i % 2 else i + 0.5 for i in range(30)]))
    assert find(mixed, "TYPE", "/v").params == {"kind": "number"}  # type: ignore[union-attr]
    floats = mine_records(tmp_path, _recs([i + 0.25 for i in range(30)]))
    assert find(floats, "TYPE", "/v").params == {"kind": "number"}  # type: ignore[union-attr]
    whole = mine_records(tmp_path, _recs([float(i) for i in range(30)]))
    assert find(whole, "TYPE", "/v").params == {"kind": "number"}  # type: ignore[union-attr]


def test_one_counterexample_kills(tmp_path: Path) -> None:
    vals: list = list(range(40))
    vals[17] = "17"
    assert find(mine_records(tmp_path, _recs(vals)), "TYPE", "/v") is None


def test_null_only_field_has_no_type(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _recs([None] * 30))
    assert find(cs, "TYPE", "/v") is None
    assert find(cs, "REQUIRED", "/v") is not None


def test_containers_and_nested(tmp_path: Path) -> None:
    recs = [
        call(f"t{i % 4}", "tool", {"items": [{"q": j} for j in range(1 + i % 2)], "m": {"k": "x"}})
        for i in range(25)
    ]
    cs = mine_records(tmp_path, recs)
    assert find(cs, "TYPE", "").params == {"kind": "object"}  # type: ignore[union-attr]
    assert find(cs, "TYPE", "/items").params == {"kind": "array"}  # type: ignore[union-attr]
    assert find(cs, "TYPE", "/items/*").params == {"kind": "object"}  # type: ignore[union-attr]
    assert find(cs, "TYPE", "/items/*/q").params == {"kind": "int"}  # type: ignore[union-attr]
    assert find(cs, "TYPE", "/m/k").params == {"kind": "string"}  # type: ignore[union-attr]
