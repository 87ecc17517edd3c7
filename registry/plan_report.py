"""Plan-check reports in the output formats of `contracts plan-check` (text, json, sarif, github)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from output_contracts import __version__
from output_contracts.checks.renderers import github
from output_contracts.checks.renderers.locations import Location, Locator
from output_contracts.checks.renderers.renderer import RenderOptions
from output_contracts.checks.renderers.sarif import Result, sarif_log
from output_contracts.defaults import docs_url
from output_contracts.registry.plan import (
    CODE_HELP,
    CODES,
    PLAN_REPORT_VERSION,
    PlanReport,
)
from output_contracts.traces.tool_registry import Registry

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


def _annotations(reports: Sequence[PlanReport], locator: Locator) -> list[github.Annotation]:
    """One annotation per error (plan-check errors are facts against declared schemas: all `error`)."""
    out = []
    for r in reports:
        for f in r.findings:
            loc = _location(r.plan, f.line, locator)
            out.append(github.Annotation("error", loc, f.code, f.text, loc.path or "stdin"))
    return out


def reports_github(reports: Sequence[PlanReport], options: RenderOptions | None = None) -> list[str]:
    """GitHub Actions workflow commands, grouped per plan and capped (`checks.renderers.github`)."""
    opts = options or RenderOptions()
    text = github.render(
        _annotations(reports, opts.locator), limit=opts.max_annotations, what="plan-check errors"
    )
    return text.splitlines()


def reports_step_summary(reports: Sequence[PlanReport], options: RenderOptions | None = None) -> str:
    """The job-summary Markdown of the errors `reports_github` did not annotate ("" when none)."""
    opts = options or RenderOptions()
    return github.step_summary(
        _annotations(reports, opts.locator), limit=opts.max_annotations, title="contracts plan-check"
    )


def _location(plan: str, line: int | None, locator: Locator) -> Location:
    """A plan file's place: relative path and the file line (plan lines are file lines)."""
    return Location(locator.relative(plan), line if locator.relative(plan) is not None else None)


def reports_sarif(reports: Sequence[PlanReport], options: RenderOptions | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, one rule per code (absolute `helpUri`), one result per error with its
    relative file, line and step (a logical location); every plan-check error is level `error`."""
    opts = options or RenderOptions()
    rules = [
        {
            "id": c,
            "name": c.removeprefix("E_").lower(),
            "shortDescription": {"text": CODE_HELP[c]},
            "fullDescription": {"text": CODE_HELP[c]},
            "helpUri": docs_url(f"plan-check.md#{c.lower()}"),
            "defaultConfiguration": {"level": "error"},
        }
        for c in CODES
    ]
    results = []
    for r in reports:
        for f in r.findings:
            fp = hashlib.sha256(f"{f.code}\0{f.step}\0{f.pointer}\0{f.message}".encode()).hexdigest()[:32]
            results.append(
                Result(
                    f.code,
                    "error",
                    f.text,
                    _location(r.plan, f.line, opts.locator),
                    ("planFinding/v1", fp),
                    {"step": f.step, "tool": f.tool, "pointer": f.pointer, "suggestion": f.suggestion},
                    ({"name": f"step {f.step}", "fullyQualifiedName": f"step {f.step}{f.pointer}"},),
                )
            )
    return sarif_log(
        results, tool="contracts plan-check", version=__version__, rules=rules, max_results=opts.max_results
    )
