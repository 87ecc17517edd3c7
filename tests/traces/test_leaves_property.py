"""Leaf flattening: the ingest hot path must agree with `output_contracts.traces.leaves.flatten` row for row,
and flatten-then-rebuild must give back the original JSON (hypothesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.ingest.columns import Columns as _Columns
from output_contracts.traces.leaves import flatten, rebuild

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
keys = st.text(alphabet=st.sampled_from("ab~/*0 é"), max_size=4)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=25,
)


def _columns_leaves(value: Any) -> list[tuple[Any, ...]]:
    cols = _Columns()
    cols._walk(value, "", "")
    return list(cols.rows)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_hot_path_matches_reference_flatten(value: Any) -> None:
    assert _columns_leaves(value) == list(flatten(value))


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_flatten_then_rebuild_round_trips(value: Any) -> None:
    rebuilt = rebuild(_columns_leaves(value))
    assert orjson.dumps(rebuilt) == orjson.dumps(value)
    assert type(rebuilt) is type(value)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(keys, json_values, max_size=4),
    # a string holding a JSON object/array is decoded on ingest (by design), so it cannot round-trip
    json_values.filter(lambda v: not (isinstance(v, str) and v.lstrip()[:1] in ("{", "["))),
)
def test_round_trip_through_parquet(tmp_path: Path, args: dict[str, Any], result: Any) -> None:
    out = tmp_path / f"c{abs(hash(orjson.dumps([args, result]))) % 10**9}"
    c = corpus_from_records([{"trace_id": "t", "tool": "x", "arguments": args, "result": result}], out)
    leaves = c.scan_leaves().collect()
    for side, doc in (("arg", args), ("result", result)):
        rows = leaves.filter(pl.col("side") == side).select(
            "path", pl.col("pattern").cast(pl.String), pl.col("kind").cast(pl.String), "num", "str", "len"
        )
        assert orjson.dumps(rebuild(rows.rows())) == orjson.dumps(doc)
    call = c.scan_calls().collect().row(0, named=True)
    assert orjson.loads(call["arguments"]) == args and orjson.loads(call["result"]) == result
