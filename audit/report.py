"""The audit report's renderings that need no terminal (Markdown, GitHub annotations), and the gates.

The report is an `AuditReport` (`output_contracts.audit.report_model`), whose figures are held exactly as its JSON
(schema `audit-report`) shows them: the Markdown, the annotations and the gate verdicts all read those
attributes, so a figure printed anywhere equals the JSON figure (a test parses the Markdown back and
compares). The rich terminal table lives in `output_contracts.cli.audit_cmd`.

Gates compare the point estimate with the threshold (`fire_rate.value > max_fire_rate` fails) and
print the interval beside it, so a reviewer sees how close the call was. A `--min-detection` gate with
no labelled calls to detect fails: a gate that cannot be measured must not pass silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from output_contracts.audit.report_model import (
    RULES_TITLE,
    AuditReport,
    Estimate,
    Gate,
    Interval,
    Spurious,
    num,
    pct,
    rule_display_key,
)


def num1(x: float | None) -> str:
    """A plain number with one decimal (receipt bytes and tokens per 1,000 calls)."""
    return num(x, 1)


def interval_text(r: Interval, fmt: Callable[[float | None], str] = pct) -> str:
    """`[0.80%, 1.70%]`: a figure's 95% interval."""
    return f"[{fmt(r.low)}, {fmt(r.high)}]"


def counts_text(r: Estimate) -> str:
    """`12/975`: the counts behind a rate."""
    return f"{r.numerator}/{r.denominator}"


def rate_text(r: Estimate) -> str:
    """`1.23% [0.80%, 1.70%] (12/975)`: value, 95% interval and the counts behind them."""
    return f"{pct(r.value)} {interval_text(r)} ({counts_text(r)})"


def per100_text(s: Spurious) -> str:
    """Spurious receipts per 100 episodes with interval and counts."""
    p = s.per_100_episodes
    return f"{num(p.value)} {interval_text(p, num)} ({s.numerator} receipts / {s.denominator} clean episodes)"


def evaluate_gates(
    report: AuditReport,
    *,
    max_fire_rate: float | None = None,
    max_spurious_per_100: float | None = None,
    min_detection: float | None = None,
    min_coverage: float | None = None,
) -> list[Gate]:
    """The verdict of every gate given (None = gate not set)."""
    gates: list[Gate] = []
    # (metric, threshold, figure, unit, is an upper bound): a gate fails when the value crosses it.
    specs: list[tuple[str, float | None, Interval, str, bool]] = [
        ("fire_rate", max_fire_rate, report.fire_rate, "share", True),
        ("spurious_per_100", max_spurious_per_100, report.spurious.per_100_episodes, "count", True),
        ("detection", min_detection, report.detection.overall, "share", False),
    ]
    for metric, threshold, r, unit, upper in specs:
        if threshold is None:
            continue
        v = r.value
        passed = v is not None and (v <= threshold if upper else v >= threshold)
        gates.append(Gate(metric, ">" if upper else "<", threshold, v, r.low, r.high, passed, unit))
    if min_coverage is not None:  # a census: no interval
        v = report.coverage.share
        passed = v is not None and v >= min_coverage
        gates.append(Gate("coverage", "<", min_coverage, v, None, None, passed, "share"))
    return gates


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> list[str]:
    """A Markdown table (`align`: one `l` or `r` a column; default first left, the rest right)."""
    al = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else "---" for a in al]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return out


def coverage_sentence(report: AuditReport) -> str:
    """How much of what was checked any rule speaks of, naming the tools nothing checks."""
    c = report.coverage
    head = (
        f"Coverage: {c.calls:,} of {c.checked:,} checked calls ({pct(c.share)}) are of the {c.tools} of "
        f"{c.called_tools} called tools that have rules"
    )
    if not c.uncovered:
        return head + "."
    names = ", ".join(c.uncovered[:8]) + (f" and {len(c.uncovered) - 8} more" if len(c.uncovered) > 8 else "")
    return f"{head}; no rule checks {names}."


def explained_sentence(report: AuditReport) -> str:
    """Organic calls left out of the fire rate as echoes of a labelled earlier call ("" when none)."""
    n = report.fire_rate.cross_call_explained
    if not n:
        return ""
    return (
        f"{n:,} organic call(s) fired only cross-call receipts (CONSISTENT) naming an earlier call that carries "
        "a fault label: the values disagree because that call is faulty, so they are not counted as false alarms."
    )


