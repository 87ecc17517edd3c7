"""RANGE (the decades around the clean values, 200 tasks) and UNIQUE (no repeat within a list, 300 tasks).

A generated order world mined with the default parameters first, then the bounds and the thresholds one
at a time on small hand-made corpora, then UNIQUE's choice of one rule per list, then the merge
properties (task parts, folds). Library bugs that were fixed are pinned at the end as regression tests.

RANGE's number bounds, recomputed by hand in the comments below: max = the least power of ten strictly
above RANGE_MARGIN (3) × the largest value; min (every value > 0) = the greatest power of ten at or below
the least value / 3, else null.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.folds import fold_of
from output_contracts.codes.mine_params import default_min_support, default_min_tasks
from output_contracts.codes.table import checks
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import MineParams, mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.helpers import find, mine_records, rules

TOOL = "get_order"
COLORS = ["red", "blue", "green", "black"]
TAGS = ["gift", "vip", "new", "sale", "eco"]

# ---- a generated order world ---------------------------------------------------------------------------


def order(r: random.Random, i: int) -> dict[str, Any]:
    """One order: `/total` in [12.5, 830] (both ends reached in tasks 0 and 1), `/discount` with zeros,
    `/balance` with negatives, `/version` constant, `/created_at` in 2019..2024; `/items/*/sku` unique
    ids, `/items/*/slot` unique within a list but from a set of 4, `/items/*/color` repeating, `/tags/*`
    a sample without repeats, `/shipments/*/parcels/*` the same labels in every shipment."""
    return {
        "order_id": f"ORD-{i:06d}",
        "total": [12.5, 830][i] if i < 2 else round(r.uniform(12.5, 830), 2),
        "discount": r.choice([0, 5, 10, 15, 45]),
        "balance": r.randint(-50, 500),
        "version": 3,
        "created_at": f"{2019 + i % 6}-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
        "items": [
            {"slot": f"s{j}", "sku": f"SKU-{i:04d}-{j}", "color": r.choice(COLORS), "qty": r.randint(1, 9)}
            for j in range(r.randint(2, 4))
        ],
        "tags": r.sample(TAGS, r.randint(2, 3)),
        "shipments": [{"parcels": [f"P{j}" for j in range(r.randint(2, 3))]} for _ in range(r.randint(1, 2))],
    }


def order_world(n_tasks: int, seed: int = 7, calls_per_task: int = 1) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    for t in range(n_tasks):
        for step in range(calls_per_task):
            res = order(r, t)
            out.append(
                {
                    "trace_id": f"ep-{t:04d}-{step}",
                    "task_id": f"task-{t:04d}",
                    "step": step,
                    "tool": TOOL,
                    "arguments": {"order_id": res["order_id"]},
                    "result": res,
                    "status": "ok",
                }
            )
    return out


@pytest.fixture(scope="module")
def world_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(order_world(320), tmp_path_factory.mktemp("orders") / "c")


@pytest.fixture(scope="module")
def world_cs(world_corpus: Corpus) -> ContractSet:
    return mine(world_corpus)


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


def test_world_unique_rules(world_cs: ContractSet) -> None:
    got = {r.paths: r.params for r in rules(world_cs, "UNIQUE")}
    assert got == {
        # the first string field in pattern order ("sku" < "slot"; `/items/*/slot` never repeats either)
        ("/items/*/sku",): {},
        ("/tags/*",): {},  # scalar items
        ("/shipments/*/parcels/*",): {},  # each shipment's parcels apart: P0 in every shipment
    }
    for r in rules(world_cs, "UNIQUE"):
        assert (r.support.calls, r.support.tasks) == (320, 320), r.paths
    r = find(world_cs, "UNIQUE", "/items/*/sku")
    assert r is not None and checks()["UNIQUE"].describe(r) == "/items/*/sku unique within its list"
    # a small value set repeats by chance and refutes the rule
    for p in ("/items/*/color", "/items/*/qty", "/items/*/slot"):
        assert find(world_cs, "UNIQUE", p) is None, p


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    data = world_cs.to_json()
    assert schema_errors(data, "contract-set") == []
    assert data["params"]["min_tasks"]["RANGE"] == default_min_tasks()["RANGE"] == 200
    assert data["params"]["min_tasks"]["UNIQUE"] == default_min_tasks()["UNIQUE"] == 300
    assert data["params"]["min_support"]["RANGE"] == default_min_support()["RANGE"] == 30
    assert data["params"]["min_support"]["UNIQUE"] == default_min_support()["UNIQUE"] == 30
    assert ContractSet.from_json(data).to_json() == data
    # every mined rule is one the checker accepts
    for r in rules(world_cs, "RANGE"):
        checks()["RANGE"].validate(r)
    for r in rules(world_cs, "UNIQUE"):
        checks()["UNIQUE"].validate(r)


# ---- small corpora -------------------------------------------------------------------------------------


def _rec(task: str, result: Any, tool: str = "tool") -> dict[str, Any]:
    return {
        "trace_id": f"{task}-{tool}-{canonical_str(result)}",
        "task_id": task,
        "step": 0,
        "tool": tool,
        "arguments": {},
        "result": result,
        "status": "ok",
    }


def _few_tasks(*codes: str, n: int = 1) -> MineParams:
    params = MineParams.of()
    return dataclasses.replace(params, min_tasks={**params.min_tasks, **dict.fromkeys(codes, n)})


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
        _rec(f"t{i:03d}", {"v": vals[i % len(vals)]}, tool=f)
        for f, (vals, _) in BOUNDS.items()
        for i in range(40)
    ]
    cs = mine_records(tmp_path, recs, params=_few_tasks("RANGE"))
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
    recs = [_rec(f"t{i:03d}", {"v": vals[i % 5], "xs": [i % 7 + 1, 2 * (i % 7) + 3]}) for i in range(100)]
    cs = mine_records(tmp_path, recs, params=_few_tasks("RANGE"))
    assert _range(cs, "/v") == (1, 1000)  # 5 .. 50: 5 / 3 = 1.67 -> 1; 3 * 50 = 150 -> 1000
    # 1 .. 15 over the items of every list: 1 / 3 = 0.33 -> 0.1; 3 * 15 = 45 -> 100
    assert _range(cs, "/xs/*") == (0.1, 100)


def _prices(n_tasks: int, calls_per_task: int = 1) -> list[dict[str, Any]]:
    """Prices from 12.5 (task 0) to 808.5 (12.5 + 796 at t = 108) over 200 or 199 tasks of one call each."""
    return [
        _rec(f"t{t:03d}", {"price": 12.5 + (t * 37 + c * 11) % 800})
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
    lowered = mine_records(tmp_path, _prices(199), params=_few_tasks("RANGE", n=199))
    assert _range(lowered, "/price") == (1, 10000)


def test_range_needs_30_values(tmp_path: Path) -> None:
    """The example count is values, not calls: 15 calls of two numbers are 30 examples."""
    few = _few_tasks("RANGE")
    singles = [_rec(f"t{i:03d}", {"v": 2 + i}) for i in range(30)]
    assert _range(mine_records(tmp_path, singles[:29], params=few), "/v") is None
    # 2 .. 31: 2 / 3 = 0.67 -> 0.1; 3 * 31 = 93 -> 100
    assert _range(mine_records(tmp_path, singles, params=few), "/v") == (0.1, 100)
    pairs = [_rec(f"t{i:03d}", {"xs": [2 + i, 40 + i]}) for i in range(15)]
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
        _rec(
            f"t{i:03d}",
            {
                **{f: vals[i % len(vals)] for f, (vals, _) in YEARS.items()},
                "events": [{"at": f"{2019 + (i + j) % 6}-03-0{1 + j}"} for j in range(2)],
            },
        )
        for i in range(60)
    ]
    cs = mine_records(tmp_path, recs, params=_few_tasks("RANGE"))
    got = {f: _range(cs, f"/{f}", of="year") for f in YEARS}
    assert got == {f: want for f, (_, want) in YEARS.items()}
    assert _range(cs, "/events/*/at", of="year") == (2000, 2039)
    assert all(r.params["of"] == "year" for r in rules(cs, "RANGE"))


def test_years_need_200_tasks(tmp_path: Path) -> None:
    def dates(n: int) -> list[dict[str, Any]]:
        return [_rec(f"t{i:03d}", {"d": f"{2019 + i % 6}-01-01"}) for i in range(n)]

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
            _rec(f"t{i:03d}", {"order": {"id": f"o{i}", "total": total, "currency": "EUR"}}, "get_order")
        )
    for i in range(50):
        total = [1, 50000, 77][i % 3]
        recs.append(
            _rec(f"u{i:03d}", {"orders": [{"id": f"p{i}", "total": total, "currency": "EUR"}]}, "list_orders")
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

    recs = [_rec(f"t{i:03d}", {"booking": booking(i, 2019 + i % 6)}, "get_booking") for i in range(200)]
    recs += [_rec(f"u{i:03d}", {"bookings": [booking(i, 2035)]}, "list_bookings") for i in range(40)]
    cs = mine_records(tmp_path, recs)
    a = find(cs, "RANGE", "/booking/date", tool="get_booking")
    b = find(cs, "RANGE", "/bookings/*/date", tool="list_bookings")
    assert a is not None and b is not None
    # pooled years 2019..2035: 2010 - 10 = 2000; the decade after 2030-2039 ends 2049
    assert a.params == b.params == {"of": "year", "min": 2000, "max": 2049}
    assert (b.support.calls, b.support.tasks) == (200, 200)  # the pool's largest member's support

    recs[-1] = _rec("u039", {"bookings": [booking(39, 2035, when="soon")]}, "list_bookings")
    cs = mine_records(tmp_path / "text", recs)
    assert find(cs, "RANGE", "/booking/date", tool="get_booking") is None
    assert find(cs, "RANGE", "/bookings/*/date", tool="list_bookings") is None


# ---- UNIQUE: thresholds and the choice of one rule per list --------------------------------------------


def _lists(n_tasks: int, calls_per_task: int = 1, repeat_in: int | None = None) -> list[dict[str, Any]]:
    """`/xs/*/id` unique ids (repeated once in task `repeat_in`), `/xs/*/n` from a set of 3."""
    out = []
    for t in range(n_tasks):
        for c in range(calls_per_task):
            ids = [f"I{t}-{c}-{j}" for j in range(3)]
            if t == repeat_in:
                ids[2] = ids[0]
            out.append(_rec(f"t{t:03d}", {"xs": [{"id": v, "n": j % 3} for j, v in enumerate(ids)]}))
    return out


def test_unique_needs_300_tasks(tmp_path: Path) -> None:
    assert default_min_tasks()["UNIQUE"] == 300
    assert rules(mine_records(tmp_path, _lists(299)), "UNIQUE") == []
    assert rules(mine_records(tmp_path, _lists(299, calls_per_task=2)), "UNIQUE") == []
    r = find(mine_records(tmp_path, _lists(300)), "UNIQUE", "/xs/*/id")
    assert r is not None and r.params == {} and (r.support.calls, r.support.tasks) == (300, 300)
    lowered = mine_records(tmp_path, _lists(299), params=_few_tasks("UNIQUE", n=299))
    assert [r.paths for r in rules(lowered, "UNIQUE")] == [("/xs/*/id",)]


def test_short_lists_do_not_count(tmp_path: Path) -> None:
    """A list with fewer than two judged items cannot repeat: it is no example. Among 300 tasks, one
    with a single-item list (and one whose items hold only nulls) leaves 298 tasks: too few."""
    recs = _lists(300)
    recs[5] = _rec("t005", {"xs": [{"id": "solo", "n": 0}]})
    recs[6] = _rec("t006", {"xs": [{"id": None, "n": None}, {"id": None, "n": None}]})
    assert find(mine_records(tmp_path, recs), "UNIQUE", "/xs/*/id") is None
    assert find(mine_records(tmp_path, recs, params=_few_tasks("UNIQUE", n=298)), "UNIQUE", "/xs/*/id")


def test_unique_needs_30_lists(tmp_path: Path) -> None:
    """With the task threshold lowered: 30 lists are needed, and they are lists, not calls (15 calls of two
    inner lists each are 30 examples)."""
    few = _few_tasks("UNIQUE")
    flat = [_rec(f"t{i:03d}", {"xs": [f"a{i}", f"b{i}"]}) for i in range(30)]
    assert find(mine_records(tmp_path, flat[:29], params=few), "UNIQUE", "/xs/*") is None
    assert find(mine_records(tmp_path, flat, params=few), "UNIQUE", "/xs/*") is not None
    nested = [_rec(f"t{i:03d}", {"g": [["a", "b"], ["a", "b", "c"]]}) for i in range(15)]
    r = find(mine_records(tmp_path, nested, params=few), "UNIQUE", "/g/*/*")
    assert r is not None and (r.support.calls, r.support.tasks) == (15, 15)
    assert find(mine_records(tmp_path, nested[:14], params=few), "UNIQUE", "/g/*/*") is None


def test_one_repeat_refutes_the_field(tmp_path: Path) -> None:
    """One repeated id in 320 tasks kills the rule on `id`; `/xs/*/n` (0, 1, 2 in every list) never
    repeats inside a list, so the list's rule falls back to that numeric field."""
    cs = mine_records(tmp_path, _lists(320, repeat_in=17))
    assert find(cs, "UNIQUE", "/xs/*/id") is None
    assert [r.paths for r in rules(cs, "UNIQUE")] == [("/xs/*/n",)]
    clean = mine_records(tmp_path, _lists(320))
    assert [r.paths for r in rules(clean, "UNIQUE")] == [("/xs/*/id",)]


