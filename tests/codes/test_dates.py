"""The vectorised ISO parser (the miner's, and the corpus checker's DATE_ORDER) agrees with the per-call
checker's `parse_instant` on every string, and its byte-by-byte reading with the pattern."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.dates import MODES, parse_instant, parse_iso, parse_iso_pattern

_d2 = st.integers(0, 99).map(lambda n: f"{n:02d}")
#: years the byte-by-byte reader reads (1700-2200) and the far ones it leaves to the pattern
_year = st.one_of(
    st.integers(1900, 2100), st.sampled_from([0, 1, 999, 1600, 1677, 1699, 1700, 2200, 2201, 2262, 9999])
)
_date = st.builds(lambda y, m, d: f"{y:04d}-{m}-{d}", _year, _d2, _d2)
_time = st.builds(
    lambda sep, h, mi, s, frac: f"{sep}{h}:{mi}{s}{frac}",
    st.sampled_from(["T", " ", "t"]),
    _d2,
    _d2,
    st.sampled_from(["", ":00", ":59", ":60", ":07"]),
    st.sampled_from(["", ".5", ",123456789", ".1234567891"]),
)
_zone = st.sampled_from(["", "Z", "z", "+00:00", "-05:30", "+0530", "+05", "+24:00", "+05:60", "-23:59"])
_iso = st.builds(lambda d, t, z: d + t + z, _date, st.one_of(st.just(""), _time), _zone)


def _spell(t: Any, form: int, sep: str, digits: int, zone: str) -> str:
    """A valid datetime `t` in one of the spellings the pattern accepts."""
    day = f"{t.year:04d}-{t.month:02d}-{t.day:02d}"
    if form == 0:
        return day
    hm = f"{day}{sep}{t.hour:02d}:{t.minute:02d}"
    text = hm if form == 1 else f"{hm}:{t.second:02d}"
    if form == 3:
        text += "." + f"{t.microsecond:06d}{t.microsecond % 997:03d}"[:digits]
    return text + zone


#: Valid values, mostly (the generated fields above are mostly out of range), in every spelling and zone.
_valid = st.builds(
    _spell,
    st.datetimes(min_value=dt.datetime(1650, 1, 1), max_value=dt.datetime(2300, 12, 31)),
    st.integers(0, 3),
    st.sampled_from(["T", " "]),
    st.integers(1, 9),
    st.sampled_from(["", "Z", "z", "+00:00", "-05:30", "+0530", "-2359", "+23:59", "-00:01"]),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.one_of(_valid, _iso, st.text(max_size=12)), min_size=1, max_size=40))
def test_parse_iso_agrees_with_the_checker(values: list[str]) -> None:
    got = parse_iso(pl.DataFrame({"s": values}), "s").select("mode", "us", "ns")
    for v, (mode, us, ns) in zip(values, got.iter_rows(), strict=True):
        theirs = {m: parse_instant(v, m) for m in MODES}
        parsed = [m for m, x in theirs.items() if x is not None]
        if mode == 0:
            assert parsed == [], v
        else:
            assert parsed == [MODES[mode - 1]], v
            assert theirs[MODES[mode - 1]] == us * 1000 + ns, v


#: Bytes the plain spellings are made of, to build near misses of them (a digit for a separator, a
#: missing or extra digit, a zone cut short) as well as arbitrary text.
_NEAR = st.text(alphabet=st.sampled_from("0123456789-:T tZz+.,٣é"), min_size=8, max_size=36)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_valid, _iso, _NEAR, st.text(max_size=40), st.none()), min_size=1, max_size=40))
def test_plain_reading_equals_the_pattern(values: list[str | None]) -> None:
    """`parse_iso` (plain spellings read byte by byte) gives exactly `parse_iso_pattern`'s frame, on
    slices too (an Arrow offset)."""
    df = pl.DataFrame({"s": values}, schema={"s": pl.String})
    want = parse_iso_pattern(df, "s", "p_")
    assert parse_iso(df, "s", "p_").equals(want)
    assert parse_iso(df.slice(1), "s", "p_").equals(want.slice(1))


def test_plain_spellings_are_read_without_the_pattern() -> None:
    """The common spellings take the byte-by-byte path (what makes it fast), the far years do not."""
    from output_contracts.codes.dates import iso_fields

    plain = ["2024-05-01", "2024-05-01T10:00", "2024-05-01 10:00:59.5", "2024-05-01T10:00:00,123456789-01:30"]
    plain += ["2024-05-01T10:00:00Z", "2024-05-01T10:00z", "2024-05-01T10:00:00+0530"]
    other = [
        "0000-01-01",
        "2201-01-01",
        "2024-05-01T24:00",
        "2024-02-30",
        "2024-05-01T10:00:00.1234567891Z",
        "x",
    ]
    f = iso_fields(pl.Series(plain + other))
    assert f.fast.tolist() == [True] * len(plain) + [False] * len(other)
    assert f.mode[: len(plain)].tolist() == [1, 2, 2, 3, 3, 3, 3]


def test_parse_instant_modes() -> None:
    assert parse_instant("2026-03-01T12:00+02:00", "aware") == parse_instant("2026-03-01T10:00Z", "aware")
    assert parse_instant("2026-03-01T10:00Z", "naive") is None
    assert parse_instant("2026-02-29", "date") is None
    assert parse_instant(20260301, "date") is None
    assert parse_instant("1970-01-02", "date") == 86_400 * 10**9