def cross_fit_sentence(report: AuditReport) -> str:
    """The line comparing the cross-fitted fire rate with the in-sample (non-split) one."""
    k = report.params.k
    v = report.fire_rate.value
    if k <= 1:
        return (
            f"Not cross-fitted (k = 1): the checker was mined on the audited traces themselves, so the fire "
            f"rate {pct(v)} understates what unseen traces would show; audit with --folds 5."
        )
    iv = None if report.in_sample is None else report.in_sample.fire_rate.value
    if v is None or iv is None:
        return f"Cross-fitted with k = {k} folds."
    head = (
        f"Cross-fitted with k = {k} folds: fire rate {pct(v)} is "
        f"{'higher than' if v > iv else 'lower than' if v < iv else 'equal to'} the in-sample (non-split) "
        f"fire rate {pct(iv)} of the full checker on the same calls"
    )
    if v > iv:
        return (
            head + "; the in-sample figure is the optimistic one, since each rule there was mined on the "
            "very calls it judges."
        )
    if v < iv:
        return (
            head + "; the full checker holds more rules (mined on every task) and judges calls outside "
            "its own clean set (e.g. episodes left out of mining by --clean reward), so here it is not "
            "a lower bound."
        )
    return head + "."


# ------------------------------------------------------------------------------------------------------
# Markdown, section by section (each returns its lines, ending with a blank one)


def _section(title: str, body: list[str]) -> list[str]:
    """A `##` section: title, blank line, body, blank line."""
    return [f"## {title}", "", *body, ""]


def _md_intro(report: AuditReport) -> list[str]:
    """What was audited and how, then the cross-fitting sentence: the frame for every figure below."""
    p, pop = report.params, report.population
    return [
        "# Contract audit",
        "",
        f"Corpus `{report.corpus.name}` ({pop.checked} calls checked, {pop.episodes} episodes, "
        f"{pop.tasks} tasks); k = {p.k}, seed = {p.seed}, {p.bootstrap} task-clustered bootstrap "
        f"resamples, 95% intervals.",
        "",
        cross_fit_sentence(report),
        "",
        coverage_sentence(report),
        *([explained_sentence(report)] if explained_sentence(report) else []),
        "",
    ]


def _md_headline(report: AuditReport) -> list[str]:
    """The headline figures with intervals and counts: what a reviewer reads first."""
    fr, sp, det = report.fire_rate, report.spurious, report.detection.overall
    rr, cost = report.recovery_retention, report.receipt_cost
    per100, bpk, tpk = sp.per_100_episodes, cost.bytes_per_1000_calls, cost.tokens_per_1000_calls
    rows = [
        ("Fire rate (organic calls)", pct(fr.value), interval_text(fr), counts_text(fr)),
        (
            "Spurious receipts per 100 clean episodes",
            num(per100.value),
            interval_text(per100, num),
            counts_text(sp),
        ),
        *_spurious_rows(sp),
        ("Detection (labelled calls)", pct(det.value), interval_text(det), counts_text(det)),
        ("Recovery retention (>= 2 tools)", pct(rr.value), interval_text(rr), counts_text(rr)),
        *_propagation_rows(report),
        (
            "Receipt bytes per 1,000 calls",
            num1(bpk.value),
            interval_text(bpk, num1),
            f"{cost.bytes} B in {cost.receipts} receipts",
        ),
        (
            "Receipt tokens per 1,000 calls (approx.)",
            num1(tpk.value),
            interval_text(tpk, num1),
            f"{cost.approx_tokens} tokens",
        ),
    ]
    return [*_table(["Metric", "Value", "95% interval", "Counts"], rows, "lrrr"), ""]


def _spurious_rows(sp: Spurious) -> list[tuple[str, str, str, str]]:
    """The two other denominators of spurious receipts (docs/audit.md compares them with the paper)."""
    rows = []
    for label, r in (
        ("Spurious receipts per 100 episodes without a fault (the paper's count)", sp.without_fault),
        ("Spurious receipts per 100 full-reward episodes", sp.full_reward),
    ):
        if r is not None:
            p = r.per_100_episodes
            rows.append((label, num(p.value), interval_text(p, num), counts_text(r)))
    return rows


