"""`mine` names every tool without rules and why (coverage made visible)."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.codes.mine_params import MineParams
from output_contracts.mining import mine
from output_contracts.mining.coverage import uncovered
from output_contracts.traces.ingest import corpus_from_records


def _records() -> list[dict]:
    recs = []
    for i in range(40):  # a tool with a stable shape: covered
        recs.append(
            {"trace_id": f"a{i}", "task_id": f"t{i}", "tool": "lookup", "arguments": {}, "result": {"n": i}}
        )
    for i in range(30):  # an object or a mixed list by turns: nothing holds on every call
        recs.append(
            {
                "trace_id": f"b{i}",
                "task_id": f"t{i}",
                "tool": "scatter",
                "arguments": {},
                "result": {f"k{i}": i} if i % 2 else [i, "s"],
            }
        )
    for i in range(30):  # plain text or a number, never a structure
        recs.append(
            {
                "trace_id": f"c{i}",
                "task_id": f"t{i}",
                "tool": "say",
                "arguments": {},
                "result": "ok" if i % 2 else 7,
            }
        )
    for i in range(5):  # too few
        recs.append(
            {"trace_id": f"d{i}", "task_id": f"t{i}", "tool": "rare", "arguments": {}, "result": {"n": i}}
        )
    for i in range(3):  # errors only
        recs.append(
            {
                "trace_id": f"e{i}",
                "task_id": f"t{i}",
                "tool": "broken",
                "arguments": {},
                "status": "error",
                "error": "boom",
            }
        )
    return recs


def test_every_uncovered_tool_is_named_with_its_reason(tmp_path: Path) -> None:
    corpus = corpus_from_records(_records(), tmp_path / "c")
    params = MineParams.of()
    cs = mine(corpus, params)
    gaps = {g.tool: g for g in uncovered(corpus, cs, params)}
    assert sorted(gaps) == ["broken", "rare", "say", "scatter"]
    assert gaps["broken"].reason == "no clean call: its 3 call(s) are errors or belong to faulty episodes"
    assert gaps["rare"].reason == "5 clean calls: fewer than any rule class needs (at least 20)"
    assert (
        gaps["say"].reason
        == "its results are int or string, not JSON objects or lists: no field for a rule to hold on"
    )
    assert gaps["scatter"].reason.startswith("30 clean calls from 30 task(s): no candidate held")
    assert (gaps["scatter"].calls, gaps["scatter"].clean_calls, gaps["scatter"].tasks) == (30, 30, 30)


def test_mine_cli_prints_and_reports_them(tmp_path: Path) -> None:
    corpus_from_records(_records(), tmp_path / "c")
    r = CliRunner().invoke(app, ["mine", str(tmp_path / "c"), "-o", str(tmp_path / "k.json"), "--json"])
    assert r.exit_code == 0, r.output
    assert "no rules for rare: 5 clean calls: fewer than any rule class needs (at least 20)" in r.stderr
    doc = orjson.loads(r.stdout)
    assert [g["tool"] for g in doc["uncovered"]] == ["broken", "rare", "say", "scatter"]
    assert doc["uncovered"][1] == {
        "tool": "rare",
        "calls": 5,
        "clean_calls": 5,
        "tasks": 5,
        "reason": "5 clean calls: fewer than any rule class needs (at least 20)",
    }


def test_check_can_fail_on_calls_nothing_checks(tmp_path: Path) -> None:
    corpus_from_records(_records(), tmp_path / "c")
    r = CliRunner().invoke(app, ["mine", str(tmp_path / "c"), "-o", str(tmp_path / "k.json"), "-q"])
    assert r.exit_code == 0, r.output
    other = [{"trace_id": "x", "tool": "never_mined", "arguments": {}, "result": {"n": 1}}] * 2
    corpus_from_records(other + _records()[:3], tmp_path / "o")
    args = ["check", "--contracts", str(tmp_path / "k.json"), str(tmp_path / "o"), "-q"]
    assert CliRunner().invoke(app, args).exit_code == 0  # unknown tools are reported, not violations
    r = CliRunner().invoke(app, [*args, "--fail-on-unknown-tool"])
    assert r.exit_code == 1, r.output
    assert (
        "FAIL: 2 call(s) of 1 tool(s) without contracts were not checked: never_mined (--fail-on-unknown-tool)"
        in r.stderr
    )


def test_audit_reports_coverage_and_gates_on_it(tmp_path: Path) -> None:
    from output_contracts.audit.report_model import round_figure
    from output_contracts.schemas import schema_errors

    corpus_from_records(_records(), tmp_path / "c")
    args = ["audit", str(tmp_path / "c"), "--ledger", str(tmp_path / "L"), "-o", str(tmp_path / "a.json")]
    r = CliRunner().invoke(app, [*args, "--min-coverage", "0.3", "--bootstrap", "0"])
    assert r.exit_code == 0, r.output
    doc = orjson.loads((tmp_path / "a.json").read_bytes())
    assert schema_errors(doc, "audit-report") == []
    # 40 lookup calls of 105 checked (the 3 error calls are not checked); only lookup has rules
    assert doc["coverage"] == {
        "calls": 40,
        "checked": 105,
        "share": round_figure(40 / 105),
        "tools": 1,
        "called_tools": 4,
        "uncovered": ["rare", "say", "scatter"],
    }
    assert doc["gates"] == [
        {
            "metric": "coverage",
            "op": "<",
            "threshold": 0.3,
            "value": round_figure(40 / 105),
            "low": None,
            "high": None,
            "passed": True,
        }
    ]
    assert "no rule checks rare, say, scatter." in r.stdout
    assert "PASS coverage 38.10% within --min-coverage 30.00%" in r.stdout
    args = ["audit", str(tmp_path / "c"), "--ledger", str(tmp_path / "L2"), "--bootstrap", "0"]
    r = CliRunner().invoke(app, [*args, "--min-coverage", "0.5"])
    assert r.exit_code == 1, r.output
    assert "gate failed: coverage 38.10% is below --min-coverage 50.00%" in r.stderr
