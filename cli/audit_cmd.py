"""`contracts audit`, `contracts audit-score` and `contracts inject` (docs/audit.md, docs/faults.md).

Thin layer: resolve the settings (`AuditSettings`: options over the project config), call
`output_contracts.audit.pipeline` / `output_contracts.audit.inject`, render the report (rich tables on
stdout for `text`; workflow commands for `github`), write `--json` / `--markdown`, and exit 1 when a gate
fails.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from output_contracts import __version__
from output_contracts.choices import FAULT_GROUPS, MAX_SARIF_RESULTS, EncoderName, RuleSource
from output_contracts.cli.ci_options import BaseOpt, MaxResultsOpt, append_step_summary, render_options
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    AllowEmptyFlag,
    BootstrapOpt,
    MarkdownOpt,
    OverwriteFlag,
    PlainFlag,
    QuietFlag,
    contracts_option,
    corpus_option,
    err,
    folds_option,
    json_flag,
    ledger_option,
    out,
    output_option,
    phase,
    progress_bar,
    registry_option,
    seed_option,
)
from output_contracts.cli.settings import MiningSettings, check_bootstrap, resolved
from output_contracts.cli.tables import Column, Grid, say, say_anchor, say_command, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.settings import Settings, setting

if TYPE_CHECKING:
    from output_contracts.audit.pipeline import Source as AuditSource
    from output_contracts.audit.report_model import AuditReport
    from output_contracts.checks.renderers.renderer import RenderOptions
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.codes.mine_params import MineParams
    from output_contracts.traces.corpus import Corpus


class AuditOutput(StrEnum):
    """`--output-format` of `audit` / `audit-score` (`json` is the same as `--json`)."""

    text = "text"
    json = "json"
    github = "github"


FoldsAuditOpt = Annotated[
    int | None, folds_option("Number of task folds K (default: audit.folds, 5). 1 = no splitting.")
]
SeedAuditOpt = Annotated[int | None, seed_option("Fold and bootstrap seed (default: mine.seed, 13).")]
JsonReportFlag = Annotated[bool, json_flag("Print the JSON report on stdout (instead of the tables).")]
ReportOutOpt = Annotated[Path | None, output_option("Write the JSON report to FILE (atomically).")]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Write a static HTML page of the report to FILE (as `contracts report` draws it).",
    ),
]
FmtOpt = Annotated[
    AuditOutput,
    typer.Option(
        "--output-format",
        help="text (tables), json (the report, as --json) or github (annotations + step summary).",
    ),
]
MaxFireOpt = Annotated[
    float | None,
    typer.Option(
        "--max-fire-rate",
        metavar="SHARE",
        help="Gate: exit 1 when the fire rate exceeds this share (0.02 = 2%).",
    ),
]
MaxSpurOpt = Annotated[
    float | None,
    typer.Option(
        "--max-spurious-per-100",
        metavar="X",
        help="Gate: exit 1 when spurious receipts per 100 clean episodes exceed X.",
    ),
]
MinDetOpt = Annotated[
    float | None,
    typer.Option(
        "--min-detection",
        metavar="SHARE",
        help="Gate: exit 1 when detection on labelled calls is below this share.",
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
        metavar="SHARE",
        help="Gate: exit 1 when the share of checked calls whose tool has at least one rule is below this.",
    ),
]


def _headline_table(report: AuditReport) -> Grid:
    """The headline figures with intervals and counts (detection per kind under the overall one)."""
    from output_contracts.audit.report import counts_text, interval_text, num1
    from output_contracts.audit.report_model import Interval, num, pct

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
    from output_contracts.audit.report_model import pct

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
    """The 15 rules that fired most, organic fires first (`rule_display_key`); None when no rule fired."""
    from output_contracts.audit.report_model import RULES_TITLE, rule_display_key

    firing = sorted(
        (r for r in report.rules if r.fires),
        key=lambda r: rule_display_key(r.organic_fires, r.fires, r.tool, r.code, r.rule),
    )
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
        title=f"{RULES_TITLE} (rule ids in the JSON report)",
    )
    for r in firing[:15]:
        paths = "\n".join(r.paths) or "(root)"
        rt.add_row(r.tool, r.code, paths, r.support, r.fires, r.organic_fires)
    return rt


def _render_text(report: AuditReport, plain: bool = False) -> None:
    """The terminal rendering: summary line, cross-fitting sentence, tables, ledger anchor, gates.
    `--plain`: the per-tool table alone, every tool, as TSV."""
    from output_contracts.audit.report import coverage_sentence, cross_fit_sentence, explained_sentence

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


def _emit(report: AuditReport, s: ReportSettings) -> None:
    """Write the report files, render it (`--json`: the JSON report on stdout instead of the tables),
    append the step summary, and exit 1 on a failed gate (`-q` silences stderr only)."""
    from output_contracts.audit.report import per100_text, rate_text, to_markdown

    json_path, md_path = s.report_files
    md = to_markdown(report)
    data = report.to_json()
    _write_reports(data, md, json_path, md_path, s.html_path)
    if s.as_json or s.output_format == AuditOutput.json:
        out.file.write(pretty_json(data).decode("utf-8"))
    elif s.output_format == AuditOutput.github:
        from output_contracts.audit.report import github_annotations

        for line in github_annotations(report):
            out.print(line, markup=False)
        append_step_summary(md + "\n")
    else:
        _render_text(report, s.plain)
    if not s.quiet:
        say(
            err,
            f"fire rate {rate_text(report.fire_rate)}; spurious per 100 episodes {per100_text(report.spurious)}; "
            f"detection {rate_text(report.detection.overall)}",
        )
        for p, what in ((json_path, "JSON"), (md_path, "Markdown"), (s.html_path, "HTML")):
            if p is not None:
                say(err, f"wrote {what} report {p}")
    failed = [g for g in report.gates if not g.passed]
    if failed:
        for g in failed if not s.quiet else ():
            say(err, f"gate failed: {g.message()}", style="red")
        raise typer.Exit(EXIT_FINDINGS)


def _write_reports(
    data: dict[str, Any], md: str, json_path: Path | None, md_path: Path | None, html_path: Path | None
) -> None:
    """The report files asked for: JSON, Markdown, and the HTML page `contracts report` would draw."""
    from output_contracts.audit.artifacts import Kind, artifact_of
    from output_contracts.audit.html import render_html

    if json_path is not None:
        atomic_write_bytes(json_path, pretty_json(data))
    if md_path is not None:
        atomic_write_bytes(md_path, md.encode("utf-8"))
    if html_path is not None:
        name = str(json_path) if json_path is not None else "audit"
        art = artifact_of(Kind.AUDIT, name, pretty_json(data), data)
        atomic_write_bytes(html_path, render_html([art], title="contracts audit").encode("utf-8"))


def _ci_outputs(
    report: AuditReport,
    s: ReportSettings,
    ledger_dir: Path,
    corpus: Corpus,
    opts: RenderOptions,
    original: Corpus | None = None,
) -> None:
    """Write the SARIF and JUnit files asked for (before the gates decide the exit code)."""
    from output_contracts.audit.ci import audit_junit, audit_sarif, fired_receipts

    if s.sarif_path is not None:
        receipts, labelled = fired_receipts(ledger_dir, corpus, original)
        log = audit_sarif(report, receipts, labelled, version=__version__, options=opts)
        atomic_write_bytes(s.sarif_path, pretty_json(log))
        if not s.quiet:
            props = log["runs"][0]["properties"]
            say(
                err,
                f"wrote SARIF {s.sarif_path}: {len(log['runs'][0]['results'])} results "
                f"({props['omitted_results']} left out by --max-results, {labelled} labelled fired calls "
                "not reported)",
            )
    if s.junit_path is not None:
        atomic_write_bytes(s.junit_path, audit_junit(report))
        if not s.quiet:
            say(err, f"wrote JUnit {s.junit_path}")


def _ledger_dir(
    given: Path | None, src: list[Path], params: dict[str, object], quiet: bool
) -> tuple[Path, bool]:
    """The ledger folder (`--ledger`, else `paths.ledger`, else a default that is never the working
    directory; one stderr line names a default) and whether it lies in a temporary folder of its own."""
    from output_contracts.audit.pipeline import audited_corpus, default_ledger_dir

    if given is not None:
        return given, False
    ledger_dir = default_ledger_dir(src, params)
    temporary = audited_corpus(src) is None
    if not quiet:
        where = "a temporary folder" if temporary else "under the audited corpus"
        err.print(f"no --ledger given: the audit ledger goes to {ledger_dir} ({where})", markup=False)
    return ledger_dir, temporary


AuditSourcesArg = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="SRC",
        help="A corpus folder, or trace files and folders (ingested together). Default: paths.corpus "
        "or paths.traces.",
        show_default=False,
    ),
]
AuditContractsOpt = Annotated[
    Path | None,
    contracts_option("Use this contract set (must be mined with the same K and seed) instead of mining."),
]
InjectOpt = Annotated[
    str | None,
    typer.Option(
        "--inject",
        metavar="KIND,...",
        help=f"Plant faults first: comma-separated kinds or groups ({', '.join(FAULT_GROUPS)}); "
        "docs/faults.md lists the kinds.",
    ),
]
AuditRateOpt = Annotated[
    float, typer.Option("--rate", metavar="SHARE", help="Share of eligible calls to fault with --inject.")
]
AuditLedgerOpt = Annotated[
    Path | None,
    ledger_option(
        "Ledger folder for the frozen fire events (new or empty; default: paths.ledger, else "
        "CORPUS/audits/NAME for a corpus folder, else a temporary folder; stderr names it)."
    ),
]
AuditEncoderOpt = Annotated[
    EncoderName, typer.Option("--encoder", help="Receipt encoder whose size is costed.")
]
AuditRegistryOpt = Annotated[
    Path | None,
    registry_option(
        "tools.json for substitutes/recovery tools (default: paths.registry, or SRC/tools.json)."
    ),
]
NoInSampleOpt = Annotated[
    bool, typer.Option("--no-in-sample", help="Skip the in-sample (non-split) comparison replay.")
]
AuditSourceOpt = Annotated[
    RuleSource | None,
    typer.Option(
        "--source",
        help="Mine rules from: all, mined (traces only), or schema (the registry's output schemas "
        "only: the schema-only detector to compare with).",
    ),
]


@dataclass(frozen=True, kw_only=True)
class ReportSettings(Settings):
    """What `audit` and `audit-score` share: the bootstrap and CI gates (`[audit]`), and where and how
    the report goes."""

    bootstrap: int = setting("audit.bootstrap")
    max_fire_rate: float | None = setting("audit.max_fire_rate")
    max_spurious_per_100: float | None = setting("audit.max_spurious_per_100")
    min_detection: float | None = setting("audit.min_detection")
    min_coverage: float | None = setting("audit.min_coverage")
    as_json: bool
    json_path: Path | None
    md_path: Path | None
    html_path: Path | None
    output_format: AuditOutput
    sarif_path: Path | None
    junit_path: Path | None
    uri_base: Path | None
    max_results: int
    quiet: bool
    plain: bool

    @property
    def gates(self) -> dict[str, float | None]:
        """The gates by the names the audit report uses (None: no gate)."""
        return {
            "max_fire_rate": self.max_fire_rate,
            "max_spurious_per_100": self.max_spurious_per_100,
            "min_detection": self.min_detection,
            "min_coverage": self.min_coverage,
        }

    @property
    def report_files(self) -> tuple[Path | None, Path | None]:
        """The JSON and Markdown report files to write."""
        return self.json_path, self.md_path


@dataclass(frozen=True, kw_only=True)
class AuditSettings(MiningSettings, ReportSettings):
    """`contracts audit`, resolved: its options over `[paths]`, `[audit]` and `[mine]` over the defaults
    (the thresholds of the mining it runs come from `[mine]` alone)."""

    sources: list[Path] = setting(
        "paths.corpus",
        "paths.traces",
        many=True,
        missing="no corpus or traces given: pass SRC or set 'corpus' (or 'traces') under [paths] in "
        "contracts.toml",
    )
    folds: int = setting("audit.folds")
    seed: int = setting("mine.seed")
    ledger: Path | None = setting("paths.ledger")
    registry: Path | None = setting("paths.registry")
    rule_source: str = setting("mine.source")
    reports: Path | None = setting("paths.reports")
    part_rows: int | None = setting("mine.part_rows")
    contracts_file: Path | None
    inject: str | None
    rate: float
    overwrite: bool
    encoder: EncoderName
    no_in_sample: bool
    allow_empty: bool

    def check(self) -> None:
        """`--bootstrap` and `--rate` within their bounds."""
        check_bootstrap(self.bootstrap)
        if not 0.0 <= self.rate <= 1.0:
            raise UsageError(f"--rate must be between 0 and 1, got {self.rate}", field="--rate")

    @property
    def report_files(self) -> tuple[Path | None, Path | None]:
        """The JSON and Markdown report files: the ones given, else `paths.reports/audit.{json,md}`."""
        if self.json_path is None and self.md_path is None and self.reports is not None:
            return self.reports / "audit.json", self.reports / "audit.md"
        return self.json_path, self.md_path


def audit_cmd(
    sources: AuditSourcesArg = None,
    folds: FoldsAuditOpt = None,
    contracts_file: AuditContractsOpt = None,
    seed: SeedAuditOpt = None,
    inject: InjectOpt = None,
    rate: AuditRateOpt = 0.1,
    bootstrap: BootstrapOpt = None,
    ledger: AuditLedgerOpt = None,
    overwrite: OverwriteFlag = False,
    as_json: JsonReportFlag = False,
    json_path: ReportOutOpt = None,
    md_path: MarkdownOpt = None,
    html_path: HtmlOpt = None,
    output_format: FmtOpt = AuditOutput.text,
    max_fire_rate: MaxFireOpt = None,
    max_spurious_per_100: MaxSpurOpt = None,
    min_detection: MinDetOpt = None,
    min_coverage: MinCovOpt = None,
    encoder: AuditEncoderOpt = EncoderName.v2,
    registry: AuditRegistryOpt = None,
    no_in_sample: NoInSampleOpt = False,
    sarif_path: SarifOpt = None,
    junit_path: JunitOpt = None,
    uri_base: BaseOpt = None,
    max_results: MaxResultsOpt = MAX_SARIF_RESULTS,
    rule_source: AuditSourceOpt = None,
    allow_empty: AllowEmptyFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Cross-fitted replay audit: fire rate, spurious receipts, detection, recovery, cost; CI gates."""
    _audit(resolved(AuditSettings, locals()))


