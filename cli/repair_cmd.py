"""`contracts repair-cases | repair-replay | repair-score | split-audit` (library: output_contracts.repair).

Exit codes: 0 done; 1 a finding (`repair-score` on a ledger that does not verify or is not frozen,
`split-audit` with any overlap); 2 the command cannot run (bad input, missing option).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from output_contracts.choices import FeedbackView, PolicyName
from output_contracts.cli.common import (
    OverwriteFlag,
    PlainFlag,
    QuietFlag,
    bootstrap_option,
    err,
    fail,
    findings_exit,
    json_flag,
    ledger_option,
    markdown_option,
    out,
    output_option,
    phase,
    progress_bar,
    registry_option,
    seed_option,
    timeout_option,
)
from output_contracts.cli.settings import resolved
from output_contracts.cli.tables import Column, Grid, say, say_anchor, show
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.progress import Progress
from output_contracts.settings import Settings, setting

if TYPE_CHECKING:
    from output_contracts.repair.cases import BuildReport, SourceCall

RepairSeedOpt = Annotated[int | None, seed_option("Random seed (default: repair.seed, 13).")]


def _emit(data: bytes) -> None:
    out.file.write(data.decode())
    out.file.flush()


def _kinds(values: list[str] | None) -> list[str]:
    import output_contracts.repair.cases as cases

    if not values:
        return list(cases.SINGLE_FIELD)
    kinds: list[str] = []
    for v in values:
        for k in v.split(","):
            k = k.strip()
            if k == "all":
                kinds.extend(cases.ALL_FAMILIES)
            elif k == "stress":
                kinds.extend(cases.STRESS)
            elif k == "hard":
                kinds.extend(cases.HARD)
            elif k:
                kinds.append(k)
    return list(dict.fromkeys(kinds))


RepairSrcArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="SRC",
        help="A BFCL question file (JSON Lines; give --answers) or an ingested corpus folder "
        "(default: paths.corpus).",
    ),
]
CasesOutputOpt = Annotated[Path | None, output_option("Cases file to write (JSONL).")]
TargetsOutOpt = Annotated[
    Path | None,
    typer.Option("--targets", metavar="FILE", help="Hidden targets file to write (kept apart from cases)."),
]
AnswersOpt = Annotated[
    Path | None,
    typer.Option("--answers", metavar="FILE", help="BFCL possible-answer file for a BFCL SRC."),
]
CasesRegistryOpt = Annotated[
    Path | None, registry_option("tools.json for a corpus SRC (default: paths.registry).")
]
CaseKindsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kinds",
        metavar="KIND,...",
        show_default=False,
        help="Families, comma-separated or repeated; 'hard' = the five harder ones, 'stress' = the six "
        "stress families (ambiguous_pointer, stale_schema, injected_text, malformed_text, unavailable_tool, long_horizon), "
        "'all' = every one (default: missing_required,wrong_type).",
    ),
]
PerKindOpt = Annotated[
    int, typer.Option("--per-kind", metavar="N", help="Cases per family, drawn with the seed.")
]
PatchesOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--patches",
        metavar="FILE",
        help="Also write each case's canonical patch as a precomputed policy file.",
    ),
]
DisjointFromOpt = Annotated[
    Path | None,
    typer.Option(
        "--disjoint-from",
        metavar="FILE",
        help="Skip any case sharing a split-audit fingerprint with this case set.",
    ),
]
DisjointTargetsOpt = Annotated[
    Path | None,
    typer.Option(
        "--disjoint-targets", metavar="FILE", help="Targets of --disjoint-from (adds target kinds)."
    ),
]
CasesJsonFlag = Annotated[bool, json_flag("Print the build summary as JSON on stdout.")]


@dataclass(frozen=True, kw_only=True)
class RepairCasesSettings(Settings):
    """`contracts repair-cases`, resolved: files from `[paths]`, the seed from `repair.seed`."""

    seed: int = setting("repair.seed")
    output: Path = setting("paths.cases", required="cases file (-o)")
    targets: Path = setting("paths.targets", required="targets file (--targets)")
    src: Path = setting("paths.corpus", required="source (SRC: a BFCL file or a corpus folder)")
    registry: Path | None = setting("paths.registry", what="registry (--registry) for a corpus SRC")
    answers: Path | None
    kinds: list[str] | None
    per_kind: int
    patches: Path | None
    disjoint_from: Path | None
    disjoint_targets: Path | None
    json_out: bool
    quiet: bool

    def check(self) -> None:
        """The targets are hidden from replay: never the cases file itself."""
        if self.output.resolve() == self.targets.resolve():
            fail("the cases and targets files must differ: targets are hidden from replay", field="targets")


def repair_cases_command(
    src: RepairSrcArg = None,
    output: CasesOutputOpt = None,
    targets: TargetsOutOpt = None,
    answers: AnswersOpt = None,
    registry: CasesRegistryOpt = None,
    kinds: CaseKindsOpt = None,
    per_kind: PerKindOpt = 32,
    patches: PatchesOutOpt = None,
    disjoint_from: DisjointFromOpt = None,
    disjoint_targets: DisjointTargetsOpt = None,
    seed: RepairSeedOpt = None,
    json_out: CasesJsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Build repair cases by corrupting correct calls; targets go to a separate file."""
    _repair_cases(resolved(RepairCasesSettings, locals()))


