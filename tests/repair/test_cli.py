"""The four repair commands through CliRunner and a subprocess: exit codes 0/1/2, files, stdout/stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.schemas import schema_errors


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_full_flow_on_a_small_bfcl_pair(tmp_path: Path, bfcl_files: tuple[Path, Path]) -> None:
    q, a = bfcl_files
    c, t, p = tmp_path / "c.jsonl", tmp_path / "t.jsonl", tmp_path / "p.jsonl"
    code, out, err = run(
        "repair-cases",
        str(q),
        "--answers",
        str(a),
        "-o",
        str(c),
        "--targets",
        str(t),
        "--patches",
        str(p),
        "--kinds",
        "missing_required,wrong_type",
        "--per-kind",
        "2",
        "--seed",
        "13",
        "--json",
    )
    assert code == 0, err
    summary = orjson.loads(out)
    assert schema_errors(summary, "repair-build") == []
    assert summary["per_family"] == {"missing_required": 2, "wrong_type": 2} and summary["cases"] == 4
    assert "4 cases from 2 correct calls" in err
    code, out, err = run(
        "repair-replay",
        str(c),
        "--policy",
        "precomputed",
        "--patches",
        str(p),
        "--ledger",
        str(tmp_path / "led"),
        "--seed",
        "13",
        "--json",
        "--quiet",
    )
    assert code == 0, err
    rs = orjson.loads(out)
    assert schema_errors(rs, "repair-replay") == []
    assert rs["outcomes"]["accepted"] == 4 and rs["ops_by_type"] == {"add": 2, "replace": 2}
    code, out, err = run(
        "repair-score", str(tmp_path / "led"), "--targets", str(t), "--json", "--bootstrap", "50"
    )
    assert code == 0, err
    report = orjson.loads(out)
    assert schema_errors(report, "repair-score") == []
    assert report["m_object"]["numerator"] == 4 and "ledger verified" in err
    code, out, _ = run(
        "repair-score",
        str(tmp_path / "led"),
        "--targets",
        str(t),
        "--markdown",
        str(tmp_path / "r.md"),
        "--bootstrap",
        "50",
    )
    assert code == 0 and "m_object" in out and (tmp_path / "r.md").read_text().startswith("# Repair score")
    # tampering: exit 1
    f = tmp_path / "led" / "ledger.jsonl"
    f.write_bytes(f.read_bytes().replace(b'"accepted":true', b'"accepted":false', 1))
    code, _, err = run("repair-score", str(tmp_path / "led"), "--targets", str(t))
    assert code == 1 and "refused: ledger does not verify" in err
    # split-audit of a set against itself: exit 1, overlaps on stdout
    code, out, err = run("split-audit", str(c), str(c))
    assert code == 1 and out.startswith("case_id\t") and "OVERLAP" in err
    code, out, _ = run("split-audit", str(c), str(c), "--json")
    audit_json = orjson.loads(out)
    assert (
        code == 1 and schema_errors(audit_json, "repair-audit") == [] and audit_json["counts"]["case_id"] == 4
    )


def test_usage_errors_exit_2(tmp_path: Path, bfcl_files: tuple[Path, Path]) -> None:
    q, _ = bfcl_files
    code, _, err = run("repair-cases", str(q), "-o", str(tmp_path / "c"), "--targets", str(tmp_path / "t"))
    assert code == 2 and "needs --answers" in err
    code, _, err = run(
        "repair-cases",
        str(q),
        "--answers",
        str(q),
        "-o",
        str(tmp_path / "x"),
        "--targets",
        str(tmp_path / "x"),
    )
    assert code == 2 and "must differ" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "x"}\n')
    code, _, err = run("repair-replay", str(bad), "--policy", "heuristic", "--ledger", str(tmp_path / "l"))
    assert code == 2 and f"{bad}:1:" in err
    code, _, err = run("repair-replay", str(bad), "--policy", "precomputed", "--ledger", str(tmp_path / "l"))
    assert code == 2 and "--patches" in err
    code, _, err = run("split-audit", str(bad), str(bad), "--train-targets", str(bad))
    assert code == 2
    code, _, err = run("repair-score", str(tmp_path), "--targets", str(bad), "--json", "--markdown", "-")
    assert code == 2 and "stdout" in err
    code, _, err = run("repair-score", str(tmp_path / "nope"), "--targets", str(bad))
    assert code == 2 and "no such ledger folder" in err


def test_subprocess_replay_and_disjoint_split_audit(
    tmp_path: Path, bfcl_files: tuple[Path, Path], repo: Path
) -> None:
    q, a = bfcl_files

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "output_contracts.cli.app", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )

    r = cli(
        "repair-cases",
        str(q),
        "--answers",
        str(a),
        "-o",
        str(tmp_path / "a.jsonl"),
        "--targets",
        str(tmp_path / "at.jsonl"),
        "--kinds",
        "wrong_type",
        "--per-kind",
        "1",
        "--seed",
        "13",
    )
    assert r.returncode == 0, r.stderr
    r = cli(
        "repair-cases",
        str(q),
        "--answers",
        str(a),
        "-o",
        str(tmp_path / "b.jsonl"),
        "--targets",
        str(tmp_path / "bt.jsonl"),
        "--kinds",
        "wrong_type",
        "--per-kind",
        "1",
        "--seed",
        "14",
        "--disjoint-from",
        str(tmp_path / "a.jsonl"),
        "--disjoint-targets",
        str(tmp_path / "at.jsonl"),
    )
    assert r.returncode == 0, r.stderr
    r = cli(
        "split-audit",
        str(tmp_path / "a.jsonl"),
        str(tmp_path / "b.jsonl"),
        "--train-targets",
        str(tmp_path / "at.jsonl"),
        "--test-targets",
        str(tmp_path / "bt.jsonl"),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert orjson.loads(r.stdout)["clean"] is True
    assert schema_errors(orjson.loads(r.stdout), "repair-audit") == []
    r = cli(
        "repair-replay", str(tmp_path / "a.jsonl"), "--policy", "heuristic", "--ledger", str(tmp_path / "led")
    )
    assert r.returncode == 0, r.stderr
    assert "1 cases, policy heuristic: 1 accepted" in r.stderr and r.stdout == ""


def test_cases_from_a_corpus_and_registry(tmp_path: Path) -> None:
    from output_contracts.traces.ingest import corpus_from_records
    from tests.repair.conftest import SCHEMA

    rows = [{"sku": f"S{i}", "qty": i + 1, "unit": "box"} for i in range(6)]
    corpus_from_records(
        [{"trace_id": f"t{i}", "tool": "order", "arguments": r, "result": {}} for i, r in enumerate(rows)],
        tmp_path / "corpus",
    )
    reg = tmp_path / "tools.json"
    reg.write_bytes(orjson.dumps({"tools": [{"name": "order", "parameters": SCHEMA}]}))
    c, t = tmp_path / "c.jsonl", tmp_path / "t.jsonl"
    code, _, err = run(
        "repair-cases", str(tmp_path / "corpus"), "--answers", str(reg), "-o", str(c), "--targets", str(t)
    )
    assert code == 2 and "--answers is for a BFCL SRC" in err
    code, _, err = run("repair-cases", str(tmp_path / "corpus"), "-o", str(c), "--targets", str(t))
    assert code == 2 and "registry" in err
    code, out, err = run(
        "repair-cases",
        str(tmp_path / "corpus"),
        "--registry",
        str(reg),
        "-o",
        str(c),
        "--targets",
        str(t),
        "--kinds",
        "hard",
        "--per-kind",
        "2",
        "--json",
    )
    assert code == 0, err
    per = orjson.loads(out)["per_family"]
    assert per == {"multi_field": 2, "nested_array": 0, "wrong_pointer": 2, "immutable": 2, "rollback": 2}
    assert "warning: 0 of 2 cases of nested_array: it needs" in " ".join(err.split())
    code, _, err = run(
        "repair-replay",
        str(c),
        "--policy",
        "heuristic",
        "--ledger",
        str(tmp_path / "led"),
        "--max-attempts",
        "3",
        "--max-ops",
        "3",
        "--no-latency",
    )
    assert code == 0, err
    code, out, _ = run("repair-score", str(tmp_path / "led"), "--targets", str(t), "--json")
    report = orjson.loads(out)
    assert code == 0 and report["latency_p95_ms"] is None and report["cases"] == 8
    assert report["by_family"]["immutable"]["abstention"]["correct"]["numerator"] == 2


def test_defaults_come_from_the_config_file(tmp_path: Path, bfcl_files: tuple[Path, Path]) -> None:
    q, a = bfcl_files
    cfg = tmp_path / "contracts.toml"
    cfg.write_text(
        '[paths]\ncases = "c.jsonl"\ntargets = "t.jsonl"\nrepair_ledger = "led"\n'
        '[repair]\npolicy = "heuristic"\nmax_attempts = 1\nseed = 7\n'
    )
    code, _, err = run("--config", str(cfg), "repair-cases", str(q), "--answers", str(a), "--per-kind", "1")
    assert code == 0, err
    assert (tmp_path / "c.jsonl").is_file() and (tmp_path / "t.jsonl").is_file() and "(seed 7)" in err
    code, out, err = run("--config", str(cfg), "repair-replay", "--json", "-q")
    assert code == 0, err
    assert orjson.loads(out)["steps"] == 2  # one attempt per case
    code, out, err = run("--config", str(cfg), "repair-score", "--json")
    assert code == 0, err
    report = orjson.loads(out)
    assert report["seed"] == 7 and report["policy"]["name"] == "heuristic"
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    code, _, err = run(
        "--config", str(empty), "repair-replay", str(tmp_path / "c.jsonl"), "--policy", "heuristic"
    )
    assert code == 2 and "ledger" in err  # nothing configured: the missing option is named
