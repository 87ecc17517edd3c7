"""CI outputs through the CLI: SARIF of check, audit and plan-check against the official OASIS SARIF 2.1.0
schema with format checks on; file lines of records in JSON-array inputs (τ-bench); relative paths;
levels; the result cap; GitHub annotations grouped, capped and the rest in the job summary; audit JUnit."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.checks.renderers.github import MAX_SUMMARY_ROWS
from output_contracts.checks.renderers.locations import Locator
from output_contracts.checks.renderers.renderer import RenderOptions, rule_level
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.defaults import DOCS_URL
from output_contracts.traces.locate import record_lines
from tests.vendored import sarif_errors

TAU = "tau_bench/trajectories/gpt-4o-airline.json"


def _run(*args: str | Path, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def _rule(tool: str, code: str, path: str, support: Support, source: tuple[str, ...]) -> Rule:
    return Rule(rule_id(tool, code, [path], {}), tool, code, (path,), {}, support, source)


def _tau_contracts(path: Path) -> Path:
    """Rules every τ-bench airline call of two tools breaks: one the schema states (error), one mined
    on 5 tasks (note)."""
    r1 = _rule("get_reservation_details", "REQUIRED", "/not_a_field", Support(60, 40), ("mined", "schema"))
    r2 = _rule("get_user_details", "REQUIRED", "/not_a_field", Support(50, 5), ("mined",))
    cs = ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={r1.tool: ToolContracts(rules=(r1,)), r2.tool: ToolContracts(rules=(r2,))},
        folds=(FoldChecker(0, (r1.id, r2.id)),),
    )
    cs.save(path)
    return path


def _raw_decode_starts(text: str) -> list[int]:
    """The 1-based file line of each top-level array element, found with the stdlib decoder (independent
    of the scanner under test)."""
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    starts = []
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return starts
        starts.append(text.count("\n", 0, i) + 1)
        _, i = dec.raw_decode(text, i)


@pytest.fixture(scope="module")
def tau_check(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`check` of the τ-bench airline file, run in a folder holding a copy of it (relative paths),
    as receipts (record numbers) and as SARIF."""
    work = tmp_path_factory.mktemp("tau")
    (work / "runs").mkdir()
    data = (shared_data / TAU).read_bytes()
    (work / "runs" / "airline.json").write_bytes(data)
    cfile = _tau_contracts(work / "contracts.json")
    old = os.getcwd()
    os.chdir(work)
    try:
        jsonl = _run("check", "-c", cfile, "runs/airline.json", "-q")
        sarif = _run("check", "-c", cfile, "runs/airline.json", "--output-format", "sarif", "-q")
        abs_sarif = _run(
            "check", "-c", cfile, work / "runs" / "airline.json", "--output-format", "sarif", "-q"
        )
    finally:
        os.chdir(old)
    assert jsonl.exit_code == sarif.exit_code == abs_sarif.exit_code == 1, jsonl.output
    receipts = [orjson.loads(x) for x in jsonl.stdout.splitlines()]
    return {
        "text": data.decode("utf-8"),
        "receipts": receipts,
        "sarif": orjson.loads(sarif.stdout),
        "abs_sarif": orjson.loads(abs_sarif.stdout),
        "work": work,
    }


def test_tau_bench_results_point_at_the_line_where_their_record_starts(tau_check: dict[str, Any]) -> None:
    text, receipts, log = tau_check["text"], tau_check["receipts"], tau_check["sarif"]
    assert sarif_errors(log) == []
    results = log["runs"][0]["results"]
    assert len(results) == len(receipts) > 100  # every call of the two tools
    starts = _raw_decode_starts(text)
    assert len(starts) == 200
    lines = text.split("\n")
    by_call = {r["call_id"]: r for r in receipts}
    seen_records = set()
    for res in results:
        rec = by_call[res["properties"]["call_id"]]
        record = rec["line"]  # ingest numbers records of a JSON array 1, 2, 3, ...
        seen_records.add(record)
        line = res["locations"][0]["physicalLocation"]["region"]["startLine"]
        assert line == starts[record - 1]
        assert lines[line - 1].strip() == "{"  # the record's opening brace
        assert lines[line].strip().startswith('"task_id"')
        assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {
            "uri": "runs/airline.json",
            "uriBaseId": "%SRCROOT%",
        }
    assert len(seen_records) > 50
    assert max(seen_records) > 150  # far from the top: a record number is not a file line there
    assert any(starts[r - 1] != r for r in seen_records)


def test_absolute_input_paths_come_out_relative(tau_check: dict[str, Any]) -> None:
    log = tau_check["abs_sarif"]
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]
    }
    assert uris == {"runs/airline.json"}
    assert str(tau_check["work"]) not in json.dumps(log)


