"""`contracts mine`, `rules`, `diff` through CliRunner and one subprocess: exit codes 0/1/2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from tests.conftest import REPO, SAMPLE

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, list(args))


def test_mine_writes_a_valid_deterministic_set(
    sample_corpus: Corpus, sample_contracts_file: Path, tmp_path: Path
) -> None:
    a = tmp_path / "a.json"
    r = _run("mine", str(sample_corpus.path), "-o", str(a), "--folds", "5", "--json")
    assert r.exit_code == 0, r.output
    summary = orjson.loads(r.stdout)
    assert summary["output"] == str(a) and summary["rules"] > 300 and len(summary["folds"]) == 5
    assert "REQ" in r.stderr and "mined" in r.stderr
    assert a.read_bytes() == sample_contracts_file.read_bytes()  # same bytes as the library's run
    assert schema_errors(orjson.loads(a.read_bytes()), "contract-set") == []


def test_mine_options(sample_corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    r = _run(
        "mine", str(sample_corpus.path), "-o", str(out), "--tool", "get_order", "--tool", "refund_order",
        "--min-support", "DOMAIN=5000", "--max-domain", "4", "--clean", "reward", "--seed", "3", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    cs = ContractSet.load(out)
    assert sorted(cs.tools) == ["get_order", "refund_order"]
    assert not [x for x in cs.rules_for(None) if x.code == "DOMAIN" and "mined" in x.source]
    assert cs.params["min_support"]["DOMAIN"] == 5000 and cs.params["clean"] == "reward" and cs.seed == 3


def test_mine_traces_on_the_fly_to_stdout(tmp_path: Path) -> None:
    r = _run("mine", str(SAMPLE / "clean"), "-o", "-", "--tool", "refund_order", "-q")
    assert r.exit_code == 0, r.output
    data = orjson.loads(r.stdout)
    assert list(data["tools"]) == ["refund_order"] and data["tools"]["refund_order"]["rules"]


def test_mine_usage_errors(tmp_path: Path, sample_corpus: Corpus) -> None:
    assert _run("mine", str(tmp_path / "nope"), "-o", str(tmp_path / "x.json")).exit_code == 2
    r = _run("mine", str(sample_corpus.path), "-o", str(tmp_path / "x.json"), "--min-support", "DOMAIN")
    assert r.exit_code == 2 and "CLASS=N" in r.stderr
    r = _run("mine", str(sample_corpus.path), "-o", str(tmp_path / "x.json"), "--min-support", "SIZE=3")
    assert r.exit_code == 2 and "unknown rule class" in r.stderr
    r = _run("mine", str(sample_corpus.path), "-o", str(tmp_path / "x.json"), "--max-violation-rate", "2")
    assert r.exit_code == 2
    assert not (tmp_path / "x.json").exists()


def test_rules_table_filters_and_json(sample_contracts_file: Path, sample_corpus: Corpus) -> None:
    r = _run("rules", str(sample_contracts_file), "--tool", "get_order", "--code", "RELATION")
    assert r.exit_code == 0, r.output
    assert "/subtotal" in r.stdout and "3 rules" in r.stdout
    r = _run(
        "rules",
        str(sample_contracts_file),
        "--tool",
        "lookup_inventory",
        "--code",
        "REQUIRED",
        "--by-fold",
        "--corpus",
        str(sample_corpus.path),
        "--json",
    )
    assert r.exit_code == 0, r.output
    items = orjson.loads(r.stdout)
    bin_rule = next(i for i in items if i["paths"] == ["/bin_location"])
    assert bin_rule["in_full"] is False and len(bin_rule["folds"]) == 1
    assert bin_rule["heldout"]["violations"] > 0  # the single-task exception, caught held out
    assert all(i["heldout"]["violations"] == 0 for i in items if i["in_full"])
    assert _run("rules", str(sample_contracts_file), "--code", "SIZE").exit_code == 2
    assert _run("rules", str(sample_contracts_file), "--tool", "nope").exit_code == 2


def test_diff_exit_codes(sample_corpus: Corpus, sample_contracts_file: Path, tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    assert (
        _run("mine", str(sample_corpus.path), "-o", str(small), "--tool", "refund_order", "-q").exit_code == 0
    )
    same = _run("diff", str(sample_contracts_file), str(sample_contracts_file), "--fail-on-removed")
    assert same.exit_code == 0 and "0 removed" in same.stdout
    gone = _run("diff", str(sample_contracts_file), str(small), "--fail-on-removed", "--json")
    assert gone.exit_code == 1
    d = orjson.loads(gone.stdout)
    assert d["removed"] and not d["added"] and {x["tool"] for x in d["removed"]} >= {"get_order"}
    assert _run("diff", str(sample_contracts_file), str(small)).exit_code == 0
    assert _run("diff", str(tmp_path / "none.json"), str(small)).exit_code == 2


@pytest.mark.slow
def test_subprocess_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    cmd = [
        sys.executable,
        "-m",
        "output_contracts.cli.app",
        "mine",
        str(SAMPLE / "clean"),
        "-o",
        str(out),
        "--tool",
        "get_customer",
    ]
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert "get_customer" in p.stderr and p.stdout == ""
    p = subprocess.run(
        [sys.executable, "-m", "output_contracts.cli.app", "rules", str(out), "--code", "DATE_ORDER"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == 0 and "/member_since" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "output_contracts.cli.app", "diff", str(out), str(tmp_path / "missing.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert p.returncode == 2 and "error[" in p.stderr


def test_mine_defaults_from_config(sample_corpus: Corpus, tmp_path: Path) -> None:
    cfg = tmp_path / "contracts.toml"
    cfg.write_text(
        f'[paths]\ncorpus = "{sample_corpus.path}"\ncontracts = "out/contracts.json"\n'
        '[mine]\nfolds = 3\nseed = 7\nclean = "reward"\n[mine.min_support]\nDOMAIN = 400\n',
        encoding="utf-8",
    )
    r = _run("--config", str(cfg), "mine", "--tool", "refund_order", "-q")
    assert r.exit_code == 0, r.output
    cs = ContractSet.load(tmp_path / "out" / "contracts.json")
    assert (cs.k, cs.seed, cs.params["clean"], cs.params["min_support"]["DOMAIN"]) == (3, 7, "reward", 400)
    r = _run("--config", str(cfg), "mine", "--tool", "refund_order", "--folds", "2", "-q")
    assert r.exit_code == 0 and ContractSet.load(tmp_path / "out" / "contracts.json").k == 2
