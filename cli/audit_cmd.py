"""`contracts audit`, `contracts audit-score` and `contracts inject` (docs/audit.md, docs/faults.md).

Thin layer: resolve options against the project config, call `output_contracts.audit.pipeline` /
`output_contracts.audit.inject`, render the report (rich tables on stdout for `text`; workflow commands for
`github`), write `--json` / `--markdown`, and exit 1 when a gate fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from output_contracts import __version__
from output_contracts.audit.artifacts import Kind, artifact_of
from output_contracts.audit.ci import audit_junit, audit_sarif, fired_receipts
from output_contracts.audit.html import render_html
from output_contracts.audit.inject import KIND_GROUPS, inject_file, parse_kinds
from output_contracts.audit.model import AuditReport, Interval, num, pct
from output_contracts.audit.pipeline import audit_report, audit_score_report, open_source
from output_contracts.audit.report import (
    counts_text,
    coverage_sentence,
    cross_fit_sentence,
    explained_sentence,
    github_annotations,
    interval_text,
    num1,
    per100_text,
    rate_text,
    to_markdown,
)
from output_contracts.checks.formats.base import MAX_SARIF_RESULTS, RenderOptions
from output_contracts.checks.receipts import EncoderName
from output_contracts.cli.ci_options import BaseOpt, MaxResultsOpt, render_options
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    PlainFlag,
    QuietFlag,
    config,
    err,
    out,
    phase,
    progress_bar,
)
from output_contracts.cli.tables import Column, Grid, say, say_anchor, say_command, show
from output_contracts.config import MAX_BOOTSTRAP
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.mining.params import MineParams, RuleSource
from output_contracts.rules.model import ContractSet
from output_contracts.traces.corpus import Corpus


class AuditOutput(StrEnum):
    """`--output-format` of `audit` / `audit-score`."""

    text = "text"
    github = "github"


FoldOpt = Annotated[
    int | None,
    typer.Option("--fold", "-k", help="Number of task folds k (default: audit.folds, 5). 1 = no splitting."),
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Fold and bootstrap seed (default: mine.seed, 13).")
]
BootOpt = Annotated[
    int | None,
    typer.Option(
        "--bootstrap", help="Bootstrap resamples (default: audit.bootstrap, 1000; 0 = Wilson only)."
    ),
]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="Write the JSON report here ('-' = stdout).")]
MdOpt = Annotated[Path | None, typer.Option("--markdown", help="Write the Markdown report here.")]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html", help="Write a static HTML page of the report here (as `contracts report` draws it)."
    ),
]
FmtOpt = Annotated[
    AuditOutput, typer.Option("--output-format", help="text (tables) or github (annotations + step summary).")
]
MaxFireOpt = Annotated[
    float | None,
    typer.Option("--max-fire-rate", help="Gate: exit 1 when the fire rate exceeds this share (0.02 = 2%)."),
]
MaxSpurOpt = Annotated[
    float | None,
    typer.Option(
        "--max-spurious-per-100",
        help="Gate: exit 1 when spurious receipts per 100 clean episodes exceed this.",
    ),
]
MinDetOpt = Annotated[
    float | None,
    typer.Option(
        "--min-detection", help="Gate: exit 1 when detection on labelled calls is below this share."
    ),
]

SarifOpt = Annotated[
    Path | None,
    typer.Option(
        "--sarif",
        help="Write SARIF 2.1.0 here: the organic calls that fired (relative paths, file lines), gates as "
        "run notifications.",
        metavar="FILE",
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        help="Write JUnit XML here: a testcase per gate (failing when it failed) and one per tool.",
        metavar="FILE",
    ),
]

MinCovOpt = Annotated[
    float | None,
    typer.Option(
        "--min-coverage",
        help="Gate: exit 1 when the share of checked calls whose tool has at least one rule is below this.",
    ),
]


def _gates(
    max_fire: float | None, max_spur: float | None, min_det: float | None, min_cov: float | None
) -> dict[str, float | None]:
    cfg = config()
    return {
        "max_fire_rate": cfg.get("audit.max_fire_rate", max_fire),
        "max_spurious_per_100": cfg.get("audit.max_spurious_per_100", max_spur),
        "min_detection": cfg.get("audit.min_detection", min_det),
        "min_coverage": cfg.get("audit.min_coverage", min_cov),
    }


def _free_dir(base: Path) -> Path:
    """`base`, or `base-2`, `base-3`, ... : the first that does not exist or is empty."""
    cand, n = base, 1
    while cand.exists() and (not cand.is_dir() or any(cand.iterdir())):
        n += 1
        cand = base.with_name(f"{base.name}-{n}")
    return cand


def _headline_table(report: AuditReport) -> Grid:
    """The headline figures with intervals and counts (detection per kind under the overall one)."""
    t = Grid(
        [
            Column("metric", "text"),
            Column("value", "num"),
            Column("interval", "num"),
            Column("counts", "text"),
        ],
        title="Audit (95% task-clustered bootstrap intervals)",
    )

    def row(label: str, r: Interval, counts: str, fmt: Callable[[float | None], str] = pct) -> None:
        t.add_row(label, fmt(r.value), interval_text(r, fmt), counts)

    fr, sp, det, cost = report.fire_rate, report.spurious, report.detection, report.receipt_cost
    row("fire rate (organic)", fr, counts_text(fr))
    if report.in_sample is not None:
        row("  in-sample (non-split)", report.in_sample.fire_rate, counts_text(report.in_sample.fire_rate))
    row("spurious / 100 clean episodes", sp.per_100_episodes, counts_text(sp), num)
    if sp.without_fault is not None:
        row(
            "  / 100 without fault (paper)",
            sp.without_fault.per_100_episodes,
            counts_text(sp.without_fault),
            num,
        )
    if sp.full_reward is not None:
        row("  / 100 full-reward", sp.full_reward.per_100_episodes, counts_text(sp.full_reward), num)
    row("detection (labelled)", det.overall, counts_text(det.overall))
    for kind, r in det.by_kind.items():
        row(f"  {kind}", r, counts_text(r))
    row("recovery retention", report.recovery_retention, counts_text(report.recovery_retention))
    if report.propagation is not None:
        for kind in ("organic", "labelled"):
            g = getattr(report.propagation, kind)
            if g.trackable_episodes:
                row(f"propagation ({kind})", g.propagating, counts_text(g.propagating))
    row("receipt bytes / 1,000 calls", cost.bytes_per_1000_calls, f"{cost.receipts} receipts", num1)
    row("receipt tokens / 1,000 calls", cost.tokens_per_1000_calls, f"{cost.approx_tokens} tokens", num1)
    return t


def _tools_table(report: AuditReport, limit: int | None = 20) -> Grid:
    """The most firing tools (20 of them on a terminal, every one with --plain)."""
    tt = Grid(
        [
            Column("tool", "name"),
            Column("fires", "num"),
            Column("organic", "num"),
            Column("fire rate", "num"),
            Column("labelled", "num"),
            Column("detected", "num"),
        ],
        title="By tool (sorted by fires)",
    )
    for r in report.tools[:limit]:
        tt.add_row(r.tool, r.fires, r.organic, pct(r.fire_rate.value), r.labelled, r.detected)
    return tt


def _rules_table(report: AuditReport) -> Grid | None:
    """The 15 most firing rules (None when no rule fired)."""
    firing = [r for r in report.rules if r.fires]
    if not firing:
        return None
    rt = Grid(
        [
            Column("tool", "name"),
            Column("code", "key"),
            Column("paths", "path"),
            Column("support", "num"),
            Column("fires", "num"),
            Column("organic", "num"),
        ],
        title="Rules by fires (rule ids in the JSON report)",
    )
    for r in firing[:15]:
        paths = "\n".join(r.paths) or "(root)"
        rt.add_row(r.tool, r.code, paths, r.support, r.fires, r.organic_fires)
    return rt


def _render_text(report: AuditReport, plain: bool = False) -> None:
    """The terminal rendering: summary line, cross-fitting sentence, tables, ledger anchor, gates.
    `--plain`: the per-tool table alone, every tool, as TSV."""
    if plain:
        show(out, _tools_table(report, None), plain=True)
        return
    pop, params = report.population, report.params
    say(
        out,
        f"contract audit of {report.corpus.name}: {pop.checked} calls checked "
        f"({pop.organic} organic, {pop.labelled} labelled), {pop.episodes} episodes, {pop.tasks} tasks; "
        f"k = {params.k}, {params.bootstrap} bootstrap resamples",
    )
    say(out, Text.from_markup(cross_fit_sentence(report)).plain)
    show(out, _headline_table(report))
    show(out, _tools_table(report))
    say(out, coverage_sentence(report))
    if explained_sentence(report):
        say(out, explained_sentence(report))
    rules = _rules_table(report)
    if rules is not None:
        show(out, rules)
    led = report.ledger
    say_anchor(out, f"ledger {led.path}: {led.entries} entries, frozen", led.head, led.root)
    for g in report.gates:
        say(out, ("PASS " if g.passed else "FAIL ") + g.message(), style=None if g.passed else "red")


def _emit(
    report: AuditReport,
    json_path: Path | None,
    md_path: Path | None,
    fmt: AuditOutput,
    quiet: bool,
    html_path: Path | None = None,
    plain: bool = False,
) -> None:
    """Write the report files, render it, append the step summary, and exit 1 on a failed gate."""
    md = to_markdown(report)
    data = report.to_json()
    if json_path is not None and str(json_path) != "-":
        atomic_write_bytes(json_path, pretty_json(data))
    if md_path is not None:
        atomic_write_bytes(md_path, md.encode("utf-8"))
    if html_path is not None:
        name = str(json_path) if json_path is not None and str(json_path) != "-" else "audit"
        art = artifact_of(Kind.AUDIT, name, pretty_json(data), data)
        atomic_write_bytes(html_path, render_html([art], title="contracts audit").encode("utf-8"))
    if json_path is not None and str(json_path) == "-":
        out.file.write(pretty_json(data).decode("utf-8"))
    elif fmt == AuditOutput.github:
        for line in github_annotations(report):
            out.print(line, markup=False)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(md + "\n")
    else:
        _render_text(report, plain)
    if not quiet:
        say(
            err,
            f"fire rate {rate_text(report.fire_rate)}; spurious per 100 episodes {per100_text(report.spurious)}; "
            f"detection {rate_text(report.detection.overall)}",
        )
        for p, what in ((json_path, "JSON"), (md_path, "Markdown"), (html_path, "HTML")):
            if p is not None and str(p) != "-":
                say(err, f"wrote {what} report {p}")
    failed = [g for g in report.gates if not g.passed]
    if failed:
        for g in failed:
            say(err, f"gate failed: {g.message()}", style="red")
        raise typer.Exit(EXIT_FINDINGS)


def _ci_outputs(
    report: AuditReport,
    ledger_dir: Path,
    corpus: Corpus,
    sarif_path: Path | None,
    junit_path: Path | None,
    opts: RenderOptions,
    quiet: bool,
    original: Corpus | None = None,
) -> None:
    """Write the SARIF and JUnit files asked for (before the gates decide the exit code)."""
    if sarif_path is not None:
        receipts, labelled = fired_receipts(ledger_dir, corpus, original)
        log = audit_sarif(report, receipts, labelled, version=__version__, options=opts)
        atomic_write_bytes(sarif_path, pretty_json(log))
        if not quiet:
            props = log["runs"][0]["properties"]
            say(
                err,
                f"wrote SARIF {sarif_path}: {len(log['runs'][0]['results'])} results "
                f"({props['omitted_results']} left out by --max-results, {labelled} labelled fired calls "
                "not reported)",
            )
    if junit_path is not None:
        atomic_write_bytes(junit_path, audit_junit(report))
        if not quiet:
            say(err, f"wrote JUnit {junit_path}")


def _default_reports(json_path: Path | None, md_path: Path | None) -> tuple[Path | None, Path | None, Path]:
    """Report files and the base folder for the ledger: `paths.reports` when configured, else beside
    the report files given, else the working directory."""
    reports = config().path("paths.reports")
    if json_path is None and md_path is None and reports is not None:
        json_path, md_path = reports / "audit.json", reports / "audit.md"
    if reports is not None:
        base = reports
    else:
        given = next((p for p in (json_path, md_path) if p is not None and str(p) != "-"), None)
        base = given.parent if given is not None else Path(".")
    return json_path, md_path, base


def audit_cmd(
    src: Annotated[
        Path | None,
        typer.Argument(
            help="Corpus folder or trace files (default: paths.corpus or paths.traces).", show_default=False
        ),
    ] = None,
    fold: FoldOpt = None,
    contracts_file: Annotated[
        Path | None,
        typer.Option(
            "--contracts",
            help="Use this contract set (must be mined with the same k and seed) instead of mining.",
        ),
    ] = None,
    seed: SeedOpt = None,
    inject: Annotated[
        str | None,
        typer.Option(
            "--inject",
            help=f"Plant faults first: comma-separated kinds or groups ({', '.join(KIND_GROUPS)}); "
            "docs/faults.md lists the kinds.",
        ),
    ] = None,
    rate: Annotated[
        float, typer.Option("--rate", help="Share of eligible calls to fault with --inject.")
    ] = 0.1,
    bootstrap: BootOpt = None,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="Ledger folder for the frozen fire events (new or empty; default: paths.ledger, else audit-ledger beside the report).",
        ),
    ] = None,
    json_path: JsonOpt = None,
    md_path: MdOpt = None,
    html_path: HtmlOpt = None,
    output_format: FmtOpt = AuditOutput.text,
    max_fire_rate: MaxFireOpt = None,
    max_spurious_per_100: MaxSpurOpt = None,
    min_detection: MinDetOpt = None,
    min_coverage: MinCovOpt = None,
    encoder: Annotated[
        EncoderName, typer.Option("--encoder", help="Receipt encoder whose size is costed.")
    ] = EncoderName.v2,
    registry: Annotated[
        Path | None,
        typer.Option(
            "--registry",
            help="tools.json for substitutes/recovery tools (default: paths.registry, or SRC/tools.json).",
        ),
    ] = None,
    no_in_sample: Annotated[
        bool, typer.Option("--no-in-sample", help="Skip the in-sample (non-split) comparison replay.")
    ] = False,
    sarif_path: SarifOpt = None,
    junit_path: JunitOpt = None,
    uri_base: BaseOpt = None,
    max_results: MaxResultsOpt = MAX_SARIF_RESULTS,
    rule_source: Annotated[
        RuleSource | None,
        typer.Option(
            "--source",
            help="Mine rules from: all, mined (traces only), or schema (the registry's output schemas "
            "only: the schema-only detector to compare with).",
        ),
    ] = None,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Cross-fitted replay audit: fire rate, spurious receipts, detection, recovery, cost; CI gates."""
    cfg = config()
    if src is None:
        src = cfg.path("paths.corpus")
        if src is None:
            traces = cfg.get("paths.traces")
            src = Path(traces[0]) if traces else None
        if src is None:
            raise UsageError(
                "no corpus or traces given: pass SRC or set 'corpus' (or 'traces') under [paths] in contracts.toml",
                field="SRC",
            )
    k = int(cfg.get("audit.folds", fold))
    s = int(cfg.get("mine.seed", seed))
    n_boot = int(cfg.get("audit.bootstrap", bootstrap))
    if not 0 <= n_boot <= MAX_BOOTSTRAP:
        raise UsageError(
            f"--bootstrap must be between 0 and {MAX_BOOTSTRAP:,}, got {n_boot}", field="--bootstrap"
        )
    if not 0.0 <= rate <= 1.0:
        raise UsageError(f"--rate must be between 0 and 1, got {rate}", field="--rate")
    kinds = parse_kinds(inject) if inject else None
    render_options(uri_base, max_results, 0, None)  # a bad --base fails before the replay, not after
    json_path, md_path, base = _default_reports(json_path, md_path)
    # an explicit --ledger must be new or empty (Ledger.create refuses otherwise); a default one is
    # never reused: audit-ledger-2, -3, ... are taken instead
    configured = cfg.path("paths.ledger")
    if ledger is not None:
        ledger_dir = ledger
    elif configured is not None:
        ledger_dir = _free_dir(configured)
    else:
        ledger_dir = _free_dir(base / "audit-ledger")
    cs = ContractSet.load(contracts_file) if contracts_file is not None else None
    work = ledger_dir.with_name(ledger_dir.name + ".corpus")
    bar = progress_bar(quiet)
    source = open_source(
        src,
        work,
        inject_kinds=kinds,
        inject_rate=rate,
        inject_seed=s,
        contracts=cs,
        registry=cfg.path("paths.registry", registry),
        progress=bar,
    )
    if source.inject and not quiet:
        inj = source.inject
        say(
            err,
            f"injected {sum(inj['injected'].values())} faults into {inj['eligible']} eligible calls "
            f"({', '.join(f'{k_}={v}' for k_, v in inj['injected'].items())}); corpus {source.corpus.path}",
        )
    report, cs_used = audit_report(
        source.corpus,
        ledger_dir,
        k=k,
        seed=s,
        contracts=cs,
        origin=str(contracts_file) if contracts_file is not None else "mined",
        bootstrap=n_boot,
        encoder=encoder.value,
        in_sample=not no_in_sample,
        corpus_name=source.name,
        inject=source.inject,
        mine_from=source.original,
        gates=_gates(max_fire_rate, max_spurious_per_100, min_detection, min_coverage),
        mine_params=MineParams.of(
            **{
                name: value
                for name, value in (
                    ("clean", cfg.get("mine.clean")),
                    ("max_domain", cfg.get("mine.max_domain")),
                    ("min_support", cfg.get("mine.min_support") or None),
                    ("max_violation_rate", cfg.get("mine.max_violation_rate")),
                    ("rule_source", cfg.get("mine.source", rule_source.value if rule_source else None)),
                )
                if value is not None
            }
        ),
        # leaf rows read at once (bounded memory; the contract set does not depend on it)
        part_rows=cfg.get("mine.part_rows"),
        progress=bar,
    )
    if not quiet:
        say(err, f"fire events frozen in {ledger_dir} before labels were joined; re-score with:")
        say_command(err, ["contracts", "audit-score", str(ledger_dir), ("--corpus", str(source.corpus.path))])
    opts = render_options(uri_base, max_results, 0, cs_used)
    _ci_outputs(report, ledger_dir, source.corpus, sarif_path, junit_path, opts, quiet, source.original)
    _emit(report, json_path, md_path, output_format, quiet, html_path, plain)


