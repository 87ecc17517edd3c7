"""CLI of the registry and plan work item: `plan-check`, `registry infer|check`, `tools export`.

Thin layer: parse options, call `output_contracts.registry.plan`, `output_contracts.registry.infer`, `output_contracts.registry.check` and
`output_contracts.registry.export`, render. Data goes to stdout (or `-o FILE`, written atomically); the
summary for people goes to stderr. Exit 0 clean, 1 findings, 2 usage or input errors.
"""

from __future__ import annotations

import sys
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
    config,
    contracts_option,
    err,
    findings_exit,
    json_flag,
    progress_bar,
)
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.registry.export import Target

if TYPE_CHECKING:
    from output_contracts.registry.check import RegistryCheck
    from output_contracts.traces.tool_registry import Registry


class PlanFormat(StrEnum):
    """`plan-check --output-format` choices."""

    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _registry(path: Path | None) -> Registry:
    from output_contracts.traces.tool_registry import load_registry

    return load_registry(config().require_path("paths.registry", path, "tool registry (--registry)"))


def _emit(data: bytes, dest: Path | None) -> None:
    if dest is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write_bytes(dest, data)


def _lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def plan_check(
    plans: Annotated[
        list[str],
        typer.Argument(metavar="PLAN", help="Plan files (JSON or JSONL); '-' reads one plan from stdin."),
    ],
    registry: RegistryOpt = None,
    output_format: Annotated[
        PlanFormat,
        typer.Option("--output-format", help="text, json, sarif (2.1.0) or github (Actions annotations)."),
    ] = PlanFormat.text,
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
    from output_contracts.registry.plan import CODES, PlanReport, load_plan, parse_plan
    from output_contracts.registry.plan_check import check_plan
    from output_contracts.registry.plan_report import (
        reports_github,
        reports_json,
        reports_sarif,
        reports_step_summary,
        reports_text,
    )

    reg = _registry(registry)
    if plans.count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    reports: list[PlanReport] = []
    for p in plans:
        plan = parse_plan(sys.stdin.buffer.read(), source="<stdin>") if p == "-" else load_plan(p)
        reports.append(check_plan(plan, reg))
    opts = render_options(base, max_results, max_annotations, None)
    if output_format is PlanFormat.text:
        data = _lines(reports_text(reports))
    elif output_format is PlanFormat.json:
        data = pretty_json(reports_json(reports, reg))
    elif output_format is PlanFormat.sarif:
        data = pretty_json(reports_sarif(reports, opts))
    elif output_format is PlanFormat.github:
        data = _lines(reports_github(reports, opts))
        append_step_summary(reports_step_summary(reports, opts))
    else:  # pragma: no cover - exhaustive enum
        raise AssertionError(output_format)
    _emit(data, output)
    n_errors = sum(len(r.findings) for r in reports)
    if not quiet:
        for r in reports:
            counts = {c: sum(1 for f in r.findings if f.code == c) for c in CODES}
            detail = ", ".join(f"{c} {n}" for c, n in counts.items() if n)
            unchecked = f", {r.unchecked} unchecked" if r.unchecked else ""
            head = f"{r.plan}: {r.steps} step(s), {r.references} reference(s){unchecked}: "
            if r.findings:
                say(err, f"{head}{len(r.findings)} error(s) ({detail})", style="red")
            else:
                say(err, f"{head}no errors", style="green")
    findings_exit(n_errors > 0)


registry_app = typer.Typer(
    name="registry",
    help="Declared tool outputs against observed results: infer a registry, check one.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@registry_app.command("infer")
def registry_infer(
    corpus: Annotated[
        Path | None,
        typer.Argument(
            metavar="CORPUS", help="Corpus folder (from `contracts ingest`). Default: paths.corpus."
        ),
    ] = None,
    output: OutputOpt = None,
    contracts_file: Annotated[
        Path | None,
        contracts_option("Contract set to infer from. Default: mine the corpus now with defaults."),
    ] = None,
    base: Annotated[
        Path | None,
        typer.Option(
            "--extend",
            metavar="FILE",
            help="Existing registry to extend: its declarations win, inferred ones fill gaps.",
        ),
    ] = None,
    substitutes: Annotated[
        bool,
        typer.Option(
            "--substitutes",
            help="Also propose substitutes (recovery tools) from corpus evidence: shared entities or "
            "queries, compatible arguments, read-only tools; written as substitutes_inferred.",
        ),
    ] = False,
    quiet: QuietFlag = False,
) -> None:
    """Propose output (and parameter) declarations from mined contracts, for a person to review.

    REQUIRED -> required, TYPE -> type, DOMAIN -> enum, NONNEG/POSITIVE -> minimum/exclusiveMinimum,
    nested as deep as the rule paths go; every field seen in clean results is declared. With
    --substitutes, each tool also gets `substitutes_inferred` (docs/registry.md).
    """
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.registry.infer import infer_registry
    from output_contracts.registry.substitutes import infer_substitutes, with_substitutes
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.tool_registry import load_registry, ordered_json, save_registry

    cpath = config().require_path("paths.corpus", corpus, "corpus folder")
    c = Corpus.open(cpath)
    bar = progress_bar(quiet)
    if contracts_file is not None:
        cs = ContractSet.load(contracts_file)
    else:
        from output_contracts.mining import mine

        cfg = config()
        supports = cfg.get("mine.min_support")
        # Only the full checker is needed, so one fold; the other [mine] settings apply as in `mine`.
        cs = mine(
            c,
            progress=bar,
            folds=1,
            seed=cfg.get("mine.seed"),
            min_support={str(k): int(v) for k, v in supports.items()} if supports else None,
            max_domain=cfg.get("mine.max_domain"),
            clean=cfg.get("mine.clean"),
            max_violation_rate=cfg.get("mine.max_violation_rate"),
        )
    base_reg = load_registry(base) if base is not None else None
    result = infer_registry(cs, c, base=base_reg, progress=bar)
    proposed = result.registry
    subs = None
    if substitutes:
        bar.start("substitutes", None)
        try:
            subs = infer_substitutes(c)
        finally:
            bar.finish()
        proposed = with_substitutes(proposed, subs)
    data = ordered_json(proposed.to_json())
    if output is None:
        _emit(data, None)
    else:
        save_registry(proposed, output)
    if not quiet:
        total = len(result.stats)
        fields = sum(s.fields for s in result.stats)
        say(
            err,
            f"{total} tool(s), {fields} output field(s) proposed: "
            f"{sum(s.required for s in result.stats)} required, {sum(s.typed for s in result.stats)} typed, "
            f"{sum(s.enums for s in result.stats)} enum(s), {sum(s.bounds for s in result.stats)} bound(s)"
            + (f" -> {output}" if output else ""),
        )
        if subs is not None:
            n_tools = len(subs.by_tool())
            say(
                err,
                f"{len(subs.proposals)} substitute(s) proposed for {n_tools} tool(s) "
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
            for s in subs.proposals:
                ev = s.evidence()
                basis = (
                    f"{ev['episodes']} episode(s) sharing {ev['shared_values']} value(s)"
                    if ev["episodes"]
                    else f"the same query in {ev['same_query_episodes']} episode(s)"
                )
                grid.add_row(s.tool, s.substitute, basis, s.read_only.by)
            show(err, grid)
        for name, why in result.skipped:
            shown = name if len(name) <= 60 else name[:57] + "..."
            say(err, f"warning: tool {shown!r} left out: {why}")
        say(err, "Review before use: inferred declarations describe the corpus, not the tool's promise.")


@registry_app.command("check")
def registry_check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[REGISTRY] [CORPUS]",
            help="REGISTRY CORPUS, or just CORPUS (registry from paths.registry), or nothing (both from config).",
        ),
    ] = None,
    json_out: Annotated[bool, json_flag("Print the report as JSON on stdout.")] = False,
    quiet: QuietFlag = False,
) -> None:
    """List where observed results (calls with status ok) disagree with declared outputs; exit 1 if any.

    Kinds: never_seen (declared, never observed), undeclared (observed, not declared), type, missing
    (declared required, absent), enum, bound, unknown_tool.
    """
    from output_contracts.registry.check import check_registry
    from output_contracts.traces.corpus import Corpus

    args = list(paths or [])
    if len(args) > 2:
        raise UsageError(f"expected REGISTRY CORPUS, got {len(args)} paths")
    reg_path = args[0] if len(args) == 2 else None
    corpus_path = args[-1] if args else None
    reg = _registry(reg_path)
    c = Corpus.open(config().require_path("paths.corpus", corpus_path, "corpus folder"))
    report = check_registry(reg, c, progress=progress_bar(quiet))
    if json_out:
        _emit(pretty_json(report.to_json()), None)
    else:
        _emit(_lines([f"{d.kind}: {d.message}" for d in report.disagreements]), None)
    if not quiet:
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
    from output_contracts.registry.export import export_tools
    from output_contracts.traces.tool_registry import ordered_json

    del quiet  # accepted everywhere (issue 22); export writes nothing to stderr
    reg = _registry(registry)
    data: Any = export_tools(reg, target)
    _emit(ordered_json(data), output)


def register(app: typer.Typer) -> None:
    """Add `plan-check`, `registry` and `tools` to the root app."""
    app.command("plan-check")(plan_check)
    app.add_typer(registry_app, name="registry")
    app.add_typer(tools_app, name="tools")
