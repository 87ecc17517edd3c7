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


def _int(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.Int64, strict=False)


def parse_iso(frame: pl.DataFrame, col: str, prefix: str = "") -> pl.DataFrame:
    """`frame` with three columns added: `{prefix}mode` (UInt8: 0 = does not parse, 1 date, 2 naive,
    3 aware), `{prefix}us` (Int64 microseconds since the epoch, UTC for aware values) and `{prefix}ns`
    (Int32 nanoseconds below that) for the strings of `col` (null gives mode 0).

    One regex extracts the fields (materialised once: struct fields of an expression would re-run it);
    the calendar is integer arithmetic (days from the civil date, Howard Hinnant's algorithm) with
    explicit range checks — an order of magnitude faster than formatting and re-parsing every value.
    """
    g = [f"_iso{i}" for i in range(1, 9)]
    x = frame.with_columns(
        pl.col(col).str.extract_groups(ISO_RE).struct.rename_fields(g).alias("_iso")
    ).unnest("_iso")
    y, mo, d = (_int(pl.col(c)) for c in g[:3])
    hh_s, zone = pl.col(g[3]), pl.col(g[7])
    hh, mi, ss = (_int(pl.col(c)).fill_null(0) for c in g[3:6])
    digits = pl.col(g[6]).fill_null("").str.pad_end(9, "0")
    frac_us = _int(digits.str.slice(0, 6)).fill_null(0)
    frac_ns = digits.str.slice(6, 3).cast(pl.Int32, strict=False).fill_null(0)
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    dim = pl.when(mo == 2).then(28 + leap.cast(pl.Int64)).otherwise(30 + (mo + mo // 8) % 2)
    valid = (y >= 1) & mo.is_between(1, 12) & (d >= 1) & (d <= dim) & (hh <= 23) & (mi <= 59) & (ss <= 59)
    yy = y - (mo <= 2).cast(pl.Int64)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (mo + pl.when(mo > 2).then(-3).otherwise(9)) + 2) // 5 + d - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    zulu = zone.is_null() | zone.is_in(["Z", "z"])
    oh, om = _int(zone.str.slice(1, 2)), _int(zone.str.slice(-2, 2))
    sign = pl.when(zone.str.starts_with("-")).then(-1).otherwise(1)
    zone_min = pl.when(zulu).then(pl.lit(0, pl.Int64)).otherwise(sign * (oh * 60 + om))
    zone_ok = zulu | ((oh <= 23) & (om <= 59))
    us = (days * 86_400 + hh * 3600 + mi * 60 + ss - zone_min * 60) * 1_000_000 + frac_us
    mode = (
        pl.when(y.is_null() | ~(valid & zone_ok).fill_null(False))
        .then(pl.lit(0, pl.UInt8))
        .when(hh_s.is_null())
        .then(pl.lit(1, pl.UInt8))
        .when(zone.is_null())
        .then(pl.lit(2, pl.UInt8))
        .otherwise(pl.lit(3, pl.UInt8))
    )
    return (
        x.with_columns(mode.alias(f"{prefix}mode"), us.alias(f"{prefix}us"), frac_ns.alias(f"{prefix}ns"))
        .with_columns(pl.when(pl.col(f"{prefix}mode") > 0).then(pl.col(f"{prefix}us")).alias(f"{prefix}us"))
        .drop(g)
    )


def le(a_us: pl.Expr, a_ns: pl.Expr, b_us: pl.Expr, b_ns: pl.Expr) -> pl.Expr:
    """A <= B on parsed (us, ns) pairs."""
    return (a_us < b_us) | ((a_us == b_us) & (a_ns <= b_ns))


def lt(a_us: pl.Expr, a_ns: pl.Expr, b_us: pl.Expr, b_ns: pl.Expr) -> pl.Expr:
    """A < B on parsed (us, ns) pairs."""
    return (a_us < b_us) | ((a_us == b_us) & (a_ns < b_ns))
