"""What the tests of RANGE (tests/codes/range/) and UNIQUE (tests/codes/unique/) share: the two order
worlds both codes are found in, the hand-written rules of both, and the assertions each code's tests make
of them for that code.

The check world (`cs`, mined with 5 folds; `CASES`, faulty results with their RANGE and UNIQUE
violations): its bounds, recomputed by hand in `clean_result`, are max = the least power of ten strictly
above 3 × the largest clean value, min (every value > 0) = the greatest power of ten at or below the
least / 3. The mining world (`order_world`, `world_corpus`, `world_cs`): orders with bounded numbers,
dates, unique ids, repeating colours and per-shipment parcel labels."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks.checker import call_violations, check_call, check_corpus, load_contracts
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.mine_params import default_min_support, default_min_tasks
from output_contracts.codes.table import checks
from output_contracts.codes.violation import Violation
from output_contracts.errors import CheckError, ContractsError
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.witnesses import assert_cli_check as witnessed_by_cli
from tests.codes.witnesses import assert_hand_written, write_jsonl
from tests.equivalence import assert_paths_agree, one_checker
from tests.equivalence import hand_rule as a_hand_rule
from tests.helpers import order_calls, order_record, rules

T = "get_order"
N_TASKS = 320  # UNIQUE needs 300 tasks with the default parameters, RANGE 200
CODES = ("RANGE", "UNIQUE")
TAGS = ["gift", "vip", "new", "sale", "eco"]


def clean_result(r: random.Random, i: int) -> dict[str, Any]:
    return {
        "order_id": f"ORD-{i:06d}",
        # RANGE in [1, 10000]: 12.5 / 3 = 4.17 -> 1; 3 * 830 = 2490 -> 10000
        "total": [12.5, 830][i] if i < 2 else round(r.uniform(12.5, 830), 2),
        # RANGE <= 1000: a zero leaves min open; 3 * 45 = 135 -> 1000
        "discount": r.choice([0, 5, 10, 15, 45]),
        # years 2019 .. 2024: [2010 - 10, 2020 + 9 + 10] = [2000, 2039]
        "created_at": f"{2019 + i % 6}-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
        # qty RANGE in [0.1, 100]: 1 / 3 = 0.33 -> 0.1; 3 * 9 = 27 -> 100
        "items": [{"sku": f"SKU-{i:04d}-{j}", "qty": r.randint(1, 9)} for j in range(r.randint(2, 4))],
        "tags": r.sample(TAGS, r.randint(2, 3)),
        "shipments": [{"parcels": [f"P{j}" for j in range(r.randint(2, 3))]} for _ in range(r.randint(1, 2))],
    }


def record(i: int, result: Any) -> dict[str, Any]:
    return order_record(i, result)


def clean_records() -> list[dict[str, Any]]:
    r = random.Random(11)
    return [record(i, clean_result(r, i)) for i in range(N_TASKS)]


@pytest.fixture(scope="session")
def cs(tmp_path_factory: pytest.TempPathFactory) -> ContractSet:
    """The real miner on the clean world, 5 folds (the fold checkers, with ~256 tasks each, have RANGE
    but not UNIQUE)."""
    corpus = corpus_from_records(clean_records(), tmp_path_factory.mktemp("clean") / "c")
    return mine(corpus, folds=5, seed=13)


def base() -> dict[str, Any]:
    return {
        "order_id": "ORD-123456",
        "total": 99.5,
        "discount": 5,
        "created_at": "2023-04-05T10:00:00Z",
        "items": [{"sku": "SKU-0001-0", "qty": 1}, {"sku": "SKU-0001-1", "qty": 1}],
        "tags": ["gift", "vip"],
        "shipments": [{"parcels": ["P0", "P1"]}, {"parcels": ["P0", "P1"]}],
    }


def faulty(**changes: Any) -> dict[str, Any]:
    return {**base(), **changes}


def items(*skus: str, qty: int = 1) -> list[dict[str, Any]]:
    return [{"sku": s, "qty": qty} for s in skus]


IN_TOTAL = "in [1, 10000]"
IN_QTY = "in [0.1, 100]"
YEARS = "year in [2000, 2039]"

#: (result, the expected (code, path, expected, observed) of the RANGE and UNIQUE violations)
CASES: list[tuple[dict[str, Any], list[tuple[str, str, Any, Any]]]] = [
    (base(), []),
    (faulty(total=9950), []),  # 99.5 in cents stays inside the margin (below 10000)
    (faulty(total=99500), [("RANGE", "/total", IN_TOTAL, 99500)]),  # 99.5 in thousandths
    (faulty(total=83000), [("RANGE", "/total", IN_TOTAL, 83000)]),  # 830 in cents
    (faulty(total=0.0995), [("RANGE", "/total", IN_TOTAL, 0.0995)]),  # thousands for units
    (faulty(total=10000), []),  # the bounds are inclusive
    (faulty(total=1), []),
    (faulty(total=10000.5), [("RANGE", "/total", IN_TOTAL, 10000.5)]),  # just outside
    (faulty(total=0.99), [("RANGE", "/total", IN_TOTAL, 0.99)]),
    (faulty(total=0), []),  # zero and negatives are the sign codes' business
    (faulty(total=-1), []),
    (faulty(discount=2147483647), [("RANGE", "/discount", "<= 1000", 2147483647)]),  # int32 saturated
    (faulty(discount=1001), [("RANGE", "/discount", "<= 1000", 1001)]),
    (faulty(discount=0.001), []),  # no lower bound: a zero was clean
    (faulty(discount="5"), []),  # a string is TYPE's business
    (faulty(created_at="1970-01-01T00:00:00Z"), [("RANGE", "/created_at", YEARS, "1970-01-01T00:00:00Z")]),
    (faulty(created_at="9999-12-31"), [("RANGE", "/created_at", YEARS, "9999-12-31")]),
    (faulty(created_at="0023-04-05"), [("RANGE", "/created_at", YEARS, "0023-04-05")]),
    (faulty(created_at="2039-12-31T23:59:59Z"), []),
    (faulty(created_at="N/A"), []),  # no date: FORMAT's business
    (faulty(created_at="23-04-05"), []),
    (
        faulty(items=items("SKU-1", "SKU-2", "SKU-1", "SKU-1")),
        [("UNIQUE", "/items/2/sku", "unique", "SKU-1"), ("UNIQUE", "/items/3/sku", "unique", "SKU-1")],
    ),
    (faulty(items=[{"sku": "A", "qty": 1}, {"sku": None, "qty": 2}, {"sku": None, "qty": 3}]), []),
    (
        faulty(items=items("A", "B", qty=5000)),
        [("RANGE", "/items/0/qty", IN_QTY, 5000), ("RANGE", "/items/1/qty", IN_QTY, 5000)],
    ),
    (  # below 0.1 breaks, 100 is the inclusive max
        faulty(items=[{"sku": "A", "qty": 0.05}, {"sku": "B", "qty": 100}]),
        [("RANGE", "/items/0/qty", IN_QTY, 0.05)],
    ),
    (faulty(tags=["gift", "vip", "gift"]), [("UNIQUE", "/tags/2", "unique", "gift")]),
    (faulty(shipments=[{"parcels": ["P0", "P0"]}]), [("UNIQUE", "/shipments/0/parcels/1", "unique", "P0")]),
    (
        faulty(shipments=[{"parcels": ["P0", "P1"]}, {"parcels": ["P1", "P2", "P1", "P1"]}]),
        [
            ("UNIQUE", "/shipments/1/parcels/2", "unique", "P1"),
            ("UNIQUE", "/shipments/1/parcels/3", "unique", "P1"),
        ],
    ),
    (
        faulty(total=83000, tags=["vip", "vip"], created_at="1970-01-01"),
        [
            ("RANGE", "/created_at", YEARS, "1970-01-01"),
            ("RANGE", "/total", IN_TOTAL, 83000),
            ("UNIQUE", "/tags/1", "unique", "vip"),
        ],
    ),
]


def one(cs: ContractSet, result: dict[str, Any], code: str) -> Violation:
    rc = check_call(cs, T, {"order_id": result["order_id"]}, result)
    assert rc is not None
    (v,) = [v for v in rc.violations if v.code == code]
    return v


# ---- check_call == check_corpus --------------------------------------------------------------------------


def assert_same(cs: ContractSet, corpus: Corpus, fold: int | None = None) -> pl.DataFrame:
    return assert_paths_agree(cs, corpus, fold=fold)


def hand_rule(code: str, paths: list[str], params: dict[str, Any], tool: str = "h") -> Rule:
    return a_hand_rule(tool, code, paths, params)


def hand_set(rules: tuple[Rule, ...]) -> ContractSet:
    return one_checker(rules)


HAND = (
    hand_rule("RANGE", ["/n"], {"of": "number", "min": 10, "max": 1000}),
    hand_rule("RANGE", ["/n"], {"of": "number", "min": None, "max": 100}),
    hand_rule("RANGE", ["/n"], {"of": "magnitude", "min": None, "max": 1000}),
    hand_rule("RANGE", ["/xs/*"], {"of": "number", "min": 0.01, "max": 1}),
    hand_rule("RANGE", ["/d"], {"of": "year", "min": 2000, "max": 2039}),
    hand_rule("RANGE", ["/d"], {"of": "year", "min": None, "max": 2039}),
    hand_rule("RANGE", ["/rows/*/sub/*/v"], {"of": "year", "min": 1990, "max": 2099}),
    hand_rule("RANGE", [""], {"of": "number", "min": 1, "max": 10}),
    hand_rule("RANGE", ["$args/ids/*"], {"of": "number", "min": 1, "max": 10}),
    hand_rule("UNIQUE", ["/xs/*"], {}),
    hand_rule("UNIQUE", ["/rows/*/id"], {}),
    hand_rule("UNIQUE", ["/rows/*/sub/*/v"], {}),
    hand_rule("UNIQUE", ["/grid/*/*"], {}),
    hand_rule("UNIQUE", ["/*"], {}),
    hand_rule("UNIQUE", ["$args/ids/*"], {}),
    hand_rule("UNIQUE", ["$args/people/*/name"], {}),
    # a composite identity: no two flights of one list with the same number, date and price
    hand_rule("UNIQUE", ["/flights/*/date", "/flights/*/number", "/flights/*/price"], {}),
)

FL = [
    {"number": "HAT1", "date": "2024-05-01", "price": 100},
    {"number": "HAT1", "date": "2024-05-08", "price": 100},  # the same flight a week later
    {"number": "HAT2", "date": "2024-05-01", "price": 100},
]

#: (arguments, result, the expected (code, path, expected) of the violations)
HAND_CASES: list[tuple[dict[str, Any], Any, list[tuple[str, str, Any]]]] = [
    ({}, {"flights": FL}, []),  # every single field repeats, no item does
    ({}, {"flights": [*FL, dict(FL[1])]}, [("UNIQUE", "/flights/3", "unique")]),
    ({}, {"flights": [*FL, {**FL[0], "seat": "1A"}]}, [("UNIQUE", "/flights/3", "unique")]),  # other fields
    ({}, {"flights": [*FL, {**FL[0], "price": 100.0}]}, [("UNIQUE", "/flights/3", "unique")]),  # by value
    ({}, {"flights": [*FL, {**FL[0], "price": "100"}]}, []),  # "100" is not 100
    ({}, {"flights": [{"number": "X"}, {"number": "X", "date": None}]}, [("UNIQUE", "/flights/1", "unique")]),
    ({}, {"flights": [{"seat": "1A"}, {"seat": "1A"}]}, []),  # no judged field: not judged
    (
        {},
        {"flights": [FL[0], FL[0], FL[0]]},
        [("UNIQUE", "/flights/1", "unique"), ("UNIQUE", "/flights/2", "unique")],
    ),
    ({}, {"n": 50, "xs": [0.5, 0.25], "d": "2020-01-01"}, []),
    (
        {},
        {"n": 5000, "xs": [0.5, 0.5, 0.5], "d": "1970-01-01"},
        [
            ("RANGE", "/n", "in [10, 1000]"),
            ("RANGE", "/n", "<= 100"),
            ("RANGE", "/n", "in [-1000, 1000]"),
            ("RANGE", "/d", "year in [2000, 2039]"),
            ("UNIQUE", "/xs/1", "unique"),
            ("UNIQUE", "/xs/2", "unique"),
        ],
    ),
    # min null: 1950 is fine for the second year rule, not for the first; 2 is below 10 but not 100
    (
        {},
        {"n": 2, "d": "1950-06-01"},
        [("RANGE", "/n", "in [10, 1000]"), ("RANGE", "/d", "year in [2000, 2039]")],
    ),
    (
        {},
        {"d": "2040-01-01"},
        [("RANGE", "/d", "year in [2000, 2039]"), ("RANGE", "/d", "year in [-, 2039]")],
    ),
    # 1 and 1.0 are one value; "1" and 1 are two; null and booleans are not judged
    ({}, {"xs": [1, 1.0]}, [("UNIQUE", "/xs/1", "unique")]),
    # magnitude: a negative beyond the bound breaks it; within it, only the sign-blind bounds apply
    ({}, {"n": -1000.5}, [("RANGE", "/n", "in [-1000, 1000]")]),
    ({}, {"n": -1000}, []),
    ({}, {"xs": ["1", 1, None, None, True, True, False, False]}, []),
    ({}, {"xs": [0.005, 2, 0, -3]}, [("RANGE", "/xs/0", "in [0.01, 1]"), ("RANGE", "/xs/1", "in [0.01, 1]")]),
    # nested lists are judged per inner list; repeats across rows are fine
    (
        {},
        {
            "rows": [
                {"id": "a", "sub": [{"v": "2020-01-01"}, {"v": "2020-01-01"}]},
                {"id": "b", "sub": [{"v": "2020-01-01"}, {"v": "1900-01-01"}]},
                {"id": "a", "sub": []},
            ]
        },
        [
            ("UNIQUE", "/rows/0/sub/1/v", "unique"),
            ("UNIQUE", "/rows/2/id", "unique"),
            ("RANGE", "/rows/1/sub/1/v", "year in [1990, 2099]"),
        ],
    ),
    (
        {},
        {"grid": [[1, 2], [2, 1], [3, 3, 3]]},
        [("UNIQUE", "/grid/2/1", "unique"), ("UNIQUE", "/grid/2/2", "unique")],
    ),
    # the root: a number, and a list of scalars
    ({}, 50, [("RANGE", "", "in [1, 10]")]),
    ({}, ["x", "y", "x"], [("UNIQUE", "/2", "unique")]),
    # the arguments side (paths keep their `$args` prefix)
    ({"ids": [7, 8, 7]}, {}, [("UNIQUE", "$args/ids/2", "unique")]),
    (
        {"ids": [50, 0.5, 5, 50]},
        {},
        [
            ("RANGE", "$args/ids/0", "in [1, 10]"),
            ("RANGE", "$args/ids/1", "in [1, 10]"),
            ("RANGE", "$args/ids/3", "in [1, 10]"),
            ("UNIQUE", "$args/ids/3", "unique"),
        ],
    ),
    (
        {"people": [{"name": "Ana"}, {"name": "Ana"}, {"name": "ana"}]},
        {},
        [("UNIQUE", "$args/people/1/name", "unique")],
    ),
    ({"ids": "none", "people": [{"name": 1}, {}]}, {"xs": "none", "rows": {"id": 1}}, []),
]


def hand_records(cases: list[tuple[dict[str, Any], Any, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": f"ep-{i:04d}",
            "task_id": f"task-{i:04d}",
            "step": 0,
            "tool": "h",
            "arguments": args,
            "result": res,
            "status": "ok",
        }
        for i, (args, res, *_) in enumerate(cases)
    ]


# Random results: numbers of every magnitude, dates of every year, lists with repeats.
NUMBERS = [0, 1, 1.0, 5, 5.0, 2.5, 0.005, 83000, 2147483647, -3, 10, 1000]
BIG_INTS = [2**53 - 1, 2**53, 2**53 + 1, -(2**60)]  # around float64's exact limit
TEXTS = ["1", "a", "b", "2020-01-01", "1970-01-01T00:00:00Z", "9999-12-31", "2039-12-31", "2019-13-45"]
scalars = st.one_of(
    st.sampled_from([*NUMBERS, *BIG_INTS, *TEXTS, "20-01-01", "N/A", "", None, True, False]),
    st.integers(-(10**6), 10**6),
    st.integers(-(2**63) + 1, 2**63 - 1),  # ids beyond 2**53: RANGE compares float64, UNIQUE skips them
    st.floats(min_value=-1e7, max_value=1e7, allow_nan=False),  # -0.0 included: equal to 0 on both paths
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?\Z"),
    st.text(max_size=6),
)
# repeats are likely (2**53 and 2**53 + 1 are one double, never judged)
small = st.sampled_from([0, 0.0, -0.0, 1, 1.0, 2, "1", "x", "2020-01-01", None, True, 2**53, 2**53 + 1])
lists = st.lists(st.one_of(small, scalars), max_size=5)


@st.composite
def results(draw: Any) -> tuple[dict[str, Any], Any]:
    res: Any = {
        "n": draw(scalars),
        "d": draw(scalars),
        "xs": draw(st.one_of(lists, scalars)),
        "rows": draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "id": st.one_of(small, scalars),
                        "sub": st.lists(st.fixed_dictionaries({"v": st.one_of(small, scalars)}), max_size=3),
                    }
                ),
                max_size=4,
            )
        ),
        "grid": draw(st.lists(lists, max_size=3)),
    }
    if draw(st.booleans()):
        res = draw(st.one_of(lists, scalars))
    args = {
        "ids": draw(st.one_of(lists, scalars)),
        "people": draw(st.lists(st.fixed_dictionaries({"name": small}), max_size=3)),
    }
    return args, res


# ---- rules with bad params are refused ----------------------------------------------------------------------

UNIQUE_PATH = "UNIQUE needs a path ending in `/*` or `/*/<field>`"
RANGE_BOUNDS = "RANGE needs params.max, a number, and params.min, null or a number <= max"

#: (rule, what the schema says when the file is loaded (None: it passes), what the code says)
BAD: list[tuple[Rule, str | None, str]] = [
    (hand_rule("RANGE", ["/n"], {"of": "number", "min": 1}), "'max' is a required property", RANGE_BOUNDS),
    (
        hand_rule("RANGE", ["/n"], {"of": "number", "min": 1, "max": None}),
        "None is not of type 'number'",
        RANGE_BOUNDS,
    ),
    (hand_rule("RANGE", ["/n"], {"of": "number", "min": 10, "max": 1}), None, RANGE_BOUNDS),
    (hand_rule("RANGE", ["/n"], {"of": "year", "min": 2040, "max": 2000}), None, RANGE_BOUNDS),
    (hand_rule("RANGE", ["/n"], {"of": "number", "min": "1", "max": 10}), "'1' is not of type", RANGE_BOUNDS),
    (
        hand_rule("RANGE", ["/n"], {"of": "count", "min": 1, "max": 10}),
        "'count' is not one of",
        "RANGE needs params.of",
    ),
    (hand_rule("UNIQUE", ["/xs"], {}), None, UNIQUE_PATH),
    (hand_rule("UNIQUE", [""], {}), None, UNIQUE_PATH),
    (hand_rule("UNIQUE", ["/xs/*/a/b"], {}), None, UNIQUE_PATH),
    (hand_rule("UNIQUE", ["/m/*/~*"], {}), None, UNIQUE_PATH),
    (hand_rule("UNIQUE", ["$args/xs"], {}), None, UNIQUE_PATH),
]


# ---- regressions: library bugs since fixed -----------------------------------------------------------------


def same_on(
    rules: tuple[Rule, ...], args: dict[str, Any], result: Any, tmp_path: Path
) -> list[tuple[str, Any]]:
    """check_call and check_corpus agree on one call; the (path, observed) of its violations."""
    corpus = corpus_from_records(hand_records([(args, result)]), tmp_path / "c")
    df = assert_same(hand_set(rules), corpus)
    py = call_violations(hand_set(rules), "h", args, result)
    assert sorted((r["path"], orjson.loads(r["observed"])) for r in df.iter_rows(named=True)) == sorted(
        (v.path, v.observed) for v in py
    )
    return sorted((v.path, v.observed) for v in py)


# ---- the order world mined with the default parameters ---------------------------------------------

COLORS = ["red", "blue", "green", "black"]


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
    return order_calls(n_tasks, calls_per_task, lambda t: order(r, t))


@pytest.fixture(scope="session")
def world_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(order_world(320), tmp_path_factory.mktemp("orders") / "c")


@pytest.fixture(scope="session")
def world_cs(world_corpus: Corpus) -> ContractSet:
    return mine(world_corpus)


# ---- what each code's tests assert of the pair's worlds ------------------------------------------------

#: The rules mined from the check world (`cs`), per code.
MINED: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {
    ("RANGE", ("/total",)): {"of": "number", "min": 1, "max": 10000},
    ("RANGE", ("/discount",)): {"of": "number", "min": None, "max": 1000},
    ("RANGE", ("/items/*/qty",)): {"of": "number", "min": 0.1, "max": 100},
    ("RANGE", ("/created_at",)): {"of": "year", "min": 2000, "max": 2039},
    ("UNIQUE", ("/items/*/sku",)): {},
    ("UNIQUE", ("/tags/*",)): {},
    ("UNIQUE", ("/shipments/*/parcels/*",)): {},
}


def cases_corpus(path: Path) -> Corpus:
    """`CASES` as a corpus, one call a line in their order."""
    return corpus_from_records([record(i, res) for i, (res, _) in enumerate(CASES)], path)


def hand_rules(code: str) -> tuple[Rule, ...]:
    return tuple(r for r in HAND if r.code == code)


def assert_hand_written_rules(tmp_path: Path, code: str) -> None:
    """Rules the miner does not write (years with min null, nested `A/*/B/*/f`, the root, the arguments
    side, two rules at one place): both implementations agree, and `code`'s witnesses are the listed ones."""
    hand = hand_set(HAND)
    assert schema_errors(hand.to_json(), "contract-set") == []
    corpus = corpus_from_records(hand_records(HAND_CASES), tmp_path / "hand")
    assert_hand_written(hand, corpus, assert_same(hand, corpus), HAND_CASES, code)


