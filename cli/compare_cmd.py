"""`contracts compare BASELINE MONITOR` (docs/compare.md): two runs of an agent on the same tasks.

Thin layer: open each arm (a corpus folder, or trace files ingested into a temporary corpus), call
`output_contracts.audit.compare.compare`, render the report (a rich table on stdout, or `--json`), write
`--markdown`, and exit 1 when a gate fails.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from output_contracts.choices import DEFAULT_STRATA, PairBy
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    AllowEmptyFlag,
    MarkdownOpt,
    PlainFlag,
    QuietFlag,
    bootstrap_option,
    contracts_option,
    err,
    format_option,
    out,
    progress_bar,
    seed_option,
)
from output_contracts.cli.common import json_flag as json_flag_option
from output_contracts.cli.settings import check_bootstrap, resolved
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import atomic_write_bytes, pretty_json
from output_contracts.settings import Settings, setting

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


BaselineArg = Annotated[
    Path,
    typer.Argument(
        metavar="BASELINE", help="Baseline arm: a corpus folder, or a trace file or folder of them."
    ),
]
MonitorArg = Annotated[
    Path,
    typer.Argument(
        metavar="MONITOR", help="Monitor arm: a corpus folder, or a trace file or folder of them."
    ),
]
ThresholdOpt = Annotated[
    float, typer.Option("--threshold", metavar="R", help="An episode completes when its reward >= R.")
]
StrataOpt = Annotated[
    str,
    typer.Option(
        "--strata",
        metavar="CUTS",
        help="Cut points of the baseline's per-task completion, comma-separated ('none' = no strata).",
    ),
]
PairByOpt = Annotated[
    PairBy,
    typer.Option("--pair-by", help="auto: by (task, trial) when both arms record trials, else by task."),
]
CompareBootstrapOpt = Annotated[
    int | None, bootstrap_option("Bootstrap resamples (default: audit.bootstrap, 1000).")
]
CompareSeedOpt = Annotated[int | None, seed_option("Bootstrap seed (default: mine.seed, 13).")]
CompareContractsOpt = Annotated[
    Path | None,
    contracts_option(
        "Check the monitor arm's calls with this contract set and count the receipts "
        "(default: count receipts the traces carry)."
    ),
]
CompareFormatOpt = Annotated[str, format_option("Trace format of files given (default: auto-detect).")]
CompareJsonFlag = Annotated[bool, json_flag_option("Print the JSON report on stdout.")]
MinGainOpt = Annotated[
    float | None,
    typer.Option(
        "--min-gain", metavar="X", help="Gate: exit 1 when the paired difference is below X (points)."
    ),
]
MaxPOpt = Annotated[
    float | None,
    typer.Option("--max-p", metavar="P", help="Gate: exit 1 when the exact McNemar p-value exceeds this."),
]


@dataclass(frozen=True, kw_only=True)
class CompareSettings(Settings):
    """`contracts compare`, resolved: bootstrap from `audit.bootstrap`, seed from `mine.seed`."""

    bootstrap: int = setting("audit.bootstrap")
    seed: int = setting("mine.seed")
    baseline: Path
    monitor: Path
    threshold: float
    strata: str
    pair_by: PairBy
    contracts_file: Path | None
    fmt: str
    json_flag: bool
    md_path: Path | None
    min_gain: float | None
    max_p: float | None
    allow_empty: bool
    quiet: bool
    plain: bool

    def check(self) -> None:
        """`--bootstrap` and `--max-p` within their bounds."""
        check_bootstrap(self.bootstrap)
        if self.max_p is not None and not 0.0 <= self.max_p <= 1.0:
            raise UsageError(f"--max-p must be between 0 and 1, got {self.max_p}", field="--max-p")


def compare_cmd(
    baseline: BaselineArg,
    monitor: MonitorArg,
    threshold: ThresholdOpt = 1.0,
    strata: StrataOpt = _DEFAULT_CUTS,
    pair_by: PairByOpt = PairBy.auto,
    bootstrap: CompareBootstrapOpt = None,
    seed: CompareSeedOpt = None,
    contracts_file: CompareContractsOpt = None,
    fmt: CompareFormatOpt = "auto",
    json_flag: CompareJsonFlag = False,
    md_path: MarkdownOpt = None,
    min_gain: MinGainOpt = None,
    max_p: MaxPOpt = None,
    allow_empty: AllowEmptyFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Paired completion of two runs on the same tasks: difference, McNemar, strata, cost, receipts."""
    _compare(resolved(CompareSettings, locals()))


def _compare(s: CompareSettings) -> None:
    """Open both arms, compare them, write and render the report, exit 1 on a failed gate."""
    from output_contracts.audit.compare import compare
    from output_contracts.audit.compare_render import p_text, points_text, to_markdown, wl_text
    from output_contracts.checks.checker import load_contracts
    from output_contracts.traces.sources import open_corpus

    cuts = parse_strata(s.strata)
    cs = load_contracts(s.contracts_file) if s.contracts_file is not None else None
    with ExitStack() as stack:
        bar = progress_bar(s.quiet)
        base = stack.enter_context(
            open_corpus(
                [s.baseline],
                format=s.fmt,
                prefix="contracts-compare-",
                progress=bar,
                allow_empty=s.allow_empty,
            )
        )
        mon = stack.enter_context(
            open_corpus(
                [s.monitor],
                format=s.fmt,
                prefix="contracts-compare-",
                progress=bar,
                allow_empty=s.allow_empty,
            )
        )
        bar.start("compare", None)
        stack.callback(bar.finish)
        report = compare(
            base,
            mon,
            contracts=cs,
            names=(s.baseline.name, s.monitor.name),
            threshold=s.threshold,
            strata=cuts,
            bootstrap=s.bootstrap,
            seed=s.seed,
            pair_by=s.pair_by,
            min_gain=s.min_gain,
            max_p=s.max_p,
        )
    if s.md_path is not None:
        atomic_write_bytes(s.md_path, to_markdown(report).encode("utf-8"))
    if s.json_flag:
        out.file.write(pretty_json(report.to_json()).decode("utf-8"))
    else:
        _render_text(report, s.plain)
    if not s.quiet:
        o = report.overall
        say(
            err,
            f"difference {points_text(o.difference)} points over {o.units} units; W/L {wl_text(o)}; "
            f"p = {p_text(o.p_value)}",
        )
        if s.md_path is not None:
            say(err, f"wrote Markdown report {s.md_path}")
    failed = [g for g in report.gates if not g.passed]
    if failed:
        for g in failed:
            say(err, f"gate failed: {g.message()}", style="red")
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    """Add `compare` to the root app."""
    app.command("compare")(compare_cmd)
