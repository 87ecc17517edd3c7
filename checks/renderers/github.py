"""`github` — GitHub Actions workflow commands, grouped and capped (`check`, `plan-check`).

GitHub shows at most 10 error and 10 warning annotations per step and drops the rest, so a run with
thousands of violations must not print thousands of `::error` lines. At most `max_annotations` (default
10) are written, the most severe first, inside one `::group::` per tool (or plan) so the log folds;
`error` rules become `::error`, `warning` `::warning`, `note` `::notice` (`base.rule_level`). The rest
are listed as a Markdown table for the job summary (`step_summary`, which the CLI appends to
`$GITHUB_STEP_SUMMARY` when it is set), and a last `::notice` says how many were left out and where
they are. Paths are relative (`file=`), lines are file lines (`Locator`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.checks.outputs import Summary
from output_contracts.checks.renderers.locations import Location
from output_contracts.checks.renderers.renderer import Document, RenderOptions, capped, message, violations

#: Rows of the step-summary table at most (GitHub takes 1 MiB of summary per step).
MAX_SUMMARY_ROWS = 1000
_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


@dataclass(frozen=True)
class Annotation:
    """One finding as an annotation: level (SARIF's), place, title, message, and the log group."""

    level: str
    location: Location
    title: str
    message: str
    group: str


def _gh_escape(s: str, *, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def command(a: Annotation) -> str:
    """The workflow command line of one annotation (`::error file=…,line=…,title=…::message`)."""
    props = []
    if a.location.path is not None:
        props.append(f"file={_gh_escape(a.location.path, prop=True)}")
        if a.location.line is not None:
            props.append(f"line={a.location.line}")
    props.append(f"title={_gh_escape(a.title, prop=True)}")
    text = a.message if a.location.record is None else f"{a.location.text()}: {a.message}"
    return f"::{_COMMAND[a.level]} {','.join(props)}::{_gh_escape(text)}"


def split(items: Sequence[Annotation], limit: int) -> tuple[list[Annotation], list[Annotation]]:
    """The annotations to print (at most `limit`, most severe first, then in order) and the rest."""
    keep = capped([a.level for a in items], limit)
    return [a for i, a in enumerate(items) if i in keep], [a for i, a in enumerate(items) if i not in keep]


def render(items: Sequence[Annotation], *, limit: int, what: str) -> str:
    """The log text: `::group::` per group with its printed annotations, then how many were left out."""
    shown, rest = split(items, limit)
    groups: dict[str, list[Annotation]] = {}
    for a in shown:
        groups.setdefault(a.group, []).append(a)
    total = {g: 0 for g in groups}
    for a in items:
        if a.group in total:
            total[a.group] += 1
    lines = []
    for g, anns in groups.items():
        lines.append(f"::group::{g}: {len(anns)} of {total[g]} {what} annotated")
        lines.extend(command(a) for a in anns)
        lines.append("::endgroup::")
    if rest:
        lines.append(
            f"::notice title=contracts::{len(rest):,} of {len(items):,} {what} not annotated (GitHub shows "
            f"{limit} per step); the job summary lists them when GITHUB_STEP_SUMMARY is set, and "
            "--output-format sarif or json holds them all"
        )
    return "".join(line + "\n" for line in lines)


def step_summary(items: Sequence[Annotation], *, limit: int, title: str) -> str:
    """Markdown for the job summary: the findings `render` did not annotate, as a table ("" if none)."""
    _, rest = split(items, limit)
    if not rest:
        return ""
    out = [
        f"## {title}",
        "",
        f"{len(rest):,} of {len(items):,} findings were not annotated (GitHub shows {limit} per step).",
        "",
        "| Level | Location | Title | Message |",
        "| --- | --- | --- | --- |",
    ]
    for a in rest[:MAX_SUMMARY_ROWS]:
        cells = (a.level, f"`{a.location.text()}`", a.title, a.message)
        out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    if len(rest) > MAX_SUMMARY_ROWS:
        out += ["", f"({len(rest) - MAX_SUMMARY_ROWS:,} more: see the SARIF or JSON output.)"]
    return "\n".join(out) + "\n"


def receipt_annotations(receipts: Iterable[Mapping[str, Any]], options: RenderOptions) -> list[Annotation]:
    """One annotation per violation of the receipts, in order, grouped by tool."""
    out = []
    for r, v in violations(receipts):
        tool = r["outcome_contract"]["tool"]
        out.append(
            Annotation(
                options.level(v["rule"]),
                options.locator.locate(r.get("source"), r.get("line")),
                f"{v['code']} {tool}",
                message(v),
                tool,
            )
        )
    return out


class Github(Document):
    name = "github"

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        opts = options or RenderOptions()
        items = receipt_annotations(receipts, opts)
        return render(items, limit=opts.max_annotations, what="violations").encode("utf-8")


FORMAT = Github()
