"""The two checker implementations agree, rule by rule, and each rule class means what docs/codes.md says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import (
    call_violations,
    check_call,
    check_corpus,
    receipts_from_frame,
)
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.errors import CheckError
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree

T = "lookup_inventory"


def rule(code: str, paths: list[str], params: dict[str, Any] | None = None, n: int = 412) -> Rule:
    params = params or {}
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(n, 9))


RULES = (
    rule("REQUIRED", ["/available"]),
    rule("REQUIRED", ["/items/*/price"]),
    rule("TYPE", [""], {"kind": "object"}),
    rule("TYPE", ["/available"], {"kind": "int"}),
    rule("TYPE", ["/total"], {"kind": "number"}),
    rule("NONNEG", ["/available"]),
    rule("POSITIVE", ["/items/*/qty"]),
    rule("DOMAIN", ["/warehouse"], {"values": ["east", "west"]}),
    rule("ECHO", ["/sku", "$args/sku"]),
    rule("DATE_ORDER", ["/flights/*/dep", "/flights/*/arr"], {"tz": "aware"}),
    rule("DATE_ORDER", ["$args/start", "/until"], {"tz": "date"}),
    rule("RELATION", ["/total", "/sub", "/tax"], {"form": "linear", "coef": [1, 1], "tol": "cent"}),
    rule("RELATION", ["/net", "/sub", "/tax"], {"form": "linear", "coef": [1, -1], "tol": "exact"}),
    rule("RELATION", ["/sub", "/items/*/line"], {"form": "sum_over", "tol": "cent"}),
    rule("RELATION", ["/items/*/line", "/items/*/price", "/items/*/qty"], {"form": "product", "tol": "rel"}),
    rule("RELATION", ["/n_items", "/items"], {"form": "count_of", "tol": "exact"}),
)


def contract_set(rules: tuple[Rule, ...] = RULES) -> ContractSet:
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={T: ToolContracts(rules=rules, substitutes=("query_warehouse", "get_stock_by_sku"))},
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


def corpus_of(results: list[tuple[dict[str, Any], Any]], tmp: Path) -> Any:
    recs = [
        {"trace_id": f"ep-{i}", "tool": T, "arguments": a, "result": r} for i, (a, r) in enumerate(results)
    ]
    return corpus_from_records(recs, tmp / "corpus")


def assert_same(cs: ContractSet, results: list[tuple[dict[str, Any], Any]], tmp: Path) -> pl.DataFrame:
    return assert_paths_agree(cs, corpus_of(results, tmp), batch_calls=3)


# ---- one example per rule class, with the exact witnesses --------------------------------------------


CASES: list[tuple[dict[str, Any], Any, list[tuple[str, str, Any, Any, bool]]]] = [
    ({"sku": "S1"}, {"sku": "S1", "available": -3}, [("NONNEG", "/available", ">= 0", -3, True)]),
    ({"sku": "S1"}, {"sku": "S1"}, [("REQUIRED", "/available", "present", None, False)]),
    ({"sku": "S1"}, {"sku": "S1", "available": None}, [("TYPE", "/available", "int", None, True)]),
    ({"sku": "S1"}, {"sku": "S1", "available": 2.5}, [("TYPE", "/available", "int", 2.5, True)]),
    ({"sku": "S1"}, [1, 2], [("TYPE", "", "object", [1, 2], True)]),
    ({"sku": "S1"}, "oops", [("TYPE", "", "object", "oops", True)]),
    ({"sku": "S1"}, {"sku": "S2", "available": 1}, [("ECHO", "/sku", "S1", "S2", True)]),
    ({"sku": 7}, {"sku": 7.0, "available": 1}, []),
    ({"sku": True}, {"sku": 1, "available": 1}, [("ECHO", "/sku", True, 1, True)]),
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "warehouse": "north"},
        [("DOMAIN", "/warehouse", ["east", "west"], "north", True)],
    ),
    ({"sku": "S1"}, {"sku": "S1", "available": 1, "warehouse": 3}, []),
    (
        {"sku": "S1"},
        {
            "sku": "S1",
            "available": 1,
            "flights": [{"dep": "2026-03-01T10:00Z", "arr": "2026-03-01T11:30+02:00"}],
        },
        [
            (
                "DATE_ORDER",
                "/flights/0/arr",
                ">= /flights/0/dep (2026-03-01T10:00Z)",
                "2026-03-01T11:30+02:00",
                True,
            )
        ],
    ),
    (
        {"sku": "S1", "start": "2026-03-05"},
        {"sku": "S1", "available": 1, "until": "2026-03-04"},
        [("DATE_ORDER", "/until", ">= $args/start (2026-03-05)", "2026-03-04", True)],
    ),
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "total": 10.0, "sub": 8.0, "tax": 2.01},
        [("RELATION", "/total", 10.01, 10.0, True)],  # no /items array: the sum_over rule does not qualify
    ),
    (
        {"sku": "S1"},
        {
            "sku": "S1",
            "available": 1,
            "total": 10.004,
            "sub": 8,
            "tax": 2,
            "items": [{"price": 8, "qty": 1, "line": 8}],
        },
        [],
    ),
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "net": 5, "sub": 8, "tax": 2},
        [("RELATION", "/net", 6, 5, True)],
    ),
    (
        {"sku": "S1"},
        {
            "sku": "S1",
            "available": 1,
            "items": [{"price": 2.5, "qty": 2, "line": 5.0}, {"price": 1, "qty": 0, "line": 1}],
        },
        [("POSITIVE", "/items/1/qty", "> 0", 0, True), ("RELATION", "/items/1/line", 0, 1, True)],
    ),
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "items": [{"qty": 1}]},
        [("REQUIRED", "/items/0/price", "present", None, False)],
    ),
    # count_of: the count against the array's length; an empty array counts 0; no array, no rule
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "n_items": 2, "items": [{"price": 1, "qty": 1, "line": 1}]},
        [("RELATION", "/n_items", 1, 2, True)],
    ),
    ({"sku": "S1"}, {"sku": "S1", "available": 1, "n_items": 0, "items": []}, []),
    (
        {"sku": "S1"},
        {"sku": "S1", "available": 1, "n_items": 1, "items": []},
        [("RELATION", "/n_items", 0, 1, True)],
    ),
    ({"sku": "S1"}, {"sku": "S1", "available": 1, "n_items": 1}, []),
    ({"sku": "S1"}, {"sku": "S1", "available": 1, "n_items": 1, "items": {"a": 1}}, []),
]


@pytest.mark.parametrize("args,result,expected", CASES)
def test_each_rule_class(args: dict[str, Any], result: Any, expected: list[Any], tmp_path: Path) -> None:
    cs = contract_set()
    df = assert_same(cs, [(args, result)], tmp_path)
    got = sorted(
        (r["code"], r["path"], orjson.loads(r["expected"]), orjson.loads(r["observed"]), r["present"])
        for r in df.iter_rows(named=True)
    )
    assert got == sorted(expected)


def test_detail_cites_support_and_value() -> None:
    cs = contract_set()
    rc = check_call(cs, T, {"sku": "SKU-1042"}, {"sku": "SKU-1042", "available": -3})
    assert rc is not None
    (v,) = rc.violations
    assert (
        v.detail
        == "lookup_inventory returned available=-3; every one of 412 clean results had available >= 0"
    )
    assert rc.recovery_tools == ("lookup_inventory", "query_warehouse", "get_stock_by_sku")


def test_unknown_tool_and_holding_call_give_no_receipt() -> None:
    cs = contract_set()
    assert check_call(cs, "never_seen", {}, {"available": -1}) is None
    assert check_call(cs, T, {"sku": "S"}, {"sku": "S", "available": 0}) is None


def test_fold_selection_uses_that_folds_rules_and_support(tmp_path: Path) -> None:
    nonneg, typ = RULES[5], RULES[3]
    cs = ContractSet(
        params={"k": 2, "seed": 13},
        corpus={},
        tools={T: ToolContracts(rules=(nonneg, typ))},
        folds=(FoldChecker(0, (nonneg.id,), {nonneg.id: Support(37, 4)}), FoldChecker(1, (typ.id,))),
    )
    result = {"sku": "S", "available": -1.5}
    f0 = call_violations(cs, T, {}, result, fold=0)
    assert [v.code for v in f0] == ["NONNEG"] and "every one of 37 clean" in f0[0].detail
    assert [v.code for v in call_violations(cs, T, {}, result, fold=1)] == ["TYPE"]
    corpus = corpus_of([({}, result)] * 1, tmp_path)
    assert check_corpus(cs, corpus, fold=0)["code"].to_list() == ["NONNEG"]
    assert check_corpus(cs, corpus, fold=0)["fold"].to_list() == [0]
    # cross: each call by its own task's fold (task "ep-0" falls in one of the two folds)
    f = cs.fold_of("ep-0")
    cross = check_corpus(cs, corpus, fold="cross")
    assert cross["fold"].to_list() == [f]
    assert cross["code"].to_list() == (["NONNEG"] if f == 0 else ["TYPE"])
    with pytest.raises(CheckError, match="no fold 7"):
        check_corpus(cs, corpus, fold=7)


def test_filters_codes_tools_and_error_calls(tmp_path: Path) -> None:
    cs = contract_set()
    recs = [
        {"trace_id": "a", "tool": T, "arguments": {"sku": "S"}, "result": {"sku": "X", "available": -1}},
        {"trace_id": "a", "tool": T, "arguments": {"sku": "S"}, "status": "error", "error": "boom"},
        {"trace_id": "b", "tool": "other", "arguments": {}, "result": {"available": -1}},
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    assert sorted(check_corpus(cs, corpus)["code"].to_list()) == ["ECHO", "NONNEG"]
    assert check_corpus(cs, corpus, codes=["NONNEG"])["code"].to_list() == ["NONNEG"]
    assert check_corpus(cs, corpus, tools=["other"]).height == 0
    df = check_corpus(cs, corpus)
    assert df.schema["cid"] == pl.UInt64 and df.schema["fold"] == pl.Int32 and df.schema["line"] == pl.Int64
    assert df["line"].to_list() == [1, 1]


# ---- property: the vectorised and plain implementations agree on arbitrary results -------------------

DATES = [
    "2026-03-01T10:00Z",
    "2026-03-01T09:59:59.5+00:00",
    "2026-03-01T12:00+02:00",
    "2026-02-30T10:00Z",
    "x",
    None,
]
nums = st.one_of(
    st.integers(-3, 5), st.sampled_from([0.0, -0.5, 2.01, 8.0, 10.01, 10.0, 1e-12]), st.none(), st.just("7")
)


@st.composite
def results(draw: Any) -> tuple[dict[str, Any], Any]:
    sku = draw(st.sampled_from(["S1", "S2", 3, 3.0, True, None]))
    args: dict[str, Any] = {"sku": draw(st.sampled_from(["S1", 3, True]))}
    if draw(st.booleans()):
        args["start"] = draw(st.sampled_from(["2026-03-01", "2026-03-09", "bad"]))
    if draw(st.integers(0, 9)) == 0:
        return args, draw(st.sampled_from([[1, 2], "text", None, 3]))
    res: dict[str, Any] = {}
    for key, strat in (
        ("sku", st.just(sku)),
        ("available", nums),
        ("warehouse", st.sampled_from(["east", "west", "north", 4])),
        ("total", nums),
        ("sub", nums),
        ("tax", nums),
        ("net", nums),
        ("n_items", nums),
        ("until", st.sampled_from(["2026-03-01", "2026-03-05", "2026-13-01", 5])),
    ):
        if draw(st.booleans()):
            res[key] = draw(strat)
    if draw(st.booleans()):
        res["items"] = draw(
            st.lists(st.dictionaries(st.sampled_from(["price", "qty", "line"]), nums, max_size=3), max_size=3)
        )
    if draw(st.booleans()):
        res["flights"] = draw(
            st.lists(
                st.dictionaries(st.sampled_from(["dep", "arr"]), st.sampled_from(DATES), max_size=2),
                max_size=3,
            )
        )
    return args, res


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results(), min_size=1, max_size=25))
def test_vectorised_equals_plain(batch: list[tuple[dict[str, Any], Any]], tmp_path_factory: Any) -> None:
    assert_same(contract_set(), batch, tmp_path_factory.mktemp("prop"))


def test_schema_only_rule_cites_the_registry() -> None:
    declared = Rule(
        rule_id(T, "NONNEG", ["/available"], {}),
        T,
        "NONNEG",
        ("/available",),
        {},
        Support(0, 0),
        source=("schema",),
    )
    (v,) = call_violations(contract_set((declared,)), T, {}, {"available": -2})
    assert v.detail == (
        "lookup_inventory returned available=-2; the registry declares this in lookup_inventory's output schema"
    )


def test_receipts_from_frame_in_order_whatever_the_batch(tmp_path: Path) -> None:
    cs = contract_set()
    results = [({"sku": "S"}, {"sku": "S", "available": i - 3}) for i in range(7)]
    corpus = corpus_of(results, tmp_path)
    df = check_corpus(cs, corpus)
    whole = list(receipts_from_frame(cs, corpus, df, include_all=True))
    assert [r.line for r in whole] == list(range(1, 8))
    assert [len(r.violations) for r in whole] == [1, 1, 1, 0, 0, 0, 0]
    assert list(receipts_from_frame(cs, corpus, df, include_all=True, batch=2)) == whole
    assert [r.line for r in receipts_from_frame(cs, corpus, df, batch=1)] == [1, 2, 3]
