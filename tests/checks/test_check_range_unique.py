"""RANGE and UNIQUE through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give
the same witnesses, receipts validate, `contracts check` reports them, and rules with bad params are
refused when a contract set is loaded or checked. Library bugs that were fixed are pinned at the end as
regression tests.

The mined bounds (recomputed by hand in `clean_result`): max = the least power of ten strictly above
3 × the largest clean value, min (every value > 0) = the greatest power of ten at or below the least / 3."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks.checker import (
    call_violations,
    check_call,
    check_corpus,
    load_contracts,
    receipts_from_frame,
)
from output_contracts.checks.receipts import encode
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.table import describe
from output_contracts.codes.violation import Violation
from output_contracts.errors import CheckError, ContractsError
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree

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


def record(i: int, result: Any, task: str | None = None) -> dict[str, Any]:
    oid = result.get("order_id") if isinstance(result, dict) else None
    return {
        "trace_id": f"ep-{i:04d}",
        "task_id": task or f"task-{i:04d}",
        "step": 0,
        "tool": T,
        "arguments": {"order_id": oid} if isinstance(oid, str) else {},
        "result": result,
        "status": "ok",
    }


def clean_records() -> list[dict[str, Any]]:
    r = random.Random(11)
    return [record(i, clean_result(r, i)) for i in range(N_TASKS)]


@pytest.fixture(scope="module")
def cs(tmp_path_factory: pytest.TempPathFactory) -> ContractSet:
    """The real miner on the clean world, 5 folds (the fold checkers, with ~256 tasks each, have RANGE
    but not UNIQUE)."""
    corpus = corpus_from_records(clean_records(), tmp_path_factory.mktemp("clean") / "c")
    return mine(corpus, folds=5, seed=13)


@pytest.fixture(scope="module")
def cs_file(cs: ContractSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cs") / "contracts.json"
    cs.save(p)
    return p


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


def ours(vs: list[Violation] | tuple[Violation, ...]) -> list[tuple[str, str, Any, Any]]:
    return sorted((v.code, v.path, v.expected, v.observed) for v in vs if v.code in CODES)


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert schema_errors(cs.to_json(), "contract-set") == []
    assert schema_errors(orjson.loads(cs_file.read_bytes()), "contract-set") == []
    got = {(r.code, r.paths): r.params for r in cs.rules_for(None) if r.code in CODES}
    assert got == {
        ("RANGE", ("/total",)): {"of": "number", "min": 1, "max": 10000},
        ("RANGE", ("/discount",)): {"of": "number", "min": None, "max": 1000},
        ("RANGE", ("/items/*/qty",)): {"of": "number", "min": 0.1, "max": 100},
        ("RANGE", ("/created_at",)): {"of": "year", "min": 2000, "max": 2039},
        ("UNIQUE", ("/items/*/sku",)): {},
        ("UNIQUE", ("/tags/*",)): {},
        ("UNIQUE", ("/shipments/*/parcels/*",)): {},
    }
    assert load_contracts(cs_file).to_json() == cs.to_json()


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    rc = check_call(cs, T, {"order_id": result["order_id"]}, result)
    assert ours(rc.violations if rc is not None else ()) == sorted(expected)
    if rc is not None:
        assert all(v.present for v in rc.violations)
        assert schema_errors(encode(rc), "receipt-v2") == []
        assert schema_errors(encode(rc, "v1"), "receipt-v1") == []
        assert rc.tool == T and rc.result == result  # the result is never changed


def _one(cs: ContractSet, result: dict[str, Any], code: str) -> Violation:
    rc = check_call(cs, T, {"order_id": result["order_id"]}, result)
    assert rc is not None
    (v,) = [v for v in rc.violations if v.code == code]
    return v


def test_detail_sentences(cs: ContractSet) -> None:
    v = _one(cs, faulty(total=83000), "RANGE")
    assert v.detail == "get_order returned total=83000; every one of 320 clean results had in [1, 10000]"
    v = _one(cs, faulty(discount=2147483647), "RANGE")
    assert v.detail == "get_order returned discount=2147483647; every one of 320 clean results had <= 1000"
    v = _one(cs, faulty(items=[{"sku": "A", "qty": 1}, {"sku": "B", "qty": 5000}]), "RANGE")
    assert v.path == "/items/1/qty"
    assert v.detail == "get_order returned items/1/qty=5000; every one of 320 clean results had in [0.1, 100]"
    v = _one(cs, faulty(created_at="1970-01-01T00:00:00Z"), "RANGE")
    assert v.detail == (
        'get_order returned created_at="1970-01-01T00:00:00Z"; every one of 320 clean results had '
        "year in [2000, 2039]"
    )
    v = _one(cs, faulty(items=items("SKU-9", "SKU-8", "SKU-9")), "UNIQUE")
    assert v.detail == (
        'get_order returned item 2 of items with sku "SKU-9", as item 0 did; in every one of 320 clean '
        "results the items of that list were distinct"
    )
    v = _one(cs, faulty(tags=["new", "gift", "vip", "gift"]), "UNIQUE")
    assert v.detail.startswith('get_order returned item 3 of tags with the value "gift", as item 1 did;')
    v = _one(cs, faulty(shipments=[{"parcels": ["P0"]}, {"parcels": ["P7", "P0", "P7"]}]), "UNIQUE")
    assert v.path == "/shipments/1/parcels/2"
    assert v.detail.startswith(
        'get_order returned item 2 of shipments/1/parcels with the value "P7", as item 0'
    )


def test_fold_checkers_have_range_not_unique(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has RANGE (200 tasks) but not UNIQUE (300)."""
    res = faulty(total=83000, tags=["vip", "vip"])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ORD-123456"}, res, fold=f)
        assert [(v.code, v.path) for v in vs if v.code in CODES] == [("RANGE", "/total")], f


