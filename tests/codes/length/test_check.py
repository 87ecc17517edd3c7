"""LENGTH through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give the same
witnesses, receipts validate, and `contracts check` reports them from files and from stdin. The worlds,
cases and hand-written rules are shared with FORMAT's tests (tests/codes/format_length_world.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from output_contracts.checks.checker import call_violations, check_call, check_corpus
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet
from output_contracts.schemas import schema_errors
from tests.codes.format_length_world import (
    CASES,
    MINED,
    T,
    assert_cli_file_and_stdin,
    assert_hand_written_rules,
    cases_corpus,
    cases_file,
    faulty,
    subprocess_receipt,
)
from tests.codes.witnesses import (
    assert_case_receipts,
    assert_mined_rules,
    assert_witnesses,
    receipts_of,
    witnesses,
)

CODE = "LENGTH"


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert_mined_rules(cs, cs_file, MINED, CODE)


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    assert_witnesses(cs, T, result, expected, CODE)


def test_detail_sentences(cs: ContractSet) -> None:
    rc = check_call(cs, T, {"order_id": "ORD-123456"}, faulty(items=[]))
    assert rc is not None
    (v,) = rc.violations
    assert v.detail == "get_order returned 0 items at items; every one of 320 clean results had at least 1"


def test_fold_checkers_have_no_length(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has no LENGTH (300 tasks; FORMAT: tests/codes/format/)."""
    res = faulty(order_id="ord-123456", items=[])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ord-123456"}, res, fold=f)
        assert [v.code for v in vs if v.code == CODE] == [], f


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    """The receipts of the corpus pass hold the listed violations, and a codes filter keeps LENGTH's
    alone (that both paths agree on this corpus, for every checker: tests/codes/format/test_check.py)."""
    corpus = cases_corpus(tmp_path / "faulty")
    assert_case_receipts(cs, corpus, check_corpus(cs, corpus), CASES, CODE)
    assert sorted(check_corpus(cs, corpus, codes=["LENGTH"])["path"].to_list()) == [
        "/items",
        "/items",
        "/items/1/lines",
    ]


def test_hand_written_rules_both_levels_and_minima(tmp_path: Path) -> None:
    assert_hand_written_rules(tmp_path, CODE)


# ---- the CLI ----------------------------------------------------------------------------------------------


def test_cli_file_and_stdin(cs_file: Path, tmp_path: Path) -> None:
    assert_cli_file_and_stdin(cs_file, tmp_path, CODE)


def test_cli_encoder_v1_and_the_code_filter(cs_file: Path, tmp_path: Path) -> None:
    v1 = CliRunner().invoke(
        app,
        ["check", "-c", str(cs_file), "-q", "--encoder", "v1", "--code", "LENGTH", str(cases_file(tmp_path))],
    )
    assert v1.exit_code == 1, v1.output
    out1 = receipts_of(v1.stdout)
    assert sorted((r["line"], v["path"]) for r in out1 for v in r["outcome_contract"]["violations"]) == [
        (10, "/items"),
        (11, "/items/1/lines"),
        (12, "/items"),
    ]
    for r in out1:
        assert schema_errors(r, "receipt-v1") == []
        assert {v["code"] for v in r["outcome_contract"]["violations"]} == {"LENGTH"}


def test_cli_subprocess(cs_file: Path, tmp_path: Path) -> None:
    r = subprocess_receipt(cs_file, tmp_path)
    assert witnesses(r, CODE) == [("LENGTH", "/items", ">= 1 items", [])]