def _audit(s: AuditSettings) -> None:
    """Replay the sources fold by fold into a new ledger, then write and render the report."""
    from output_contracts.audit.inject import parse_kinds
    from output_contracts.audit.pipeline import claim_audit_dirs, contracts_sha256, work_dir
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.traces.sources import named_as

    kinds = parse_kinds(s.inject) if s.inject else None
    render_options(s.uri_base, s.max_results, 0, None)  # a bad --base fails before the replay, not after
    cs = ContractSet.load(s.contracts_file) if s.contracts_file is not None else None
    mine_params = s.mine_params(rule_source=s.rule_source)
    ledger_dir, temporary = _ledger_dir(
        s.ledger,
        s.sources,
        {
            "k": s.folds,
            "seed": s.seed,
            "contracts": contracts_sha256(cs) if cs is not None else None,
            "inject": [kinds, s.rate] if kinds else None,
            "encoder": s.encoder.value,
            "registry": str(s.registry) if s.registry is not None else None,
            "mine": repr(mine_params),
        },
        s.quiet,
    )
    # every ledger writer treats an existing folder alike: refused unless --overwrite (docs/audit.md)
    had_ledger = ledger_dir.exists()
    claim_audit_dirs(ledger_dir, overwrite=s.overwrite)
    work = work_dir(ledger_dir)
    try:
        # an error about the corpus ingested into the work folder names the sources the user gave
        with named_as(work / "corpus", s.sources), named_as(work / "injected", s.sources):
            source, report, cs_used = _replay(s, ledger_dir, kinds, cs, mine_params)
    except BaseException:
        if temporary:  # nothing left behind in the temporary folder of a run that failed
            shutil.rmtree(ledger_dir.parent, ignore_errors=True)
        else:  # nor the work folder this run made (claimed absent above), nor an empty ledger folder
            shutil.rmtree(work, ignore_errors=True)
            if not had_ledger and ledger_dir.is_dir() and not any(ledger_dir.iterdir()):
                ledger_dir.rmdir()
        raise
    if not s.quiet:
        say(err, f"fire events frozen in {ledger_dir} before labels were joined; re-score with:")
        say_command(err, ["contracts", "audit-score", str(ledger_dir), ("--corpus", str(source.corpus.path))])
    opts = render_options(s.uri_base, s.max_results, 0, cs_used)
    _ci_outputs(report, s, ledger_dir, source.corpus, opts, source.original)
    _emit(report, s)


