"""CLI of the registry and plan work item: `plan-check`, `registry infer|check`, `tools export`.

Thin layer: parse options, call `output_contracts.registry.plan`, `output_contracts.registry.infer`, `output_contracts.registry.check` and
`output_contracts.registry.export`, render. Data goes to stdout (or `-o FILE`, written atomically); the
summary for people goes to stderr. Exit 0 clean, 1 findings, 2 usage or input errors.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from output_contracts.choices import MAX_ANNOTATIONS, MAX_SARIF_RESULTS
from output_contracts.cli.ci_options import (
    BaseOpt,
    MaxAnnotationsOpt,
    MaxResultsOpt,
    append_step_summary,
    render_options,
)
from output_contracts.cli.common import (
    OutputOpt,
    QuietFlag,
    RegistryOpt,
    contracts_option,
    err,
    findings_exit,
    json_flag,
    progress_bar,
)
from output_contracts.cli.settings import MiningSettings, resolved
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.registry.export import Target
from output_contracts.settings import Settings, setting

if TYPE_CHECKING:
    from output_contracts.checks.renderers.renderer import RenderOptions
    from output_contracts.registry.check import RegistryCheck
    from output_contracts.registry.infer import InferResult
    from output_contracts.registry.plan import PlanReport
    from output_contracts.registry.substitutes import SubstituteReport
    from output_contracts.traces.tool_registry import Registry


class PlanFormat(StrEnum):
    """`plan-check --output-format` choices."""

    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _emit(data: bytes, dest: Path | None) -> None:
    if dest is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write_bytes(dest, data)


def _lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


PlansArg = Annotated[
    list[str],
    typer.Argument(metavar="PLAN", help="Plan files (JSON or JSONL); '-' reads one plan from stdin."),
]
PlanFormatOpt = Annotated[
    PlanFormat,
    typer.Option("--output-format", help="text, json, sarif (2.1.0) or github (Actions annotations)."),
]


@dataclass(frozen=True, kw_only=True)
class PlanCheckSettings(Settings):
    """`contracts plan-check`, resolved: the registry defaults to `paths.registry`."""

    registry: Path = setting("paths.registry", required="tool registry (--registry)")
    plans: list[str]
    output_format: PlanFormat
    output: Path | None
    base: Path | None
    max_results: int
    max_annotations: int
    quiet: bool


def plan_check(
    plans: PlansArg,
    registry: RegistryOpt = None,
    output_format: PlanFormatOpt = PlanFormat.text,
    output: OutputOpt = None,
    base: BaseOpt = None,
    max_results: MaxResultsOpt = MAX_SARIF_RESULTS,
    max_annotations: MaxAnnotationsOpt = MAX_ANNOTATIONS,
    quiet: QuietFlag = False,
) -> None:
    """Verify plans before they run: every ${step.field} reference, argument and tool against the registry.

    Codes: E_SCHEMA (field not in the producer's declared output), E_ARGS (arguments fail the parameter
    schema), E_ORDER (reference to a later, the same or an unknown step), E_TOOL (unknown tool).
    Exit 1 when any plan has an error.
    """
    _plan_check(resolved(PlanCheckSettings, locals()))


def _plan_check(s: PlanCheckSettings) -> None:
    """Check every plan against the registry, write the reports in the output format, exit 1 on errors."""
    from output_contracts.registry.plan import load_plan, parse_plan
    from output_contracts.registry.plan_check import check_plan
    from output_contracts.traces.tool_registry import load_registry

    reg = load_registry(s.registry)
    if s.plans.count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    reports: list[PlanReport] = []
    for p in s.plans:
        plan = parse_plan(sys.stdin.buffer.read(), source="<stdin>") if p == "-" else load_plan(p)
        reports.append(check_plan(plan, reg))
    opts = render_options(s.base, s.max_results, s.max_annotations, None)
    _emit(_plan_output(reports, reg, s.output_format, opts), s.output)
    if not s.quiet:
        _plan_summary(reports)
    findings_exit(sum(len(r.findings) for r in reports) > 0)


def _plan_output(reports: list[PlanReport], reg: Registry, fmt: PlanFormat, opts: RenderOptions) -> bytes:
    """The plan reports in output format `fmt` (`github` also appends the job summary)."""
    from output_contracts.registry.plan_report import (
        reports_github,
        reports_json,
        reports_sarif,
        reports_step_summary,
        reports_text,
    )

    if fmt is PlanFormat.text:
        return _lines(reports_text(reports))
    if fmt is PlanFormat.json:
        return pretty_json(reports_json(reports, reg))
    if fmt is PlanFormat.sarif:
        return pretty_json(reports_sarif(reports, opts))
    if fmt is PlanFormat.github:
        data = _lines(reports_github(reports, opts))
        append_step_summary(reports_step_summary(reports, opts))
        return data
    raise AssertionError(fmt)  # pragma: no cover - exhaustive enum


def _plan_summary(reports: list[PlanReport]) -> None:
    """One line a plan on stderr: its steps and references, and its errors by code."""
    from output_contracts.registry.plan import CODES

    for r in reports:
        counts = {c: sum(1 for f in r.findings if f.code == c) for c in CODES}
        detail = ", ".join(f"{c} {n}" for c, n in counts.items() if n)
        unchecked = f", {r.unchecked} unchecked" if r.unchecked else ""
        head = f"{r.plan}: {r.steps} step(s), {r.references} reference(s){unchecked}: "
        if r.findings:
            say(err, f"{head}{len(r.findings)} error(s) ({detail})", style="red")
        else:
            say(err, f"{head}no errors", style="green")


registry_app = typer.Typer(
    name="registry",
    help="Declared tool outputs against observed results: infer a registry, check one.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


InferCorpusArg = Annotated[
    Path | None,
    typer.Argument(metavar="CORPUS", help="Corpus folder (from `contracts ingest`). Default: paths.corpus."),
]
InferContractsOpt = Annotated[
    Path | None,
    contracts_option("Contract set to infer from. Default: mine the corpus now with defaults."),
]
ExtendOpt = Annotated[
    Path | None,
    typer.Option(
        "--extend",
        metavar="FILE",
        help="Existing registry to extend: its declarations win, inferred ones fill gaps.",
    ),
]
SubstitutesFlag = Annotated[
    bool,
    typer.Option(
        "--substitutes",
        help="Also propose substitutes (recovery tools) from corpus evidence: shared entities or "
        "queries, compatible arguments, read-only tools; written as substitutes_inferred.",
    ),
]


@dataclass(frozen=True, kw_only=True)
class RegistryInferSettings(MiningSettings):
    """`contracts registry infer`, resolved: the corpus from `paths.corpus`; with no contract set given,
    the mining's thresholds and seed come from `[mine]` (one fold: only the full checker is needed)."""

    seed: int = setting("mine.seed")
    corpus: Path = setting("paths.corpus", required="corpus folder")
    output: Path | None
    contracts_file: Path | None
    base: Path | None
    substitutes: bool
    quiet: bool


