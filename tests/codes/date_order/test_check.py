"""DATE_ORDER on both checker paths: `check_call` and the corpus pass read and order dates alike, at the
edges of the calendar too. (One example of each form with its witness: tests/checks/test_checker.py and
the cases of tests/codes/date_order/.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import Rule, Support, rule_id
from tests.equivalence import agree_on

T = "lookup_inventory"


def rule(paths: list[str], params: dict[str, Any]) -> Rule:
    return Rule(
        rule_id(T, "DATE_ORDER", paths, params), T, "DATE_ORDER", tuple(paths), params, Support(412, 9)
    )


RULES = (
    rule(["/flights/*/dep", "/flights/*/arr"], {"tz": "aware"}),
    rule(["$args/start", "/until"], {"tz": "date"}),
)


#: (start argument, until) and (dep, arr) pairs at the edges of the calendar: year 0 (no such year for
#: `parse_instant`), years whose nanosecond instants overflow an Int64 (before 1678, after 2262), and
#: the years the byte-by-byte reader hands to the pattern (before 1700, after 2200).
FAR_DATES = [
    ("0000-01-01", "2026-03-01"),
    ("0001-01-01", "0001-01-02"),
    ("1600-02-29", "1600-03-01"),
    ("1677-12-31", "2026-03-01"),
    ("9999-12-31", "2026-03-01"),
    ("2262-04-12", "2262-04-11"),
    ("2199-12-31", "2201-01-01"),
]
FAR_TIMES = [
    ("9999-12-31T23:59:59Z", "2026-03-01T10:00Z"),
    ("1600-01-01T00:00Z", "2026-03-01T10:00Z"),
    ("2300-01-01T00:00+01:00", "2299-12-31T23:30Z"),
    ("0000-01-01T00:00Z", "2026-03-01T10:00Z"),
]


def test_date_order_far_years_agree_between_paths(tmp_path: Path) -> None:
    """The corpus checker's DATE_ORDER reads and orders dates exactly as `check_call` does at the edges
    of the calendar (it read instants as Int64 nanoseconds, which wrap past 2262, and accepted year 0)."""
    batch = [({"sku": "S1", "start": a}, {"until": b}) for a, b in FAR_DATES]
    batch += [({"sku": "S1"}, {"flights": [{"dep": a, "arr": b}]}) for a, b in FAR_TIMES]
    found = agree_on(RULES, batch, tmp_path)
    fired = sorted(found.select("line", "path").iter_rows())
    # year 0 does not parse; 9999 and 2262-04-12 come after their partners; 2300+01:00 is 2299-12-31T23:00Z
    assert fired == [
        (1, "/until"),
        (5, "/until"),
        (6, "/until"),
        (8, "/flights/0/arr"),
        (11, "/flights/0/arr"),
    ]
