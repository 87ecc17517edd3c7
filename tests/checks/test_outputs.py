"""Output formats of `check`: SARIF 2.1.0 (validated against the OASIS schema), JUnit XML, GitHub, JSON."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.checks.checker import check_call
from output_contracts.checks.outputs import CODE_INFO, SummaryBuilder, summary_lines
from output_contracts.checks.receipts import encode
from output_contracts.checks.renderers import github as gh
from output_contracts.checks.renderers.junit import junit as render_junit
from output_contracts.checks.renderers.renderer import RenderOptions, rule_levels
from output_contracts.checks.renderers.sarif import sarif
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.traces.ingest import corpus_from_records
from tests.vendored import validator

T = "lookup_inventory"


def _rule(code: str, paths: list[str], params: dict[str, Any] | None = None) -> Rule:
    params = params or {}
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(50, 5))


RULES = (
    _rule("NONNEG", ["/available"]),
    _rule("REQUIRED", ["/warehouse"]),
    _rule("DOMAIN", ["/warehouse"], {"values": ["east"]}),
)
CS = ContractSet(
    params={"k": 1, "seed": 13},
    corpus={},
    tools={T: ToolContracts(rules=RULES, substitutes=("query_warehouse",)), "ping": ToolContracts()},
    folds=(FoldChecker(0, tuple(r.id for r in RULES)),),
)


@pytest.fixture(scope="module")
def sarif_validator() -> Any:
    """The official OASIS SARIF 2.1.0 schema (draft-04), format checks on (tests/data/schemas)."""
    return validator("sarif-schema-2.1.0.json")


def _receipts(encoder: str = "v2") -> tuple[list[dict[str, Any]], Any]:
    sb = SummaryBuilder(frozenset(CS.tools))
    out = []
    for line, (tool, res) in enumerate(
        [
            (T, {"available": -1, "warehouse": "west"}),
            (T, {"available": 3}),
            ("ping", {}),
            ("mystery", {"a": 1}),
            (T, {"available": 1, "warehouse": "east"}),
        ],
        start=1,
    ):
        sb.checked(tool)
        rc = check_call(CS, tool, {}, res, encoder=encoder)
        if rc is not None:
            enc = encode(rc)
            enc.update(source="traces/run 1.jsonl", line=line, call_id=f"{line:016x}")
            sb.receipt(enc)
            out.append(enc)
    return out, sb.build()


@pytest.mark.parametrize("encoder", ["v1", "v2"])
def test_sarif_validates_and_maps_codes_and_locations(sarif_validator: Any, encoder: str) -> None:
    recs, summary = _receipts(encoder)
    log = sarif(recs, summary, version="0.1.0", options=RenderOptions(levels=rule_levels(CS)))
    errors = sorted(sarif_validator.iter_errors(log), key=str)
    assert errors == []
    run = log["runs"][0]
    results = run["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("DOMAIN", 1),
        ("NONNEG", 1),
        ("REQUIRED", 2),
    ] or sorted(r["ruleId"] for r in results) == ["DOMAIN", "NONNEG", "REQUIRED"]
    rules = run["tool"]["driver"]["rules"]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        art = r["locations"][0]["physicalLocation"]["artifactLocation"]
        assert art == {"uri": "traces/run%201.jsonl", "uriBaseId": "%SRCROOT%"}
        # mined rules with support over 5 tasks (< 30): notes
        assert r["level"] == "note" and r["message"]["text"]
    assert {r["id"] for r in rules} == {"DOMAIN", "NONNEG", "REQUIRED"}
    assert all(r["properties"]["docs"] == f"docs/codes.md#{r['id'].lower()}" for r in rules)
    assert all(r["helpUri"].startswith("https://") for r in rules)


def test_sarif_rejects_what_the_schema_forbids(sarif_validator: Any) -> None:
    recs, summary = _receipts()
    log = sarif(recs, summary, version="0.1.0")
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert list(sarif_validator.iter_errors(log))  # the vendored schema really constrains


def test_junit_one_testcase_per_tool() -> None:
    recs, summary = _receipts()
    root = ET.fromstring(render_junit(recs, summary))
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert sorted(cases) == ["lookup_inventory", "mystery", "ping"]
    fail = cases[T].find("failure")
    assert fail is not None and fail.text is not None and fail.text.count("\n") == 2  # three violations
    assert cases["ping"].find("failure") is None and cases["ping"].find("skipped") is None
    assert cases["mystery"].find("skipped") is not None
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("skipped") == "1"


def test_github_lines_escape_and_locate() -> None:
    recs, _ = _receipts()
    text = gh.FORMAT.render_all(recs, summary_of(recs), version="0").decode()
    lines = [ln for ln in text.splitlines() if not ln.startswith("::group::") and ln != "::endgroup::"]
    assert len(lines) == 3
    assert all(ln.startswith("::warning file=traces/run 1.jsonl,line=") for ln in lines)
    assert "title=NONNEG lookup_inventory::NONNEG at /available" in text
    odd = {
        "source": "a,b:c",
        "line": 0,
        "outcome_contract": {
            "tool": "t",
            "violations": [{"code": "TYPE", "rule": "r", "path": "", "message": "50%\nx"}],
        },
    }
    assert gh.FORMAT.render_all([odd], summary_of([odd]), version="0") == (
        b"::group::t: 1 of 1 violations annotated\n::warning file=a%2Cb%3Ac,title=TYPE t::50%25%0Ax\n::endgroup::\n"
    )


def summary_of(recs: list[dict[str, Any]]) -> Any:
    sb = SummaryBuilder(frozenset(CS.tools))
    return sb.build()


def test_summary_counts_and_sizes() -> None:
    recs, s = _receipts()
    assert (s.calls_checked, s.calls_with_violations, s.violations) == (5, 2, 3)
    assert s.by_code == {"DOMAIN": 1, "NONNEG": 1, "REQUIRED": 1}
    assert s.unknown_tools == ("mystery",) and s.unknown_tool_calls == 1
    assert s.receipt_bytes == sum(r["bytes"] for r in recs)
    assert s.per_1000(s.receipt_bytes) == round(s.receipt_bytes * 1000 / 5, 1)
    labels = dict(summary_lines(s))
    assert labels["unknown tool"] == "1 call not checked (mystery)"


def test_cli_output_formats(tmp_path: Path) -> None:
    cfile = tmp_path / "contracts.json"
    CS.save(cfile)
    recs = [
        {"trace_id": "a", "tool": T, "arguments": {}, "result": {"available": -1, "warehouse": "east"}},
        {"trace_id": "a", "tool": "ping", "arguments": {}, "result": {}},
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    runner = CliRunner()
    out = {}
    for fmt in ("json", "sarif", "junit", "github"):
        res = runner.invoke(
            app, ["check", "--contracts", str(cfile), str(corpus.path), "--output-format", fmt, "-q"]
        )
        assert res.exit_code == 1, res.output
        out[fmt] = res.stdout
    doc = orjson.loads(out["json"])
    assert doc["summary"]["calls_checked"] == 2 and len(doc["receipts"]) == 1
    assert orjson.loads(out["sarif"])["runs"][0]["results"][0]["ruleId"] == "NONNEG"
    assert ET.fromstring(out["junit"]).find("testsuite") is not None
    assert out["github"].startswith("::group::lookup_inventory: 1 of 1 violations annotated\n::notice file=")
    target = tmp_path / "out.sarif"
    res = runner.invoke(
        app,
        [
            "check",
            "--contracts",
            str(cfile),
            str(corpus.path),
            "--output-format",
            "sarif",
            "-o",
            str(target),
            "-q",
        ],
    )
    assert res.exit_code == 1 and res.stdout == "" and orjson.loads(target.read_bytes())["version"] == "2.1.0"


def test_every_code_has_a_docs_section(repo: Path) -> None:
    text = (repo / "docs" / "codes.md").read_text()
    for code, info in CODE_INFO.items():
        assert f"\n## {code}\n" in text, code
        assert info.summary and info.family in ("mined", "plan-check")


def test_every_output_format_choice_has_a_module() -> None:
    from output_contracts.checks.renderers import FORMATS
    from output_contracts.cli.check_cmd import CheckOutput

    assert {c.value for c in CheckOutput} == set(FORMATS)
    assert {n for n, f in FORMATS.items() if f.streaming} == {"jsonl"}  # github groups and caps: a document
