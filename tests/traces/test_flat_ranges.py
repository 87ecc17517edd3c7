"""Out-of-range integers are rejects of their line, never a crash of the whole ingest.

`step` is an int64 column of `calls.parquet`; JSON integers are unbounded (orjson reads up to 2**64 - 1
as an int). OTLP `intValue` is an int64 and `startTimeUnixNano` a fixed64. A value outside its range
used to pass the adapter and fail when its chunk was written, losing every good line with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import INT64_MAX, RecordContext, RecordError
from output_contracts.traces.formats.flat import FlatAdapter
from output_contracts.traces.ingest import ingest

#: Every integer orjson reads as an int (beyond these it yields a float or fails).
JSON_INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)


def _call(trace: str, step: int | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"trace_id": trace, "tool": "lookup", "arguments": {"n": 1}, "result": {"ok": 1}}
    if step is not None:
        rec["step"] = step
    return rec


def _write(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def _steps(corpus: Path) -> list[tuple[str, int, int]]:
    calls = pl.read_parquet(corpus / "calls.parquet", columns=["trace_id", "step", "line"])
    return sorted((r["trace_id"], r["step"], r["line"]) for r in calls.to_dicts())


def _bad_lines(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "calls.jsonl",
        [
            _call("a", 0),
            _call("a", 2**63),  # line 2: one past int64
            _call("b", INT64_MAX),  # line 3: the largest that fits
            _call("c", -1),  # line 4: an order is never negative
            _call("d", 2**64 - 1),  # line 5: the largest int JSON gives us
            _call("e"),  # line 6: no step, numbered by ingest
        ],
    )


def test_out_of_range_steps_are_rejects_and_good_lines_stay(tmp_path: Path) -> None:
    f = _bad_lines(tmp_path)
    rep = ingest([f], tmp_path / "c", chunk_rows=2)
    s = rep.sources[0]
    assert (s.lines, s.calls, s.rejects, s.blank) == (6, 3, 3, 0)
    assert _steps(tmp_path / "c") == [("a", 0, 1), ("b", INT64_MAX, 3), ("e", 0, 6)]
    rejects = Corpus.open(tmp_path / "c").rejects()
    assert [(r["line"], r["code"], r["field"], r["error"]) for r in rejects] == [
        (
            2,
            "R_FIELD",
            "step",
            f"'step' is out of range: {2**63} (must be 0 to 2**63-1, an order stored as int64)",
        ),
        (4, "R_FIELD", "step", "'step' is out of range: -1 (must be 0 to 2**63-1, an order stored as int64)"),
        (
            5,
            "R_FIELD",
            "step",
            f"'step' is out of range: {2**64 - 1} (must be 0 to 2**63-1, an order stored as int64)",
        ),
    ]
    assert all(r["source"] == str(f) for r in rejects)
    assert orjson.loads(rejects[0]["raw"])["step"] == 2**63


def test_out_of_range_step_strict_fails_naming_file_and_line(tmp_path: Path) -> None:
    f = _bad_lines(tmp_path)
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "s", strict=True)
    assert (e.value.source, e.value.line) == (str(f), 2)
    assert not (tmp_path / "s").exists()


def test_cli_exit_codes(tmp_path: Path) -> None:
    f = _bad_lines(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["ingest", str(f), "-o", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    assert "3 calls" in r.stderr and "3 rejects" in r.stderr
    r = runner.invoke(app, ["ingest", str(f), "-o", str(tmp_path / "s"), "--strict"])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"error[E_TRACE]: {f}:2: 'step' is out of range: {2**63} (must be 0 to 2**63-1, an order stored as int64)"
    )


@settings(max_examples=300, deadline=None)
@given(step=JSON_INTS)
def test_flat_adapter_accepts_exactly_the_int64_orders(step: int) -> None:
    rec = orjson.loads(orjson.dumps(_call("t", step)))  # the value as ingest sees it
    ctx = RecordContext("f.jsonl", "0" * 64, 1)
    if 0 <= step <= INT64_MAX:
        assert FlatAdapter().parse(rec, ctx).calls[0].step == step
    else:
        with pytest.raises(RecordError) as e:
            FlatAdapter().parse(rec, ctx)
        assert e.value.field == "step" and e.value.code == "R_FIELD"
        assert e.value.reason.startswith(f"'step' is out of range: {step} ")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    step=st.one_of(
        st.integers(min_value=2**63, max_value=2**64 - 1),
        st.integers(min_value=-(2**63), max_value=-1),
        st.integers(min_value=INT64_MAX - 2, max_value=INT64_MAX),
        st.integers(min_value=0, max_value=3),
    )
)
def test_ingest_of_any_json_int_step(tmp_path: Path, step: int) -> None:
    out = tmp_path / f"c{step}"
    f = _write(tmp_path / f"s{step}.jsonl", [_call("a", 1), _call("b", step), _call("c")])
    rep = ingest([f], out, chunk_rows=1)
    rejects = Corpus.open(out).rejects()
    if 0 <= step <= INT64_MAX:
        assert (rep.calls, rep.rejects) == (3, 0)
        assert _steps(out) == [("a", 1, 1), ("b", step, 2), ("c", 0, 3)]
    else:
        assert (rep.calls, rep.rejects) == (2, 1)
        assert _steps(out) == [("a", 1, 1), ("c", 0, 3)]
        assert [(r["line"], r["field"]) for r in rejects] == [(2, "step")]


# ---- OTel: intValue (int64) and startTimeUnixNano (fixed64) ------------------------------------------


def _otel(trace: str, *, result: Any, start: Any = "1772359202500000000") -> dict[str, Any]:
    span = {
        "traceId": trace,
        "spanId": "S1",
        "name": "execute_tool get_flight",
        "startTimeUnixNano": start,
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "get_flight"}},
            {"key": "gen_ai.tool.call.result", "value": result},
        ],
        "status": {},
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_otel_out_of_range_ints_are_rejects(tmp_path: Path) -> None:
    where = "resourceSpans[0].scopeSpans[0].spans[0]"
    f = _write(
        tmp_path / "otel.jsonl",
        [
            _otel("aa", result={"intValue": str(2**63 - 1)}),
            _otel("bb", result={"intValue": str(2**63)}),
            _otel("cc", result={"intValue": "1" + "0" * 400}),  # float() of it overflowed: a crash
            _otel("dd", result={"intValue": "7"}, start="1" + "0" * 30),  # past year 9999: a crash
            _otel("ee", result={"intValue": "7"}, start="-5"),
            _otel("ff", result={"intValue": str(-(2**63))}, start=str(2**64 - 1)),
        ],
    )
    rep = ingest([f], tmp_path / "c")
    assert (rep.calls, rep.rejects) == (2, 4)
    calls = pl.read_parquet(tmp_path / "c" / "calls.parquet", columns=["trace_id", "result", "started_at"])
    assert sorted(calls.rows()) == [
        ("aa", str(2**63 - 1), "2026-03-01T10:00:02.5Z"),
        ("ff", str(-(2**63)), "2554-07-21T23:34:33.709551615Z"),
    ]
    rejects = Corpus.open(tmp_path / "c").rejects()
    attr = f"{where}.attributes.gen_ai.tool.call.result"
    assert [(r["line"], r["code"], r["field"], r["error"]) for r in rejects] == [
        (2, "R_FIELD", attr, f"'{attr}.intValue' is out of the int64 range: '{2**63}'"),
        (3, "R_FIELD", attr, f"'{attr}.intValue' is out of the int64 range: '1{'0' * 400}'"),
        (
            4,
            "R_FIELD",
            f"{where}.startTimeUnixNano",
            f"'{where}.startTimeUnixNano' is out of range: '1{'0' * 30}' "
            "(a fixed64 count of nanoseconds, 0 to 2**64-1)",
        ),
        (
            5,
            "R_FIELD",
            f"{where}.startTimeUnixNano",
            f"'{where}.startTimeUnixNano' is out of range: '-5' (a fixed64 count of nanoseconds, 0 to 2**64-1)",
        ),
    ]
