"""The compare report's renderings that need no terminal: the number formats, the sentences the text
output and the Markdown share, and the Markdown itself. The rich table lives in
`output_contracts.cli.compare_cmd`; every figure printed is the JSON figure (`CompareReport.to_json()`)."""

from __future__ import annotations

from output_contracts.audit.compare import Arm, CompareReport, Cost, Difference, Points, Receipts
from output_contracts.audit.report_model import pct


def signed(x: float | None, digits: int = 1) -> str:
    """`+17.2` / `-2.0` (`n/a` for None): a difference always shows its sign."""
    return "n/a" if x is None else f"{x:+.{digits}f}"


def points_text(d: Points) -> str:
    """`+17.2 [+11.3, +23.4]`: a difference in points with its 95% interval."""
    if d.low is None or d.high is None:
        return signed(d.points)
    return f"{signed(d.points)} [{signed(d.low)}, {signed(d.high)}]"


def p_text(p: float) -> str:
    """A p-value to three significant digits (`0.0386`, `1.3e-45`, `1`)."""
    return f"{p:.3g}"


def wl_text(d: Difference) -> str:
    """`13/15`: discordant units won and lost by the monitor."""
    return f"{d.wins}/{d.losses}"


def arm_sentence(a: Arm, role: str) -> str:
    """One arm's counts and its paired completion with interval (and completed / scored, paired or not)."""
    c = a.completion
    return (
        f"{role} {a.name}: {a.episodes} episodes, {a.unscored} without reward, {a.paired} paired, "
        f"{a.unpaired} unpaired; paired completion {pct(c.value)} [{pct(c.low)}, {pct(c.high)}]; "
        f"all scored {a.completed}/{a.scored} ({pct(a.completion_all)})"
    )


def pairing_sentence(r: CompareReport) -> str:
    """How the arms were paired, and how the intervals were made."""
    p, o = r.params, r.overall
    unit = "(task, trial) pairs" if p.paired_by == "trial" else "tasks (each arm's episodes averaged)"
    return (
        f"paired by {p.paired_by}: {o.units} {unit} over {o.tasks} tasks; completion = reward >= "
        f"{p.threshold:g}; 95% task-clustered bootstrap, {p.bootstrap} resamples, seed {p.seed}"
    )


def money(x: float | None) -> str:
    """A cost to four decimals (`0.1674`)."""
    return "n/a" if x is None else f"{x:.4f}"


def cost_sentence(c: Cost | None) -> str:
    """Mean cost per episode per arm and the paired difference, or why there is none."""
    if c is None:
        return "cost per episode: not recorded in the traces"
    if c.units == 0:
        return f"cost per episode ({'+'.join(c.parts)}): no paired unit has a cost on both sides"
    d = c.difference
    interval = "" if d.low is None or d.high is None else f" [{d.low:+.4f}, {d.high:+.4f}]"
    rel = "" if c.relative is None else f" ({100 * c.relative:+.1f}%)"
    return (
        f"cost per episode ({'+'.join(c.parts)}): baseline {money(c.baseline)}, monitor "
        f"{money(c.monitor)}, difference {'n/a' if d.value is None else f'{d.value:+.4f}'}{interval}{rel} "
        f"over {c.units} paired units"
    )


def receipts_sentence(r: Receipts | None) -> str:
    """Receipts seen in the monitor arm."""
    if r is None:
        return "receipts in the monitor arm: not counted"
    what = "checked under --contracts" if r.source == "checked" else "delivered in the traces"
    return (
        f"receipts in the monitor arm ({what}): {r.calls_with_receipt}/{r.calls} calls, "
        f"{r.episodes_with_receipt}/{r.episodes} episodes, {r.paired_units_with_receipt} paired units"
    )


def _md_row(label: str, d: Difference) -> str:
    return (
        f"| {label} | {d.units} | {d.tasks} | {pct(d.baseline)} | {pct(d.monitor)} | "
        f"{points_text(d.difference)} | {wl_text(d)} | {p_text(d.p_value)} |"
    )


def to_markdown(r: CompareReport) -> str:
    """A Markdown report: the arms, the paired table (all and per stratum), cost, receipts, gates."""
    lines = [
        f"# contracts compare: {r.baseline.name} vs {r.monitor.name}",
        "",
        pairing_sentence(r) + ".",
        "",
        f"- {arm_sentence(r.baseline, 'baseline')}",
        f"- {arm_sentence(r.monitor, 'monitor')}",
        "",
        "| baseline completion per task | units | tasks | baseline | monitor | difference (points) | W/L | p (exact) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        _md_row("all", r.overall),
        *(_md_row(s.label, s) for s in r.strata),
        "",
        f"- {cost_sentence(r.cost)}",
        f"- {receipts_sentence(r.receipts)}",
    ]
    if r.gates:
        lines.append("")
        lines += [f"- {'PASS' if g.passed else 'FAIL'} {g.message()}" for g in r.gates]
    return "\n".join(lines) + "\n"
