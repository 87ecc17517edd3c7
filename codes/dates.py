"""ISO-8601 dates and date-times: the one module for the parsing the miner and the checker share.

`parse_iso` (polars: mode and instant of every string of a column; the miner's, and the corpus
checker's DATE_ORDER) and `parse_instant` (one value, the checker's per-call path) accept exactly the
same strings and give the same instants; property tests compare them. `parse_iso` reads the plain
spellings byte by byte (`iso_fields`) and leaves the rest to the pattern (`parse_iso_pattern`).

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

import datetime as _dt
import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from output_contracts.codes.date_order import TZ_MODES as TZ_MODES
from output_contracts.frames import StringBytes

ISO_RE = (
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
    r"(Z|z|[+-]\d{2}:?\d{2})?)?$"
)
MODES = ("date", "naive", "aware")


def _int(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.Int64, strict=False)


#: The longest plain spelling `iso_fields` reads: `YYYY-MM-DDThh:mm:ss.fffffffff+hh:mm`.
_PLAIN_MAX = 35
#: The years `iso_fields` reads (their instants in nanoseconds fit an Int64, 1678-2262, and no year is
#: below 1); every other year goes to the pattern.
_PLAIN_YEARS = (1700, 2200)
_DIGIT_WEIGHT = 10 ** np.arange(8, -1, -1, dtype=np.int64)


@dataclass(frozen=True)
class IsoFields:
    """What `iso_fields` read, one entry per string: `fast` whether it read it (the others are left to the
    pattern), and for those `mode` (1 date, 2 naive, 3 aware), `days` since 1970-01-01, `secs` of the
    time of day, `frac` nanoseconds below the second, `zone` the offset in seconds (to subtract)."""

    fast: np.ndarray
    mode: np.ndarray
    days: np.ndarray
    secs: np.ndarray
    frac: np.ndarray
    zone: np.ndarray


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of valid dates with y >= 1 (Howard Hinnant's algorithm, as `parse_iso_pattern`)."""
    yy = y - (m <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def iso_fields(strings: pl.Series) -> IsoFields:
    """The fields of every string of `strings` that is a plain ISO-8601 value, read byte by byte.

    Read: `YYYY-MM-DD`, optionally `T` or space and `hh:mm[:ss[.f...]]` (1-9 fraction digits
    after `.` or `,`, only after seconds), optionally `Z`, `z`, `±hh:mm` or `±hhmm`: exactly the pattern's
    grammar, whose parse is unique; with a valid calendar date in `_PLAIN_YEARS`, hour <= 23, minute and
    second <= 59, zone hour <= 23 and minute <= 59. Anything else is not `fast` and goes to the pattern,
    which then decides it (so the two agree by construction wherever this reads a string; a property test
    compares them on arbitrary text). Why: the pattern's regex costs about 1 us a string, this reading
    about half of that, and the date columns of a corpus are millions of such strings."""
    b = StringBytes.of(strings)
    n = len(b.lengths)
    z = np.zeros(n, dtype=np.int64)
    out = IsoFields(np.zeros(n, dtype=bool), np.zeros(n, dtype=np.uint8), z, z.copy(), z.copy(), z.copy())
    # (no ASCII test: the grammar names every byte of a string it reads, each an ASCII character)
    rows = np.flatnonzero((b.lengths >= 10) & (b.lengths <= _PLAIN_MAX))
    data, last = b.data, b.data.size - 1
    start = b.offsets[rows]
    # the date: dashes first (most strings that are not dates leave here), then digits, then the calendar
    keep = (data[start + 4] == ord("-")) & (data[start + 7] == ord("-"))
    rows, start = rows[keep], start[keep]
    ln = b.lengths[rows]

    def byte(at: np.ndarray | int) -> np.ndarray:
        """The byte at `at` of each string (at a string's end or past it: something, masked by length)."""
        return data[np.minimum(start + at, last)]

    def digit(at: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        d = byte(at) - np.uint8(48)  # wraps below "0": a digit exactly when < 10
        return d < 10, d.astype(np.int64)

    def number(*at: int) -> tuple[np.ndarray, np.ndarray]:
        ok, value = np.ones(rows.size, dtype=bool), np.zeros(rows.size, dtype=np.int64)
        for k in at:
            is_d, d = digit(k)
            ok &= is_d
            value = value * 10 + d
        return ok, value

    y_ok, y = number(0, 1, 2, 3)
    mo_ok, mo = number(5, 6)
    d_ok, d = number(8, 9)
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    dim = np.where(mo == 2, 28 + leap, 30 + (mo + mo // 8) % 2)
    ok = y_ok & mo_ok & d_ok & (y >= _PLAIN_YEARS[0]) & (y <= _PLAIN_YEARS[1])
    ok &= (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= dim)
    date_only = ln == 10
    sep, colon1 = byte(10), byte(13)
    hm_ok, hm = number(11, 12, 14, 15)
    timed = (ln >= 16) & ((sep == ord("T")) | (sep == ord(" "))) & (colon1 == ord(":")) & hm_ok
    hh, mi = hm // 100, hm % 100
    s_ok, ss = number(17, 18)
    has_sec = timed & (ln >= 19) & (byte(16) == ord(":")) & s_ok
    ss = np.where(has_sec, ss, 0)
    dot = byte(19)
    has_frac = has_sec & (ln >= 21) & ((dot == ord(".")) | (dot == ord(",")))
    # the fraction: the run of digits from byte 20, at most 9 (a tenth digit leaves the rest unread)
    run = has_frac.copy()
    nfrac = np.zeros(rows.size, dtype=np.int64)
    frac = np.zeros(rows.size, dtype=np.int64)
    for k in range(9):
        if not run.any():  # no string's run reaches this digit (most values have no fraction at all)
            break
        is_d, dk = digit(20 + k)
        run &= is_d & (20 + k < ln)
        nfrac += run
        frac += np.where(run, dk * _DIGIT_WEIGHT[k], 0)
    has_frac &= nfrac > 0
    pos = np.where(has_frac, 20 + nfrac, np.where(has_sec, 19, 16))
    rest = ln - pos
    lead = byte(pos)
    zulu = (rest == 1) & ((lead == ord("Z")) | (lead == ord("z")))
    signed = (lead == ord("+")) | (lead == ord("-"))
    (d1, v1), (d2, v2), (d3, v3), (d4, v4), (d5, v5) = (digit(pos + k) for k in range(1, 6))
    oh = v1 * 10 + v2
    colon = signed & (rest == 6) & d1 & d2 & (byte(pos + 3) == ord(":")) & d4 & d5  # ±hh:mm
    bare = signed & (rest == 5) & d1 & d2 & d3 & d4  # ±hhmm
    om = np.where(colon, v4 * 10 + v5, v3 * 10 + v4)
    offset = (colon | bare) & (oh <= 23) & (om <= 59)
    zoned = zulu | offset
    time_ok = timed & (hh <= 23) & (mi <= 59) & (ss <= 59) & ((rest == 0) | zoned)
    fast = ok & (date_only | time_ok)
    timed_fast = fast & ~date_only
    sign = np.where(lead == ord("-"), -1, 1)
    out.fast[rows] = fast
    out.mode[rows] = np.where(date_only, 1, np.where(zoned, 3, 2)) * fast
    out.days[rows] = np.where(fast, _days_from_civil(y, mo, d), 0)
    out.secs[rows] = np.where(timed_fast, hh * 3600 + mi * 60 + ss, 0)
    out.frac[rows] = np.where(timed_fast, frac, 0)
    out.zone[rows] = np.where(timed_fast & offset, sign * (oh * 3600 + om * 60), 0)
    return out


def parse_iso(frame: pl.DataFrame, col: str, prefix: str = "") -> pl.DataFrame:
    """`frame` with three columns added: `{prefix}mode` (UInt8: 0 = does not parse, 1 date, 2 naive,
    3 aware), `{prefix}us` (Int64 microseconds since the epoch, UTC for aware values) and `{prefix}ns`
    (Int32 nanoseconds below that) for the strings of `col` (null gives mode 0).

    The plain spellings (`iso_fields`) are read byte by byte; the rest by the pattern
    (`parse_iso_pattern`), which decides every string alone and is held equal to this by a test."""
    f = iso_fields(frame.get_column(col))
    if not f.fast.any():
        return parse_iso_pattern(frame, col, prefix)
    us = pl.Series((f.days * 86_400 + f.secs - f.zone) * 1_000_000 + f.frac // 1000, dtype=pl.Int64)
    ns = pl.Series(f.frac % 1000, dtype=pl.Int32)
    mode = pl.Series(f.mode, dtype=pl.UInt8)
    slow = np.flatnonzero(~f.fast)
    if slow.size:
        idx = pl.Series(slow, dtype=pl.UInt32)
        got = parse_iso_pattern(frame.select(pl.col(col).gather(idx)), col)
        mode = mode.scatter(idx, got.get_column("mode"))
        us = us.scatter(idx, got.get_column("us"))
        ns = ns.scatter(idx, got.get_column("ns"))
    return frame.with_columns(mode.alias(f"{prefix}mode"), us.alias(f"{prefix}us"), ns.alias(f"{prefix}ns"))


def parse_iso_pattern(frame: pl.DataFrame, col: str, prefix: str = "") -> pl.DataFrame:
    """`parse_iso` by the pattern alone, for every string of `col`.

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


# ------------------------------------------------------------------------------------------------------
# The per-call checker's form: one value in one mode (`parse_instant`).


_DATE_RE = r"(\d{4})-(\d{2})-(\d{2})"
_TIME_RE = r"[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
_TZ_RE = r"(Z|z|[+-]\d{2}:?\d{2})"
DATE_PATTERNS: dict[str, str] = {
    "date": f"^{_DATE_RE}$",
    "naive": f"^{_DATE_RE}{_TIME_RE}$",
    "aware": f"^{_DATE_RE}{_TIME_RE}{_TZ_RE}$",
}
_COMPILED = {k: re.compile(v) for k, v in DATE_PATTERNS.items()}
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_NS = 1_000_000_000


def parse_instant(value: Any, tz: str) -> int | None:
    """Nanoseconds since 1970-01-01 (UTC for `aware`) of an ISO-8601 value in mode `tz`, or None.

    Modes: `date` = `YYYY-MM-DD`; `naive` = date, `T` or space, `HH:MM[:SS[.fraction]]` with no zone;
    `aware` = the same with `Z` or `±HH:MM` (`±HHMM`). Anything else — another kind, a bad calendar
    date, hour > 23 — does not parse, which DATE_ORDER counts as a violation.
    """
    if not isinstance(value, str):
        return None
    return _parse_str_instant(value, tz)


#: The commonest spellings (ASCII digits, whole seconds, `Z` for aware): a string that matches one of
#: these matches the mode's pattern with no fraction and a `Z` zone, so both readings give the same
#: instant (a property test holds them together).
_PLAIN = {
    "date": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    "naive": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}"),
    "aware": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}[Zz]"),
}
#: The length of each mode's plain spelling.
_PLAIN_LEN = {"date": 10, "naive": 19, "aware": 20}
_DAY_NS = 86_400 * _NS
#: The pieces of plain spellings already read, each to its nanoseconds (False: the piece is spelled
#: plainly but out of range: Feb 30, hour 24, second 60): `YYYY-MM-DD` heads to days since the epoch,
#: `Thh:mm` (or ` hh:mm`) to the time of day, `:ss` (naive) or `:ssZ` (aware) to seconds. Only pieces of
#: strings that matched `_PLAIN` enter, so a string of the plain length whose three pieces are all here is
#: itself plain. Heads are few (dates), clocks at most 2 x 1,440, seconds at most 180: bounded all the same.
_DAYS: dict[str, int | bool] = {}
_CLOCKS: dict[str, int | bool] = {}
_PIECES_MAX = 1 << 14


def _plain_instant(value: str, tz: str) -> int | None:
    """`_read_instant` of a string that fully matches `_PLAIN[tz]`; its pieces are kept in the memos."""
    head = value[:10]
    days = _DAYS.get(head)
    if days is None:
        try:
            days = _dt.date(int(value[:4]), int(value[5:7]), int(value[8:10])).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            days = False
        if len(_DAYS) >= _PIECES_MAX:
            _DAYS.clear()
        _DAYS[head] = days
    if tz == "date":
        return None if days is False else days * _DAY_NS
    if len(_CLOCKS) >= _PIECES_MAX:
        _CLOCKS.clear()
    h, mi, se = int(value[11:13]), int(value[14:16]), int(value[17:19])
    hm = _CLOCKS[value[10:16]] = False if h > 23 or mi > 59 else (h * 3600 + mi * 60) * _NS
    sec = _CLOCKS[value[16:]] = False if se > 59 else se * _NS
    if days is False or hm is False or sec is False:
        return None
    return days * _DAY_NS + hm + sec


@functools.lru_cache(maxsize=1 << 16)
def _parse_str_instant(value: str, tz: str) -> int | None:
    """`parse_instant` of a string (cached: a pure function, and dates repeat across calls)."""
    return str_instant(value, tz)


def str_instant(value: str, tz: str) -> int | None:
    """`parse_instant` of a string, not cached (the compiled checker keeps its own memo).

    A string of the plain length whose pieces (`_DAYS`, `_CLOCKS`) were all read before is answered by
    three lookups: a fifth to a third of the cost of reading it afresh (timestamps are mostly new
    strings, but their dates, minutes and seconds repeat). Other strings: a plain one is read by slicing
    (`_plain_instant`, which keeps its pieces), the rest by the mode's full pattern."""
    n = _PLAIN_LEN[tz]
    if len(value) == n:
        days = _DAYS.get(value[:10])
        if days is not None:
            if n == 10:
                return None if days is False else days * _DAY_NS
            hm = _CLOCKS.get(value[10:16])
            if hm is not None:
                sec = _CLOCKS.get(value[16:])
                if sec is not None:
                    if days is False or hm is False or sec is False:
                        return None
                    return days * _DAY_NS + hm + sec
        if _PLAIN[tz].fullmatch(value) is not None:
            return _plain_instant(value, tz)
    return _read_instant(value, tz)


def _read_instant(value: str, tz: str) -> int | None:
    """`parse_instant` of a string by the mode's full pattern."""
    m = _COMPILED[tz].match(value)
    if m is None:
        return None
    g = m.groups()
    try:
        days = _dt.date(int(g[0]), int(g[1]), int(g[2])).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    ns = days * 86_400 * _NS
    if tz == "date":
        return ns
    h, mi, se = int(g[3]), int(g[4]), int(g[5] or 0)
    if h > 23 or mi > 59 or se > 59:
        return None
    ns += (h * 3600 + mi * 60 + se) * _NS + int((g[6] or "").ljust(9, "0"))
    if tz == "aware":
        off = g[7]
        if off not in ("Z", "z"):
            digits = off[1:].replace(":", "")
            oh, om = int(digits[:2]), int(digits[2:])
            if oh > 23 or om > 59:
                return None
            sign = 1 if off[0] == "+" else -1
            ns -= sign * (oh * 3600 + om * 60) * _NS
    return ns


def classify(value: Any) -> tuple[str, int] | None:
    """(mode, instant) of a string that is an ISO-8601 date or date-time in one of the modes (tried in
    the order date, naive, aware), else None: what fault injection and the date heuristics read."""
    if not isinstance(value, str):
        return None
    for mode in ("date", "naive", "aware"):
        ns = _parse_str_instant(value, mode)
        if ns is not None:
            return mode, ns
    return None
