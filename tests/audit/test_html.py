"""`contracts report`: inputs recognised and validated, the page's numbers equal the artifacts', every chart
accessible and backed by a table, the same inputs give the same bytes, bad inputs are one error line."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from output_contracts.audit.artifacts import Kind, load_artifact, load_artifacts, parse_artifact
from output_contracts.audit.html import coverage_risk_points, render_html
from output_contracts.cli.app import app
from output_contracts.errors import ReportError, SchemaError
from output_contracts.schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
AUDIT = GOLDEN / "audit-clean-inject.json"
CONTRACTS = GOLDEN / "sample-contracts.json"
REPAIR = GOLDEN / "repair-score.json"
RECEIPTS = GOLDEN / "check-faulty-receipts.jsonl"
INPUTS = [AUDIT, CONTRACTS, REPAIR, RECEIPTS]


class Svgs(HTMLParser):
    """Every `<svg>` of a page with its role, title, desc and data marks, and every figure's table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[dict[str, Any]] = []
        self.figures: list[dict[str, int]] = []
        self._tag: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._tag.append(tag)
        if tag == "svg":
            self.svgs.append({"role": a.get("role"), "title": "", "desc": "", "marks": 0})
        elif tag == "figure":
            self.figures.append({"svgs": 0, "rows": 0})
        if self.svgs and "mark" in (a.get("class") or "").split():
            self.svgs[-1]["marks"] += 1
        if self.figures and tag == "svg":
            self.figures[-1]["svgs"] += 1
        if self.figures and tag == "tr" and "tbody" in self._tag:
            self.figures[-1]["rows"] += 1

    def handle_endtag(self, tag: str) -> None:
        while self._tag and self._tag.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._tag and self._tag[-1] in ("title", "desc") and "svg" in self._tag and self.svgs:
            self.svgs[-1][self._tag[-1]] += data


def _parse(page: str) -> Svgs:
    p = Svgs()
    p.feed(page)
    return p


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(load_artifacts(INPUTS))


def test_kinds_are_told_by_shape_and_validated() -> None:
    kinds = [load_artifact(p).kind for p in INPUTS]
    assert kinds == [Kind.AUDIT, Kind.CONTRACTS, Kind.REPAIR, Kind.RECEIPTS]
    receipts = load_artifact(RECEIPTS)
    assert len(receipts.data) == 1435  # one receipt a line of the golden check run
    assert load_artifact(AUDIT).sha256 == __import__("hashlib").sha256(AUDIT.read_bytes()).hexdigest()


def test_every_chart_is_accessible_and_has_data_and_a_table(page: str) -> None:
    p = _parse(page)
    assert len(p.svgs) >= 8
    for s in p.svgs:
        assert s["role"] == "img" and s["title"].strip() and s["desc"].strip(), s
        assert s["marks"] >= 1, s
    assert p.figures and all(f["svgs"] == 1 and f["rows"] >= 1 for f in p.figures), p.figures
    assert len(p.figures) == len(p.svgs)


def test_the_page_shows_the_artifacts_numbers(page: str) -> None:
    audit = json.loads(AUDIT.read_text())
    repair = json.loads(REPAIR.read_text())
    tool = next(t for t in audit["tools"] if t["tool"] == "lookup_inventory")["fire_rate"]
    assert (tool["numerator"], tool["denominator"]) == (11, 3051)
    # the chart's label and the table both carry the rate with its counts and interval
    assert "0.361% (11/3,051)" in page
    assert "[0.0%, 1.14%]" in page  # its 95% interval, 0 to 0.0114433365495
    det = audit["detection"]["overall"]
    assert f"{det['numerator']:,}/{det['denominator']:,}" in page
    assert repair["ledger"]["root"] in page and repair["ledger"]["head"] in page
    assert audit["ledger"]["root"] in page
    m = repair["m_object"]
    assert "M_object" in page and f"{m['numerator']}/{m['denominator']}" in page
    # example receipts: the top rule of the receipts links to a row with its call id and recovery tools
    assert 'id="call-e430a1bc2ed11b7f"' in page
    assert '<a href="#rule-r-067ec67e773a"' in page or 'href="#call-e430a1bc2ed11b7f"' in page
    # nothing is fetched: no external URL but the SVG namespace, a CSP that forbids fetching
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page
    assert "<link" not in page and " src=" not in page


