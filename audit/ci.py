"""The audit's CI outputs: SARIF (for code scanning) and JUnit XML (for test report viewers).

SARIF results are the organic calls the audit fired on: every fire event frozen in the ledger whose call
carries no fault label, one result per violation, at the call's file and line (relative path, record
start line for whole-file JSON inputs: `checks.renderers.locations`). Fires on labelled (planted) calls
are what `--inject` measures detection with, not findings in the traces, so they are left out and
counted in the run's properties. Gates become run-level notifications (`error` when failed, `note` when
passed), and the headline figures sit in the run's properties.

JUnit mirrors the exit code: one testcase per gate (a failure when the gate failed), and one per tool
called, passing, with its fires and fire rate in `system-out`; a tool that no rule checks is `skipped`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from output_contracts.audit.pipeline import load_replay
from output_contracts.audit.report import per100_text, rate_text
from output_contracts.audit.report_model import AuditReport, pct
from output_contracts.checks.renderers.renderer import RenderOptions
from output_contracts.checks.renderers.sarif import receipt_results, sarif_log
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.corpus import Corpus


def _text(v: Any) -> str:
    return v if isinstance(v, str) else canonical_str(v)


def fired_receipts(
    ledger_dir: str | Path, corpus: Corpus, original: Corpus | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Receipt-shaped records of the organic fired calls (sorted by source, line, call id) and the number
    of fired labelled calls left out. `original` is the corpus faults were injected into (`--inject`):
    an organic call is located in the traces it came from, not in the injected working copy."""
    events = {e["call_id"]: e for e in load_replay(ledger_dir).events}
    if not events:
        return [], 0
    ids = pl.Series(list(events), dtype=pl.String).implode()
    calls = (
        corpus.scan_calls()
        .filter(pl.col("call_id").is_in(ids))
        .select("call_id", "trace_id", "step", "source", "line", "fault")
        .collect()
    )
    if original is not None:  # the injected copy has its own call ids: match on (episode, step)
        where = (
            original.scan_calls()
            .filter(pl.col("trace_id").is_in(calls.get_column("trace_id").unique().implode()))
            .select("trace_id", "step", pl.col("source").alias("src0"), pl.col("line").alias("line0"))
            .unique(subset=["trace_id", "step"], keep="first", maintain_order=True)
            .collect()
        )
        calls = (
            calls.join(where, on=["trace_id", "step"], how="left")
            .with_columns(
                pl.coalesce("src0", "source").alias("source"),
                pl.when(pl.col("src0").is_null())
                .then(pl.col("line"))
                .otherwise(pl.col("line0"))
                .alias("line"),
            )
            .drop("src0", "line0")
        )
    calls = calls.sort("source", "line", "call_id", nulls_last=True)
    out = []
    labelled = 0
    for cid, _trace, _step, source, line, fault in calls.select(
        "call_id", "trace_id", "step", "source", "line", "fault"
    ).iter_rows():
        if fault is not None:
            labelled += 1
            continue
        e = events[cid]
        vios = [
            {
                "code": v["code"],
                "rule": v["rule"],
                "path": v["path"],
                "support": v["support"],
                "message": (
                    f"{v['code']} at {v['path'] or '(whole result)'}: expected {_text(v['expected'])}, "
                    f"observed {'missing' if not v['present'] else _text(v['observed'])} "
                    f"(rule {v['rule']}, {v['support']} clean calls in its fold's checker)"
                ),
            }
            for v in e["violations"]
        ]
        out.append(
            {
                "call_id": cid,
                "source": source,
                "line": line,
                "outcome_contract": {"tool": e["tool"], "violations": vios, "recovery_tools": []},
            }
        )
    return out, labelled


def _figures(report: AuditReport) -> dict[str, str]:
    return {
        "fire_rate": rate_text(report.fire_rate),
        "spurious_per_100_clean_episodes": per100_text(report.spurious),
        "detection": rate_text(report.detection.overall),
        "coverage": f"{report.coverage.calls}/{report.coverage.checked} checked calls "
        f"({pct(report.coverage.share)}), {report.coverage.tools}/{report.coverage.called_tools} tools",
        "ledger_head": report.ledger.head,
    }


def audit_sarif(
    report: AuditReport,
    receipts: Sequence[Mapping[str, Any]],
    labelled_left_out: int,
    *,
    version: str,
    options: RenderOptions,
) -> dict[str, Any]:
    """The SARIF log of an audit: organic fires as results, gates as run notifications."""
    notes = [
        ("note" if g.passed else "error", ("PASS " if g.passed else "FAIL ") + g.message())
        for g in report.gates
    ]
    return sarif_log(
        receipt_results(receipts, options),
        tool="contracts audit",
        version=version,
        max_results=options.max_results,
        properties={
            "figures": _figures(report),
            "gates": [g.to_json() for g in report.gates],
            "labelled_fires_left_out": labelled_left_out,
        },
        notifications=notes,
    )


def audit_junit(report: AuditReport) -> bytes:
    """JUnit XML: a testcase per gate (failing when it failed) and one per tool called (skipped when no
    rule checks it), so the XML agrees with the audit's exit code."""
    suites = ET.Element("testsuites", {"name": "contracts audit"})
    gates = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": "contracts audit gates",
            "tests": str(len(report.gates)),
            "failures": str(sum(1 for g in report.gates if not g.passed)),
            "errors": "0",
            "skipped": "0",
        },
    )
    for g in report.gates:
        case = ET.SubElement(gates, "testcase", {"classname": "contracts.audit.gate", "name": g.metric})
        if not g.passed:
            ET.SubElement(case, "failure", {"message": g.message(), "type": "gate"}).text = g.message()
        else:
            ET.SubElement(case, "system-out").text = g.message()
    uncovered = set(report.coverage.uncovered)
    tools = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": "contracts audit tools",
            "tests": str(len(report.tools)),
            "failures": "0",
            "errors": "0",
            "skipped": str(sum(1 for t in report.tools if t.tool in uncovered)),
        },
    )
    for t in sorted(report.tools, key=lambda r: r.tool):
        case = ET.SubElement(tools, "testcase", {"classname": "contracts.audit.tool", "name": t.tool})
        if t.tool in uncovered:
            ET.SubElement(
                case, "skipped", {"message": f"no rule checks {t.tool}: {t.checked} calls not judged"}
            )
        ET.SubElement(case, "system-out").text = (
            f"{t.checked} calls checked, {t.organic} organic, {t.fires} fired; fire rate "
            f"{pct(t.fire_rate.value)} ({t.fire_rate.numerator}/{t.fire_rate.denominator}); "
            f"{t.labelled} labelled, {t.detected} detected"
        )
    total = len(report.gates) + len(report.tools)
    suites.set("tests", str(total))
    suites.set("failures", gates.get("failures", "0"))
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"
