"""FORMAT through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give the same
witnesses, receipts validate, and `contracts check` reports them from files and from stdin. The worlds,
cases and hand-written rules are shared with LENGTH's tests (tests/codes/format_length_world.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import call_violations, check_call, check_corpus
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.format.shapes import NON_ASCII
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.format_length_world import (
    CASES,
    HAND_CASES,
    LONG_ID,
    MINED,
    MOJIBAKE,
    T,
    assert_cli_file_and_stdin,
    assert_hand_written_rules,
    assert_same,
    base,
    cases_corpus,
    faulty,
    hand_corpus,
    hand_set,
    record,
    subprocess_receipt,
)
from tests.codes.witnesses import assert_case_receipts, assert_mined_rules, assert_witnesses, witnesses

CODE = "FORMAT"


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert_mined_rules(cs, cs_file, MINED, CODE)


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    assert_witnesses(cs, T, result, expected, CODE)


def test_detail_sentences(cs: ContractSet) -> None:
    rc = check_call(cs, T, {"order_id": "ord-123456"}, faulty(order_id="ord-123456"))
    assert rc is not None
    (v,) = rc.violations
    assert v.detail == (
        'get_order returned order_id="ord-123456", shaped a{3}-9{6}; every one of 320 clean results was '
        "shaped A{3}-9{6}"
    )
    rc = check_call(cs, T, {"order_id": "ORD-123456"}, faulty(customer=MOJIBAKE))
    assert rc is not None
    (v,) = rc.violations
    assert f"shaped A+a+{NON_ASCII}+ A+a+;" in v.detail and "was shaped A+a+ A+a+" in v.detail


def test_fold_checkers_have_format(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has FORMAT (not LENGTH, 300 tasks: tests/codes/length/)."""
    res = faulty(order_id="ord-123456", items=[])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ord-123456"}, res, fold=f)
        assert [v.code for v in vs if v.code == CODE] == ["FORMAT"], f


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    corpus = cases_corpus(tmp_path / "faulty")
    df = assert_same(cs, corpus)
    for fold in range(cs.k):
        assert_same(cs, corpus, fold)
    # the witnesses are the listed ones, call by call
    assert_case_receipts(cs, corpus, df, CASES, CODE)


def test_hand_written_rules_both_levels_and_minima(tmp_path: Path) -> None:
    assert_hand_written_rules(tmp_path, CODE)


def test_format_on_string_codes_equals_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a corpus with a mining view the corpus pass tells strings apart by their view codes (`skey`),
    without one by their text: the same FORMAT violations either way, with two rules at one place
    (one string judged per rule) and strings that repeat across calls."""
    hand = hand_set()
    corpus = hand_corpus(tmp_path / "h", [res for res, _ in HAND_CASES] * 2)
    assert corpus.view() is not None
    coded = check_corpus(hand, corpus, codes=["FORMAT"])
    assert coded.height == 2 * sum(c == "FORMAT" for _, e in HAND_CASES for c, _p, _x in e)
    monkeypatch.setattr(Corpus, "view", lambda self: None)
    assert check_corpus(hand, corpus, codes=["FORMAT"]).equals(coded)


# Random results: strings of every shape at the FORMAT places, arrays of every length at the LENGTH ones.
strings = st.one_of(
    st.sampled_from(["ORD-123456", "ord-123456", "ORD-123456  ", "Yusuf Rossi", MOJIBAKE, "", LONG_ID]),
    st.text(max_size=70),
    st.from_regex(r"\A[A-Za-z]{1,4}[- ][0-9A-Za-z]{1,7}\Z"),
)
anything = st.one_of(strings, st.integers(-2, 2), st.none(), st.lists(st.integers(0, 3), max_size=2))


@st.composite
def results(draw: Any) -> dict[str, Any]:
    res = base()
    res["order_id"] = draw(strings)
    res["customer"] = draw(st.one_of(strings, anything))
    res["items"] = draw(
        st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"lines": st.one_of(st.lists(st.integers(0, 3), max_size=3), anything)}
                ),
                max_size=3,
            ),
            anything,
        )
    )
    return res


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results(), min_size=1, max_size=12))
def test_vectorised_equals_plain(batch: list[dict[str, Any]], cs: ContractSet, tmp_path_factory: Any) -> None:
    """Every code of the world's set (LENGTH's places get arrays of every length too)."""
    corpus = corpus_from_records(
        [record(i, r) for i, r in enumerate(batch)], tmp_path_factory.mktemp("p") / "c"
    )
    assert_same(cs, corpus)


# ---- the CLI ----------------------------------------------------------------------------------------------


def test_cli_file_and_stdin(cs_file: Path, tmp_path: Path) -> None:
    assert_cli_file_and_stdin(cs_file, tmp_path, CODE)


def test_cli_subprocess(cs_file: Path, tmp_path: Path) -> None:
    r = subprocess_receipt(cs_file, tmp_path)
    assert witnesses(r, CODE) == [("FORMAT", "/order_id", ["AAA-999999"], "ORD-123456  ")]
