"""The miner's vectorised ISO parser agrees with the checker's `parse_instant` on every string."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.rules.dates import MODES, parse_instant, parse_iso

_d2 = st.integers(0, 99).map(lambda n: f"{n:02d}")
_date = st.builds(lambda y, m, d: f"{y:04d}-{m}-{d}", st.integers(1900, 2100), _d2, _d2)
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


@settings(max_examples=120, deadline=None)
@given(st.lists(st.one_of(_iso, st.text(max_size=12)), min_size=1, max_size=40))
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