def test_same_inputs_same_bytes_and_one_named_time(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.html"
        r = CliRunner().invoke(app, ["report", *map(str, INPUTS), "-o", str(out), "-q"])
        assert r.exit_code == 0, r.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert b"generated-at" not in outs[0]
    t = tmp_path / "t.html"
    r = CliRunner().invoke(app, ["report", str(AUDIT), "-o", str(t), "--generated-at", "2026-12-04T22:00Z"])
    assert r.exit_code == 0, r.output
    assert t.read_text().count("2026-12-04T22:00Z") == 1
    assert "wrote" in r.stderr and "charts" in r.stderr


def test_repair_curve_takes_a_list_of_points() -> None:
    score = json.loads(REPAIR.read_text())
    pts, sweep = coverage_risk_points(score)
    ab = score["abstention"]
    assert not sweep and [(p.x, p.y) for p in pts] == [(ab["coverage"]["value"], ab["risk"]["value"])]
    # the shape `repair-score --coverage-risk` writes: points with null risk (nothing answered) left out
    score["coverage_risk"] = {
        "cases": 10,
        "gate": None,
        "mean_risk": 0.1,
        "points": [
            {"threshold": 0.0, "answered": 8, "wrong": 2, "coverage": 0.8, "risk": 0.25},
            {"threshold": 0.9, "answered": 4, "wrong": 0, "coverage": 0.4, "risk": 0.0},
            {"threshold": 1.0, "answered": 0, "wrong": 0, "coverage": 0.0, "risk": None},
        ],
    }
    assert schema_errors(score, "repair-score") == []
    pts, sweep = coverage_risk_points(score)
    assert sweep and [(p.x, p.y) for p in pts] == [(0.8, 0.25), (0.4, 0.0)]
    score["coverage_risk"] = [
        {"coverage": 0.5, "risk": {"value": 0.05, "low": 0.01, "high": 0.1}},
        {"coverage": 0.9, "risk": 0.2},
    ]
    pts, sweep = coverage_risk_points(score)
    assert sweep and [(p.x, p.y, p.low) for p in pts] == [(0.5, 0.05, 0.01), (0.9, 0.2, None)]


def test_two_contract_sets_are_diffed_and_a_diff_file_is_drawn(tmp_path: Path) -> None:
    cs = json.loads(CONTRACTS.read_text())
    gone = cs["tools"]["get_order"]["rules"].pop(0)
    for f in cs["folds"]:
        f["rules"] = [r for r in f["rules"] if r != gone["id"]]
        f.get("support", {}).pop(gone["id"], None)
    new = tmp_path / "new.json"
    new.write_text(json.dumps(cs))
    html = render_html(load_artifacts([CONTRACTS, new]))
    assert "1 rules removed, 0 changed, 0 added" in html
    r = CliRunner().invoke(app, ["diff", str(CONTRACTS), str(new), "--json"])
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert schema_errors(d, "contract-diff") == []
    diff = tmp_path / "diff.json"
    diff.write_text(r.stdout)
    assert load_artifact(diff).kind is Kind.DIFF
    html = render_html(load_artifacts([diff]))
    assert "Diff: " in html and gone["tool"] in html and _parse(html).svgs[0]["marks"] == 1


def test_new_input_schemas_hold_what_the_commands_print(tmp_path: Path) -> None:
    """mine --json and ledger head --json, as the commands print them, validate (and are recognised)."""
    clean = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
    r = CliRunner().invoke(app, ["mine", str(clean), "-o", str(tmp_path / "c.json"), "--json", "-q"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert schema_errors(summary, "mine-summary") == []
    assert parse_artifact(r.stdout.encode(), "mine.json").kind is Kind.MINE
    summary["uncovered"] = [{"tool": "ping", "calls": 3, "clean_calls": 3, "tasks": 1, "reason": "too few"}]
    p = tmp_path / "m.json"
    p.write_text(json.dumps(summary))
    html = render_html(load_artifacts([p]))
    assert "ping" in html and "too few" in html
    head = {"entries": 5, "head": "a" * 64, "root": "b" * 64}
    assert parse_artifact(json.dumps(head).encode(), "h.json").kind is Kind.LEDGER
    assert schema_errors({**head, "head": "xyz"}, "ledger-head") != []


def test_bad_inputs_are_one_error(tmp_path: Path) -> None:
    audit = json.loads(AUDIT.read_text())
    del audit["ledger"]["root"]
    bad = tmp_path / "audit.json"
    bad.write_text(json.dumps(audit))
    with pytest.raises(SchemaError, match=r"audit\.json: not a valid audit-report: /ledger: 'root'"):
        load_artifact(bad)
    r = CliRunner().invoke(app, ["report", str(AUDIT), str(bad), "-o", str(tmp_path / "out.html")])
    assert r.exit_code == 2
    assert r.stderr.strip().startswith("error[E_SCHEMA_INVALID]: ") and "audit.json" in r.stderr
    assert not (tmp_path / "out.html").exists()
    with pytest.raises(ReportError, match=r"x\.json:2: not JSON"):
        parse_artifact(b'{"call_id": null}\n{oops\n', "x.json")
    with pytest.raises(ReportError, match="not an artifact the report knows"):
        parse_artifact(b'{"a": 1}', "y.json")
    with pytest.raises(ReportError, match="no input"):
        load_artifacts([])


def test_audit_writes_html_beside_its_json(tmp_path: Path) -> None:
    clean = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
    args = ["audit", str(clean), "--folds", "2", "--bootstrap", "0", "--no-in-sample", "-q"]
    out = [
        *args,
        "--ledger",
        str(tmp_path / "L"),
        "-o",
        str(tmp_path / "a.json"),
        "--html",
        str(tmp_path / "a.html"),
    ]
    r = CliRunner().invoke(app, [*out, "--max-fire-rate", "0.5"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "a.html").read_text()
    data = json.loads((tmp_path / "a.json").read_text())
    # the same page `contracts report a.json` draws from the JSON it wrote
    r = CliRunner().invoke(
        app,
        ["report", str(tmp_path / "a.json"), "-o", str(tmp_path / "b.html"), "--title", "contracts audit"],
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "b.html").read_text() == html
    assert data["ledger"]["root"] in html and "PASS" in html
    # the audit's ledger anchor as `ledger head --json` prints it: valid, recognised, drawn
    r = CliRunner().invoke(app, ["ledger", "head", str(tmp_path / "L"), "--json"])
    assert r.exit_code == 0, r.output
    head = json.loads(r.stdout)
    assert schema_errors(head, "ledger-head") == [] and head["root"] == data["ledger"]["root"]
    (tmp_path / "head.json").write_text(r.stdout)
    assert head["head"] in render_html(load_artifacts([tmp_path / "head.json"]))


def test_an_audit_names_the_tools_no_rule_checks() -> None:
    audit = json.loads(AUDIT.read_text())
    assert audit["coverage"]["uncovered"] == []
    assert "No rule checks" not in render_html(load_artifacts([AUDIT]))
    audit["coverage"]["uncovered"] = ["ping", "pong"]
    html = render_html([parse_artifact(json.dumps(audit).encode(), "a.json")])
    assert "No rule checks ping, pong" in html
