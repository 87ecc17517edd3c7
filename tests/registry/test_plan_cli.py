"""`contracts plan-check` through the CLI: exit codes, every output format, config default, stdin."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.schemas import schema_errors
from tests import vendored

REPO = Path(__file__).resolve().parents[2]
Write = Callable[[str, Any], Path]


def _run(*args: str | Path, input: bytes | None = None) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


@pytest.mark.parametrize(
    ("plan", "codes"),
    [
        ("fail-schema.json", {"E_SCHEMA": 4}),
        ("fail-args.json", {"E_ARGS": 7}),
        ("fail-order.json", {"E_ORDER": 3}),
        ("fail-tool.json", {"E_TOOL": 2}),
        ("fail-many.json", {"E_SCHEMA": 1, "E_ARGS": 3, "E_ORDER": 1, "E_TOOL": 1}),
    ],
)
def test_failing_plans_report_every_error_and_exit_1(world: Path, plan: str, codes: dict[str, int]) -> None:
    r = _run("plan-check", world / plan, "--registry", world / "tools.json", "--output-format", "json")
    assert r.exit_code == 1, r.output
    doc = orjson.loads(r.stdout)
    assert schema_errors(doc, "plan-report") == []
    assert doc["summary"]["by_code"] == codes
    assert len(doc["plans"][0]["errors"]) == sum(codes.values())


@pytest.mark.parametrize("plan", ["pass-basic.json", "pass-steps.jsonl"])
def test_passing_plans_exit_0(world: Path, plan: str) -> None:
    r = _run("plan-check", world / plan, "-r", world / "tools.json")
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert "no errors" in r.stderr


def test_text_output_lines(world: Path) -> None:
    r = _run("plan-check", world / "fail-schema.json", "-r", world / "tools.json")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0] == (
        f"{world / 'fail-schema.json'}:5: E_SCHEMA: step 2: temporal_reachability outputs no field 'count' "
        "(available: rows, rows_total, truncated, cursor)"
    )
    assert len(lines) == 4
    assert "4 error(s) (E_SCHEMA 4)" in r.stderr


def test_exact_acceptance_message_through_cli(write: Write, temporal: dict[str, Any]) -> None:
    reg = write("tools.json", temporal)
    plan = write(
        "plan.json",
        [
            {"id": "s1", "tool": "temporal_reachability", "arguments": {"source": "a"}},
            {"id": 2, "tool": "summarize", "arguments": {"count": "${s1.count}"}},
        ],
    )
    r = _run("plan-check", plan, "--registry", reg, "-q")
    assert r.exit_code == 1
    assert r.stdout.strip().endswith(
        "E_SCHEMA: step 2: temporal_reachability outputs no field 'count' (available: rows, rows_total, truncated, cursor)"
    )
    assert r.stderr == ""


def test_sarif_validates_against_sarif_2_1_0(world: Path) -> None:
    plans = [world / "fail-many.json", world / "fail-args.json", world / "pass-basic.json"]
    r = _run("plan-check", *plans, "-r", world / "tools.json", "--output-format", "sarif")
    assert r.exit_code == 1
    doc = orjson.loads(r.stdout)
    validator = vendored.validator("sarif-schema-2.1.0.json")  # official OASIS schema, formats checked
    assert sorted(e.message for e in validator.iter_errors(doc)) == []
    broken = orjson.loads(r.stdout)
    broken["runs"][0]["results"][0]["level"] = "fatal"  # the validator does bite
    assert list(validator.iter_errors(broken)) != []
    results = doc["runs"][0]["results"]
    assert len(results) == 6 + 7
    rules = [rule["id"] for rule in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert all(rules[res["ruleIndex"]] == res["ruleId"] for res in results)
    first = results[0]
    assert first["ruleId"] == "E_ARGS"
    assert first["locations"][0]["physicalLocation"]["region"]["startLine"] == 3


def test_github_annotations(world: Path) -> None:
    r = _run("plan-check", world / "fail-tool.json", "-r", world / "tools.json", "--output-format", "github")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    rel = os.path.relpath(world / "fail-tool.json").replace(os.sep, "/")  # never the absolute path
    assert len(lines) == 4
    assert lines[0] == f"::group::{rel}: 2 of 2 plan-check errors annotated"
    assert lines[1].startswith(f"::error file={rel},line=2,title=E_TOOL::E_TOOL: step s1: ")
    assert lines[1].endswith("did you mean 'search_nodes'?")
    assert lines[3] == "::endgroup::"


def test_output_file_is_written(world: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    r = _run(
        "plan-check",
        world / "fail-order.json",
        "-r",
        world / "tools.json",
        "--output-format",
        "sarif",
        "-o",
        out,
    )
    assert r.exit_code == 1
    assert r.stdout == ""
    assert len(orjson.loads(out.read_bytes())["runs"][0]["results"]) == 3


def test_stdin_plan(world: Path) -> None:
    raw = (world / "fail-order.json").read_bytes()
    r = _run("plan-check", "-", "-r", world / "tools.json", input=raw)
    assert r.exit_code == 1
    assert r.stdout.count("E_ORDER") == 3
    assert r.stdout.startswith("<stdin>:2: E_ORDER")


def test_registry_from_config(world: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "contracts.toml"
    cfg.write_text(f'[paths]\nregistry = "{(world / "tools.json").as_posix()}"\n', encoding="utf-8")
    r = _run("--config", cfg, "plan-check", world / "pass-basic.json")
    assert r.exit_code == 0, r.output


def test_input_errors_exit_2(world: Path, write: Write) -> None:
    r = _run("plan-check", world / "pass-basic.json", "-r", world / "nope.json")
    assert r.exit_code == 2
    assert "registry file not found" in r.stderr
    bad = write("bad.json", [{"id": "s1"}])
    r = _run("plan-check", bad, "-r", world / "tools.json")
    assert r.exit_code == 2
    assert (
        f"error[E_SCHEMA_INVALID]: {bad}:2: not a valid plan: steps[0]: 'tool' is a required property"
        in r.stderr
    )
    r = _run("plan-check", world / "pass-basic.json", "-r", world / "tools.json", "--output-format", "junit")
    assert r.exit_code == 2


def test_subprocess_end_to_end(world: Path) -> None:
    rel = world.relative_to(REPO)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "plan-check",
            str(rel / "fail-many.json"),
            str(rel / "pass-basic.json"),
            "--registry",
            str(rel / "tools.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[1] == (
        f"{rel / 'fail-many.json'}:5: E_SCHEMA: step s2: temporal_reachability outputs no field 'count' "
        "(available: rows, rows_total, truncated, cursor)"
    )
    assert "pass-basic.json: 4 step(s), 6 reference(s): no errors" in proc.stderr