def audit_score_cmd(
    ledger: Annotated[Path, typer.Argument(help="A frozen audit ledger folder.")],
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="The corpus the audit ran on (default: paths.corpus).")
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels", help="JSONL overriding labels ({call_id, labels}) and rewards ({trace_id, reward})."
        ),
    ] = None,
    bootstrap: BootOpt = None,
    json_path: JsonOpt = None,
    md_path: MdOpt = None,
    html_path: HtmlOpt = None,
    output_format: FmtOpt = AuditOutput.text,
    max_fire_rate: MaxFireOpt = None,
    max_spurious_per_100: MaxSpurOpt = None,
    min_detection: MinDetOpt = None,
    min_coverage: MinCovOpt = None,
    sarif_path: SarifOpt = None,
    junit_path: JunitOpt = None,
    uri_base: BaseOpt = None,
    max_results: MaxResultsOpt = MAX_SARIF_RESULTS,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Recompute the audit scores from a frozen ledger and the labels/rewards (nothing is re-checked)."""
    cfg = config()
    c = cfg.require_path("paths.corpus", corpus, "corpus (--corpus)")
    n_boot = int(cfg.get("audit.bootstrap", bootstrap))
    opts = render_options(uri_base, max_results, 0, None)
    opened = Corpus.open(c)
    with phase(quiet, "audit-score"):
        report = audit_score_report(
            ledger,
            opened,
            bootstrap=n_boot,
            gates=_gates(max_fire_rate, max_spurious_per_100, min_detection, min_coverage),
            labels_file=labels,
        )
    _ci_outputs(report, ledger, opened, sarif_path, junit_path, opts, quiet)
    _emit(report, json_path, md_path, output_format, quiet, html_path, plain)


def inject_cmd(
    src: Annotated[list[Path], typer.Argument(help="Flat JSONL trace files or folders, or a corpus folder.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Write the faulted flat JSONL here.")],
    kinds: Annotated[
        str,
        typer.Option(
            "--kinds",
            help=f"Comma-separated fault kinds or groups ({', '.join(KIND_GROUPS)}); docs/faults.md lists them.",
        ),
    ] = "all",
    rate: Annotated[float, typer.Option("--rate", help="Share of eligible calls to fault (0..1).")] = 0.1,
    seed: SeedOpt = None,
    contracts_file: Annotated[
        Path | None,
        typer.Option("--contracts", help="Aim faults at the paths this contract set's rules cover."),
    ] = None,
    json_flag: Annotated[
        bool, typer.Option("--json", help="Print the injection summary as JSON on stdout.")
    ] = False,
    quiet: QuietFlag = False,
) -> None:
    """Plant labelled faults (labels.fault, fault_path, original) in clean traces, for measuring detection."""
    s = int(config().get("mine.seed", seed))
    cs = ContractSet.load(contracts_file) if contracts_file is not None else None
    with phase(quiet, "inject"):
        rep = inject_file(src, output, kinds=parse_kinds(kinds), rate=rate, seed=s, contracts=cs)
    if json_flag:
        out.file.write(pretty_json(rep.to_json()).decode("utf-8"))
    if not quiet:
        per = ", ".join(f"{k}={v}" for k, v in sorted(rep.injected.items()))
        say(
            err,
            f"wrote {output}: {sum(rep.injected.values())} faults in {rep.eligible} eligible of {rep.records} calls "
            f"({per}; {rep.no_target} selected calls had no target; targets: {rep.targeting})",
        )
        if rep.rejected:
            first = rep.rejected[0]
            say(
                err,
                f"{len(rep.rejected)} input line(s) rejected and left out, as ingest would (first: "
                f"{first['source']}:{first['line']}: {first['error']})",
                style="red",
            )


def register(app: typer.Typer) -> None:
    """Add `audit`, `audit-score` and `inject` to the root app."""
    app.command("audit")(audit_cmd)
    app.command("audit-score")(audit_score_cmd)
    app.command("inject")(inject_cmd)