def choice_world(n_tasks: int = 300) -> list[dict[str, Any]]:
    r = random.Random(5)
    out = []
    for i in range(n_tasks):
        res = {
            # scalar items and object items in one list: the items themselves are the rule
            "mixed": [f"m{i}", f"n{i}", {"id": f"x{i}"}, {"id": f"y{i}"}],
            # strings before numbers, however distinct the numbers
            "rows": [{"num": 1000 * i + j, "label": f"L{j}"} for j in range(3)],
            # numbers only: the first field in pattern order
            "pts": [{"b": 2 * j + i, "a": 100 * i + j} for j in range(3)],
            # nested: each order's lines apart (L0 is in every order)
            "orders": [{"lines": [{"lid": f"L{j}"} for j in range(r.randint(2, 3))]} for _ in range(2)],
            # nested scalars
            "grid": [[j, j + 1] for j in range(3)],
            # repeats across lists of one call are fine, inside one are not
            "pairs": [{"v": [1, 2]}, {"v": [1, 1] if i == 9 else [2, 1]}],
        }
        out.append(_rec(f"t{i:03d}", res))
    return out


def test_one_rule_per_list(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, choice_world())
    got = {r.paths for r in rules(cs, "UNIQUE")}
    assert got == {
        ("/mixed/*",),
        ("/rows/*/label",),
        ("/pts/*/a",),
        ("/orders/*/lines/*/lid",),
        ("/grid/*/*",),
    }


