"""UNIQUE through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give the same
witnesses, receipts validate, `contracts check` reports them, and rules with bad params are refused when
a contract set is loaded or checked. Library bugs that were fixed are pinned at the end as regression
tests. The world, the cases and the hand-written rules are shared with RANGE's tests
(tests/codes/range_unique_world.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import call_violations, check_corpus
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.table import describe
from output_contracts.errors import CheckError
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.range_unique_world import (
    CASES,
    FL,
    HAND,
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
    items,
    one,
    results,
    same_on,
)
from tests.codes.witnesses import assert_case_receipts, assert_mined_rules, assert_witnesses

CODE = "UNIQUE"


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert_mined_rules(cs, cs_file, MINED, CODE)


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    assert_witnesses(cs, T, result, expected, CODE)


def test_detail_sentences(cs: ContractSet) -> None:
    v = one(cs, faulty(items=items("SKU-9", "SKU-8", "SKU-9")), "UNIQUE")
    assert v.detail == (
        'get_order returned item 2 of items with sku "SKU-9", as item 0 did; in every one of 320 clean '
        "results the items of that list were distinct"
    )
    v = one(cs, faulty(tags=["new", "gift", "vip", "gift"]), "UNIQUE")
    assert v.detail.startswith('get_order returned item 3 of tags with the value "gift", as item 1 did;')
    v = one(cs, faulty(shipments=[{"parcels": ["P0"]}, {"parcels": ["P7", "P0", "P7"]}]), "UNIQUE")
    assert v.path == "/shipments/1/parcels/2"
    assert v.detail.startswith(
        'get_order returned item 2 of shipments/1/parcels with the value "P7", as item 0'
    )


def test_fold_checkers_have_no_unique(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has no UNIQUE (300 tasks; RANGE, 200: tests/codes/range/)."""
    res = faulty(total=83000, tags=["vip", "vip"])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ORD-123456"}, res, fold=f)
        assert [(v.code, v.path) for v in vs if v.code == CODE] == [], f


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    """The receipts of the corpus pass hold the listed violations, and a codes filter keeps UNIQUE's
    alone (that both paths agree on this corpus, for every checker: tests/codes/range/test_check.py)."""
    corpus = cases_corpus(tmp_path / "faulty")
    assert_case_receipts(cs, corpus, check_corpus(cs, corpus), CASES, CODE)
    uniq = check_corpus(cs, corpus, codes=["UNIQUE"])
    assert set(uniq["code"].to_list()) == {"UNIQUE"}
    assert uniq.height == sum(1 for _, e in CASES for c, *_ in e if c == "UNIQUE")


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


# ---- regressions: library bugs since fixed -----------------------------------------------------------------


def test_unique_negative_zero_per_call() -> None:
    """check_call: -0.0 is the number 0."""
    hand = hand_set((hand_rule("UNIQUE", ["/xs/*"], {}),))
    vs = call_violations(hand, "h", {}, {"xs": [0, -0.0, 1, 0.0]})
    assert [(v.path, v.observed) for v in vs] == [("/xs/1", -0.0), ("/xs/3", 0.0)]
    assert vs[0].detail.startswith("h returned item 1 of xs with the value -0.0, as item 0 did;")


def test_unique_negative_zero_on_a_corpus(tmp_path: Path) -> None:
    """check_corpus should agree with check_call on -0.0 = 0."""
    rule = hand_rule("UNIQUE", ["/xs/*"], {})
    assert same_on((rule,), {}, {"xs": [-0.0, 1, 0.0]}, tmp_path) == [("/xs/2", 0.0)]


def test_unique_distinct_big_ints(tmp_path: Path) -> None:
    """Numbers of magnitude 2**53 or more are not judged (float64 cannot tell such ids apart): not even an
    exact repeat is reported; one below the limit still is."""
    rule = hand_rule("UNIQUE", ["/xs/*"], {})
    assert same_on((rule,), {}, {"xs": [2**53, 2**53 + 1]}, tmp_path / "a") == []
    assert same_on((rule,), {}, {"xs": [2**53, 2**53, -(2**60), -(2**60)]}, tmp_path / "b") == []
    big = 2**53 - 1
    assert same_on((rule,), {}, {"xs": [big, 2**53, big]}, tmp_path / "c") == [("/xs/2", big)]


def test_unique_witness_of_an_escaped_field(tmp_path: Path) -> None:
    """The witness looks the earlier items up by the unescaped key (`a/b`, not `a~1b`)."""
    rule = hand_rule("UNIQUE", ["/xs/*/a~1b"], {})
    res = {"xs": [{"a/b": "k"}, {"a/b": "j"}, {"a/b": "k"}]}
    assert same_on((rule,), {}, res, tmp_path) == [("/xs/2/a~1b", "k")]
    (v,) = call_violations(hand_set((rule,)), "h", {}, res)
    assert v.detail == (
        'h returned item 2 of xs with a~1b "k", as item 0 did; in every one of 100 clean results the items '
        "of that list were distinct"
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
