"""`contracts audit` / `audit-score`: cross-fitted replay, frozen-before-joined scoring, reports, gates."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.audit.inject import DETECTABLE, inject_records
from output_contracts.audit.pipeline import audit, audit_report, audit_score, canonical_report, load_replay
from output_contracts.audit.report import pct, to_markdown
from output_contracts.audit.report_model import AuditReport
from output_contracts.cli.app import app
from output_contracts.errors import CheckError
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors, validate
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records

NAMES = [
    "Ann Lee",
    "Bo Chen",
    "Cy Diaz",
    "Di Fox",
    "Ed Gray",
    "Flo Hu",
    "Gus Ivy",
    "Hal Jo",
    "Ida Kim",
    "Jo Lu",
]


def world(n_tasks: int = 40, seed: int = 1, rewards: bool = False) -> list[dict[str, Any]]:
    """A small clean world. `gift_note` is present in every order except those of task 0: a rule
    that holds on the other folds' tasks only, so the held-out checker fires there (cross-fitting
    matters) while the full checker has no such rule."""
    r = random.Random(seed)
    recs: list[dict[str, Any]] = []
    for t in range(n_tasks):
        for e in range(2):
            tr = f"ep-{t}-{e}"
            for s in range(6):
                if s % 2 == 0:
                    oid = f"O-{t}-{e}-{s}"
                    res: dict[str, Any] = {
                        "order_id": oid,
                        "status": r.choice(["pending", "shipped", "delivered"]),
                        "tax": round(r.uniform(0.5, 5), 2),
                        "customer": r.choice(NAMES),
                    }
                    if t != 0:
                        res["gift_note"] = r.choice(["", "Happy birthday", "Thanks"])
                    rec: dict[str, Any] = {"tool": "get_order", "arguments": {"order_id": oid}, "result": res}
                else:
                    sku = f"SKU-{r.randint(1000, 9999)}"
                    res = {"sku": sku, "available": r.randint(1, 40), "warehouse": r.choice(["east", "west"])}
                    rec = {"tool": "lookup_inventory", "arguments": {"sku": sku}, "result": res}
                rec.update({"trace_id": tr, "task_id": f"task-{t}"})
                if rewards:
                    rec["reward"] = 1.0 if e == 0 else 0.0
                recs.append(rec)
    return recs


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditReport, Corpus, Path]:
    tmp = tmp_path_factory.mktemp("audit")
    recs, _ = inject_records(
        world(), rate=0.15, seed=5, kinds=["sign_flip", "drop_field", "stale_echo", "plausible_string"]
    )
    corpus = corpus_from_records(recs, tmp / "corpus")
    report, _cs = audit_report(corpus, tmp / "ledger", k=5, seed=13, bootstrap=300, corpus_name="world")
    return report, corpus, tmp / "ledger"


def test_report_valid_and_figures_consistent(audited: tuple[AuditReport, Corpus, Path]) -> None:
    report, _corpus, ledger = audited
    validate(report.to_json(), "audit-report")
    pop = report.population
    fr = report.fire_rate
    assert fr.denominator == pop.organic and pop.organic + pop.labelled == pop.checked
    assert report.detection.overall.denominator == pop.labelled > 0
    by_kind = report.detection.by_kind
    assert set(by_kind) == {"sign_flip", "drop_field", "stale_echo", "plausible_string"}
    assert sum(r.denominator for r in by_kind.values()) == pop.labelled
    # structural contracts catch the structural kinds and, by design, not a plausible wrong name
    for kind in ("sign_flip", "drop_field", "stale_echo"):
        assert by_kind[kind].value == 1.0, kind
    # (a plausible_string call may still be flagged for something else, e.g. the held-out gift_note rule,
    # but never at the faulted path)
    assert report.detection.path_match.by_kind["plausible_string"].value == 0.0
    for r in (fr, report.detection.overall, report.recovery_retention):
        assert r.low is not None and r.value is not None and r.high is not None
        assert r.low <= r.value <= r.high
    assert list(report.rules) == sorted(report.rules, key=lambda x: (-x.fires, x.rule))
    assert list(report.tools) == sorted(report.tools, key=lambda x: (-x.fires, x.tool))
    assert report.abstention[0].min_support == 0
    assert report.abstention[0].fired_calls == pop.fired_calls
    assert report.ledger.head == load_replay(ledger).head
    # every frozen fire event matches its schema
    replay = load_replay(ledger)
    assert len(replay.events) == pop.fired_calls
    for e in replay.events:
        assert schema_errors(e, "fire-event") == []
    assert report.receipt_cost.receipts == pop.fired_calls
    assert report.receipt_cost.bytes == sum(e["bytes"] for e in replay.events)


def _md_row(md: str, label: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_markdown_numbers_equal_json(audited: tuple[AuditReport, Corpus, Path]) -> None:
    rep, _c, _l = audited
    md = to_markdown(rep)
    report = rep.to_json()
    fr = report["fire_rate"]
    row = _md_row(md, "Fire rate (organic calls)")
    assert row[1] == pct(fr["value"]) and row[2] == f"[{pct(fr['low'])}, {pct(fr['high'])}]"
    assert row[3] == f"{fr['numerator']}/{fr['denominator']}"
    sp = report["spurious"]
    row = _md_row(md, "Spurious receipts per 100 clean episodes")
    assert float(row[1]) == pytest.approx(sp["per_100_episodes"]["value"], abs=0.005)
    assert row[3] == f"{sp['numerator']}/{sp['denominator']}"
    for kind, r in report["detection"]["by_kind"].items():
        row = _md_row(md, f"`{kind}`")
        assert row[1] == pct(r["value"]) and row[3] == f"{r['numerator']}/{r['denominator']}"
    det = report["detection"]["overall"]
    row = _md_row(md, "Detection (labelled calls)")
    assert float(row[1].rstrip("%")) == pytest.approx(100 * det["value"], abs=0.005)
    assert report["ledger"]["head"] in md and report["ledger"]["root"] in md
    assert "## Selective abstention" in md
    n_abst = len(report["abstention"])
    rows = [x for x in md.split("## Selective abstention")[1].splitlines() if re.match(r"^\| \d+ \|", x)]
    assert len(rows) == n_abst
    for a, line in zip(report["abstention"], rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert int(cells[0]) == a["min_support"] and int(cells[2]) == a["fired_calls"]


def _ledger_bytes(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and not p.name.startswith(".")}


def test_labels_changed_after_freeze_change_scores_not_ledger(
    audited: tuple[AuditReport, Corpus, Path], tmp_path: Path
) -> None:
    rep, corpus, ledger = audited
    report = rep.to_json()
    before = _ledger_bytes(ledger)
    again = audit_score(ledger, corpus, bootstrap=300)
    assert canonical_report(again) == canonical_report(report)
    # relabel: clear every fault label, and mark one organic fired call as a fault
    calls = corpus.scan_calls().select("call_id", "fault").collect()
    labelled = [c for c, f in calls.iter_rows() if f is not None]
    lines = [{"call_id": c, "labels": {}} for c in labelled]
    lines.append({"trace_id": "ep-5-0", "reward": 0.0})
    f = tmp_path / "labels.jsonl"
    f.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    changed = audit_score(ledger, corpus, bootstrap=300, labels_file=f)
    assert changed["population"]["labelled"] == 0
    assert changed["detection"]["overall"]["denominator"] == 0
    assert changed["fire_rate"]["denominator"] == report["population"]["checked"]
    assert changed["fire_rate"]["numerator"] == report["population"]["fired_calls"]
    assert changed["population"]["clean_episodes"] != report["population"]["clean_episodes"]
    assert changed["ledger"] == report["ledger"]
    assert _ledger_bytes(ledger) == before
    from output_contracts.ledger import verify

    assert verify(ledger, require_frozen=True, head=report["ledger"]["head"]).ok


def test_cross_fitting_matters(tmp_path: Path) -> None:
    corpus = corpus_from_records(world(), tmp_path / "clean")
    r1, _ = audit_report(corpus, tmp_path / "l1", k=1, seed=13, bootstrap=100)
    r5, _ = audit_report(corpus, tmp_path / "l5", k=5, seed=13, bootstrap=100)
    assert r1.population.labelled == r5.population.labelled == 0
    assert r1.fire_rate.value is not None and r5.fire_rate.value is not None
    assert r1.fire_rate.value < r5.fire_rate.value
    assert r5.in_sample is not None
    assert r5.in_sample.fire_rate.value == r1.fire_rate.value == 0.0
    md5, md1 = to_markdown(r5), to_markdown(r1)
    assert (
        f"fire rate {pct(r5.fire_rate.value)} is higher than the in-sample (non-split) fire rate 0.00%" in md5
    )
    assert "Not cross-fitted (k = 1)" in md1
    assert r1.cross_fitted is False and r5.cross_fitted is True
    assert r1.to_json()["cross_fitted"] is False and r5.to_json()["cross_fitted"] is True
    assert r1.in_sample is None and r1.to_json()["in_sample"] is None
    # the fires are the held-out REQUIRED rule on the task without gift_note
    fired = [r for r in r5.rules if r.fires]
    assert {r.code for r in fired} == {"REQUIRED"}
    assert all(r.paths == ("/gift_note",) for r in fired)
    assert all(r["paths"] == ["/gift_note"] for r in r5.to_json()["rules"] if r["fires"])


def test_rewards_mark_clean_episodes(tmp_path: Path) -> None:
    corpus = corpus_from_records(world(rewards=True), tmp_path / "c")
    r, _ = audit(corpus, tmp_path / "l", k=5, seed=13, bootstrap=100)
    pop = r["population"]
    assert pop["episodes"] == 80 and pop["clean_episodes"] == 40
    # spurious receipts are fires on reward-1 episodes only: task 0, episode e == 0
    assert r["spurious"]["numerator"] == sum(1 for s in r["spurious_receipts"])
    assert all(s["reward"] == 1.0 and s["trace_id"].endswith("-0") for s in r["spurious_receipts"])
    assert r["spurious"]["numerator"] > 0
    assert r["spurious"]["per_100_episodes"]["value"] == pytest.approx(100 * r["spurious"]["numerator"] / 40)


def test_contract_set_mismatch_refused(tmp_path: Path) -> None:
    corpus = corpus_from_records(world(12), tmp_path / "c")
    cs = mine(corpus, folds=3, seed=13)
    with pytest.raises(CheckError, match="k = 3"):
        audit(corpus, tmp_path / "l", k=5, seed=13, contracts=cs, bootstrap=0)
    cs.save(tmp_path / "contracts.json")
    res = CliRunner().invoke(
        app,
        [
            "audit",
            str(corpus.path),
            "--folds",
            "5",
            "--contracts",
            str(tmp_path / "contracts.json"),
            "--ledger",
            str(tmp_path / "l2"),
        ],
    )
    assert res.exit_code == 2
    assert "error[E_FOLD]" in res.output
    ok = CliRunner().invoke(
        app,
        [
            "audit",
            str(corpus.path),
            "--folds",
            "3",
            "--contracts",
            str(tmp_path / "contracts.json"),
            "--ledger",
            str(tmp_path / "l3"),
            "--bootstrap",
            "50",
        ],
    )
    assert ok.exit_code == 0, ok.output


def test_cli_gates_and_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "w.jsonl"
    recs, _ = inject_records(world(20), rate=0.2, seed=2, kinds=["sign_flip", "plausible_string"])
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the default ledger's temporary folder
    res = CliRunner().invoke(
        app,
        [
            "audit",
            str(src),
            "--folds",
            "5",
            "--bootstrap",
            "100",
            "-o",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "r.md"),
            "--output-format",
            "github",
            "--min-detection",
            "0.9",
            "--max-fire-rate",
            "0.5",
        ],
    )
    assert res.exit_code == 1, res.output
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    det = report["detection"]["overall"]
    assert det["value"] < 0.9
    assert "::error title=contracts audit gate::detection " + pct(det["value"]) in res.stdout
    assert "::notice title=contracts audit::" in res.stdout
    assert "gate failed: detection" in res.stderr
    assert [g["passed"] for g in report["gates"]] == [True, False]
    assert summary.read_text() == (tmp_path / "r.md").read_text() + "\n"
    # no --ledger: not beside the report, but in a temporary folder the stderr names
    ledger = Path(report["ledger"]["path"])
    assert not (tmp_path / "audit-ledger").exists() and ledger.parent.parent == tmp_path
    assert (ledger / "ledger.jsonl").is_file() and f"the audit ledger goes to {ledger}" in res.stderr
    # a second run takes another temporary folder
    res2 = CliRunner().invoke(
        app, ["audit", str(src), "--folds", "5", "--bootstrap", "0", "-o", str(tmp_path / "r2.json")]
    )
    assert res2.exit_code == 0, res2.output
    second = Path(orjson.loads((tmp_path / "r2.json").read_bytes())["ledger"]["path"])
    assert second != ledger and second.parent.parent == tmp_path
    # audit-score re-derives the same figures from the frozen ledger
    corpus_dir = ledger.parent / "ledger.corpus" / "corpus"
    res3 = CliRunner().invoke(
        app,
        [
            "audit-score",
            str(ledger),
            "--corpus",
            str(corpus_dir),
            "--bootstrap",
            "100",
            "--json",
        ],
    )
    assert res3.exit_code == 0, res3.output
    rescored = orjson.loads(res3.stdout)
    assert rescored["fire_rate"] == report["fire_rate"] and rescored["detection"] == report["detection"]


def test_cli_audit_subprocess(tmp_path: Path, repo: Path) -> None:
    src = tmp_path / "w.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in world(12)))
    args = [
        sys.executable,
        "-m",
        "output_contracts.cli.app",
        "audit",
        str(src),
        "--folds",
        "5",
        "--bootstrap",
        "50",
        "--inject",
        "sign_flip,drop_field",
        "--rate",
        "0.2",
        "--ledger",
        str(tmp_path / "led"),
        "-o",
        str(tmp_path / "r.json"),
    ]
    p = subprocess.run(args, cwd=repo, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "fire rate (organic)" in p.stdout
    assert "injected" in p.stderr
    report = orjson.loads((tmp_path / "r.json").read_bytes())
    assert report["params"]["inject"]["kinds"] == ["sign_flip", "drop_field"]
    assert report["detection"]["overall"]["value"] == 1.0
    bad = subprocess.run(
        [*args[:4], str(tmp_path / "absent")], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "error[" in bad.stderr
    tampered = tmp_path / "led" / "ledger.jsonl"
    tampered.write_bytes(tampered.read_bytes().replace(b'"audit.end"', b'"audit.enD"'))
    p2 = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "audit-score",
            str(tmp_path / "led"),
            "--corpus",
            str(tmp_path / "led.corpus" / "injected"),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p2.returncode == 2 and "does not verify" in p2.stderr


SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.mark.slow
@pytest.mark.skipif(
    not (SAMPLE / "clean").is_dir(), reason="sample world not generated (sample_traces/clean)"
)
def test_sample_world_acceptance(tmp_path: Path) -> None:
    from output_contracts.audit.pipeline import open_source

    src = open_source(SAMPLE / "clean", tmp_path / "w")
    r5, _ = audit(src.corpus, tmp_path / "l5", k=5, seed=13, bootstrap=200)
    r1, _ = audit(src.corpus, tmp_path / "l1", k=1, seed=13, bootstrap=0)
    assert r5["fire_rate"]["value"] < 0.02
    assert r1["fire_rate"]["value"] < r5["fire_rate"]["value"] or r5["fire_rate"]["value"] == 0.0
    inj = open_source(
        SAMPLE / "clean", tmp_path / "i", inject_kinds=DETECTABLE, inject_rate=0.1, inject_seed=13
    )
    ri, _ = audit(inj.corpus, tmp_path / "li", k=5, seed=13, bootstrap=200)
    for kind in DETECTABLE:
        assert ri["detection"]["by_kind"][kind]["value"] >= 0.9, (kind, ri["detection"]["by_kind"][kind])


def test_tau_bench_real_traces(shared_data: Path, tmp_path: Path) -> None:
    from output_contracts.audit.pipeline import open_source

    src = open_source(shared_data / "tau_bench" / "trajectories" / "gpt-4o-airline.json", tmp_path / "w")
    r, _ = audit(src.corpus, tmp_path / "l", k=5, seed=13, bootstrap=200)
    pop = r["population"]
    assert (pop["episodes"], pop["tasks"], pop["labelled"]) == (200, 50, 0)
    assert pop["clean_episodes"] == 84  # reward-1 episodes
    assert r["fire_rate"]["denominator"] == pop["checked"]
    assert r["spurious"]["denominator"] == 84
    validate(r, "audit-report")


def test_labels_file_errors_name_line(audited: tuple[AuditReport, Corpus, Path], tmp_path: Path) -> None:
    from output_contracts.errors import TraceError

    _report, corpus, ledger = audited
    f = tmp_path / "labels.jsonl"
    f.write_bytes(b'{"trace_id": "ep-1-0", "reward": 1}\n{"call_id": "abc"}\n')
    with pytest.raises(TraceError) as e:
        audit_score(ledger, corpus, bootstrap=0, labels_file=f)
    assert e.value.line == 2 and e.value.field == "labels"
    other = corpus_from_records(world(6), tmp_path / "other")
    with pytest.raises(CheckError, match="population digest"):
        audit_score(ledger, other, bootstrap=0)


def test_same_input_same_report_and_head(tmp_path: Path) -> None:
    recs, _ = inject_records(world(16), rate=0.1, seed=3)
    corpus = corpus_from_records(recs, tmp_path / "c")
    # one contract set for both runs: this test is about replay, ledger and scoring being deterministic
    # (whether mining itself is byte-stable is the miner's tests' business)
    cs = mine(corpus, folds=5, seed=13)
    a, _ = audit(corpus, tmp_path / "la", k=5, seed=13, bootstrap=200, contracts=cs)
    b, _ = audit(corpus, tmp_path / "lb", k=5, seed=13, bootstrap=200, contracts=cs)
    assert a["ledger"]["head"] == b["ledger"]["head"] and a["ledger"]["root"] == b["ledger"]["root"]
    a["ledger"]["path"] = b["ledger"]["path"] = ""
    assert canonical_report(a) == canonical_report(b)
    assert (tmp_path / "la" / "ledger.jsonl").read_bytes() == (tmp_path / "lb" / "ledger.jsonl").read_bytes()
    c, _ = audit(corpus, tmp_path / "lc", k=5, seed=13, bootstrap=200, contracts=cs, encoder="v1")
    assert c["ledger"]["head"] != a["ledger"]["head"]
    assert c["fire_rate"] == a["fire_rate"]
