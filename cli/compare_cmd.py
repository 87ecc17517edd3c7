"""`contracts compare BASELINE MONITOR` (docs/compare.md): two runs of an agent on the same tasks.

Thin layer: open each arm (a corpus folder, or trace files ingested into a temporary corpus), call
`output_contracts.audit.compare.compare`, render the report (a rich table on stdout, or `--json`), write
`--markdown`, and exit 1 when a gate fails.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from output_contracts.choices import DEFAULT_STRATA, PairBy
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    MarkdownOpt,
    PlainFlag,
    QuietFlag,
    bootstrap_option,
    config,
    contracts_option,
    err,
    format_option,
    out,
    progress_bar,
    seed_option,
)
from output_contracts.cli.common import json_flag as json_flag_option
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.config import MAX_BOOTSTRAP
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json

if TYPE_CHECKING:
    from output_contracts.audit.compare import CompareReport, Difference


_DEFAULT_CUTS = ",".join(f"{c:g}" for c in DEFAULT_STRATA)


def parse_strata(text: str) -> tuple[float, ...]:
    """`0.16,0.65` -> (0.16, 0.65); `none` (or empty) -> no strata cut (one stratum)."""
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(float(t) for t in text.split(","))
    except ValueError:
        raise UsageError(
            f"--strata takes comma-separated shares like 0.16,0.65, got {text!r}", field="--strata"
        ) from None


def _row(t: Grid, label: str, d: Difference) -> None:
    from output_contracts.audit.compare_render import p_text, points_text, wl_text
    from output_contracts.audit.report_model import pct

    t.add_row(
        label,
        d.units,
        pct(d.baseline, 1),
        pct(d.monitor, 1),
        points_text(d.difference),
        wl_text(d),
        p_text(d.p_value),
    )


def _table(r: CompareReport) -> Grid:
    """Completion per arm and the paired difference, overall and per stratum (fits 80 columns)."""
    t = Grid(
        [
            Column("stratum", "text"),
            *(Column(c, "num") for c in ("units", "base", "monitor", "diff (points) [95%]", "W/L", "p")),
        ],
        title="Paired completion, by the baseline's per-task completion",
    )
    _row(t, "all", r.overall)
    for s in r.strata:
        _row(t, s.label, s)
    return t


def _render_text(r: CompareReport, plain: bool = False) -> None:
    from output_contracts.audit.compare_render import (
        arm_sentence,
        cost_sentence,
        pairing_sentence,
        receipts_sentence,
    )

    if plain:
        show(out, _table(r), plain=True)
        return
    say(out, f"compare {r.baseline.name} (baseline) vs {r.monitor.name} (monitor)")
    say(out, pairing_sentence(r))
    say(out, arm_sentence(r.baseline, "baseline"))
    say(out, arm_sentence(r.monitor, "monitor"))
    show(out, _table(r))
    say(out, cost_sentence(r.cost))
    say(out, receipts_sentence(r.receipts))
    for g in r.gates:
        say(out, ("PASS " if g.passed else "FAIL ") + g.message())


def compare_cmd(
    baseline: Annotated[
        Path,
        typer.Argument(
            metavar="BASELINE", help="Baseline arm: a corpus folder, or a trace file or folder of them."
        ),
    ],
    monitor: Annotated[
        Path,
        typer.Argument(
            metavar="MONITOR", help="Monitor arm: a corpus folder, or a trace file or folder of them."
        ),
    ],
    threshold: Annotated[
        float, typer.Option("--threshold", metavar="R", help="An episode completes when its reward >= R.")
    ] = 1.0,
    strata: Annotated[
        str,
        typer.Option(
            "--strata",
            metavar="CUTS",
            help="Cut points of the baseline's per-task completion, comma-separated ('none' = no strata).",
        ),
    ] = _DEFAULT_CUTS,
    pair_by: Annotated[
        PairBy,
        typer.Option("--pair-by", help="auto: by (task, trial) when both arms record trials, else by task."),
    ] = PairBy.auto,
    bootstrap: Annotated[
        int | None, bootstrap_option("Bootstrap resamples (default: audit.bootstrap, 1000).")
    ] = None,
    seed: Annotated[int | None, seed_option("Bootstrap seed (default: mine.seed, 13).")] = None,
    contracts_file: Annotated[
        Path | None,
        contracts_option(
            "Check the monitor arm's calls with this contract set and count the receipts "
            "(default: count receipts the traces carry)."
        ),
    ] = None,
    fmt: Annotated[str, format_option("Trace format of files given (default: auto-detect).")] = "auto",
    json_flag: Annotated[bool, json_flag_option("Print the JSON report on stdout.")] = False,
    md_path: MarkdownOpt = None,
    min_gain: Annotated[
        float | None,
        typer.Option(
            "--min-gain", metavar="X", help="Gate: exit 1 when the paired difference is below X (points)."
        ),
    ] = None,
    max_p: Annotated[
        float | None,
        typer.Option(
            "--max-p", metavar="P", help="Gate: exit 1 when the exact McNemar p-value exceeds this."
        ),
    ] = None,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Paired completion of two runs on the same tasks: difference, McNemar, strata, cost, receipts."""
    from output_contracts.audit.compare import compare
    from output_contracts.audit.compare_render import p_text, points_text, to_markdown, wl_text
    from output_contracts.checks.checker import load_contracts
    from output_contracts.traces.sources import open_corpus

    cfg = config()
    n_boot = int(cfg.get("audit.bootstrap", bootstrap))
    if not 0 <= n_boot <= MAX_BOOTSTRAP:
        raise UsageError(
            f"--bootstrap must be between 0 and {MAX_BOOTSTRAP:,}, got {n_boot}", field="--bootstrap"
        )
    s = int(cfg.get("mine.seed", seed))
    if max_p is not None and not 0.0 <= max_p <= 1.0:
        raise UsageError(f"--max-p must be between 0 and 1, got {max_p}", field="--max-p")
    cuts = parse_strata(strata)
    cs = load_contracts(contracts_file) if contracts_file is not None else None
    with ExitStack() as stack:
        bar = progress_bar(quiet)
        base = stack.enter_context(
            open_corpus([baseline], format=fmt, prefix="contracts-compare-", progress=bar)
        )
        mon = stack.enter_context(
            open_corpus([monitor], format=fmt, prefix="contracts-compare-", progress=bar)
        )
        bar.start("compare", None)
        stack.callback(bar.finish)
        report = compare(
            base,
            mon,
            contracts=cs,
            names=(baseline.name, monitor.name),
            threshold=threshold,
            strata=cuts,
            bootstrap=n_boot,
            seed=s,
            pair_by=pair_by,
            min_gain=min_gain,
            max_p=max_p,
        )
    if md_path is not None:
        atomic_write_bytes(md_path, to_markdown(report).encode("utf-8"))
    if json_flag:
        out.file.write(pretty_json(report.to_json()).decode("utf-8"))
    else:
        _render_text(report, plain)
    if not quiet:
        o = report.overall
        say(
            err,
            f"difference {points_text(o.difference)} points over {o.units} units; W/L {wl_text(o)}; "
            f"p = {p_text(o.p_value)}",
        )
        if md_path is not None:
            say(err, f"wrote Markdown report {md_path}")
    failed = [g for g in report.gates if not g.passed]
    if failed:
        for g in failed:
            say(err, f"gate failed: {g.message()}", style="red")
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    """Add `compare` to the root app."""
    app.command("compare")(compare_cmd)
