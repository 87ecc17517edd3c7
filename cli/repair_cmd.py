"""`contracts repair-cases | repair-replay | repair-score | split-audit` (library: output_contracts.repair).

Exit codes: 0 done; 1 a finding (`repair-score` on a ledger that does not verify or is not frozen,
`split-audit` with any overlap); 2 the command cannot run (bad input, missing option).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from output_contracts.choices import FeedbackView, PolicyName
from output_contracts.cli.common import (
    OverwriteFlag,
    PlainFlag,
    QuietFlag,
    bootstrap_option,
    config,
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
from output_contracts.cli.tables import Column, Grid, say, say_anchor, show
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.progress import Progress

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


def repair_cases_command(
    src: Annotated[
        Path | None,
        typer.Argument(
            metavar="SRC",
            help="A BFCL question file (JSON Lines; give --answers) or an ingested corpus folder "
            "(default: paths.corpus).",
        ),
    ] = None,
    output: Annotated[Path | None, output_option("Cases file to write (JSONL).")] = None,
    targets: Annotated[
        Path | None,
        typer.Option(
            "--targets", metavar="FILE", help="Hidden targets file to write (kept apart from cases)."
        ),
    ] = None,
    answers: Annotated[
        Path | None,
        typer.Option("--answers", metavar="FILE", help="BFCL possible-answer file for a BFCL SRC."),
    ] = None,
    registry: Annotated[
        Path | None, registry_option("tools.json for a corpus SRC (default: paths.registry).")
    ] = None,
    kinds: Annotated[
        list[str] | None,
        typer.Option(
            "--kinds",
            metavar="KIND,...",
            show_default=False,
            help="Families, comma-separated or repeated; 'hard' = the five harder ones, 'stress' = the six "
            "stress families (ambiguous_pointer, stale_schema, injected_text, malformed_text, unavailable_tool, long_horizon), "
            "'all' = every one (default: missing_required,wrong_type).",
        ),
    ] = None,
    per_kind: Annotated[
        int, typer.Option("--per-kind", metavar="N", help="Cases per family, drawn with the seed.")
    ] = 32,
    patches: Annotated[
        Path | None,
        typer.Option(
            "--patches",
            metavar="FILE",
            help="Also write each case's canonical patch as a precomputed policy file.",
        ),
    ] = None,
    disjoint_from: Annotated[
        Path | None,
        typer.Option(
            "--disjoint-from",
            metavar="FILE",
            help="Skip any case sharing a split-audit fingerprint with this case set.",
        ),
    ] = None,
    disjoint_targets: Annotated[
        Path | None,
        typer.Option(
            "--disjoint-targets", metavar="FILE", help="Targets of --disjoint-from (adds target kinds)."
        ),
    ] = None,
    seed: RepairSeedOpt = None,
    json_out: Annotated[bool, json_flag("Print the build summary as JSON on stdout.")] = False,
    quiet: QuietFlag = False,
) -> None:
    """Build repair cases by corrupting correct calls; targets go to a separate file."""
    import output_contracts.repair.cases as cases
    import output_contracts.repair.split_audit as audit

    cfg = config()
    seed_v = int(cfg.get("repair.seed", seed))
    cases_path = cfg.require_path("paths.cases", output, "cases file (-o)")
    targets_path = cfg.require_path("paths.targets", targets, "targets file (--targets)")
    src = cfg.require_path("paths.corpus", src, "source (SRC: a BFCL file or a corpus folder)")
    if cases_path.resolve() == targets_path.resolve():
        fail("the cases and targets files must differ: targets are hidden from replay", field="targets")
    from output_contracts.traces.sources import is_corpus

    if is_corpus(src):
        if answers is not None:
            fail(
                "--answers is for a BFCL SRC; a corpus SRC takes --registry", field="answers", source=str(src)
            )
        reg = cfg.require_path("paths.registry", registry, "registry (--registry) for a corpus SRC")
        sources, skipped = cases.load_corpus_calls(src, reg)
    else:
        if answers is None:
            fail("a BFCL SRC needs --answers (its possible-answer file)", field="answers", source=str(src))
        assert answers is not None
        sources, skipped = cases.load_bfcl(src, answers)
    if not sources:  # building from nothing would write two empty files and report success
        fail("no correct call to build cases from (an empty input)", code="E_INPUT", source=str(src))
    exclude = None
    if disjoint_from is not None:
        other = cases.read_cases(disjoint_from)
        other_t = cases.read_targets(disjoint_targets) if disjoint_targets is not None else None
        exclude = audit.excluder(other, other_t)
    with phase(quiet, "repair-cases"):
        rep = cases.build_cases(sources, kinds=_kinds(kinds), per_kind=per_kind, seed=seed_v, exclude=exclude)
    cases.write_cases(cases_path, rep.cases)
    cases.write_targets(targets_path, rep.targets)
    if patches is not None:
        cases.write_patches(patches, rep.targets)
    summary = {
        "cases": len(rep.cases),
        "per_family": rep.per_family,
        "sources": rep.sources,
        "skipped_sources": skipped,
        "skipped": rep.skipped,
        "seed": seed_v,
        "files": {
            "cases": str(cases_path),
            "targets": str(targets_path),
            "patches": str(patches) if patches else None,
        },
    }
    if json_out:
        _emit(pretty_json(summary))
    if not quiet:
        fams = ", ".join(f"{k} {v}" for k, v in rep.per_family.items())
        say(
            err,
            f"{len(rep.cases)} cases from {rep.sources} correct calls (seed {seed_v}): {fams}; "
            f"cases -> {cases_path}, targets -> {targets_path}"
            + (f", patches -> {patches}" if patches else ""),
        )
        short = {k: v for k, v in rep.per_family.items() if v < per_kind}
        if short:
            say(err, f"warning: fewer than {per_kind} cases for {', '.join(short)}", style="yellow")


def repair_replay_command(
    cases_file: Annotated[
        Path | None, typer.Argument(metavar="CASES", help="Cases file (default: paths.cases).")
    ] = None,
    policy: Annotated[
        PolicyName | None,
        typer.Option("--policy", help="precomputed | heuristic | command (default: repair.policy)."),
    ] = None,
    patches: Annotated[
        Path | None,
        typer.Option("--patches", metavar="FILE", help="Precomputed policy file (for --policy precomputed)."),
    ] = None,
    command: Annotated[
        str | None,
        typer.Option(
            "--command",
            metavar="'PROG ARGS'",
            help="Program and arguments for --policy command (split like a shell, run without one).",
        ),
    ] = None,
    timeout: Annotated[float, timeout_option("Seconds per command-policy step.")] = 10.0,
    ledger: Annotated[
        Path | None, ledger_option("New ledger folder to write (default: paths.repair_ledger).")
    ] = None,
    overwrite: OverwriteFlag = False,
    max_ops: Annotated[
        int | None, typer.Option("--max-ops", metavar="N", help="Op budget per case (default 2).")
    ] = None,
    max_attempts: Annotated[
        int | None, typer.Option("--max-attempts", metavar="N", help="Attempts per case (default 2).")
    ] = None,
    abstain_below: Annotated[
        float | None,
        typer.Option(
            "--abstain-below",
            metavar="C",
            help="Abstain instead of applying a patch whose confidence is below C.",
        ),
    ] = None,
    no_latency: Annotated[
        bool,
        typer.Option(
            "--no-latency", help="Record no step latencies: the ledger entries become byte-reproducible."
        ),
    ] = False,
    feedback: Annotated[
        FeedbackView,
        typer.Option("--feedback", help="What of the verifier report the policy is shown (an ablation)."),
    ] = FeedbackView.full,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            metavar="G",
            help="Also record G candidate patches per state with their verifiable rewards (group data).",
        ),
    ] = 0,
    send_allowed: Annotated[
        bool, typer.Option("--send-allowed", help="Send the mask's allowed-action set with the state.")
    ] = False,
    seed: RepairSeedOpt = None,
    json_out: Annotated[bool, json_flag("Print the summary as JSON on stdout.")] = False,
    quiet: QuietFlag = False,
) -> None:
    """Run every case through a policy, the action mask and the validator; log each step; freeze the ledger."""
    import output_contracts.repair.cases as cases
    import output_contracts.repair.loop as loop
    import output_contracts.repair.policies as policies
    from output_contracts.ledger import claim_folder

    cfg = config()
    cases_path = cfg.require_path("paths.cases", cases_file, "cases file (CASES)")
    ledger_dir = cfg.require_path("paths.repair_ledger", ledger, "ledger folder (--ledger)")
    name = str(cfg.get("repair.policy", policy.value if policy else None))
    budgets = loop.Budgets(
        int(cfg.get("repair.max_ops", max_ops)),
        int(cfg.get("repair.max_attempts", max_attempts)),
        abstain_below,
    )
    seed_v = int(cfg.get("repair.seed", seed))
    pol = policies.make_policy(name, patches=patches, command=command, timeout=timeout)
    all_cases = cases.read_cases(cases_path)
    inputs = [cases_path] + ([patches] if name == "precomputed" and patches else [])
    # After the inputs are read (a bad case file replaces nothing). Every ledger writer treats an
    # existing folder alike: refused unless --overwrite (docs/repair.md).
    claim_folder(ledger_dir, overwrite=overwrite)
    # A bar only on a terminal: in CI logs and pipes it is noise; the summary line still follows.
    progress: Progress = progress_bar(quiet)
    summary = loop.replay(
        all_cases,
        pol,
        ledger_dir,
        budgets=budgets,
        seed=seed_v,
        inputs=inputs,
        record_latency=not no_latency,
        progress=progress,
        protocol=loop.Protocol(feedback.value, send_allowed, samples),
    )
    if json_out:
        _emit(pretty_json(summary.as_json()))
    if not quiet:
        o = summary.outcomes
        ops = ", ".join(f"{k} {v}" for k, v in summary.ops_by_type.items()) or "none"
        refused = ", ".join(f"{k} {v}" for k, v in summary.refusals.items()) or "none"
        say(
            err,
            f"{summary.cases} cases, policy {name}: {o['accepted']} accepted, {o['abstained']} abstained, "
            f"{o['exhausted']} exhausted, {o['valid_at_start']} valid at start; {summary.steps} steps; "
            f"ops {ops}; refused {refused}",
        )
        say_anchor(err, f"ledger {ledger_dir}: {summary.entries} entries, frozen", summary.head, summary.root)


def _rate_cells(r: dict[str, Any] | None, digits: int = 3) -> tuple[str, str, str]:
    """A rate as (value, 95% interval, numerator/denominator) cells, with `digits` decimals."""
    if not r or r.get("value") is None:
        return "–", "", ""
    iv = "" if r.get("low") is None else f"[{r['low']:.{digits}f}, {r['high']:.{digits}f}]"
    nd = "" if r.get("numerator") is None else f"{r['numerator']}/{r['denominator']}"
    return f"{r['value']:.{digits}f}", iv, nd


def repair_score_command(
    ledger: Annotated[
        Path | None,
        typer.Argument(
            metavar="LEDGER", help="A frozen repair ledger folder (default: paths.repair_ledger)."
        ),
    ] = None,
    targets: Annotated[
        Path | None,
        typer.Option("--targets", metavar="FILE", help="The hidden targets file (default: paths.targets)."),
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(
            "--compare", metavar="DIR", help="Another ledger on the same cases: paired differences."
        ),
    ] = None,
    as_json: Annotated[bool, json_flag("Print the JSON report on stdout (instead of the tables).")] = False,
    json_file: Annotated[Path | None, output_option("Write the JSON report to FILE (atomically).")] = None,
    markdown_file: Annotated[
        Path | None, markdown_option("Write a Markdown report to FILE ('-' for stdout).")
    ] = None,
    bootstrap: Annotated[
        int | None, bootstrap_option("Bootstrap resamples (default: audit.bootstrap, 1000).")
    ] = None,
    coverage_risk: Annotated[
        bool,
        typer.Option(
            "--coverage-risk",
            help="Add the coverage-risk curve of this one run (confidence thresholds swept).",
        ),
    ] = False,
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor",
            metavar="'PROG ARGS'",
            help="After the freeze, run 'PROG ARGS' per dispatched case (final and target JSON on stdin, "
            '{"success": bool} on stdout): semantic success.',
        ),
    ] = None,
    executor_timeout: Annotated[
        float,
        typer.Option("--executor-timeout", metavar="SECONDS", help="Seconds per executor run."),
    ] = 10.0,
    seed: RepairSeedOpt = None,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Verify a frozen repair ledger, join the targets, and report metrics with 95% intervals."""
    import output_contracts.repair.score as score
    from output_contracts.repair.executor import Executor

    if as_json and str(markdown_file) == "-":
        fail("only one of --json and --markdown - can go to stdout", field="markdown")
    cfg = config()
    ledger_dir = cfg.require_path("paths.repair_ledger", ledger, "ledger folder (LEDGER)")
    targets_path = cfg.require_path("paths.targets", targets, "targets file (--targets)")
    try:
        with phase(quiet, "repair-score"):
            report = score.score(
                ledger_dir,
                targets_path,
                seed=int(cfg.get("repair.seed", seed)),
                bootstrap=int(cfg.get("audit.bootstrap", bootstrap)),
                compare=compare,
                with_curve=coverage_risk,
                executor=Executor.from_string(executor, executor_timeout) if executor else None,
            )
    except score.LedgerRefused as e:
        say(err, f"refused: {e.message}", style="red")
        for p in e.problems[:5]:
            say(err, f"  {p.get('code')}: {p.get('detail')}")
        raise typer.Exit(1) from None
    from output_contracts.schemas import validate

    validate(report, "repair-score", source="repair-score report")
    to_stdout = False
    if json_file is not None:
        atomic_write_bytes(json_file, pretty_json(report))
    if as_json:
        _emit(pretty_json(report))
        to_stdout = True
    if markdown_file is not None:
        text = score.markdown(report)
        if str(markdown_file) == "-":
            out.file.write(text)
            to_stdout = True
        else:
            atomic_write_bytes(markdown_file, text.encode())
    if not to_stdout:
        pol = (report.get("policy") or {}).get("name", "?")
        table = Grid(
            [Column("metric", "text"), Column("value", "num"), Column("95% CI", "num"), Column("n/d", "num")],
            title=f"repair score: {pol}, {report['cases']} cases (95% bootstrap CI)",
        )

        def rate(label: str, r: dict[str, Any] | None, digits: int = 3) -> None:
            table.add_row(label, *_rate_cells(r, digits))

        def note(label: str, value: str) -> None:
            table.add_row(label, value, "", "")

        defs = report["definitions"]
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
        if plain:
            show(out, table, plain=True)
            return
        show(out, table)
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
            say(out, f"  {m}: {defs[m]}")
    led = report["ledger"]
    if quiet:
        return
    say_anchor(err, f"ledger verified: {led['entries']} entries", led["head"], led["root"])


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
