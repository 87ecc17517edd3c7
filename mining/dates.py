"""ISO-8601 dates and date-times as polars expressions: the one parser the miner and checker share.

Accepted forms (the common subset of ISO 8601 / RFC 3339 that tools emit):

- `date`:  `YYYY-MM-DD`
- `naive`: `YYYY-MM-DD[T| ]hh:mm[:ss[.fraction]]` with no zone
- `aware`: the same followed by `Z` or `±hh:mm` / `±hhmm`

Anything else (week dates, ordinals, a lowercase `t`, an offset without minutes, out-of-range fields
such as Feb 30, hour 24 or offset minute 60, leap seconds) does not parse — the same set the checker's
`parse_instant` accepts. Naive and aware values are never compared with each other: a rule fixes its mode (`tz`), and
a value that does not parse in the rule's mode is a violation. Values are compared as
(microseconds since 1970-01-01 in UTC for aware, wall-clock for naive and date; then the remaining
nanoseconds), so fractions down to 1 ns order correctly.
"""

from __future__ import annotations

import polars as pl

ISO_RE = (
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
    r"(Z|z|[+-]\d{2}:?\d{2})?)?$"
)
MODES = ("date", "naive", "aware")
MODE_CODE = {"date": 1, "naive": 2, "aware": 3}


def parse_iso(expr: pl.Expr) -> pl.Expr:
    """A struct {mode: UInt8 (0 = does not parse, 1 date, 2 naive, 3 aware), us: Int64, ns: Int32}.

    `us` is microseconds since the epoch (UTC for aware values); `ns` the nanoseconds below that.
    Null input gives mode 0.
    """
    g = expr.str.extract_groups(ISO_RE)
    y, mo, d = g.struct.field("1"), g.struct.field("2"), g.struct.field("3")
    hh, mi, ss = g.struct.field("4"), g.struct.field("5"), g.struct.field("6")
    frac, zone = g.struct.field("7"), g.struct.field("8")
    base = pl.concat_str(
        y, pl.lit("-"), mo, pl.lit("-"), d, pl.lit(" "), hh.fill_null("00"), pl.lit(":"),
        mi.fill_null("00"), pl.lit(":"), ss.fill_null("00"),
    ).str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us")  # fmt: skip
    digits = frac.fill_null("").str.pad_end(9, "0")
    frac_us = digits.str.slice(0, 6).cast(pl.Int64, strict=False).fill_null(0)
    frac_ns = digits.str.slice(6, 3).cast(pl.Int32, strict=False).fill_null(0)
    zone_min = (
        pl.when(zone.is_null() | zone.is_in(["Z", "z"]))
        .then(pl.lit(0, pl.Int64))
        .otherwise(
            (
                zone.str.slice(1, 2).cast(pl.Int64, strict=False) * 60
                + zone.str.slice(-2, 2).cast(pl.Int64, strict=False)
            )
            * pl.when(zone.str.starts_with("-")).then(-1).otherwise(1)
        )
    )
    zone_ok = (
        zone.is_null()
        | zone.is_in(["Z", "z"])
        | (
            (zone.str.slice(1, 2).cast(pl.Int64, strict=False) < 24)
            & (zone.str.slice(-2, 2).cast(pl.Int64, strict=False) < 60)
        )
    )
    us = base.dt.epoch("us") + frac_us - zone_min * 60_000_000
    mode = (
        pl.when(base.is_null() | ~zone_ok.fill_null(False))
        .then(pl.lit(0, pl.UInt8))
        .when(hh.is_null())
        .then(pl.lit(1, pl.UInt8))
        .when(zone.is_null())
        .then(pl.lit(2, pl.UInt8))
        .otherwise(pl.lit(3, pl.UInt8))
    )
    return pl.struct(mode.fill_null(0).alias("mode"), us.alias("us"), frac_ns.alias("ns"))


def le(a_us: pl.Expr, a_ns: pl.Expr, b_us: pl.Expr, b_ns: pl.Expr) -> pl.Expr:
    """A <= B on parsed (us, ns) pairs."""
    return (a_us < b_us) | ((a_us == b_us) & (a_ns <= b_ns))


def lt(a_us: pl.Expr, a_ns: pl.Expr, b_us: pl.Expr, b_ns: pl.Expr) -> pl.Expr:
    """A < B on parsed (us, ns) pairs."""
    return (a_us < b_us) | ((a_us == b_us) & (a_ns < b_ns))
