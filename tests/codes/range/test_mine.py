"""RANGE mining: the decades around the clean values, 200 tasks.

The order world shared with UNIQUE's tests (tests/codes/range_unique_world.py) mined with the default
parameters first, then the bounds and the thresholds one at a time on small hand-made corpora, then the
merge properties (task parts, folds). Library bugs that were fixed are pinned at the end as regression
tests.

RANGE's number bounds, recomputed by hand in the comments below: max = the least power of ten strictly
above RANGE_MARGIN (3) × the largest value; min (every value > 0) = the greatest power of ten at or below
the least value / 3, else null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_of
from output_contracts.codes.mine_params import default_min_tasks
from output_contracts.codes.table import checks
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.range_unique_world import assert_world_set_is_valid, order_world
from tests.helpers import codes_of, few_tasks, find, mine_records, rules, sig, task_record


def test_world_range_rules(world_cs: ContractSet) -> None:
    got = {r.paths: r.params for r in rules(world_cs, "RANGE")}
    assert got == {
        # 12.5 .. 830: 12.5 / 3 = 4.17 -> 1; 3 * 830 = 2490 -> 10000
        ("/total",): {"of": "number", "min": 1, "max": 10000},
        # 0 .. 45: a zero leaves min open; 3 * 45 = 135 -> 1000
        ("/discount",): {"of": "number", "min": None, "max": 1000},
        # 1 .. 9: 1 / 3 = 0.33 -> 0.1; 3 * 9 = 27 -> 100
        ("/items/*/qty",): {"of": "number", "min": 0.1, "max": 100},
        # 2019 .. 2024: decade 2010 - 10 = 2000; decade 2020 + 9 + 10 = 2039
        ("/created_at",): {"of": "year", "min": 2000, "max": 2039},
        # -50 .. 500: with negatives, a bound on the magnitude only: 3 * 500 = 1500 -> 10000
        ("/balance",): {"of": "magnitude", "min": None, "max": 10000},
    }
    # a constant (`/version`) gives no RANGE
    assert find(world_cs, "RANGE", "/version") is None
    for r in rules(world_cs, "RANGE"):
        assert (r.support.calls, r.support.tasks) == (320, 320), r.paths
    describe = {r.paths[0]: checks()["RANGE"].describe(r) for r in rules(world_cs, "RANGE")}
    assert describe == {
        "/total": "/total in [1, 10000] when > 0",
        "/discount": "/discount <= 1000",
        "/items/*/qty": "/items/*/qty in [0.1, 100] when > 0",
        "/created_at": "year of /created_at in [2000, 2039]",
        "/balance": "|/balance| <= 10000",
    }


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    assert_world_set_is_valid(world_cs, "RANGE", 200)


# ---- small corpora -------------------------------------------------------------------------------------


def _range(cs: ContractSet, path: str, of: str = "number") -> tuple[Any, Any] | None:
    for r in rules(cs, "RANGE"):
        if r.paths == (path,) and r.params["of"] == of:
            return r.params["min"], r.params["max"]
    return None


#: field -> (its clean values, dealt round-robin over the tasks; the expected (min, max) or None).
#: The comments give least / 3 -> min and 3 * largest -> max (in float64, as the miner computes them).
BOUNDS: dict[str, tuple[list[Any], tuple[Any, Any] | None]] = {
    "spread": ([12.5, 830, 47, 301.25], (1, 10000)),  # 12.5 / 3 = 4.17 -> 1; 3 * 830 = 2490 -> 10000
    "with_zero": ([0, 7, 3], (None, 100)),  # a zero: no min; 3 * 7 = 21 -> 100
    "zero_float": ([0.0, 2.5], (None, 10)),  # a zero: no min; 3 * 2.5 = 7.5 -> 10
    "powers": ([1, 1000], (0.1, 10000)),  # 1 / 3 = 0.33 -> 0.1; 3 * 1000 = 3000 -> 10000
    "hundreds": ([100, 999], (10, 10000)),  # 100 / 3 = 33.3 -> 10; 3 * 999 = 2997 -> 10000
    "fractions": ([0.02, 0.5, 0.3], (0.001, 10)),  # 0.02 / 3 = 0.0067 -> 0.001; 3 * 0.5 = 1.5 -> 10
    "thousandths": ([0.001, 0.0099], (0.0001, 0.1)),  # 0.001 / 3 = 0.00033 -> 0.0001; 0.0297 -> 0.1
    "big": ([10**6, 2_500_000_000], (10**5, 10**10)),  # 333333 -> 10^5; 3 * 2.5e9 = 7.5e9 -> 10^10
    "int32": ([2, 2147483647], (0.1, 10**10)),  # 2 / 3 = 0.67 -> 0.1; 3 * 2147483647 = 6.4e9 -> 10^10
    "int_and_float": ([1, 2.5], (0.1, 10)),  # 1 / 3 = 0.33 -> 0.1; 3 * 2.5 = 7.5 -> 10
    # the edges: "at or below" takes an exact power, "strictly above" does not
    "min_at_power": ([3, 33], (1, 100)),  # 3 / 3 = 1.0 -> 1 itself; 3 * 33 = 99 -> 100
    "max_at_power": ([0.2, 1 / 3], (0.01, 10)),  # 0.2 / 3 = 0.067 -> 0.01; 3 * (1/3) = 1.0 -> 10, not 1
    # log10 rounds these to a whole number: the bound is still the exact power on the right side
    "min_below_power": ([0.3, 2], (0.01, 10)),  # 0.3 / 3 = 0.09999999999999999 < 0.1 -> 0.01; 6 -> 10
    # 1 / 3 -> 0.1; 3 * 33.33333333333333 = 99.99999999999999 < 100 -> 100 (log10 says 2.0: 1000)
    "max_below_power": ([1, 33.33333333333333], (0.1, 100)),
    # bounds from 10^15 are written as floats; none when 3 * largest >= 10^300
    "e15": ([10**14, 4 * 10**14], (10**13, 1e16)),  # 10^14 / 3 = 3.3e13 -> 10^13; 1.2e15 -> 1e16
    "near_limit": ([1e298, 3e299], (1e297, 1e300)),  # 1e298 / 3 = 3.3e297 -> 1e297; 9e299 -> 1e300
    "over_limit": ([1, 3.4e299], None),  # 3 * 3.4e299 = 1.02e300 >= 1e300: no rule
    "constant": ([3], None),
    "constant_zero": ([0], None),
    # with negatives: a bound on |v| only (3 * 9 = 27 -> 100; 3 * |-3| = 9 -> 10)
    "negative": ([-1, 5, 9], (None, 100)),
    "all_negative": ([-3, -1], (None, 10)),
}


def test_range_bounds_by_example(tmp_path: Path) -> None:
    """One tool per field (`/v`), so that no two fields meet in one result (RELATION is not at stake)."""
    recs = [
        task_record(f"t{i:03d}", {"v": vals[i % len(vals)]}, tool=f)
        for f, (vals, _) in BOUNDS.items()
        for i in range(40)
    ]
    cs = mine_records(tmp_path, recs, params=few_tasks("RANGE"))
    got = {f: _tool_range(cs, f) for f in BOUNDS}
    assert got == {f: want for f, (_, want) in BOUNDS.items()}
    assert {r.tool for r in rules(cs, "RANGE") if r.params["of"] == "magnitude"} == {
        "negative",
        "all_negative",
    }
    assert all(
        r.params["of"] == "number" for r in rules(cs, "RANGE") if r.tool not in ("negative", "all_negative")
    )
    # params are written as JSON numbers: ints for bounds >= 1, floats below
    spread = find(cs, "RANGE", "/v", tool="spread")
    assert spread is not None and spread.params == {"of": "number", "min": 1, "max": 10000}
    assert type(spread.params["max"]) is int and type(spread.params["min"]) is int
    frac = find(cs, "RANGE", "/v", tool="fractions")
    assert frac is not None and type(frac.params["min"]) is float and frac.params["max"] == 10
    # ... and from 10^15 on as floats
    e15 = find(cs, "RANGE", "/v", tool="e15")
    assert e15 is not None and type(e15.params["min"]) is int and type(e15.params["max"]) is float
    near = find(cs, "RANGE", "/v", tool="near_limit")
    assert near is not None and type(near.params["min"]) is float and type(near.params["max"]) is float


def _tool_range(cs: ContractSet, tool: str) -> tuple[Any, Any] | None:
    r = find(cs, "RANGE", "/v", tool=tool)
    return None if r is None else (r.params["min"], r.params["max"])


def test_range_judges_numbers_only(tmp_path: Path) -> None:
    """Strings and nulls at a number place are other codes' business: the bounds are the numbers'."""
    vals: list[Any] = [5, "n/a", 50, None, 12]
    recs = [
        task_record(f"t{i:03d}", {"v": vals[i % 5], "xs": [i % 7 + 1, 2 * (i % 7) + 3]}) for i in range(100)
    ]
    cs = mine_records(tmp_path, recs, params=few_tasks("RANGE"))
    assert _range(cs, "/v") == (1, 1000)  # 5 .. 50: 5 / 3 = 1.67 -> 1; 3 * 50 = 150 -> 1000
    # 1 .. 15 over the items of every list: 1 / 3 = 0.33 -> 0.1; 3 * 15 = 45 -> 100
    assert _range(cs, "/xs/*") == (0.1, 100)


def _prices(n_tasks: int, calls_per_task: int = 1) -> list[dict[str, Any]]:
    """Prices from 12.5 (task 0) to 808.5 (12.5 + 796 at t = 108) over 200 or 199 tasks of one call each."""
    return [
        task_record(f"t{t:03d}", {"price": 12.5 + (t * 37 + c * 11) % 800})
        for t in range(n_tasks)
        for c in range(calls_per_task)
    ]


def test_range_needs_200_tasks(tmp_path: Path) -> None:
    assert default_min_tasks()["RANGE"] == 200
    assert rules(mine_records(tmp_path, _prices(199)), "RANGE") == []
    # the threshold counts tasks, not calls
    assert rules(mine_records(tmp_path, _prices(199, calls_per_task=2)), "RANGE") == []
    r = find(mine_records(tmp_path, _prices(200)), "RANGE", "/price")
    # 12.5 .. 808.5: 12.5 / 3 = 4.17 -> 1; 3 * 808.5 = 2425.5 -> 10000
    assert r is not None and r.params == {"of": "number", "min": 1, "max": 10000}
    assert (r.support.calls, r.support.tasks) == (200, 200)
    # lowering the task threshold through MineParams (the same extremes over 199 tasks)
    lowered = mine_records(tmp_path, _prices(199), params=few_tasks("RANGE", n=199))
    assert _range(lowered, "/price") == (1, 10000)


def test_range_needs_30_values(tmp_path: Path) -> None:
    """The example count is values, not calls: 15 calls of two numbers are 30 examples."""
    few = few_tasks("RANGE")
    singles = [task_record(f"t{i:03d}", {"v": 2 + i}) for i in range(30)]
    assert _range(mine_records(tmp_path, singles[:29], params=few), "/v") is None
    # 2 .. 31: 2 / 3 = 0.67 -> 0.1; 3 * 31 = 93 -> 100
    assert _range(mine_records(tmp_path, singles, params=few), "/v") == (0.1, 100)
    pairs = [task_record(f"t{i:03d}", {"xs": [2 + i, 40 + i]}) for i in range(15)]
    assert _range(mine_records(tmp_path, pairs[:14], params=few), "/xs/*") is None
    # 2 .. 54: 2 / 3 = 0.67 -> 0.1; 3 * 54 = 162 -> 1000
    assert _range(mine_records(tmp_path, pairs, params=few), "/xs/*") == (0.1, 1000)


#: place -> (its clean strings, dealt round-robin; the expected year bounds or None)
YEARS: dict[str, tuple[list[str], tuple[int, int] | None]] = {
    "recent": ([f"{y}-0{1 + y % 9}-1{y % 10}" for y in range(2019, 2025)], (2000, 2039)),
    "turn": (["1999-12-31", "2001-01-01T00:00:00Z", "2000-06-01 12:00"], (1980, 2019)),
    "decade": (["2020-01-01", "2029-12-31"], (2010, 2039)),
    "with_text": (["2020-01-01", "N/A", "2021-05-05"], None),  # one string that is no date
    "long_tail": (["2020-01-01 " + "x" * 40, "2021-01-01"], None),  # over 40 characters is not date-like
}


def test_year_bounds(tmp_path: Path) -> None:
    recs = [
        task_record(
            f"t{i:03d}",
            {
                **{f: vals[i % len(vals)] for f, (vals, _) in YEARS.items()},
                "events": [{"at": f"{2019 + (i + j) % 6}-03-0{1 + j}"} for j in range(2)],
            },
        )
        for i in range(60)
    ]
    cs = mine_records(tmp_path, recs, params=few_tasks("RANGE"))
    got = {f: _range(cs, f"/{f}", of="year") for f in YEARS}
    assert got == {f: want for f, (_, want) in YEARS.items()}
    assert _range(cs, "/events/*/at", of="year") == (2000, 2039)
    assert all(r.params["of"] == "year" for r in rules(cs, "RANGE"))


def test_years_need_200_tasks(tmp_path: Path) -> None:
    def dates(n: int) -> list[dict[str, Any]]:
        return [task_record(f"t{i:03d}", {"d": f"{2019 + i % 6}-01-01"}) for i in range(n)]

    assert _range(mine_records(tmp_path, dates(199)), "/d", of="year") is None
    r = find(mine_records(tmp_path, dates(200)), "RANGE", "/d")
    assert r is not None and r.params == {"of": "year", "min": 2000, "max": 2039}
    assert (r.support.calls, r.support.tasks) == (200, 200)


def test_range_is_judged_per_pool(tmp_path: Path) -> None:
    """Two tools return the same order object: the numbers are judged together (the pooled least and
    largest value), and the thin tool (50 tasks) gets the rule on the busy one's evidence."""
    recs = []
    for i in range(200):
        total = 12.5 + (i * 37) % 800
        recs.append(
            task_record(
                f"t{i:03d}", {"order": {"id": f"o{i}", "total": total, "currency": "EUR"}}, "get_order"
            )
        )
    for i in range(50):
        total = [1, 50000, 77][i % 3]
        recs.append(
            task_record(
                f"u{i:03d}", {"orders": [{"id": f"p{i}", "total": total, "currency": "EUR"}]}, "list_orders"
            )
        )
    cs = mine_records(tmp_path, recs)
    a = find(cs, "RANGE", "/order/total", tool="get_order")
    b = find(cs, "RANGE", "/orders/*/total", tool="list_orders")
    assert a is not None and b is not None
    # pooled 1 .. 50000: 1 / 3 = 0.33 -> 0.1; 3 * 50000 = 150000 -> 10^6 (get_order alone, 12.5 .. 808.5,
    # would give [1, 10000])
    assert a.params == b.params == {"of": "number", "min": 0.1, "max": 1000000}


