"""Plan-check reports in the output formats of `contracts plan-check` (text, json, sarif, github)."""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts import __version__
from contracts.traces.registry import (
    Registry,
)

if TYPE_CHECKING:
    pass

from contracts.registry.plan import (
    CODE_HELP,
    CODES,
    PLAN_REPORT_VERSION,
    PlanReport,
)

# ---------------------------------------------------------------------------------------------------
# Reports in the output formats (text, json, sarif, github)


def reports_json(reports: Sequence[PlanReport], registry: Registry) -> dict[str, Any]:
    """The `--output-format json` document (schema `plan-report`)."""
    by_code: dict[str, int] = {}
    for r in reports:
        for f in r.findings:
            by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "version": PLAN_REPORT_VERSION,
        "registry": registry.source,
        "summary": {
            "plans": len(reports),
            "steps": sum(r.steps for r in reports),
            "references": sum(r.references for r in reports),
            "unchecked_references": sum(r.unchecked for r in reports),
            "errors": sum(len(r.findings) for r in reports),
            "by_code": {c: by_code[c] for c in CODES if c in by_code},
        },
        "plans": [r.to_json() for r in reports],
    }


def reports_text(reports: Sequence[PlanReport]) -> list[str]:
    """One line per error: `plan.json:12: E_SCHEMA: step 2: ...` (ruff's concise shape)."""
    lines = []
    for r in reports:
        for f in r.findings:
            where = f"{r.plan}:{f.line}" if f.line is not None else r.plan
            lines.append(f"{where}: {f.text}")
    return lines


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def reports_github(reports: Sequence[PlanReport]) -> list[str]:
    """GitHub Actions workflow commands: `::error file=...,line=...,title=E_SCHEMA::message`."""
    out = []
    for r in reports:
        for f in r.findings:
            props = [f"file={_gh_escape(r.plan, True)}"]
            if f.line is not None:
                props.append(f"line={f.line}")
            props.append(f"title={_gh_escape(f.code, True)}")
            out.append(f"::error {','.join(props)}::{_gh_escape(f.text)}")
    return out


def _uri(path: str) -> str:
    if path in ("-", "<stdin>"):
        return "stdin"
    return urllib.parse.quote(Path(path).as_posix())


def reports_sarif(reports: Sequence[PlanReport]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, one rule per code, one result per error with file and line."""
    rules = [
        {
            "id": c,
            "name": c.removeprefix("E_").lower(),
            "shortDescription": {"text": CODE_HELP[c]},
            "fullDescription": {"text": CODE_HELP[c]},
            "helpUri": f"docs/plan-check.md#{c.lower()}",
            "defaultConfiguration": {"level": "error"},
        }
        for c in CODES
    ]
    results = []
    for r in reports:
        for f in r.findings:
            region: dict[str, Any] = {"startLine": f.line} if f.line is not None else {}
            loc: dict[str, Any] = {"artifactLocation": {"uri": _uri(r.plan)}}
            if region:
                loc["region"] = region
            fp = hashlib.sha256(f"{f.code}\0{f.step}\0{f.pointer}\0{f.message}".encode()).hexdigest()[:32]
            results.append(
                {
                    "ruleId": f.code,
                    "ruleIndex": CODES.index(f.code),
                    "level": "error",
                    "message": {"text": f.text},
                    "locations": [
                        {
                            "physicalLocation": loc,
                            "logicalLocations": [
                                {"name": f"step {f.step}", "fullyQualifiedName": f"step {f.step}{f.pointer}"}
                            ],
                        }
                    ],
                    "partialFingerprints": {"planFinding/v1": fp},
                    "properties": {
                        "step": f.step,
                        "tool": f.tool,
                        "pointer": f.pointer,
                        "suggestion": f.suggestion,
                    },
                }
            )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "contracts plan-check",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
