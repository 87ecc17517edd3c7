"""RANGE through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give the same
witnesses, receipts validate, `contracts check` reports them, and rules with bad params are refused when
a contract set is loaded or checked. Library bugs that were fixed are pinned at the end as regression
tests.

The world, the cases and the hand-written rules are shared with UNIQUE's tests
(tests/codes/range_unique_world.py): the mined bounds, recomputed by hand in its `clean_result`, are max =
the least power of ten strictly above 3 × the largest clean value, min (every value > 0) = the greatest
power of ten at or below the least / 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import call_violations
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.range_unique_world import (
    CASES,
    MINED,
    T,
    assert_cli_check,
    assert_hand_written_rules,
    assert_refused,
    assert_same,
    bad_of,
    cases_corpus,
    faulty,
    hand_records,
    hand_rule,
    hand_rules,
    hand_set,
    one,
    results,
    same_on,
)
from tests.codes.witnesses import assert_case_receipts, assert_mined_rules, assert_witnesses

CODE = "RANGE"


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert_mined_rules(cs, cs_file, MINED, CODE)


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    assert_witnesses(cs, T, result, expected, CODE)


def test_detail_sentences(cs: ContractSet) -> None:
    v = one(cs, faulty(total=83000), "RANGE")
    assert v.detail == "get_order returned total=83000; every one of 320 clean results had in [1, 10000]"
    v = one(cs, faulty(discount=2147483647), "RANGE")
    assert v.detail == "get_order returned discount=2147483647; every one of 320 clean results had <= 1000"
    v = one(cs, faulty(items=[{"sku": "A", "qty": 1}, {"sku": "B", "qty": 5000}]), "RANGE")
    assert v.path == "/items/1/qty"
    assert v.detail == "get_order returned items/1/qty=5000; every one of 320 clean results had in [0.1, 100]"
    v = one(cs, faulty(created_at="1970-01-01T00:00:00Z"), "RANGE")
    assert v.detail == (
        'get_order returned created_at="1970-01-01T00:00:00Z"; every one of 320 clean results had '
        "year in [2000, 2039]"
    )


def test_fold_checkers_have_range(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has RANGE (200 tasks; not UNIQUE, 300: tests/codes/unique/)."""
    res = faulty(total=83000, tags=["vip", "vip"])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ORD-123456"}, res, fold=f)
        assert [(v.code, v.path) for v in vs if v.code == CODE] == [("RANGE", "/total")], f


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    corpus = cases_corpus(tmp_path / "faulty")
    df = assert_same(cs, corpus)
    for fold in range(cs.k):
        assert_same(cs, corpus, fold)
    assert_case_receipts(cs, corpus, df, CASES, CODE)


def test_hand_written_rules(tmp_path: Path) -> None:
    assert_hand_written_rules(tmp_path, CODE)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results(), min_size=1, max_size=10))
def test_vectorised_equals_plain(batch: list[tuple[dict[str, Any], Any]], tmp_path_factory: Any) -> None:
    corpus = corpus_from_records(hand_records(batch), tmp_path_factory.mktemp("p") / "c")
    assert_same(hand_set(hand_rules(CODE)), corpus)


def test_cli_check(cs_file: Path, tmp_path: Path) -> None:
    assert_cli_check(cs_file, tmp_path, CODE)


@pytest.mark.parametrize(
    "rule,schema_says,code_says", bad_of(CODE), ids=[f"{CODE}-{i}" for i in range(len(bad_of(CODE)))]
)
def test_bad_params_are_refused(rule: Rule, schema_says: str | None, code_says: str, tmp_path: Path) -> None:
    assert_refused(rule, schema_says, code_says, tmp_path)


# ---- regressions: library bugs since fixed -----------------------------------------------------------------


def test_range_on_the_arguments_side(tmp_path: Path) -> None:
    """check_corpus once dropped the `$args` prefix of a per-node code's path."""
    rule = hand_rule("RANGE", ["$args/n"], {"of": "number", "min": 1, "max": 10})
    assert same_on((rule,), {"n": 50}, {}, tmp_path / "above") == [("$args/n", 50)]
    assert same_on((rule,), {"n": 0.5}, {"n": 50}, tmp_path / "below") == [("$args/n", 0.5)]
    assert same_on((rule,), {"n": 10}, {"n": 50}, tmp_path / "inside") == []


def test_range_on_ints_beyond_2_53(tmp_path: Path) -> None:
    """Numbers compare as float64 on both paths: 2**53 + 1 is the double 2**53 (not above a max of 2**53),
    2**53 + 2 is a double of its own (above it)."""
    rule = hand_rule("RANGE", ["/n"], {"of": "number", "min": None, "max": 2**53})
    assert float(2**53 + 1) == 2**53 and float(2**53 + 2) > 2**53
    assert same_on((rule,), {}, {"n": 2**53 + 1}, tmp_path / "a") == []
    assert same_on((rule,), {}, {"n": 2**53 + 2}, tmp_path / "b") == [("/n", 2**53 + 2)]


def test_year_detail_wording(cs: ContractSet) -> None:
    """The year detail once read "had a year year in [...]"."""
    v = one(cs, faulty(created_at="1970-01-01"), "RANGE")
    assert v.detail == (
        'get_order returned created_at="1970-01-01"; every one of 320 clean results had year in [2000, 2039]'
    )
