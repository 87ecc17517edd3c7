"""Incident faults: silent failures transcribed from published production incidents and documented API
behaviour (docs/faults.md lists each with its source), planted by value shape.

Unlike the basic kinds (`output_contracts.audit.fault_targets`), an incident never looks at a contract set or
at statistics of the input: its targets are chosen by the *shape of a value alone* (an id-like string,
an ISO date-time, a money-like float, a non-empty list), never by tool or field name, so a detection
rate on them measures the contracts against faults nobody tuned them to. Each kind is one `Incident`:
`targets(result)` lists the concrete paths it can change, `apply(value, rng, others)` the new value
(`others`: earlier results of the same tool, for `other_entity`).

Some kinds are out of reach of any per-call output contract by construction (`local_time_as_utc`: a
valid time, shifted; `wrong_currency` where several currencies are legal): they stay in the suite so
that the reported rate is honest about where the line falls.
"""

from __future__ import annotations

import copy
import functools
import itertools
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.audit.fault_targets import Walked, walk
from output_contracts.codes.dates import classify
from output_contracts.traces.pointers import escape_token

#: What an HTTP proxy or CDN serves in place of the API's JSON (cached error page, status 200).
HTML_ERROR_PAGE = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    "<body><h1>502 Bad Gateway</h1><p>The upstream server returned an invalid response.</p></body></html>"
)
#: A JSON error envelope delivered with a success status.
ERROR_ENVELOPE = {"error": {"code": 503, "message": "Service Unavailable", "retry_after": 30}}
INT32_MAX = 2_147_483_647
#: UTF-8 bytes of accented vowels read as Latin-1 (`é` -> `Ã©`): what a vowel becomes in a mojibake name.
MOJIBAKE = {"a": "Ã¡", "e": "Ã©", "i": "Ã\u00ad", "o": "Ã³", "u": "Ãº"}
#: ISO 4217 codes of the most traded currencies: a string equal to one of them is a currency code.
CURRENCIES = ("USD", "EUR", "JPY", "GBP", "CNY", "AUD", "CAD", "CHF", "HKD", "SGD", "SEK", "KRW", "NOK")

_ID_LIKE = re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9#_:.\-]{4,40}$")
_ENUM_LIKE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(.*)$")
_ISO_TIME = re.compile(r"^T(\d{2}):(\d{2})(:\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_money(v: Any) -> bool:
    """A float with one or two decimals that is not whole: how a price or amount looks."""
    return isinstance(v, float) and v != int(v) and round(v, 2) == v and abs(v) < 1e7


def _is_date(v: Any) -> bool:
    """An ISO-8601 date, or a date-time with the `T` separator (the forms the date kinds rewrite)."""
    return isinstance(v, str) and _date_text(v)


@functools.lru_cache(maxsize=1 << 14)
def _date_text(v: str) -> bool:
    """`_is_date` of a string, kept: a result's strings are asked about by several kinds in turn."""
    if classify(v) is None:
        return False
    m = _ISO_DATE.match(v)
    return m is not None and (m.group(4) == "" or _ISO_TIME.match(m.group(4)) is not None)


def _is_datetime(v: Any) -> bool:
    if not _is_date(v):
        return False
    m = _ISO_DATE.match(v)
    return m is not None and _ISO_TIME.match(m.group(4)) is not None


def _is_zoned(v: Any) -> bool:
    if not _is_datetime(v):
        return False
    m = _ISO_DATE.match(v)
    t = _ISO_TIME.match(m.group(4)) if m else None
    return t is not None and t.group(4) is not None


def _is_text(v: Any) -> bool:
    """A plain string that is not a date (dates have their own kinds)."""
    return isinstance(v, str) and bool(v) and not _is_date(v)


def _is_id(v: Any) -> bool:
    return isinstance(v, str) and _ID_LIKE.match(v) is not None and not _is_date(v)


@dataclass(frozen=True)
class At:
    """The targets of a kind that changes one node: the concrete paths of the nodes whose value `pick`
    accepts (the root only when `root`)."""

    pick: Callable[[Any], bool]
    root: bool = False

    def __call__(self, result: Any) -> list[str]:
        return self.among(Walked(result).values())

    def among(self, nodes: Sequence[tuple[str, Any]]) -> list[str]:
        """The targets among a result's nodes (`Walked.values`: kinds asked about one result share
        one walk of it)."""
        return [p for p, v in nodes if (p or self.root) and self.pick(v)]


# --- new values ------------------------------------------------------------------------------------------


def _date_reformat(v: str) -> str:
    m = _ISO_DATE.match(v)
    assert m is not None
    y, mo, d, rest = m.groups()
    t = _ISO_TIME.match(rest)
    out = f"{mo}/{d}/{y}"
    if t is not None:
        out += f" {t.group(1)}:{t.group(2)}{t.group(3) or ''}"
    return out


def _epoch(v: str) -> str:
    m = _ISO_DATE.match(v)
    assert m is not None
    rest = m.group(4)
    t = _ISO_TIME.match(rest)
    if t is None:
        return "1970-01-01" + rest
    secs = re.sub("[0-9]", "0", t.group(3) or "")
    return f"1970-01-01T00:00{secs}{t.group(4) or ''}"


def _tz_change(v: str) -> str:
    m = _ISO_DATE.match(v)
    assert m is not None
    head = v[: len(v) - len(m.group(4))]
    t = _ISO_TIME.match(m.group(4))
    assert t is not None
    zone = t.group(4) or ""
    core = m.group(4)[: len(m.group(4)) - len(zone)]
    if zone == "Z":
        return head + core + "+00:00"
    return head + core + "Z" if zone in ("+00:00", "+0000") else head + core


def _shift_local(v: str) -> str:
    """The same wall-clock digits five hours earlier, zone label kept (local time written as UTC)."""
    from datetime import datetime, timedelta

    m = _ISO_DATE.match(v)
    assert m is not None
    t = _ISO_TIME.match(m.group(4))
    assert t is not None
    base = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(t.group(1)), int(t.group(2)))
    s = base - timedelta(hours=5)
    return f"{s.year:04d}-{s.month:02d}-{s.day:02d}T{s.hour:02d}:{s.minute:02d}{t.group(3) or ''}{t.group(4) or ''}"