def _propagation_rows(report: AuditReport) -> list[tuple[str, str, str, str]]:
    """Propagating / trackable episodes, per kind of fire event that has any."""
    if report.propagation is None:
        return []
    rows = []
    for kind in ("organic", "labelled"):
        g = getattr(report.propagation, kind)
        if g.trackable_episodes:
            r = g.propagating
            rows.append(
                (f"Propagation ({kind} receipts, episodes)", pct(r.value), interval_text(r), counts_text(r))
            )
    return rows


def _md_propagation(report: AuditReport) -> list[str]:
    """Trackable episodes, how many carry a receipted value into a later call, and how they ended."""
    p = report.propagation
    if p is None:
        return []
    body = [
        "A receipt's observed value is followed into the arguments of the episode's later calls (trackable: "
        "strings of >= 4 characters, non-integers, integers of magnitude >= 100; a value already used "
        "before the receipt does not count). Injected faults were planted after the run, so the agent "
        "never saw them: their row is a placebo.",
        "",
    ]
    rows = []
    for kind in ("organic", "labelled"):
        g = getattr(p, kind)
        r = g.propagating
        for part, o in (
            ("propagating", g.outcome_propagating),
            ("not propagating", g.outcome_not_propagating),
        ):
            rows.append(
                (
                    kind,
                    g.trackable_episodes,
                    f"{pct(r.value)} {interval_text(r)}" if part == "propagating" else "",
                    part,
                    o.episodes,
                    f"{o.full_reward}/{o.with_reward}",
                    pct(o.pass_share),
                )
            )
    header = [
        "Receipts",
        "Trackable episodes",
        "Propagating",
        "Part",
        "Episodes",
        "Full reward",
        "Pass share",
    ]
    return _section("Propagation of receipted values", [*body, *_table(header, rows, "lrrlrrr")])


def _md_gates(report: AuditReport) -> list[str]:
    """Each gate's verdict (no section when no gate is set)."""
    if not report.gates:
        return []
    rows = [("pass" if g.passed else "**FAIL**", g.message()) for g in report.gates]
    return _section("Gates", _table(["Verdict", "Gate"], rows, "ll"))


def _md_detection(report: AuditReport) -> list[str]:
    """Detection per fault kind, and whether it fired at the faulted path."""
    det = report.detection
    if not det.by_kind:
        body = ["No fault-labelled calls: detection not measured (run with `--inject all --rate 0.1`)."]
        return _section("Detection by fault kind", body)
    rows = []
    for kind, r in det.by_kind.items():
        pm = det.path_match.by_kind.get(kind)
        rows.append(
            (
                f"`{kind}`",
                pct(r.value),
                interval_text(r),
                counts_text(r),
                pct(None if pm is None else pm.value),
            )
        )
    header = ["Kind", "Detected", "95% interval", "Counts", "Path matched"]
    return _section("Detection by fault kind", _table(header, rows, "lrrrr"))


def _md_tools(report: AuditReport, max_rows: int) -> list[str]:
    """Fire rate per tool, the most firing first."""
    rows = [
        (
            f"`{t.tool}`",
            t.fires,
            t.organic,
            pct(t.fire_rate.value),
            interval_text(t.fire_rate),
            t.labelled,
            t.detected,
        )
        for t in report.tools[:max_rows]
    ]
    body = _table(
        ["Tool", "Fires", "Organic calls", "Fire rate", "95% interval", "Labelled", "Detected"], rows
    )
    if len(report.tools) > max_rows:
        body.append(f"\n({len(report.tools) - max_rows} more tools in the JSON report.)")
    return _section("Fire rate by tool (organic calls, sorted by fires)", body)


def _md_codes(report: AuditReport) -> list[str]:
    """Fire rate per property code: which kind of contract raises the false alarms."""
    rows = [
        (f"`{code}`", r.numerator, pct(r.value), interval_text(r))
        for code, r in report.fire_rate.by_code.items()
    ]
    body = _table(["Code", "Fires", "Fire rate", "95% interval"], rows) if rows else ["No organic fires."]
    return _section("Fire rate by property code (organic calls)", body)


