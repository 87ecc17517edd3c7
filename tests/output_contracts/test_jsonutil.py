"""canonical_json is part of every hash: its form must be stable and round-trip."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.jsonutil import atomic_write_bytes, canonical_json, json_sha256, loads, stable_id

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def test_sorted_compact_utf8() -> None:
    assert (
        canonical_json({"b": 1, "a": "é", "c": [1.0, 0.1, 1e-7]})
        == '{"a":"é","b":1,"c":[1.0,0.1,1e-7]}'.encode()
    )


def test_big_integers_are_exact() -> None:
    assert canonical_json({"n": 2**70}) == b'{"n":1180591620717411303424}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": [bad]})


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_round_trip_and_idempotent(value: object) -> None:
    data = canonical_json(value)
    back = loads(data) if all(abs(v) < 2**63 for v in _ints(value)) else json.loads(data)
    assert back == value
    assert canonical_json(back) == data


def _ints(v: object) -> list[int]:
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [v]
    if isinstance(v, dict):
        return [i for x in v.values() for i in _ints(x)]
    if isinstance(v, list):
        return [i for x in v for i in _ints(x)]
    return []


def test_key_order_does_not_change_hash() -> None:
    assert json_sha256({"a": 1, "b": 2}) == json_sha256({"b": 2, "a": 1})
    assert stable_id("r", "t", {"x": 1}) == stable_id("r", "t", {"x": 1})
    assert stable_id("r", "t", {"x": 1}) != stable_id("r", "t", {"x": 2})


def test_atomic_write_leaves_no_temp_on_failure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def chunks():  # type: ignore[no-untyped-def]
        yield b"new-part"
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write_bytes(target, chunks())
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