def test_years_are_judged_per_pool(tmp_path: Path) -> None:
    """Two tools return the same booking object: the thin one (40 tasks, below RANGE's 200) gets the
    year bounds of the pooled dates (2019..2035 from both members), and a member whose own strings are not
    all dates refutes the rule for the whole pool."""

    def booking(i: int, year: int, when: str | None = None) -> dict[str, Any]:
        return {"id": f"b{i}", "seat": f"{i % 30}A", "date": when or f"{year}-05-0{1 + i % 9}"}

    recs = [
        task_record(f"t{i:03d}", {"booking": booking(i, 2019 + i % 6)}, "get_booking") for i in range(200)
    ]
    recs += [task_record(f"u{i:03d}", {"bookings": [booking(i, 2035)]}, "list_bookings") for i in range(40)]
    cs = mine_records(tmp_path, recs)
    a = find(cs, "RANGE", "/booking/date", tool="get_booking")
    b = find(cs, "RANGE", "/bookings/*/date", tool="list_bookings")
    assert a is not None and b is not None
    # pooled years 2019..2035: 2010 - 10 = 2000; the decade after 2030-2039 ends 2049
    assert a.params == b.params == {"of": "year", "min": 2000, "max": 2049}
    assert (b.support.calls, b.support.tasks) == (200, 200)  # the pool's largest member's support

    recs[-1] = task_record("u039", {"bookings": [booking(39, 2035, when="soon")]}, "list_bookings")
    cs = mine_records(tmp_path / "text", recs)
    assert find(cs, "RANGE", "/booking/date", tool="get_booking") is None
    assert find(cs, "RANGE", "/bookings/*/date", tool="list_bookings") is None