def test_first_string_field_in_pattern_order(tmp_path: Path) -> None:
    """The sku renamed `uid`: `slot` (4 values) now comes before it in pattern order ("slot" < "uid") and
    is the list's rule, however more distinct `uid` is; both are held, as the order world without `slot`
    shows."""
    recs = order_world(300)
    for rec in recs:
        for item in rec["result"]["items"]:
            item["uid"] = item.pop("sku")
    cs = mine_records(tmp_path, recs)
    assert {r.paths for r in rules(cs, "UNIQUE")} == {
        ("/items/*/slot",),
        ("/tags/*",),
        ("/shipments/*/parcels/*",),
    }
    for rec in recs:
        for item in rec["result"]["items"]:
            del item["slot"]
    assert {r.paths for r in rules(mine_records(tmp_path, recs), "UNIQUE")} == {
        ("/items/*/uid",),
        ("/tags/*",),
        ("/shipments/*/parcels/*",),
    }


# ---- merges: task parts and folds ----------------------------------------------------------------------


def _sig(cs: ContractSet, fold: int | None = None, codes: tuple[str, ...] = ("RANGE", "UNIQUE")) -> set[Any]:
    return {
        (r.id, r.support.calls, r.support.tasks) for r in cs.rules_for(fold) if not codes or r.code in codes
    }