def _shiftable(v: Any) -> bool:
    """A `T` date-time whose shifted value stays in years 1000–9999 (no over- or underflow)."""
    return _is_datetime(v) and "1001" <= v[:4] <= "9999"


def _id_format(v: str) -> str:
    squeezed = re.sub(r"[^A-Za-z0-9]", "", v)
    if squeezed != v:
        return squeezed
    cut = len(v) // 2
    return v[:cut] + "-" + v[cut:]


def _mojibake(v: str) -> str:
    return re.sub("[aeiou]", lambda m: MOJIBAKE[m.group(0)], v, count=1)


def _swap_case(v: str) -> str:
    out = v.swapcase()
    return out if out != v else v + "x"


@dataclass(frozen=True)
class Incident:
    """One incident kind: where it can go in a result, and what the value becomes."""

    kind: str
    what: str  # one line: what changes (docs/faults.md has the source)
    targets: Callable[[Any], list[str]]
    apply: Callable[[Any, random.Random, Sequence[Any]], Any]
    #: the other node a two-node kind changes (`swapped_fields`): result -> {target path: partner path},
    #: whose keys, sorted, are its `targets` (one pass gives both)
    partner: Callable[[Any], Mapping[str, str]] | None = None
    #: it serves another call's result (`other_entity`): no target unless one that differs exists
    needs_other: bool = False


def _string_pairs(result: Any) -> Iterator[tuple[str, str]]:
    """(a, b) paths of two different-valued plain strings of one object, a before b in document order
    (never by name: the targets of an object do not depend on what its keys are called)."""
    for p, _pat, v in walk(result):
        if isinstance(v, dict):
            keys = [k for k, x in v.items() if _is_text(x)]
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    if v[a] != v[b]:
                        yield f"{p}/{escape_token(a)}", f"{p}/{escape_token(b)}"


def _swap_partners(result: Any) -> dict[str, str]:
    """Each string that can swap, with its partner: the first later string of its object that differs."""
    seen: dict[str, str] = {}
    for a, b in _string_pairs(result):
        seen.setdefault(a, b)
    return seen


def _swap_targets(result: Any) -> list[str]:
    return sorted(_swap_partners(result))


def _duplicable(v: Any) -> bool:
    """A list with two neighbours that differ (so repeating one in place of the next changes it)."""
    return isinstance(v, list) and any(a != b for a, b in itertools.pairwise(v))


def _duplicate(v: list[Any], rng: random.Random, _o: Sequence[Any]) -> list[Any]:
    places = [i for i in range(len(v) - 1) if v[i] != v[i + 1]]
    i = places[rng.randrange(len(places))]
    return [*v[: i + 1], copy.deepcopy(v[i]), *v[i + 2 :]]


def _other_entity(v: Any, rng: random.Random, others: Sequence[Any]) -> Any:
    pool = [o for o in others if o != v]
    return copy.deepcopy(pool[rng.randrange(len(pool))])