def assert_cli_check(cs_file: Path, tmp_path: Path, code: str) -> None:
    """`contracts check --code RANGE --code UNIQUE` on `CASES`, from a file and from stdin."""
    src = write_jsonl(tmp_path / "faulty.jsonl", [record(i, res) for i, (res, _) in enumerate(CASES)])
    clean = write_jsonl(tmp_path / "clean.jsonl", clean_records()[:20])
    out = witnessed_by_cli(cs_file, src, clean, CASES, code, ("--code", "RANGE", "--code", "UNIQUE"))
    for r in out:
        assert {v["code"] for v in r["outcome_contract"]["violations"]} <= set(CODES)


def bad_of(code: str) -> list[tuple[Rule, str | None, str]]:
    """`BAD`'s rules of `code`."""
    return [b for b in BAD if b[0].code == code]


def assert_refused(rule: Rule, schema_says: str | None, code_says: str, tmp_path: Path) -> None:
    """A rule with bad params is refused in memory, from a file and by the CLI, with the listed message."""
    bad = hand_set((rule,))
    # in memory: check_call and check_corpus refuse the rule, naming it
    with pytest.raises(CheckError) as e:
        check_call(bad, "h", {}, {"n": 5, "xs": [1, 1]})
    assert e.value.code == "E_RULE" and code_says in str(e.value) and rule.id in str(e.value)
    corpus = corpus_from_records(hand_records([({}, {"n": 5, "xs": [1, 1]})]), tmp_path / "c")
    with pytest.raises(CheckError) as e:
        check_corpus(bad, corpus)
    assert e.value.code == "E_RULE" and code_says in str(e.value)
    # from a file: the schema or the code refuses it, naming the file
    p = tmp_path / "bad.json"
    bad.save(p)
    with pytest.raises(ContractsError) as e:
        load_contracts(p)
    msg = str(e.value)
    assert str(p) in msg
    if schema_says is None:
        assert e.value.code == "E_RULE" and code_says in msg and rule.id in msg
    else:
        assert e.value.code == "E_SCHEMA_INVALID" and schema_says in msg
    # and the CLI exits 2 with the message
    src = write_jsonl(tmp_path / "t.jsonl", hand_records([({}, {"n": 5})]))
    res = CliRunner().invoke(app, ["check", "--contracts", str(p), "-q", str(src)])
    assert res.exit_code == 2 and (schema_says or code_says) in res.stderr, res.output


def assert_world_set_is_valid(world_cs: ContractSet, code: str, min_tasks: int) -> None:
    """The order world's contract set is valid and round-trips; `code`'s thresholds are the defaults and
    every rule of it is one the checker accepts."""
    data = world_cs.to_json()
    assert schema_errors(data, "contract-set") == []
    assert data["params"]["min_tasks"][code] == default_min_tasks()[code] == min_tasks
    assert data["params"]["min_support"][code] == default_min_support()[code] == 30
    assert ContractSet.from_json(data).to_json() == data
    for r in rules(world_cs, code):
        checks()[code].validate(r)