def _md_rules(report: AuditReport, max_rows: int) -> list[str]:
    """The rules that fired, organic fires first (`rule_display_key`), with the kinds of call they fired on."""
    rules = sorted(
        (r for r in report.rules if r.fires > 0),
        key=lambda r: rule_display_key(r.organic_fires, r.fires, r.tool, r.code, r.rule),
    )
    if not rules:
        return _section(RULES_TITLE, ["No rule fired."])
    rows = [
        (
            f"`{r.rule}`",
            f"`{r.tool}`",
            r.code,
            f"`{', '.join(r.paths) or '(root)'}`",
            r.support,
            r.fires,
            r.organic_fires,
            r.clean_fires,
            r.labelled_fires,
        )
        for r in rules[:max_rows]
    ]
    header = ["Rule", "Tool", "Code", "Paths", "Support", "Fires", "Organic", "Clean ep.", "Labelled"]
    body = _table(header, rows, "llllrrrrr")
    if len(rules) > max_rows:
        body.append(f"\n({len(rules) - max_rows} more firing rules in the JSON report.)")
    return _section(RULES_TITLE, body)


def _md_abstention(report: AuditReport) -> list[str]:
    """The coverage-risk curve over minimum rule support."""
    rows = [
        (
            a.min_support,
            a.rules,
            a.fired_calls,
            pct(a.coverage),
            pct(a.risk),
            pct(a.fire_rate),
            num(a.spurious_per_100),
            pct(a.detection),
        )
        for a in report.abstention
    ]
    body = [
        "Only rules whose support (clean calls in the fold checker) is at least *s* may fire. Coverage = "
        "fired calls kept / fired calls at s = 0; risk = share of kept fired calls that carry no fault label.",
        "",
        *_table(
            ["s", "Rules", "Fired calls", "Coverage", "Risk", "Fire rate", "Spurious/100", "Detection"], rows
        ),
    ]
    return _section("Selective abstention (coverage and risk by minimum rule support)", body)


def _md_spurious(report: AuditReport, max_rows: int) -> list[str]:
    """The receipts on clean episodes, for review."""
    spur = report.spurious_receipts
    title = f"Receipts on clean episodes ({len(spur)} listed of {report.spurious.numerator})"
    if not spur:
        return _section(title, ["None."])
    rows = [
        (
            f"`{s.trace_id}`",
            f"`{s.tool}`",
            ", ".join(f"{v.code} `{v.path or '(root)'}`" for v in s.violations),
            s.call_id,
        )
        for s in spur[:max_rows]
    ]
    return _section(title, _table(["Episode", "Tool", "Violations", "Call"], rows, "llll"))


def _md_ledger(report: AuditReport) -> list[str]:
    """The ledger anchor and the commands that re-score and verify it."""
    led = report.ledger
    return _section(
        "Ledger",
        [
            f"Fire events were frozen in `{led.path}` ({led.entries} entries) before labels and rewards "
            f"were joined. Head `{led.head}`, Merkle root `{led.root}`. Re-score with "
            f"`contracts audit-score {led.path} --corpus <corpus>`; check with "
            f"`contracts ledger verify {led.path} --head {led.head}`."
        ],
    )


def to_markdown(report: AuditReport, *, max_rows: int = 30) -> str:
    """A Markdown report for a pull request: headline figures, tables, abstention curve, ledger anchor."""
    lines = [
        *_md_intro(report),
        *_md_headline(report),
        *_md_gates(report),
        *_md_detection(report),
        *_md_propagation(report),
        *_md_tools(report, max_rows),
        *_md_codes(report),
        *_md_rules(report, max_rows),
        *_md_abstention(report),
        *_md_spurious(report, max_rows),
        *_md_ledger(report),
    ]
    return "\n".join(lines)


def _escape_annotation(s: str) -> str:
    """Escape what a workflow command's message may not hold raw (`%`, CR, LF)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_annotations(report: AuditReport) -> list[str]:
    """GitHub Actions workflow commands: one `::error` per failed gate, one `::notice` summary line."""
    out = []
    for g in report.gates:
        if not g.passed:
            out.append(f"::error title=contracts audit gate::{_escape_annotation(g.message())}")
    summary = (
        f"fire rate {rate_text(report.fire_rate)}; spurious per 100 episodes {per100_text(report.spurious)}; "
        f"detection {rate_text(report.detection.overall)}; ledger head {report.ledger.head}"
    )
    out.append(f"::notice title=contracts audit::{_escape_annotation(summary)}")
    return out