def _codes(rs: list[Rule]) -> set[str]:
    return {r.code for r in rs}


def test_parts_give_the_same_bytes(world_corpus: Corpus) -> None:
    rows = leaf_rows(world_corpus)
    for k in (1, 5):
        one = canonical_str(mine(world_corpus, folds=k).to_json())
        for parts in (3, 7):
            split = mine(world_corpus, folds=k, part_rows=rows // parts + 1)
            assert canonical_str(split.to_json()) == one, (k, parts)


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker has the k = 1 RANGE and UNIQUE rules, support included. Its fold checkers
    see ~256 tasks: enough for RANGE (200), too few for UNIQUE (300); each fold's RANGE rules are what
    mining without that fold gives."""
    k5 = mine(world_corpus, folds=5)
    assert _sig(k5) == _sig(world_cs)
    assert {"RANGE", "UNIQUE"} <= _codes(k5.rules_for(None))
    records = order_world(320)
    for f in range(5):
        assert "UNIQUE" not in _codes(k5.rules_for(f)), f
        rest = [r for r in records if fold_of(r["task_id"], k5.seed, 5) != f]
        alone = mine(corpus_from_records(rest, world_corpus.path.parent / f"without-{f}"))
        got = _sig(k5, f, ("RANGE",))
        assert got == _sig(alone, None, ("RANGE",)) and len(got) == 5, f  # /balance: a magnitude


# ---- regressions: library bugs since fixed ------------------------------------------------------------


def _two_fields_world(block_of: Any, n_tasks: int = 320) -> list[dict[str, Any]]:
    """`/xs/*/a` from 40 values seen everywhere; `/xs/*/b` from a block of 20 values per group of tasks
    (`block_of(i, task)` names the group): 20 * groups values in all, more than a's with 3 groups or
    more, fewer within one group. Neither repeats inside a list. (A choice by distinct count took b over
    the whole corpus and a within a fold or a part.)"""
    r = random.Random(5)
    out = []
    for i in range(n_tasks):
        t = f"t{i:03d}"
        g = block_of(i, t)
        a, b = r.sample(range(40), 3), r.sample(range(20), 3)
        out.append(
            _rec(t, {"xs": [{"a": f"a{x:02d}", "b": f"b{g}-{y:02d}"} for x, y in zip(a, b, strict=True)]})
        )
    return out


def test_unique_choice_does_not_depend_on_folds_or_parts(tmp_path: Path) -> None:
    # by fold: each of the 5 folds sees 20 b-values (100 in all) but all 40 a-values
    by_fold = corpus_from_records(
        _two_fields_world(lambda _i, t: fold_of(t, DEFAULT_SEED, 5)), tmp_path / "folds"
    )
    k1 = [r.paths for r in rules(mine(by_fold), "UNIQUE")]
    k5 = [r.paths for r in rules(mine(by_fold, folds=5), "UNIQUE")]
    # by part: tasks are dealt round-robin into parts in task-id order
    by_part = corpus_from_records(_two_fields_world(lambda i, _t: i % 3), tmp_path / "parts")
    one = [r.paths for r in rules(mine(by_part), "UNIQUE")]
    three = [r.paths for r in rules(mine(by_part, part_rows=leaf_rows(by_part) // 3 + 1), "UNIQUE")]
    # the first string field in pattern order, though b has more values than a in all (100 or 60 to 40)
    assert (k1, one) == ([("/xs/*/a",)], [("/xs/*/a",)])
    assert (k5, three) == (k1, one)


def test_range_bounds_are_exact_powers(tmp_path: Path) -> None:
    """log10 rounds both extremes onto a whole number: log10(0.3 / 3 = 0.09999999999999999) = -1.0 (a min
    of 0.1, above a third of the least value) and log10(3 * 33.33333333333333 = 99.99999999999999) = 2.0
    (a max of 1000, a decade too far). The bounds are the exact powers: 0.01 and 100."""
    least, largest = 0.3, 33.33333333333333
    vals = [least, largest] + [1 + i / 100 for i in range(2, 200)]  # 1.02 .. 2.99 in between
    recs = [_rec(f"t{i:03d}", {"share": v}) for i, v in enumerate(vals)]
    r = find(mine_records(tmp_path, recs), "RANGE", "/share")
    assert r is not None and r.params == {"of": "number", "min": 0.01, "max": 100}
    assert r.params["min"] <= least / 3 < r.params["min"] * 10
    assert r.params["max"] / 10 <= largest * 3 < r.params["max"]


def test_range_on_huge_floats_does_not_crash(tmp_path: Path) -> None:
    """3 * 1.5e308 is no float (inf >= 1e300): no RANGE, where 10.0 ** 309 once raised OverflowError; the
    other codes still get their rules."""
    recs = [_rec(f"t{i:03d}", {"huge": 1.5e308 - i * 1e300}) for i in range(200)]
    cs = mine_records(tmp_path, recs)
    assert rules(cs, "RANGE") == []
    assert find(cs, "POSITIVE", "/huge") is not None


def test_unique_does_not_judge_numbers_beyond_2_53(tmp_path: Path) -> None:
    """Two ids of magnitude 2**53 or more are no evidence either way (float64 cannot tell 2**53 from
    2**53 + 1): the repeated big ids do not refute `/xs/*`, whose small items never repeat; a list whose
    only judged item is small is no example."""
    few = _few_tasks("UNIQUE")
    big = [_rec(f"t{i:03d}", {"xs": [i + 1, i + 2, 2**53, 2**53 + 1, -(2**60), -(2**60)]}) for i in range(40)]
    r = find(mine_records(tmp_path, big, params=few), "UNIQUE", "/xs/*")
    assert r is not None and (r.support.calls, r.support.tasks) == (40, 40)
    # distinct even as float64 (2**54 + 8i): judged, these would be 40 examples with no repeat
    lone = [_rec(f"t{i:03d}", {"xs": [i + 1, 2**54 + 8 * i]}) for i in range(40)]
    assert rules(mine_records(tmp_path, lone, params=few), "UNIQUE") == []


def test_unique_negative_zero_repeats_zero(tmp_path: Path) -> None:
    """0 and -0.0 in one list are a repeat (as in check_call): no rule on lists that always hold both,
    where lists holding 0 and 0.5 instead get one."""
    few = _few_tasks("UNIQUE")
    zeros = [_rec(f"t{i:03d}", {"xs": [i + 1, 0, -0.0]}) for i in range(40)]
    assert rules(mine_records(tmp_path, zeros, params=few), "UNIQUE") == []
    halves = [_rec(f"t{i:03d}", {"xs": [i + 1, 0, 0.5]}) for i in range(40)]
    assert [r.paths for r in rules(mine_records(tmp_path, halves, params=few), "UNIQUE")] == [("/xs/*",)]


# ---- composite identities and pools -------------------------------------------------------------------


def _flights(n_tasks: int, *, dup_in: int | None = None, tool: str = "tool") -> list[dict[str, Any]]:
    """Round trips: two flights whose numbers and dates each repeat across lists and sometimes within
    one (the same flight number out and back), never the whole flight."""
    out = []
    for t in range(n_tasks):
        a = {"number": f"HAT{t % 40:03d}", "date": f"2024-05-{1 + t % 20:02d}", "price": 100 + t % 7}
        b = {
            "number": a["number"] if t % 3 == 0 else f"HAT{(t + 1) % 40:03d}",
            "date": a["date"] if t % 3 else f"2024-06-{1 + t % 20:02d}",
            "price": a["price"] if t % 4 == 0 else 90 + t % 5,
        }
        fl = [a, b, dict(a)] if t == dup_in else [a, b]
        res = {"booking_id": f"B{t:04d}", "cabin": ("economy", "business")[t % 2], "flights": fl}
        out.append(_rec(f"t{t:03d}", res, tool=tool))
    return out


def test_composite_identity_where_no_field_is_unique(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _flights(320))
    got = [r.paths for r in rules(cs, "UNIQUE")]
    assert got == [("/flights/*/date", "/flights/*/number", "/flights/*/price")]
    r = rules(cs, "UNIQUE")[0]
    assert (r.support.calls, r.support.tasks) == (320, 320)
    assert schema_errors(cs.to_json(), "contract-set") == []
    # one duplicated flight in 320 tasks refutes it; 299 tasks are too few (the rule of three)
    assert rules(mine_records(tmp_path, _flights(320, dup_in=44)), "UNIQUE") == []
    assert rules(mine_records(tmp_path, _flights(299)), "UNIQUE") == []


def test_unique_is_judged_per_pool(tmp_path: Path) -> None:
    """The reservation reader holds 320 tasks of round trips; a write tool returning the same shape (the
    same keys: one pool, `output_contracts.mining.shapes`) has 40. Pooled, the write tool gets the reader's rule;
    a duplicate in the write tool's data refutes both."""
    reader = _flights(320, tool="get_booking")
    writer = [
        {**r, "task_id": f"w{i:03d}", "trace_id": f"w{i:03d}"}
        for i, r in enumerate(_flights(40, tool="update_booking"))
    ]
    cs = mine_records(tmp_path, [*reader, *writer])
    assert {r.tool for r in rules(cs, "UNIQUE")} == {"get_booking", "update_booking"}
    bad_writer = [
        {**r, "task_id": f"w{i:03d}", "trace_id": f"w{i:03d}"}
        for i, r in enumerate(_flights(40, dup_in=3, tool="update_booking"))
    ]
    assert rules(mine_records(tmp_path, [*reader, *bad_writer]), "UNIQUE") == []
