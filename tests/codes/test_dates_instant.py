"""`dates.str_instant`'s fast readings (the commonest spelling read by slicing, and answered from the
memos of its pieces once they were read) give what the mode's full pattern gives (`_read_instant`) on
every string: near-dates built character by character (digits, non-ASCII digits, separators, signs,
spaces, zones at every place), real date-times, and strings put together from pieces read before."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.dates import TZ_MODES, _read_instant, parse_instant, str_instant

#: What may stand at each place of `YYYY-MM-DDThh:mm:ssZ`: the expected character, a digit, or an odd one.
ODD = "0123456789-:T tZz+.,\u0660\u0967\uff10\u00b2_ \x00"


@st.composite
def near_dates(draw: st.DrawFn) -> str:
    """A real date-time of the commonest spelling with up to three places changed, cut or extended."""
    d = draw(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)))
    v = list(d.replace(microsecond=0).isoformat() + "Z")
    for i, c in draw(st.lists(st.tuples(st.integers(0, 19), st.sampled_from(ODD)), max_size=3)):
        v[i] = c
    cut = draw(st.sampled_from([20, 20, 20, 19, 19, 10, 21, 18]))
    return "".join(v)[:cut] + draw(st.sampled_from(["", "", "", "Z", "0", ".5"]))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["2024-02-29", "2023-02-29", "1999-12-31", "2024-13-01", "0000-01-01"]), min_size=1
    ),
    st.lists(st.sampled_from(["T23:59", " 00:00", "T24:00", "T12:60", "t10:00", "T1\u0669:00"]), min_size=1),
    st.lists(st.sampled_from([":59Z", ":60Z", ":00z", ":59", ":60", ":0Z", "Z:00"]), min_size=1),
)
def test_strings_of_pieces_read_before(heads: list[str], clocks: list[str], secs: list[str]) -> None:
    """Every string made of pieces that earlier strings filled the memos with (valid or out of range
    pieces, the two modes' second pieces, pieces that are not plain) reads as the pattern reads it."""
    made = [h + c + s for h in heads for c in clocks for s in secs] + heads
    for _ in range(2):  # the second time, the memos hold every plain piece
        for v in made:
            for tz in TZ_MODES:
                assert str_instant(v, tz) == _read_instant(v, tz), (v, tz)


def test_fast_reading_examples() -> None:
    """The fast reading's own cases: taken, refused by the calendar, not its spelling."""
    assert str_instant("2024-02-29T23:59:59Z", "aware") == _read_instant("2024-02-29T23:59:59Z", "aware")
    assert str_instant("2024-02-29 23:59:59", "naive") == 1709251199 * 10**9
    for v in ("2023-02-29T23:59:59Z", "2024-02-29T24:00:00Z", "2024-02-29T23:59:60Z", "2024-02-29T23:59:59z"):
        assert str_instant(v, "aware") == _read_instant(v, "aware")
    assert str_instant("2024-02-29T23:59:59z", "aware") is not None
    # the full pattern's `\\d` reads any decimal digit: a non-ASCII one is left to it
    assert str_instant("2024-02-29T23:59:5\u0669Z", "aware") == _read_instant("2024-02-29T23:59:59Z", "aware")


@settings(max_examples=400, deadline=None)
@given(near_dates())
def test_near_dates_read_as_the_pattern_reads_them(v: str) -> None:
    for tz in TZ_MODES:
        assert str_instant(v, tz) == _read_instant(v, tz), (v, tz)


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from(["T", " "]),
    st.sampled_from(["Z", "z", "", "+00:00", "-0130"]),
)
def test_real_date_times(d: dt.datetime, sep: str, zone: str) -> None:
    v = d.replace(microsecond=0).isoformat(sep=sep) + zone
    for tz in TZ_MODES:
        want = _read_instant(v, tz)
        assert str_instant(v, tz) == want, (v, tz)
        assert parse_instant(v, tz) == want, (v, tz)