INCIDENTS: tuple[Incident, ...] = (
    Incident(
        "html_error_page",
        "the whole result is a cached HTML error page (served with status 200)",
        lambda r: [""] if isinstance(r, dict | list) else [],
        lambda v, rng, o: HTML_ERROR_PAGE,
    ),
    Incident(
        "error_envelope",
        "the whole result is a JSON error envelope `{error: {code, message}}` (status 200)",
        lambda r: [""] if isinstance(r, dict) and "error" not in r else [],
        lambda v, rng, o: dict(ERROR_ENVELOPE),
    ),
    Incident(
        "other_entity",
        "the whole result is another entity's record of the same tool (a cache keyed too coarsely)",
        lambda r: [""] if isinstance(r, dict) else [],
        _other_entity,
        needs_other=True,
    ),
    Incident(
        "empty_list",
        "a non-empty list comes back empty (a deprecated or filtered endpoint)",
        At(lambda v: isinstance(v, list) and len(v) > 0, root=True),
        lambda v, rng, o: [],
    ),
    Incident(
        "duplicate_items",
        "a list repeats one of its items in place of the next (offset pagination drift)",
        At(_duplicable, root=True),
        _duplicate,
    ),
    Incident(
        "cents_units",
        "a money amount comes in cents (an integer 100× the amount)",
        At(_is_money),
        lambda v, rng, o: round(v * 100),
    ),
    Incident(
        "unit_x1000",
        "a quantity comes in a unit 1000× smaller (grams for kilograms, ms for s)",
        At(lambda v: _is_num(v) and v != 0 and abs(v) < 1e12),
        lambda v, rng, o: v * 1000 if isinstance(v, int) else round(v * 1000, 6),
    ),
    Incident(
        "int32_saturation",
        "an integer saturates at 2³¹−1",
        At(lambda v: isinstance(v, int) and not isinstance(v, bool) and v != INT32_MAX),
        lambda v, rng, o: INT32_MAX,
    ),
    Incident(
        "sentinel_minus_one",
        "a positive number becomes the sentinel −1 (unknown)",
        At(lambda v: _is_num(v) and v > 0),
        lambda v, rng, o: -1,
    ),
    Incident(
        "sentinel_zero",
        "a positive number becomes 0 (a default filled in for a missing value)",
        At(lambda v: _is_num(v) and v > 0),
        lambda v, rng, o: 0 if isinstance(v, int) else 0.0,
    ),
    Incident(
        "sentinel_text",
        "a string becomes the text `N/A`",
        At(lambda v: _is_text(v) and v != "N/A"),
        lambda v, rng, o: "N/A",
    ),
    Incident(
        "epoch_date",
        "a date or date-time becomes the Unix epoch (a null converted to 0), same format",
        At(lambda v: _is_date(v) and not v.startswith("1970-01-01")),
        lambda v, rng, o: _epoch(v),
    ),
    Incident(
        "date_reformat",
        "an ISO-8601 date comes as `MM/DD/YYYY` (a locale default)",
        At(_is_date),
        lambda v, rng, o: _date_reformat(v),
    ),
    Incident(
        "timezone_change",
        "a date-time's zone designator changes (`Z` ↔ `+00:00`, or an offset dropped)",
        At(_is_zoned),
        lambda v, rng, o: _tz_change(v),
    ),
    Incident(
        "local_time_as_utc",
        "a date-time is local time labelled with the original zone (shifted five hours)",
        At(_shiftable),
        lambda v, rng, o: _shift_local(v),
    ),
    Incident(
        "enum_case",
        "a lower-case categorical value comes upper-case",
        At(lambda v: isinstance(v, str) and _ENUM_LIKE.match(v) is not None),
        lambda v, rng, o: v.upper(),
    ),
    Incident(
        "char_padding",
        "a string comes blank-padded to a fixed width (a CHAR column)",
        At(lambda v: _is_text(v) and len(v) < 32),
        lambda v, rng, o: v.ljust(32),
    ),
    Incident(
        "id_case",
        "an identifier's letters change case",
        At(_is_id),
        lambda v, rng, o: _swap_case(v),
    ),
    Incident(
        "id_format",
        "an identifier loses its separators and prefix punctuation (or gains one)",
        At(_is_id),
        lambda v, rng, o: _id_format(v),
    ),
    Incident(
        "mojibake",
        "UTF-8 text decoded as Latin-1 (`é` → `Ã©`)",
        At(lambda v: _is_text(v) and re.search("[aeiou]", v) is not None),
        lambda v, rng, o: _mojibake(v),
    ),
    Incident(
        "truncated_string",
        "a string is cut to half its length (a column too narrow)",
        At(lambda v: _is_text(v) and len(v) >= 6),
        lambda v, rng, o: v[: len(v) // 2],
    ),
    Incident(
        "swapped_fields",
        "two string fields of one object swap values (a column mapping error)",
        _swap_targets,
        lambda v, rng, o: v,  # the swap is done by the caller with `partner`
        _swap_partners,
    ),
    Incident(
        "wrong_currency",
        "a currency code changes (the amount is left as it was)",
        At(lambda v: isinstance(v, str) and v in CURRENCIES),
        lambda v, rng, o: next(c for c in CURRENCIES if c != v),
    ),
)

INCIDENT_KINDS: tuple[str, ...] = tuple(i.kind for i in INCIDENTS)
BY_KIND: dict[str, Incident] = {i.kind: i for i in INCIDENTS}