def _replay(
    s: AuditSettings,
    ledger_dir: Path,
    kinds: tuple[str, ...] | None,
    cs: ContractSet | None,
    mine_params: MineParams,
) -> tuple[AuditSource, AuditReport, ContractSet]:
    """Open (and fault, with `--inject`) the sources, and run the cross-fitted replay into the ledger."""
    from output_contracts.audit.pipeline import audit_report, open_source, work_dir

    bar = progress_bar(s.quiet)
    source = open_source(
        s.sources,
        work_dir(ledger_dir),
        inject_kinds=kinds,
        inject_rate=s.rate,
        inject_seed=s.seed,
        contracts=cs,
        registry=s.registry,
        progress=bar,
        allow_empty=s.allow_empty,
    )
    if source.inject and not s.quiet:
        inj = source.inject
        say(
            err,
            f"injected {sum(inj['injected'].values())} faults into {inj['eligible']} eligible calls "
            f"({', '.join(f'{k_}={v}' for k_, v in inj['injected'].items())}); corpus {source.corpus.path}",
        )
    report, cs_used = audit_report(
        source.corpus,
        ledger_dir,
        k=s.folds,
        seed=s.seed,
        contracts=cs,
        origin=str(s.contracts_file) if s.contracts_file is not None else "mined",
        bootstrap=s.bootstrap,
        encoder=s.encoder.value,
        in_sample=not s.no_in_sample,
        corpus_name=source.name,
        inject=source.inject,
        mine_from=source.original,
        gates=s.gates,
        mine_params=mine_params,
        # leaf rows read at once (bounded memory; the contract set does not depend on it)
        part_rows=s.part_rows,
        progress=bar,
    )
    return source, report, cs_used


