"""Acceptance: the mechanism replay on real BFCL data (seed 13), end to end through the CLI.

64 single-field cases (32 missing_required + 32 wrong_type) from BFCL_v3_simple, replayed with their
precomputed canonical patches: 64/64 structurally valid, 32 add + 32 replace, M_object 64/64; the ledger
verifies and `sha256sum -c` accepts its manifest; the targets file does not exist during the replay.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from output_contracts.ledger import verify
from output_contracts.schemas import schema_errors


def test_bfcl_mechanism_replay_64_of_64(shared_data: Path, tmp_path: Path, repo: Path) -> None:
    bfcl = shared_data / "bfcl"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "output_contracts.cli.app", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )

    cases, targets, patches = tmp_path / "cases.jsonl", tmp_path / "targets.jsonl", tmp_path / "patches.jsonl"
    r = cli(
        "repair-cases",
        str(bfcl / "BFCL_v3_simple.json"),
        "--answers",
        str(bfcl / "possible_answer" / "BFCL_v3_simple.json"),
        "-o",
        str(cases),
        "--targets",
        str(targets),
        "--patches",
        str(patches),
        "--kinds",
        "missing_required,wrong_type",
        "--per-kind",
        "32",
        "--seed",
        "13",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    built = orjson.loads(r.stdout)
    assert schema_errors(built, "repair-build") == []
    assert built["per_family"] == {"missing_required": 32, "wrong_type": 32}
    assert len(cases.read_bytes().splitlines()) == 64

    hidden = tmp_path / "vault"
    hidden.mkdir()
    shutil.move(targets, hidden / targets.name)
    r = cli(
        "repair-replay",
        str(cases),
        "--policy",
        "precomputed",
        "--patches",
        str(patches),
        "--ledger",
        str(tmp_path / "ledger"),
        "--seed",
        "13",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert not targets.exists()
    summary = orjson.loads(r.stdout)
    assert schema_errors(summary, "repair-replay") == []
    assert summary["outcomes"] == {"accepted": 64, "abstained": 0, "exhausted": 0, "valid_at_start": 0}
    assert summary["ops_by_type"] == {"add": 32, "replace": 32}
    shutil.move(hidden / targets.name, targets)

    v = verify(tmp_path / "ledger", require_frozen=True)
    assert v.ok and v.frozen and v.entries == 1 + 64 * 3
    if shutil.which("sha256sum"):
        s = subprocess.run(
            ["sha256sum", "-c", "manifest-sha256.txt"],
            cwd=tmp_path / "ledger",
            capture_output=True,
            text=True,
            check=False,
        )
        assert s.returncode == 0, s.stdout + s.stderr

    r = cli("repair-score", str(tmp_path / "ledger"), "--targets", str(targets), "--json")
    assert r.returncode == 0, r.stderr
    rep = orjson.loads(r.stdout)
    assert schema_errors(rep, "repair-score") == []
    assert rep["cases"] == 64
    for m in ("structural_validity", "first_attempt_validity", "m_patch", "m_object"):
        assert (rep[m]["numerator"], rep[m]["denominator"], rep[m]["value"]) == (64, 64, 1.0)
    assert rep["ops_by_type"] == {"add": 32, "replace": 32}
    assert rep["by_family"]["missing_required"]["m_object"]["numerator"] == 32
    assert rep["by_family"]["wrong_type"]["m_object"]["numerator"] == 32
    assert rep["collateral"]["numerator"] == 0 and rep["retries"]["numerator"] == 0
    assert rep["ledger"]["head"] == v.head and rep["ledger"]["root"] == v.root
    # the ContractRL metric set, each with its definition
    from output_contracts.repair.score import PAPER_METRICS

    assert set(PAPER_METRICS) <= set(rep["definitions"]) and all(m in rep for m in PAPER_METRICS)
    assert (rep["collateral"]["numerator"], rep["collateral"]["denominator"]) == (0, 64)
    assert (rep["retries"]["numerator"], rep["retries"]["denominator"]) == (0, 64)
    assert rep["unsafe_dispatch_count"] == 0 and rep["reward"]["value"] == 1.0
    assert (rep["leakage"]["numerator"], rep["leakage"]["denominator"]) == (0, 15)
    assert rep["fail_closed"]["denominator"] == 0 and rep["generated_tokens"]["denominator"] == 0
    r = cli("repair-score", str(tmp_path / "ledger"), "--targets", str(targets))
    assert r.returncode == 0 and "definitions (numerator / denominator):" in r.stdout
    assert "  collateral: cases with a leaf outside every repaired pointer" in r.stdout


@pytest.mark.parametrize("kinds", ["missing_required,wrong_type", "hard"])
def test_heuristic_on_bfcl_is_scored_with_intervals(shared_data: Path, tmp_path: Path, kinds: str) -> None:
    """The heuristic's figures (recorded in docs/repair.md) come with intervals; immutable faults are refused."""
    from output_contracts.repair import cases as rc
    from output_contracts.repair import score
    from output_contracts.repair.loop import replay
    from output_contracts.repair.policies import HeuristicPolicy

    bfcl = shared_data / "bfcl"
    sources, _ = rc.load_bfcl(bfcl / "BFCL_v3_simple.json", bfcl / "possible_answer" / "BFCL_v3_simple.json")
    fams = rc.SINGLE_FIELD if kinds != "hard" else rc.HARD
    built = rc.build_cases(sources, kinds=fams, per_kind=32 if kinds != "hard" else 16, seed=13)
    rc.write_targets(tmp_path / "t.jsonl", built.targets)
    s = replay(built.cases, HeuristicPolicy(), tmp_path / "led", record_latency=False)
    rep = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=300)
    for m in ("structural_validity", "m_object"):
        r = rep[m]
        assert r["low"] <= r["value"] <= r["high"]
    if kinds == "hard":
        imm = rep["by_family"]["immutable"]
        assert imm["m_object"]["value"] == 1.0  # every immutable case ends in abstention
        assert s.refusals.get("IMMUTABLE_PATH") == imm["cases"]  # after its patch was refused by the mask
    else:
        assert rep["by_family"]["wrong_type"]["m_object"]["value"] > 0.8