@registry_app.command("infer")
def registry_infer(
    corpus: InferCorpusArg = None,
    output: OutputOpt = None,
    contracts_file: InferContractsOpt = None,
    base: ExtendOpt = None,
    substitutes: SubstitutesFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Propose output (and parameter) declarations from mined contracts, for a person to review.

    REQUIRED -> required, TYPE -> type, DOMAIN -> enum, NONNEG/POSITIVE -> minimum/exclusiveMinimum,
    nested as deep as the rule paths go; every field seen in clean results is declared. With
    --substitutes, each tool also gets `substitutes_inferred` (docs/registry.md).
    """
    _registry_infer(resolved(RegistryInferSettings, locals()))


def _registry_infer(s: RegistryInferSettings) -> None:
    """Infer the registry from the contract set (mined now when none is given), with substitutes when
    asked; write it and summarise what was proposed."""
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.registry.infer import infer_registry
    from output_contracts.registry.substitutes import infer_substitutes, with_substitutes
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.tool_registry import load_registry, ordered_json, save_registry

    c = Corpus.open(s.corpus)
    bar = progress_bar(s.quiet)
    if s.contracts_file is not None:
        cs = ContractSet.load(s.contracts_file)
    else:
        from output_contracts.mining import mine

        cs = mine(c, s.mine_params(folds=1, seed=s.seed), progress=bar)
    base_reg = load_registry(s.base) if s.base is not None else None
    result = infer_registry(cs, c, base=base_reg, progress=bar)
    proposed = result.registry
    subs = None
    if s.substitutes:
        bar.start("substitutes", None)
        try:
            subs = infer_substitutes(c)
        finally:
            bar.finish()
        proposed = with_substitutes(proposed, subs)
    if s.output is None:
        _emit(ordered_json(proposed.to_json()), None)
    else:
        save_registry(proposed, s.output)
    if not s.quiet:
        _infer_summary(result, subs, s.output)


def _infer_summary(result: InferResult, subs: SubstituteReport | None, output: Path | None) -> None:
    """On stderr: the declarations proposed, the substitutes and their evidence, the tools left out."""
    stats = result.stats
    say(
        err,
        f"{len(stats)} tool(s), {sum(t.fields for t in stats)} output field(s) proposed: "
        f"{sum(t.required for t in stats)} required, {sum(t.typed for t in stats)} typed, "
        f"{sum(t.enums for t in stats)} enum(s), {sum(t.bounds for t in stats)} bound(s)"
        + (f" -> {output}" if output else ""),
    )
    if subs is not None:
        say(
            err,
            f"{len(subs.proposals)} substitute(s) proposed for {len(subs.by_tool())} tool(s) "
            f"({len(subs.refused)} candidate(s) refused); written as substitutes_inferred",
        )
        grid = Grid(
            [
                Column("tool", "name"),
                Column("substitute", "name"),
                Column("evidence", "text"),
                Column("read-only by", "key"),
            ]
        )
        for p in subs.proposals:
            ev = p.evidence()
            basis = (
                f"{ev['episodes']} episode(s) sharing {ev['shared_values']} value(s)"
                if ev["episodes"]
                else f"the same query in {ev['same_query_episodes']} episode(s)"
            )
            grid.add_row(p.tool, p.substitute, basis, p.read_only.by)
        show(err, grid)
    for name, why in result.skipped:
        shown = name if len(name) <= 60 else name[:57] + "..."
        say(err, f"warning: tool {shown!r} left out: {why}")
    say(err, "Review before use: inferred declarations describe the corpus, not the tool's promise.")


RegistryCorpusArgs = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="[REGISTRY] [CORPUS]",
        help="REGISTRY CORPUS, or just CORPUS (registry from paths.registry), or nothing (both from config).",
    ),
]


@dataclass(frozen=True, kw_only=True)
class RegistryCheckSettings(Settings):
    """`contracts registry check`, resolved: registry and corpus default to `[paths]`."""

    registry: Path = setting("paths.registry", required="tool registry (--registry)")
    corpus: Path = setting("paths.corpus", required="corpus folder")
    json_out: bool
    quiet: bool


@registry_app.command("check")
def registry_check(
    paths: RegistryCorpusArgs = None,
    json_out: Annotated[bool, json_flag("Print the report as JSON on stdout.")] = False,
    quiet: QuietFlag = False,
) -> None:
    """List where observed results (calls with status ok) disagree with declared outputs; exit 1 if any.

    Kinds: never_seen (declared, never observed), undeclared (observed, not declared), type, missing
    (declared required, absent), enum, bound, unknown_tool.
    """
    args = list(paths or [])
    if len(args) > 2:
        raise UsageError(f"expected REGISTRY CORPUS, got {len(args)} paths")
    given = {
        "registry": args[0] if len(args) == 2 else None,
        "corpus": args[-1] if args else None,
        "json_out": json_out,
        "quiet": quiet,
    }
    _registry_check(resolved(RegistryCheckSettings, given))


def _registry_check(s: RegistryCheckSettings) -> None:
    """Compare the registry's declared outputs with the corpus's results; exit 1 on a disagreement."""
    from output_contracts.registry.check import check_registry
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.tool_registry import load_registry

    reg = load_registry(s.registry)
    report = check_registry(reg, Corpus.open(s.corpus), progress=progress_bar(s.quiet))
    if s.json_out:
        _emit(pretty_json(report.to_json()), None)
    else:
        _emit(_lines([f"{d.kind}: {d.message}" for d in report.disagreements]), None)
    if not s.quiet:
        _summary(report)
    findings_exit(not report.ok)


def _summary(report: RegistryCheck) -> None:
    n = len(report.disagreements)
    parts = [f"{len(report.tools_checked)} tool(s) checked"]
    if report.tools_without_output:
        parts.append(f"{len(report.tools_without_output)} without declared output")
    if report.tools_unseen:
        parts.append(f"{len(report.tools_unseen)} declared but never called")
    style = "red" if n else "green"
    say(err, f"{', '.join(parts)}: {n} disagreement(s)", style=style)


tools_app = typer.Typer(
    name="tools",
    help="Model-facing tool definitions generated from the registry.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@dataclass(frozen=True, kw_only=True)
class ToolsExportSettings(Settings):
    """`contracts tools export`, resolved: the registry defaults to `paths.registry`."""

    registry: Path = setting("paths.registry", required="tool registry (--registry)")
    target: Target
    output: Path | None
    quiet: bool  # accepted by every command; export writes nothing to stderr


@tools_app.command("export")
def tools_export(
    target: Annotated[
        Target, typer.Option("--target", "-t", help="openai, openai-responses, anthropic or mcp.")
    ],
    registry: RegistryOpt = None,
    output: OutputOpt = None,
    quiet: QuietFlag = False,
) -> None:
    """Emit tool definitions for a model API from the registry, declared outputs included.

    openai/anthropic: the declared output fields and exact output schema are appended to each
    description; mcp: `outputSchema` (object outputs) plus the field list in the description.
    """
    _tools_export(resolved(ToolsExportSettings, locals()))


def _tools_export(s: ToolsExportSettings) -> None:
    """The registry's tools as the target API defines them, on stdout or in `-o FILE`."""
    from output_contracts.registry.export import export_tools
    from output_contracts.traces.tool_registry import load_registry, ordered_json

    data: Any = export_tools(load_registry(s.registry), s.target)
    _emit(ordered_json(data), s.output)


def register(app: typer.Typer) -> None:
    """Add `plan-check`, `registry` and `tools` to the root app."""
    app.command("plan-check")(plan_check)
    app.add_typer(registry_app, name="registry")
    app.add_typer(tools_app, name="tools")