def _repair_cases(s: RepairCasesSettings) -> None:
    """Read the correct calls, build and write the cases, targets (and patches), and summarise."""
    import output_contracts.repair.cases as cases
    import output_contracts.repair.split_audit as audit

    sources, skipped = _correct_calls(s)
    exclude = None
    if s.disjoint_from is not None:
        other = cases.read_cases(s.disjoint_from)
        other_t = cases.read_targets(s.disjoint_targets) if s.disjoint_targets is not None else None
        exclude = audit.excluder(other, other_t)
    with phase(s.quiet, "repair-cases"):
        rep = cases.build_cases(
            sources, kinds=_kinds(s.kinds), per_kind=s.per_kind, seed=s.seed, exclude=exclude
        )
    cases.write_cases(s.output, rep.cases)
    cases.write_targets(s.targets, rep.targets)
    if s.patches is not None:
        cases.write_patches(s.patches, rep.targets)
    if s.json_out:
        _emit(pretty_json(_cases_summary(rep, skipped, s)))
    if not s.quiet:
        fams = ", ".join(f"{k} {v}" for k, v in rep.per_family.items())
        say(
            err,
            f"{len(rep.cases)} cases from {rep.sources} correct calls (seed {s.seed}): {fams}; "
            f"cases -> {s.output}, targets -> {s.targets}"
            + (f", patches -> {s.patches}" if s.patches else ""),
        )
        short = {k: v for k, v in rep.per_family.items() if v < s.per_kind}
        if short:
            from output_contracts.repair.cases import NEEDS

            for kind, n in short.items():
                say(
                    err,
                    f"warning: {n} of {s.per_kind} cases of {kind}: it needs {NEEDS[kind]}, and too few of the "
                    "correct calls have one",
                    style="yellow",
                )


def _correct_calls(s: RepairCasesSettings) -> tuple[list[SourceCall], dict[str, int]]:
    """The correct calls cases are built from: a corpus folder's (with its registry), or a BFCL file's
    (with its possible answers); none is an error (two empty files would look like success)."""
    import output_contracts.repair.cases as cases
    from output_contracts.traces.sources import is_corpus

    if is_corpus(s.src):
        if s.answers is not None:
            fail(
                "--answers is for a BFCL SRC; a corpus SRC takes --registry",
                field="answers",
                source=str(s.src),
            )
        sources, skipped = cases.load_corpus_calls(s.src, s.require("registry"))
    else:
        if s.answers is None:
            fail("a BFCL SRC needs --answers (its possible-answer file)", field="answers", source=str(s.src))
        assert s.answers is not None
        sources, skipped = cases.load_bfcl(s.src, s.answers)
    if not sources:  # building from nothing would write two empty files and report success
        fail("no correct call to build cases from (an empty input)", code="E_INPUT", source=str(s.src))
    return sources, skipped


def _cases_summary(rep: BuildReport, skipped: dict[str, int], s: RepairCasesSettings) -> dict[str, Any]:
    """`repair-cases --json`: cases per family, the sources used and skipped, the seed and the files."""
    return {
        "cases": len(rep.cases),
        "per_family": rep.per_family,
        "sources": rep.sources,
        "skipped_sources": skipped,
        "skipped": rep.skipped,
        "seed": s.seed,
        "files": {
            "cases": str(s.output),
            "targets": str(s.targets),
            "patches": str(s.patches) if s.patches else None,
        },
    }