# ---- check_call == check_corpus --------------------------------------------------------------------------


def assert_same(cs: ContractSet, corpus: Corpus, fold: int | None = None) -> pl.DataFrame:
    return assert_paths_agree(cs, corpus, fold=fold)


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    recs = [record(i, res) for i, (res, _) in enumerate(CASES)]
    corpus = corpus_from_records(recs, tmp_path / "faulty")
    df = assert_same(cs, corpus)
    for fold in range(cs.k):
        assert_same(cs, corpus, fold)
    receipts = list(receipts_from_frame(cs, corpus, df, include_all=True))
    assert [ours(r.violations) for r in receipts] == [sorted(e) for _, e in CASES]
    for r in receipts:
        assert schema_errors(encode(r), "receipt-v2") == []
    uniq = check_corpus(cs, corpus, codes=["UNIQUE"])
    assert set(uniq["code"].to_list()) == {"UNIQUE"}
    assert uniq.height == sum(1 for _, e in CASES for c, *_ in e if c == "UNIQUE")


def hand_rule(code: str, paths: list[str], params: dict[str, Any], tool: str = "h") -> Rule:
    return Rule(rule_id(tool, code, paths, params), tool, code, tuple(paths), params, Support(100, 9))


def hand_set(rules: tuple[Rule, ...]) -> ContractSet:
    by_tool: dict[str, list[Rule]] = {}
    for r in rules:
        by_tool.setdefault(r.tool, []).append(r)
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={t: ToolContracts(rules=tuple(rs)) for t, rs in by_tool.items()},
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


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


def test_hand_written_rules(tmp_path: Path) -> None:
    """Rules the miner does not write (years with min null, nested `A/*/B/*/f`, the root, the arguments
    side, two rules at one place): both implementations agree, and the witnesses are the listed ones."""
    hand = hand_set(HAND)
    assert schema_errors(hand.to_json(), "contract-set") == []
    corpus = corpus_from_records(hand_records(HAND_CASES), tmp_path / "hand")
    df = assert_same(hand, corpus)
    receipts = {r.line: r for r in receipts_from_frame(hand, corpus, df, include_all=True)}
    got = [
        sorted((v.code, v.path, v.expected) for v in receipts[i + 1].violations) if i + 1 in receipts else []
        for i in range(len(HAND_CASES))
    ]
    assert got == [sorted(e) for _, _, e in HAND_CASES]
    for r in receipts.values():
        assert schema_errors(encode(r), "receipt-v2") == []


