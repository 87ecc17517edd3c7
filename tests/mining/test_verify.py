"""`mine` re-checks every checker with the shipped checker; a rule that fires on its own data is caught."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from output_contracts.checks.checker import check_corpus
from output_contracts.codes.contract_set import ContractSet, ToolContracts
from output_contracts.codes.table import names
from output_contracts.mining import mine
from output_contracts.mining.data import load
from output_contracts.mining.verify import assert_holds, misfires
from output_contracts.traces.ingest import corpus_from_records
from tests.worlds import world

CODES = names()
LOW = {c: 5 for c in CODES}


def test_every_checker_is_silent_on_its_mining_data(tmp_path: Path) -> None:
    c = corpus_from_records(world(5, 150, 12, 0.03), tmp_path / "c")
    cs = mine(c, folds=3, min_support=LOW)
    data = load(c, clean="ok", k=3, seed=cs.seed, tools=None)
    assert misfires(cs, data) == []
    assert check_corpus(cs, c, fold=None).height == 0  # the full checker on all (clean) calls
    # Cross-fitted replay: fold checkers may fire on the held-out fold, never on their own data.
    cross = check_corpus(cs, c, fold="cross")
    for f in range(3):
        held = {cs.fold_of(t) for t in cross.filter(cross["fold"] == f)["task_id"].to_list()}
        assert held <= {f}


def test_a_wrong_rule_is_caught(tmp_path: Path) -> None:
    c = corpus_from_records(world(5, 120, 10, 0.0), tmp_path / "c")
    cs = mine(c, min_support=LOW)
    rule = next(r for r in cs.rules_for(None) if r.code == "DOMAIN")
    wrong = replace(rule, params={"values": list(rule.params["values"])[:-1]}, id="r-000000000000")
    tc = cs.tools[rule.tool]
    bad = ContractSet(
        cs.params,
        cs.corpus,
        {**cs.tools, rule.tool: ToolContracts((*tc.rules, wrong), tc.substitutes, tc.immutable)},
    )
    data = load(c, clean="ok", k=1, seed=13, tools=None)
    found = misfires(bad, data)
    assert found and {m.rule for m in found} == {"r-000000000000"} and found[0].checker is None
    with pytest.raises(AssertionError, match="r-000000000000"):
        assert_holds(bad, data)


def test_cli_verify_is_opt_in_and_changes_no_byte(tmp_path: Path) -> None:
    """`contracts mine --verify` replays every rule (the pass the tests run through `mine()`); without it
    the same contract set is written: each class holds on its mining data by construction."""
    from typer.testing import CliRunner

    from output_contracts.cli.app import app

    c = corpus_from_records(world(5, 150, 12, 0.03), tmp_path / "c")
    runner = CliRunner()
    outs = []
    for flag in ([], ["--verify"]):
        dest = tmp_path / f"cs{len(outs)}.json"
        r = runner.invoke(app, ["mine", str(c.path), "--folds", "3", "-o", str(dest), "-q", *flag])
        assert r.exit_code == 0, r.output
        outs.append(dest.read_bytes())
    assert outs[0] == outs[1]
    (tmp_path / "contracts.toml").write_text('[mine]\nverify = "yes"\n')
    import os

    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        r = runner.invoke(app, ["mine", str(c.path), "-o", str(tmp_path / "x.json"), "-q"])
    finally:
        os.chdir(here)
    assert r.exit_code == 2 and "'mine.verify' must be true or false" in r.output