CasesArg = Annotated[Path | None, typer.Argument(metavar="CASES", help="Cases file (default: paths.cases).")]
PolicyOpt = Annotated[
    PolicyName | None,
    typer.Option("--policy", help="precomputed | heuristic | command (default: repair.policy)."),
]
PatchesInOpt = Annotated[
    Path | None,
    typer.Option("--patches", metavar="FILE", help="Precomputed policy file (for --policy precomputed)."),
]
CommandOpt = Annotated[
    str | None,
    typer.Option(
        "--command",
        metavar="'PROG ARGS'",
        help="Program and arguments for --policy command (split like a shell, run without one).",
    ),
]
StepTimeoutOpt = Annotated[float, timeout_option("Seconds per command-policy step.")]
ReplayLedgerOpt = Annotated[
    Path | None, ledger_option("New ledger folder to write (default: paths.repair_ledger).")
]
MaxOpsOpt = Annotated[
    int | None, typer.Option("--max-ops", metavar="N", help="Op budget per case (default 2).")
]
MaxAttemptsOpt = Annotated[
    int | None, typer.Option("--max-attempts", metavar="N", help="Attempts per case (default 2).")
]
AbstainBelowOpt = Annotated[
    float | None,
    typer.Option(
        "--abstain-below",
        metavar="C",
        help="Abstain instead of applying a patch whose confidence is below C.",
    ),
]
NoLatencyFlag = Annotated[
    bool,
    typer.Option(
        "--no-latency", help="Record no step latencies: the ledger entries become byte-reproducible."
    ),
]
FeedbackOpt = Annotated[
    FeedbackView,
    typer.Option("--feedback", help="What of the verifier report the policy is shown (an ablation)."),
]
SamplesOpt = Annotated[
    int,
    typer.Option(
        "--samples",
        metavar="G",
        help="Also record G candidate patches per state with their verifiable rewards (group data).",
    ),
]
SendAllowedFlag = Annotated[
    bool, typer.Option("--send-allowed", help="Send the mask's allowed-action set with the state.")
]
ReplayJsonFlag = Annotated[bool, json_flag("Print the summary as JSON on stdout.")]


@dataclass(frozen=True, kw_only=True)
class RepairReplaySettings(Settings):
    """`contracts repair-replay`, resolved: files from `[paths]`, policy, budgets and seed from `[repair]`."""

    cases_file: Path = setting("paths.cases", required="cases file (CASES)")
    ledger: Path = setting("paths.repair_ledger", required="ledger folder (--ledger)")
    policy: str = setting("repair.policy")
    max_ops: int = setting("repair.max_ops")
    max_attempts: int = setting("repair.max_attempts")
    seed: int = setting("repair.seed")
    patches: Path | None
    command: str | None
    timeout: float
    overwrite: bool
    abstain_below: float | None
    no_latency: bool
    feedback: FeedbackView
    samples: int
    send_allowed: bool
    json_out: bool
    quiet: bool