def test_levels_follow_rule_confidence(tau_check: dict[str, Any]) -> None:
    run = tau_check["sarif"]["runs"][0]
    by_tool = {(r["properties"]["tool"], r["level"]) for r in run["results"]}
    assert by_tool == {("get_reservation_details", "error"), ("get_user_details", "note")}
    rules = run["tool"]["driver"]["rules"]
    assert [(r["id"], r["defaultConfiguration"]["level"]) for r in rules] == [("REQUIRED", "error")]
    assert rules[0]["helpUri"] == DOCS_URL + "codes.md#required"
    assert rule_level(_rule("t", "TYPE", "/a", Support(100, 30), ("mined",))) == "warning"
    assert rule_level(_rule("t", "TYPE", "/a", Support(100, 29), ("mined",))) == "note"


def test_record_lines_unknown_shape_falls_back_to_a_logical_location(tmp_path: Path) -> None:
    doc = tmp_path / "odd.json"
    doc.write_text('{\n  "runs": [\n    {"a": 1},\n    {"a": 2}\n  ]\n}\n')
    assert record_lines(doc) == (1,)  # one record: the document, at its first line
    arr = tmp_path / "arr.json"
    arr.write_text('[\n  {"s": "a,]}["},\n\n  {"s": "\\"x\\""}, 3\n]\n')
    assert record_lines(arr) == (2, 4, 4)
    jl = tmp_path / "x.jsonl"
    jl.write_text('{"a": 1}\n{"a": 2}\n')
    assert record_lines(jl) is None
    loc = Locator(tmp_path)
    assert loc.locate(str(arr), 3).line == 4
    beyond = loc.locate(str(arr), 9)  # a record the file does not hold: named, not placed on a line
    assert (beyond.path, beyond.line, beyond.record) == ("arr.json", None, 9)
    assert beyond.sarif()["logicalLocations"][0]["name"] == "record 9"
    gone = loc.locate(str(tmp_path / "gone.json"), 5)
    assert (gone.line, gone.record) == (None, 5)
    assert loc.locate(str(tmp_path / "gone.jsonl"), 5).line == 5
    assert loc.locate("-", 5).path is None


