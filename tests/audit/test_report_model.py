"""The audit report as typed values (`output_contracts.audit.report_model`): its JSON is the dict API's, renderers and
gates read its attributes, and the package's entry points load lazily."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from output_contracts.audit import stats
from output_contracts.audit.inject import inject_records
from output_contracts.audit.pipeline import (
    audit_report,
    audit_score,
    audit_score_report,
    canonical_report,
    load_replay,
    rescore,
    rescore_report,
)
from output_contracts.audit.report import evaluate_gates, github_annotations, to_markdown
from output_contracts.audit.report_model import (
    AuditReport,
    Detection,
    Estimate,
    Interval,
    KindRates,
    RuleRow,
    round_figure,
)
from output_contracts.schemas import validate
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.audit.test_pipeline import world

REPO = Path(__file__).resolve().parents[2]
GATES = {"max_fire_rate": 0.01, "max_spurious_per_100": 0.0, "min_detection": 0.99}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditReport, Corpus, Path]:
    tmp = tmp_path_factory.mktemp("model")
    recs, _ = inject_records(world(24, rewards=True), rate=0.15, seed=4, kinds=["sign_flip", "drop_field"])
    corpus = corpus_from_records(recs, tmp / "corpus")
    report, _ = audit_report(corpus, tmp / "ledger", k=5, seed=13, bootstrap=100, gates=GATES)
    return report, corpus, tmp / "ledger"


def test_dict_api_is_the_reports_json(audited: tuple[AuditReport, Corpus, Path]) -> None:
    report, corpus, ledger = audited
    data = report.to_json()
    validate(data, "audit-report")
    assert audit_score(ledger, corpus, bootstrap=100, gates=GATES) == data
    assert canonical_report(
        audit_score_report(ledger, corpus, bootstrap=100, gates=GATES)
    ) == canonical_report(data)
    rep = load_replay(ledger)
    assert (
        rescore(rep, corpus, bootstrap=20, seed=5)
        == rescore_report(rep, corpus, bootstrap=20, seed=5).to_json()
    )


def test_json_is_plain_lists_and_dicts(audited: tuple[AuditReport, Corpus, Path]) -> None:
    report, _c, _l = audited
    data = report.to_json()
    assert list(data) == [
        "version",
        "corpus",
        "contracts",
        "params",
        "cross_fitted",
        "population",
        "fire_rate",
        "in_sample",
        "spurious",
        "detection",
        "recovery_retention",
        "receipt_cost",
        "propagation",
        "tools",
        "coverage",
        "rules",
        "abstention",
        "spurious_receipts",
        "ledger",
        "gates",
    ]

    def walk(x: object) -> None:
        assert not isinstance(x, tuple), x
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data)
    # a rate's keys, and a fire rate is a rate with its breakdowns beside
    assert set(data["recovery_retention"]) == {"value", "low", "high", "numerator", "denominator", "method"}
    assert set(data["fire_rate"]) == set(data["recovery_retention"]) | {
        "by_tool",
        "by_code",
        "cross_call_explained",
    }
    per_episodes = set(data["recovery_retention"]) | {"per_100_episodes"}
    assert set(data["spurious"]) == per_episodes | {"without_fault", "full_reward"}
    assert set(data["spurious"]["without_fault"]) == per_episodes  # the paper's denominator
    assert json.loads(json.dumps(data)) == data
    row = RuleRow("r-1", "t", "TYPE", ("/a", "/b"), 3, 1, 1, 0, 0)
    assert row.to_json()["paths"] == ["/a", "/b"]


def test_figures_are_held_as_reported(audited: tuple[AuditReport, Corpus, Path]) -> None:
    """Attributes hold the rounded JSON figures, so what a renderer prints is what the JSON says."""
    report, _c, _l = audited
    for a in report.abstention:
        for v in (a.coverage, a.risk, a.fire_rate, a.spurious_per_100, a.detection):
            assert v == round_figure(v)
    for r in (report.fire_rate, report.recovery_retention, report.spurious.per_100_episodes):
        for v in (r.value, r.low, r.high):
            assert v == round_figure(v)
    assert round_figure(None) is None and round_figure(1 / 3) == 0.333333333333
    cost = report.receipt_cost
    assert cost.receipts == report.population.fired_calls > 0
    assert cost.mean_bytes_per_receipt == round_figure(cost.bytes / cost.receipts)


def test_gates_read_the_reported_figures(audited: tuple[AuditReport, Corpus, Path]) -> None:
    report, _c, _l = audited
    by_metric = {g.metric: g for g in report.gates}
    assert set(by_metric) == {"fire_rate", "spurious_per_100", "detection"}
    fr, per100 = report.fire_rate, report.spurious.per_100_episodes
    assert (by_metric["fire_rate"].value, by_metric["fire_rate"].low) == (fr.value, fr.low)
    assert fr.value is not None and fr.value > 0.01 and not by_metric["fire_rate"].passed
    assert by_metric["spurious_per_100"].value == per100.value
    assert by_metric["spurious_per_100"].passed == (per100.value == 0.0)
    assert by_metric["detection"].value == report.detection.overall.value
    assert [g.to_json() for g in report.gates] == report.to_json()["gates"]
    failed = [g for g in report.gates if not g.passed]
    notes = github_annotations(report)
    assert len(notes) == len(failed) + 1 and notes[-1].startswith("::notice title=contracts audit::")
    md = to_markdown(report)
    assert "## Gates" in md and all(g.message() in md for g in report.gates)


def test_a_gate_that_cannot_be_measured_fails(audited: tuple[AuditReport, Corpus, Path]) -> None:
    report, _c, _l = audited
    none = Estimate(None, None, None, 0, 0, "none")
    blind = Detection(none, {}, KindRates(none, {}))
    gates = evaluate_gates(replace(report, detection=blind), min_detection=0.5)
    assert [(g.metric, g.passed) for g in gates] == [("detection", False)]
    assert "cannot be measured" in gates[0].message()
    assert evaluate_gates(report) == []
    assert isinstance(report.spurious.per_100_episodes, Interval)


def test_package_entry_points_load_lazily() -> None:
    code = (
        "import json, sys\n"
        "import output_contracts.audit.stats, output_contracts.audit.heldout\n"
        "before = sorted(m for m in sys.modules if m.startswith('output_contracts.audit.'))\n"
        "import output_contracts.audit as A\n"
        "names = [A.audit.__module__, A.audit_report.__module__, A.audit_score.__module__,\n"
        "         A.open_source.__module__, A.AuditReport.__module__, A.inject_records.__module__]\n"
        "print(json.dumps([before, names, sorted(A.__all__)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    before, names, exported = json.loads(out.stdout.strip().splitlines()[-1])
    assert (
        "output_contracts.audit.pipeline" not in before
        and "output_contracts.audit.report_model" not in before
    )
    assert names == ["output_contracts.audit.pipeline"] * 4 + [
        "output_contracts.audit.report_model",
        "output_contracts.audit.inject",
    ]
    assert exported == [
        "AuditReport",
        "audit",
        "audit_report",
        "audit_score",
        "inject_records",
        "open_source",
    ]
    import output_contracts.audit as package

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = package.nope


def test_report_rounds_with_the_one_public_function() -> None:
    """The report's figures round with `stats.round_figure`; nothing reaches into `stats` privately."""
    assert round_figure is stats.round_figure
    users = []
    for d in ("audit", "cli", "checks", "mining", "repair", "registry", "ledger", "codes", "traces", "bench"):
        for p in sorted((REPO / d).rglob("*.py")):
            text = p.read_text(encoding="utf-8")
            for m in re.finditer(r"\bstats\._[a-z]", text):
                users.append((str(p.relative_to(REPO)), text[: m.start()].count("\n") + 1))
    assert users == []