AuditScoreLedgerArg = Annotated[Path, typer.Argument(metavar="LEDGER", help="A frozen audit ledger folder.")]
AuditScoreCorpusOpt = Annotated[
    Path | None, corpus_option("The corpus the audit ran on (default: paths.corpus).")
]
LabelsOpt = Annotated[
    Path | None,
    typer.Option(
        "--labels",
        metavar="FILE",
        help="JSONL overriding labels ({call_id, labels}) and rewards ({trace_id, reward}).",
    ),
]


@dataclass(frozen=True, kw_only=True)
class AuditScoreSettings(ReportSettings):
    """`contracts audit-score`, resolved: the corpus from `paths.corpus`, gates and bootstrap from `[audit]`."""

    corpus: Path = setting("paths.corpus", required="corpus (--corpus)")
    ledger: Path
    labels: Path | None


def audit_score_cmd(
    ledger: AuditScoreLedgerArg,
    corpus: AuditScoreCorpusOpt = None,
    labels: LabelsOpt = None,
    bootstrap: BootstrapOpt = None,
    as_json: JsonReportFlag = False,
    json_path: ReportOutOpt = None,
    md_path: MarkdownOpt = None,
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
    _audit_score(resolved(AuditScoreSettings, locals()))


def _audit_score(s: AuditScoreSettings) -> None:
    """Score the frozen fire events against the corpus's labels, then write and render the report."""
    from output_contracts.audit.pipeline import audit_score_report
    from output_contracts.traces.corpus import Corpus

    opts = render_options(s.uri_base, s.max_results, 0, None)
    opened = Corpus.open(s.corpus)
    with phase(s.quiet, "audit-score"):
        report = audit_score_report(
            s.ledger, opened, bootstrap=s.bootstrap, gates=s.gates, labels_file=s.labels
        )
    _ci_outputs(report, s, s.ledger, opened, opts)
    _emit(report, s)


InjectSrcArg = Annotated[
    list[Path],
    typer.Argument(metavar="SRC", help="Flat JSONL trace files or folders, or a corpus folder."),
]
InjectOutputOpt = Annotated[Path, output_option("Write the faulted flat JSONL to FILE.")]
KindsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kinds",
        metavar="KIND,...",
        help=f"Fault kinds or groups ({', '.join(FAULT_GROUPS)}), comma-separated or repeated "
        "(default: all); docs/faults.md lists them.",
        show_default=False,
    ),
]
InjectRateOpt = Annotated[
    float, typer.Option("--rate", metavar="SHARE", help="Share of eligible calls to fault (0..1).")
]
InjectSeedOpt = Annotated[int | None, seed_option("Seed of the fault draw (default: mine.seed, 13).")]
InjectContractsOpt = Annotated[
    Path | None, contracts_option("Aim faults at the paths this contract set's rules cover.")
]
InjectJsonFlag = Annotated[bool, json_flag("Print the injection summary as JSON on stdout.")]