def repair_replay_command(
    cases_file: CasesArg = None,
    policy: PolicyOpt = None,
    patches: PatchesInOpt = None,
    command: CommandOpt = None,
    timeout: StepTimeoutOpt = 10.0,
    ledger: ReplayLedgerOpt = None,
    overwrite: OverwriteFlag = False,
    max_ops: MaxOpsOpt = None,
    max_attempts: MaxAttemptsOpt = None,
    abstain_below: AbstainBelowOpt = None,
    no_latency: NoLatencyFlag = False,
    feedback: FeedbackOpt = FeedbackView.full,
    samples: SamplesOpt = 0,
    send_allowed: SendAllowedFlag = False,
    seed: RepairSeedOpt = None,
    json_out: ReplayJsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Run every case through a policy, the action mask and the validator; log each step; freeze the ledger."""
    _repair_replay(resolved(RepairReplaySettings, locals()))


def _repair_replay(s: RepairReplaySettings) -> None:
    """Replay the cases under the policy into a new, frozen ledger, and summarise the outcomes."""
    import output_contracts.repair.cases as cases
    import output_contracts.repair.loop as loop
    import output_contracts.repair.policies as policies
    from output_contracts.ledger import claim_folder

    budgets = loop.Budgets(s.max_ops, s.max_attempts, s.abstain_below)
    pol = policies.make_policy(s.policy, patches=s.patches, command=s.command, timeout=s.timeout)
    all_cases = cases.read_cases(s.cases_file)
    inputs = [s.cases_file] + ([s.patches] if s.policy == "precomputed" and s.patches else [])
    # After the inputs are read (a bad case file replaces nothing). Every ledger writer treats an
    # existing folder alike: refused unless --overwrite (docs/repair.md).
    claim_folder(s.ledger, overwrite=s.overwrite)
    # A bar only on a terminal: in CI logs and pipes it is noise; the summary line still follows.
    progress: Progress = progress_bar(s.quiet)
    summary = loop.replay(
        all_cases,
        pol,
        s.ledger,
        budgets=budgets,
        seed=s.seed,
        inputs=inputs,
        record_latency=not s.no_latency,
        progress=progress,
        protocol=loop.Protocol(s.feedback.value, s.send_allowed, s.samples),
    )
    if s.json_out:
        _emit(pretty_json(summary.as_json()))
    if not s.quiet:
        o = summary.outcomes
        ops = ", ".join(f"{k} {v}" for k, v in summary.ops_by_type.items()) or "none"
        refused = ", ".join(f"{k} {v}" for k, v in summary.refusals.items()) or "none"
        say(
            err,
            f"{summary.cases} cases, policy {s.policy}: {o['accepted']} accepted, {o['abstained']} abstained, "
            f"{o['exhausted']} exhausted, {o['valid_at_start']} valid at start; {summary.steps} steps; "
            f"ops {ops}; refused {refused}",
        )
        say_anchor(err, f"ledger {s.ledger}: {summary.entries} entries, frozen", summary.head, summary.root)


def _rate_cells(r: dict[str, Any] | None, digits: int = 3) -> tuple[str, str, str]:
    """A rate as (value, 95% interval, numerator/denominator) cells, with `digits` decimals."""
    if not r or r.get("value") is None:
        return "–", "", ""
    iv = "" if r.get("low") is None else f"[{r['low']:.{digits}f}, {r['high']:.{digits}f}]"
    nd = "" if r.get("numerator") is None else f"{r['numerator']}/{r['denominator']}"
    return f"{r['value']:.{digits}f}", iv, nd


ScoreLedgerArg = Annotated[
    Path | None,
    typer.Argument(metavar="LEDGER", help="A frozen repair ledger folder (default: paths.repair_ledger)."),
]
TargetsInOpt = Annotated[
    Path | None,
    typer.Option("--targets", metavar="FILE", help="The hidden targets file (default: paths.targets)."),
]
CompareLedgerOpt = Annotated[
    Path | None,
    typer.Option("--compare", metavar="DIR", help="Another ledger on the same cases: paired differences."),
]
ScoreJsonFlag = Annotated[bool, json_flag("Print the JSON report on stdout (instead of the tables).")]
ScoreOutputOpt = Annotated[Path | None, output_option("Write the JSON report to FILE (atomically).")]
ScoreMarkdownOpt = Annotated[
    Path | None, markdown_option("Write a Markdown report to FILE ('-' for stdout).")
]
ScoreBootstrapOpt = Annotated[
    int | None, bootstrap_option("Bootstrap resamples (default: audit.bootstrap, 1000).")
]
CoverageRiskFlag = Annotated[
    bool,
    typer.Option(
        "--coverage-risk",
        help="Add the coverage-risk curve of this one run (confidence thresholds swept).",
    ),
]
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        metavar="'PROG ARGS'",
        help="After the freeze, run 'PROG ARGS' per dispatched case (final and target JSON on stdin, "
        '{"success": bool} on stdout): semantic success.',
    ),
]
ExecutorTimeoutOpt = Annotated[
    float,
    typer.Option("--executor-timeout", metavar="SECONDS", help="Seconds per executor run."),
]


@dataclass(frozen=True, kw_only=True)
class RepairScoreSettings(Settings):
    """`contracts repair-score`, resolved: files from `[paths]`, seed from `repair.seed`, bootstrap from
    `audit.bootstrap`."""

    ledger: Path = setting("paths.repair_ledger", required="ledger folder (LEDGER)")
    targets: Path = setting("paths.targets", required="targets file (--targets)")
    seed: int = setting("repair.seed")
    bootstrap: int = setting("audit.bootstrap")
    compare: Path | None
    as_json: bool
    json_file: Path | None
    markdown_file: Path | None
    coverage_risk: bool
    executor: str | None
    executor_timeout: float
    quiet: bool
    plain: bool

    def check_given(self) -> None:
        """One report on stdout at most."""
        if self.as_json and str(self.markdown_file) == "-":
            fail("only one of --json and --markdown - can go to stdout", field="markdown")


def repair_score_command(
    ledger: ScoreLedgerArg = None,
    targets: TargetsInOpt = None,
    compare: CompareLedgerOpt = None,
    as_json: ScoreJsonFlag = False,
    json_file: ScoreOutputOpt = None,
    markdown_file: ScoreMarkdownOpt = None,
    bootstrap: ScoreBootstrapOpt = None,
    coverage_risk: CoverageRiskFlag = False,
    executor: ExecutorOpt = None,
    executor_timeout: ExecutorTimeoutOpt = 10.0,
    seed: RepairSeedOpt = None,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Verify a frozen repair ledger, join the targets, and report metrics with 95% intervals."""
    _repair_score(resolved(RepairScoreSettings, locals()))


def _repair_score(s: RepairScoreSettings) -> None:
    """Score the verified ledger, write the reports asked for, and show the tables unless one of them
    went to stdout."""
    import output_contracts.repair.score as score
    from output_contracts.schemas import validate

    report = _score(s)
    validate(report, "repair-score", source="repair-score report")
    to_stdout = False
    if s.json_file is not None:
        atomic_write_bytes(s.json_file, pretty_json(report))
    if s.as_json:
        _emit(pretty_json(report))
        to_stdout = True
    if s.markdown_file is not None:
        text = score.markdown(report)
        if str(s.markdown_file) == "-":
            out.file.write(text)
            to_stdout = True
        else:
            atomic_write_bytes(s.markdown_file, text.encode())
    if not to_stdout:
        table, shown = _score_table(report)
        if s.plain:
            show(out, table, plain=True)
            return
        show(out, table)
        _score_notes(report, shown)
    led = report["ledger"]
    if s.quiet:
        return
    say_anchor(err, f"ledger verified: {led['entries']} entries", led["head"], led["root"])


def _score(s: RepairScoreSettings) -> dict[str, Any]:
    """The score report; a ledger that does not verify or is not frozen is refused (exit 1)."""
    import output_contracts.repair.score as score
    from output_contracts.repair.executor import Executor

    try:
        with phase(s.quiet, "repair-score"):
            return score.score(
                s.ledger,
                s.targets,
                seed=s.seed,
                bootstrap=s.bootstrap,
                compare=s.compare,
                with_curve=s.coverage_risk,
                executor=Executor.from_string(s.executor, s.executor_timeout) if s.executor else None,
            )
    except score.LedgerRefused as e:
        say(err, f"refused: {e.message}", style="red")
        for p in e.problems[:5]:
            say(err, f"  {p.get('code')}: {p.get('detail')}")
        raise typer.Exit(1) from None


def _score_table(report: dict[str, Any]) -> tuple[Grid, list[str]]:
    """The metrics table with intervals, and the metrics it shows (whose definitions follow it)."""
    import output_contracts.repair.score as score

    pol = (report.get("policy") or {}).get("name", "?")
    table = Grid(
        [Column("metric", "text"), Column("value", "num"), Column("95% CI", "num"), Column("n/d", "num")],
        title=f"repair score: {pol}, {report['cases']} cases (95% bootstrap CI)",
    )

    def rate(label: str, r: dict[str, Any] | None, digits: int = 3) -> None:
        table.add_row(label, *_rate_cells(r, digits))

    def note(label: str, value: str) -> None:
        table.add_row(label, value, "", "")

    shown = list(score.RATE_METRICS)
    for m in score.RATE_METRICS:
        rate(m, report[m])
    for k, v in report["abstention"].items():
        rate(f"abstention {k}", v)
        shown.append(f"abstention_{k}")
    note("unsafe dispatches U", str(report["unsafe_dispatch_count"]))
    if report["semantic_success"] is not None:
        ex = report["executor"]
        errs = ", ".join(f"{k} {v}" for k, v in ex["errors"].items()) or "no errors"
        rate("semantic_success", report["semantic_success"])
        note("executor runs", f"{ex['calls']} ({errs})")
        shown.append("semantic_success")
    if report["trajectory_success"] is not None:
        rate("trajectory_success", report["trajectory_success"])
        shown.append("trajectory_success")
    # wall-clock milliseconds to 0.1 ms: finer digits are noise, and they would widen the CI column
    # (and so every row) whenever a slow step pushes the interval past 10 ms
    rate("p95 step latency ms", report["latency_p95_ms"], digits=1)
    for fam, f in report["by_family"].items():
        rate(f"{fam} ({f['cases']}) M_object", f["m_object"])
    for fam, f in report["by_tool_family"].items():
        rate(f"tools {fam}.* ({f['cases']}) M_object", f["m_object"])
    return table, shown


def _score_notes(report: dict[str, Any], shown: list[str]) -> None:
    """Under the table: ops by type, the paired differences (`--compare`), the coverage-risk curve,
    and the definition of each metric shown."""
    ops = ", ".join(f"{k} {v}" for k, v in report["ops_by_type"].items()) or "none"
    say(out, f"ops: {ops}")
    if report.get("compare"):
        other = report["compare"]["policy"].get("name", "?")
        for m, d in report["compare"]["metrics"].items():
            if d["difference"] is not None:
                t, eff_ = d["test"], d["effect"]
                eff = "" if eff_["value"] is None else f", {eff_['name']} {eff_['value']:+.3f}"
                say(
                    out,
                    f"Δ {m} vs {other}: {d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]; "
                    f"{t['name']} {t['this_only']}:{t['other_only']} of {t['pairs']}, p={t['p']:.4g}{eff}",
                )
    curve = report.get("coverage_risk")
    if curve:
        ct = Grid(
            [Column(c, "num") for c in ("threshold", "answered", "wrong", "coverage", "risk")],
            title=f"coverage-risk, one run ({curve['cases']} cases)",
        )
        for p in curve["points"]:
            risk = "–" if p["risk"] is None else f"{p['risk']:.3f}"
            ct.add_row(f"{p['threshold']:.3f}", p["answered"], p["wrong"], f"{p['coverage']:.3f}", risk)
        show(out, ct)
    say(out, "definitions (numerator / denominator):")
    for m in shown:
        say(out, f"  {m}: {report['definitions'][m]}")


def split_audit_command(
    train: Annotated[Path, typer.Argument(metavar="TRAIN", help="The first (training) cases file.")],
    test: Annotated[Path, typer.Argument(metavar="TEST", help="The second (test) cases file.")],
    train_targets: Annotated[
        Path | None,
        typer.Option(
            "--train-targets", metavar="FILE", help="Targets of TRAIN (enables target fingerprints)."
        ),
    ] = None,
    test_targets: Annotated[
        Path | None,
        typer.Option("--test-targets", metavar="FILE", help="Targets of TEST (enables target fingerprints)."),
    ] = None,
    json_out: Annotated[bool, json_flag("Print the audit as JSON on stdout.")] = False,
    quiet: QuietFlag = False,
) -> None:
    """Check that two case sets share no fingerprint of any kind; exit 1 listing every overlap."""
    import output_contracts.repair.cases as cases
    import output_contracts.repair.split_audit as audit

    if (train_targets is None) != (test_targets is None):
        fail("give both --train-targets and --test-targets, or neither", field="train_targets")
    tr, te = cases.read_cases(train), cases.read_cases(test)
    trt = cases.read_targets(train_targets) if train_targets else None
    tet = cases.read_targets(test_targets) if test_targets else None
    rep = audit.split_audit(tr, te, trt, tet)
    if json_out:
        _emit(pretty_json(rep.as_json()))
    else:
        for o in rep.overlaps:
            out.file.write(f"{o.kind}\t{o.value}\ttrain={','.join(o.train)}\ttest={','.join(o.test)}\n")
    counts = ", ".join(f"{k} {v}" for k, v in rep.counts().items() if v)
    skipped = f"; skipped (no targets): {', '.join(rep.skipped)}" if rep.skipped else ""
    if quiet:
        pass
    elif rep.clean:
        say(
            err,
            f"no overlap between {rep.train_cases} and {rep.test_cases} cases over {len(rep.checked)} kinds{skipped}",
        )
    else:
        say(err, f"OVERLAP: {len(rep.overlaps)} shared fingerprint(s): {counts}{skipped}", style="red")
    findings_exit(not rep.clean)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("repair-cases")(repair_cases_command)
    app.command("repair-replay")(repair_replay_command)
    app.command("repair-score")(repair_score_command)
    app.command("split-audit")(split_audit_command)