def test_unique_witness_names_the_first_item(tmp_path: Path) -> None:
    hand = hand_set(HAND)
    vs = call_violations(hand, "h", {}, {"rows": [{"id": 4}, {"id": 5}, {"id": 4.0}, {"id": 4}]})
    assert [(v.path, v.observed) for v in vs] == [("/rows/2/id", 4.0), ("/rows/3/id", 4)]
    assert [v.detail.split(";")[0] for v in vs] == [
        "h returned item 2 of rows with id 4.0, as item 0 did",
        "h returned item 3 of rows with id 4, as item 0 did",
    ]
    (v,) = call_violations(hand, "h", {"ids": [3, 9, 3]}, {})
    assert (
        v.path == "$args/ids/2"
        and v.observed == 3
        and "item 2 of ids" in v.detail
        and "as item 0" in v.detail
    )
    (v,) = call_violations(hand, "h", {}, ["a", "b", "b"])
    assert v.detail.startswith('h returned item 2 of the result with the value "b", as item 1 did')


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


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results(), min_size=1, max_size=10))
def test_vectorised_equals_plain(batch: list[tuple[dict[str, Any], Any]], tmp_path_factory: Any) -> None:
    corpus = corpus_from_records(hand_records(batch), tmp_path_factory.mktemp("p") / "c")
    assert_same(hand_set(HAND), corpus)