@pytest.fixture(scope="module")
def sample_check(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sample world: a corpus of the clean traces and contracts mined on it (k = 1)."""
    work = tmp_path_factory.mktemp("sample")
    r = _run("ingest", repo / "sample_traces" / "clean", "-o", work / "C", "-q")
    assert r.exit_code == 0, r.output
    r = _run("mine", work / "C", "-o", work / "contracts.json", "-q")
    assert r.exit_code == 0, r.output
    return {"work": work, "contracts": work / "contracts.json", "faulty": repo / "sample_traces" / "faulty"}


def test_sarif_cap_keeps_the_most_severe_and_says_how_many_left_out(sample_check: dict[str, Any]) -> None:
    full = _run(
        "check", "-c", sample_check["contracts"], sample_check["faulty"], "--output-format", "sarif", "-q"
    )
    capped = _run(
        "check",
        "-c",
        sample_check["contracts"],
        sample_check["faulty"],
        "--output-format",
        "sarif",
        "--max-results",
        "100",
        "-q",
    )
    assert full.exit_code == capped.exit_code == 1
    all_results = orjson.loads(full.stdout)["runs"][0]["results"]
    log = orjson.loads(capped.stdout)
    assert sarif_errors(log) == []
    run = log["runs"][0]
    total = len(all_results)
    assert total > 1000
    assert len(run["results"]) == 100
    assert run["properties"]["omitted_results"] == total - 100
    assert run["properties"]["total_results"] == total
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    assert note["level"] == "warning"
    assert note["message"]["text"].startswith(f"{total - 100:,} of {total:,} results left out")
    n_errors = sum(1 for r in all_results if r["level"] == "error")
    kept_errors = sum(1 for r in run["results"] if r["level"] == "error")
    assert kept_errors == min(100, n_errors)


def test_github_groups_caps_and_writes_the_rest_to_the_step_summary(
    sample_check: dict[str, Any], tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    args = (
        "check",
        "-c",
        sample_check["contracts"],
        sample_check["faulty"],
        "--output-format",
        "github",
        "-q",
    )
    r = _run(*args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    annotations = [ln for ln in lines if ln.startswith(("::error ", "::warning ", "::notice file="))]
    assert len(annotations) == 10
    opens = [ln for ln in lines if ln.startswith("::group::")]
    assert len(opens) == sum(1 for ln in lines if ln == "::endgroup::") >= 1
    assert all(" of " in g and "violations annotated" in g for g in opens)
    total = len(orjson.loads(_run(*args[:-3], "--output-format", "json", "-q").stdout)["receipts"])
    assert total > 0
    sarif = orjson.loads(_run(*args[:-3], "--output-format", "sarif", "-q").stdout)
    n = len(sarif["runs"][0]["results"])
    assert lines[-1].startswith(f"::notice title=contracts::{n - 10:,} of {n:,} violations not annotated")
    md = summary.read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith(("| Level", "| ---"))]
    assert len(rows) == min(n - 10, MAX_SUMMARY_ROWS)
    assert f"({n - 10 - MAX_SUMMARY_ROWS:,} more: see the SARIF or JSON output.)" in md
    assert f"{n - 10:,} of {n:,} findings were not annotated" in md
    # no step summary without the variable; still says how many were left out
    r2 = _run(*args, "--max-annotations", "3", env={"GITHUB_STEP_SUMMARY": ""})
    assert sum(1 for ln in r2.stdout.splitlines() if ln.startswith(("::error ", "::warning "))) == 3
    assert f"{n - 3:,} of {n:,} violations not annotated" in r2.stdout


def test_plan_check_sarif_validates_with_absolute_help_uris(repo: Path) -> None:
    world = repo / "docs" / "examples" / "plan-world"
    r = _run(
        "plan-check",
        world / "fail-many.json",
        "-r",
        world / "tools.json",
        "--output-format",
        "sarif",
        "--base",
        world,
    )
    assert r.exit_code == 1
    log = orjson.loads(r.stdout)
    assert sarif_errors(log) == []
    run = log["runs"][0]
    assert all(
        rule["helpUri"].startswith(DOCS_URL + "plan-check.md#e_") for rule in run["tool"]["driver"]["rules"]
    )
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in run["results"]}
    assert uris == {"fail-many.json"}
    assert {res["level"] for res in run["results"]} == {"error"}


@pytest.mark.slow
def test_audit_writes_valid_sarif_and_junit(repo: Path, tmp_path: Path) -> None:
    """A small audit (5,000 lines of the sample world, faults planted): organic fires in the SARIF at
    their line of the original file, gates as notifications; JUnit counts agree with the gates."""
    import gzip

    with gzip.open(repo / "sample_traces" / "clean" / "part-1.jsonl.gz", "rt") as fh:
        head = [next(fh) for _ in range(5000)]
    traces = tmp_path / "small.jsonl"
    traces.write_text("".join(head))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = _run(
            "audit",
            "small.jsonl",
            "--folds",
            "2",
            "--registry",
            repo / "sample_traces" / "tools.json",
            "--ledger",
            "L",
            "--inject",
            "drop_field",
            "--rate",
            "0.1",
            "--bootstrap",
            "0",
            "--no-in-sample",
            "--max-fire-rate",
            "0.001",
            "--min-detection",
            "0.5",
            "--sarif",
            "audit.sarif",
            "--junit",
            "audit.xml",
            "-q",
        )
    finally:
        os.chdir(old)
    assert r.exit_code == 1  # the fire-rate gate fails on purpose
    log = orjson.loads((tmp_path / "audit.sarif").read_bytes())
    assert sarif_errors(log) == []
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "contracts audit"
    assert len(run["results"]) > 0 and run["properties"]["labelled_fires_left_out"] > 0
    for res in run["results"]:
        phys = res["locations"][0]["physicalLocation"]
        assert phys["artifactLocation"]["uri"] == "small.jsonl"  # the traces given, not the injected copy
        rec = json.loads(head[phys["region"]["startLine"] - 1])
        assert rec["tool"] == res["properties"]["tool"]
    notes = [n["level"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert notes == ["error", "note"]  # fire rate fails, detection passes
    root = ET.parse(tmp_path / "audit.xml").getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    gates = suites["contracts audit gates"]
    assert (gates.get("tests"), gates.get("failures")) == ("2", "1")
    failed = [c.get("name") for c in gates.findall("testcase") if c.find("failure") is not None]
    assert failed == ["fire_rate"]
    tools = suites["contracts audit tools"].findall("testcase")
    assert len(tools) == int(suites["contracts audit tools"].get("tests", "-1")) > 0
    assert root.get("tests") == str(2 + len(tools)) and root.get("failures") == "1"


def test_render_options_default_level_is_warning() -> None:
    assert RenderOptions().level("r-unknown") == "warning"


def test_docs_url_is_pyprojects_documentation_url(repo: Path) -> None:
    import tomllib

    urls = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Documentation"] == DOCS_URL
    assert DOCS_URL.startswith("https://") and DOCS_URL.endswith("/docs/")