# ---- merges: task parts and folds ----------------------------------------------------------------------


def test_parts_give_the_same_bytes(world_corpus: Corpus) -> None:
    """The whole contract set of the order world (RANGE's and UNIQUE's rules among the others)."""
    rows = leaf_rows(world_corpus)
    for k in (1, 5):
        one = canonical_str(mine(world_corpus, folds=k).to_json())
        for parts in (3, 7):
            split = mine(world_corpus, folds=k, part_rows=rows // parts + 1)
            assert canonical_str(split.to_json()) == one, (k, parts)


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker has the k = 1 RANGE rules, support included. Its fold checkers see ~256
    tasks: enough for RANGE (200; too few for UNIQUE, 300: tests/codes/unique/); each fold's RANGE rules
    are what mining without that fold gives."""
    k5 = mine(world_corpus, folds=5)
    assert sig(k5, codes=("RANGE",)) == sig(world_cs, codes=("RANGE",))
    assert "RANGE" in codes_of(k5.rules_for(None))
    records = order_world(320)
    for f in range(5):
        rest = [r for r in records if fold_of(r["task_id"], k5.seed, 5) != f]
        alone = mine(corpus_from_records(rest, world_corpus.path.parent / f"without-{f}"))
        got = sig(k5, f, ("RANGE",))
        assert got == sig(alone, None, ("RANGE",)) and len(got) == 5, f  # /balance: a magnitude


# ---- regressions: library bugs since fixed ------------------------------------------------------------


def test_range_bounds_are_exact_powers(tmp_path: Path) -> None:
    """log10 rounds both extremes onto a whole number: log10(0.3 / 3 = 0.09999999999999999) = -1.0 (a min
    of 0.1, above a third of the least value) and log10(3 * 33.33333333333333 = 99.99999999999999) = 2.0
    (a max of 1000, a decade too far). The bounds are the exact powers: 0.01 and 100."""
    least, largest = 0.3, 33.33333333333333
    vals = [least, largest] + [1 + i / 100 for i in range(2, 200)]  # 1.02 .. 2.99 in between
    recs = [task_record(f"t{i:03d}", {"share": v}) for i, v in enumerate(vals)]
    r = find(mine_records(tmp_path, recs), "RANGE", "/share")
    assert r is not None and r.params == {"of": "number", "min": 0.01, "max": 100}
    assert r.params["min"] <= least / 3 < r.params["min"] * 10
    assert r.params["max"] / 10 <= largest * 3 < r.params["max"]


def test_range_on_huge_floats_does_not_crash(tmp_path: Path) -> None:
    """3 * 1.5e308 is no float (inf >= 1e300): no RANGE, where 10.0 ** 309 once raised OverflowError; the
    other codes still get their rules."""
    recs = [task_record(f"t{i:03d}", {"huge": 1.5e308 - i * 1e300}) for i in range(200)]
    cs = mine_records(tmp_path, recs)
    assert rules(cs, "RANGE") == []
    assert find(cs, "POSITIVE", "/huge") is not None