# ---- the CLI ----------------------------------------------------------------------------------------------


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def receipts_of(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


def witnesses(receipt: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return sorted(
        (v["code"], v["path"], v["expected"], v["observed"])
        for v in receipt["outcome_contract"]["violations"]
        if v["code"] in CODES
    )


def test_cli_check(cs_file: Path, tmp_path: Path) -> None:
    recs = [record(i, res) for i, (res, _) in enumerate(CASES)]
    src = write_jsonl(tmp_path / "faulty.jsonl", recs)
    runner = CliRunner()
    res = runner.invoke(
        app, ["check", "--contracts", str(cs_file), "-q", "--code", "RANGE", "--code", "UNIQUE", str(src)]
    )
    assert res.exit_code == 1, res.output
    out = receipts_of(res.stdout)
    want = {i + 1: sorted(e) for i, (_, e) in enumerate(CASES) if e}
    assert {r["line"]: witnesses(r) for r in out} == want
    for r in out:
        assert schema_errors(r, "receipt-v2") == []
        assert {v["code"] for v in r["outcome_contract"]["violations"]} <= set(CODES)
    # stdin is checked call by call (check_call), the file as a corpus (check_corpus): same violations
    streamed = runner.invoke(
        app,
        ["check", "-c", str(cs_file), "-q", "--code", "RANGE", "--code", "UNIQUE", "-"],
        input=src.read_bytes(),
    )
    assert streamed.exit_code == 1, streamed.output
    assert [(r["line"], r["outcome_contract"]) for r in receipts_of(streamed.stdout)] == [
        (r["line"], r["outcome_contract"]) for r in out
    ]
    # a clean file: exit 0, no receipts
    clean = write_jsonl(tmp_path / "clean.jsonl", clean_records()[:20])
    ok = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", str(clean)])
    assert ok.exit_code == 0, ok.output
    assert receipts_of(ok.stdout) == []


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


@pytest.mark.parametrize(
    "rule,schema_says,code_says", BAD, ids=[f"{r.code}-{i}" for i, (r, _, _) in enumerate(BAD)]
)
def test_bad_params_are_refused(rule: Rule, schema_says: str | None, code_says: str, tmp_path: Path) -> None:
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


# ---- regressions: library bugs since fixed -----------------------------------------------------------------


def _same_on(
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


def test_range_on_the_arguments_side(tmp_path: Path) -> None:
    """check_corpus once dropped the `$args` prefix of a per-node code's path."""
    rule = hand_rule("RANGE", ["$args/n"], {"of": "number", "min": 1, "max": 10})
    assert _same_on((rule,), {"n": 50}, {}, tmp_path / "above") == [("$args/n", 50)]
    assert _same_on((rule,), {"n": 0.5}, {"n": 50}, tmp_path / "below") == [("$args/n", 0.5)]
    assert _same_on((rule,), {"n": 10}, {"n": 50}, tmp_path / "inside") == []


def test_unique_negative_zero_per_call() -> None:
    """check_call: -0.0 is the number 0."""
    hand = hand_set((hand_rule("UNIQUE", ["/xs/*"], {}),))
    vs = call_violations(hand, "h", {}, {"xs": [0, -0.0, 1, 0.0]})
    assert [(v.path, v.observed) for v in vs] == [("/xs/1", -0.0), ("/xs/3", 0.0)]
    assert vs[0].detail.startswith("h returned item 1 of xs with the value -0.0, as item 0 did;")


def test_unique_negative_zero_on_a_corpus(tmp_path: Path) -> None:
    """check_corpus should agree with check_call on -0.0 = 0."""
    rule = hand_rule("UNIQUE", ["/xs/*"], {})
    assert _same_on((rule,), {}, {"xs": [-0.0, 1, 0.0]}, tmp_path) == [("/xs/2", 0.0)]


def test_range_on_ints_beyond_2_53(tmp_path: Path) -> None:
    """Numbers compare as float64 on both paths: 2**53 + 1 is the double 2**53 (not above a max of 2**53),
    2**53 + 2 is a double of its own (above it)."""
    rule = hand_rule("RANGE", ["/n"], {"of": "number", "min": None, "max": 2**53})
    assert float(2**53 + 1) == 2**53 and float(2**53 + 2) > 2**53
    assert _same_on((rule,), {}, {"n": 2**53 + 1}, tmp_path / "a") == []
    assert _same_on((rule,), {}, {"n": 2**53 + 2}, tmp_path / "b") == [("/n", 2**53 + 2)]


def test_unique_distinct_big_ints(tmp_path: Path) -> None:
    """Numbers of magnitude 2**53 or more are not judged (float64 cannot tell such ids apart): not even an
    exact repeat is reported; one below the limit still is."""
    rule = hand_rule("UNIQUE", ["/xs/*"], {})
    assert _same_on((rule,), {}, {"xs": [2**53, 2**53 + 1]}, tmp_path / "a") == []
    assert _same_on((rule,), {}, {"xs": [2**53, 2**53, -(2**60), -(2**60)]}, tmp_path / "b") == []
    big = 2**53 - 1
    assert _same_on((rule,), {}, {"xs": [big, 2**53, big]}, tmp_path / "c") == [("/xs/2", big)]


def test_unique_witness_of_an_escaped_field(tmp_path: Path) -> None:
    """The witness looks the earlier items up by the unescaped key (`a/b`, not `a~1b`)."""
    rule = hand_rule("UNIQUE", ["/xs/*/a~1b"], {})
    res = {"xs": [{"a/b": "k"}, {"a/b": "j"}, {"a/b": "k"}]}
    assert _same_on((rule,), {}, res, tmp_path) == [("/xs/2/a~1b", "k")]
    (v,) = call_violations(hand_set((rule,)), "h", {}, res)
    assert v.detail == (
        'h returned item 2 of xs with a~1b "k", as item 0 did; in every one of 100 clean results the items '
        "of that list were distinct"
    )


def test_year_detail_wording(cs: ContractSet) -> None:
    """The year detail once read "had a year year in [...]"."""
    v = _one(cs, faulty(created_at="1970-01-01"), "RANGE")
    assert v.detail == (
        'get_order returned created_at="1970-01-01"; every one of 320 clean results had year in [2000, 2039]'
    )


def test_composite_witness_and_description() -> None:
    hand = hand_set(HAND)
    (v,) = call_violations(hand, "h", {}, {"flights": [*FL, dict(FL[1])]})
    assert (v.path, v.observed, v.expected) == ("/flights/3", FL[1], "unique")
    assert (
        v.detail.split(";")[0] == "h returned item 3 of flights with the same date, number, price as item 1"
    )
    rule = HAND[-1]
    assert describe(rule) == "/flights/* unique by (date, number, price) within its list"


@pytest.mark.parametrize(
    "paths",
    [
        ["/a/*/x", "/b/*/y"],
        ["/a/*/x", "/a/*/x"],
        ["/a/*/x", "/a/*"],
        ["/a/*/x/*/y", "/a/*/b"],
    ],
)
def test_composite_paths_must_be_fields_of_one_list(paths: list[str]) -> None:
    bad = hand_set((hand_rule("UNIQUE", paths, {}),))
    with pytest.raises(CheckError, match="composite UNIQUE"):
        call_violations(bad, "h", {}, {})
