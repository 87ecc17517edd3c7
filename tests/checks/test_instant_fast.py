"""`dates.str_instant`'s fast reading (`datetime.fromisoformat` on the commonest spelling) gives what the
mode's full pattern gives (`_read_instant`) on every string: near-dates built character by character
(digits, non-ASCII digits, separators, signs, spaces, zones at every place) and real date-times."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.rules.dates import TZ_MODES, _read_instant, parse_instant, str_instant

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