@dataclass(frozen=True, kw_only=True)
class InjectSettings(Settings):
    """`contracts inject`, resolved: the seed defaults to `mine.seed`."""

    seed: int = setting("mine.seed")
    src: list[Path]
    output: Path
    kinds: list[str] | None
    rate: float
    contracts_file: Path | None
    allow_empty: bool
    as_json: bool
    quiet: bool


def inject_cmd(
    src: InjectSrcArg,
    output: InjectOutputOpt,
    kinds: KindsOpt = None,
    rate: InjectRateOpt = 0.1,
    seed: InjectSeedOpt = None,
    contracts_file: InjectContractsOpt = None,
    allow_empty: AllowEmptyFlag = False,
    as_json: InjectJsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Plant labelled faults (labels.fault, fault_path, original) in clean traces, for measuring detection."""
    _inject(resolved(InjectSettings, locals()))


def _inject(s: InjectSettings) -> None:
    """Write the faulted copy of the sources and say what was planted (and which lines were rejected)."""
    from output_contracts.audit.inject import inject_file, parse_kinds
    from output_contracts.codes.contract_set import ContractSet

    cs = ContractSet.load(s.contracts_file) if s.contracts_file is not None else None
    kinds_text = ",".join(s.kinds) if s.kinds else "all"
    with phase(s.quiet, "inject"):
        rep = inject_file(
            s.src,
            s.output,
            kinds=parse_kinds(kinds_text),
            rate=s.rate,
            seed=s.seed,
            contracts=cs,
            allow_empty=s.allow_empty,
        )
    if s.as_json:
        out.file.write(pretty_json(rep.to_json()).decode("utf-8"))
    if s.quiet:
        return
    per = ", ".join(f"{k}={v}" for k, v in sorted(rep.injected.items()))
    say(
        err,
        f"wrote {s.output}: {sum(rep.injected.values())} faults in {rep.eligible} eligible of {rep.records} calls "
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
