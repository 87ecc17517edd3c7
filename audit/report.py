"""The audit report as data, and its renderings that need no terminal: Markdown, GitHub annotations, gates.

The JSON report (schema `audit-report`) is the one source: the Markdown, the annotations and the gate
verdicts are all computed from that dict, so a figure printed anywhere equals the JSON figure (a test
parses the Markdown back and compares). The rich terminal table lives in `contracts.cli.audit_cmd`.

Gates compare the point estimate with the threshold (`fire_rate.value > max_fire_rate` fails) and
print the interval beside it, so a reviewer sees how close the call was. A `--min-detection` gate with
no labelled calls to detect fails: a gate that cannot be measured must not pass silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REPORT_VERSION = 1


def pct(x: float | None, digits: int = 2) -> str:
    """A share as a percentage string (`0.0123` -> `1.23%`); `n/a` when unmeasurable."""
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def num(x: float | None, digits: int = 2) -> str:
    """A plain number with fixed decimals; `n/a` for None."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def rate_text(r: Mapping[str, Any]) -> str:
    """`1.23% [0.80%, 1.70%] (12/975)`: value, 95% interval and the counts behind them."""
    return (
        f"{pct(r.get('value'))} [{pct(r.get('low'))}, {pct(r.get('high'))}] "
        f"({r.get('numerator', 0)}/{r.get('denominator', 0)})"
    )


def per100_text(s: Mapping[str, Any]) -> str:
    """Spurious receipts per 100 episodes with interval and counts."""
    p = s["per_100_episodes"]
    return (
        f"{num(p.get('value'))} [{num(p.get('low'))}, {num(p.get('high'))}] "
        f"({s.get('numerator', 0)} receipts / {s.get('denominator', 0)} clean episodes)"
    )


@dataclass(frozen=True)
class Gate:
    """One CI gate's verdict."""

    metric: str
    op: str
    threshold: float
    value: float | None
    low: float | None
    high: float | None
    passed: bool
    unit: str

    @classmethod
    def from_json(cls, g: dict[str, Any]) -> Gate:
        """The gate of a report's `gates` entry (the unit follows from the metric)."""
        unit = "count" if g["metric"] == "spurious_per_100" else "share"
        return cls(g["metric"], g["op"], g["threshold"], g["value"], g["low"], g["high"], g["passed"], unit)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "passed": self.passed,
        }

    def message(self) -> str:
        """`fire_rate 2.31% [1.90%, 2.80%] exceeds --max-fire-rate 2.00%`-style sentence."""
        fmt = pct if self.unit == "share" else num
        verb = {">": "exceeds", "<": "is below"}[self.op] if not self.passed else "within"
        flag = {"fire_rate": "--max-fire-rate", "spurious_per_100": "--max-spurious-per-100"}.get(
            self.metric, "--min-detection"
        )
        if self.value is None:
            return f"{self.metric} cannot be measured (no calls to measure it on); {flag} {fmt(self.threshold)} fails"
        return f"{self.metric} {fmt(self.value)} [{fmt(self.low)}, {fmt(self.high)}] {verb} {flag} {fmt(self.threshold)}"


def evaluate_gates(
    report: Mapping[str, Any],
    *,
    max_fire_rate: float | None = None,
    max_spurious_per_100: float | None = None,
    min_detection: float | None = None,
) -> list[Gate]:
    """The verdict of every gate given (None = gate not set)."""
    gates: list[Gate] = []
    # (metric, threshold, rate object, unit, is an upper bound): a gate fails when the value crosses it.
    specs = [
        ("fire_rate", max_fire_rate, report["fire_rate"], "share", True),
        ("spurious_per_100", max_spurious_per_100, report["spurious"]["per_100_episodes"], "count", True),
        ("detection", min_detection, report["detection"]["overall"], "share", False),
    ]
    for metric, threshold, r, unit, upper in specs:
        if threshold is None:
            continue
        v = r.get("value")
        passed = v is not None and (v <= threshold if upper else v >= threshold)
        gates.append(
            Gate(metric, ">" if upper else "<", threshold, v, r.get("low"), r.get("high"), passed, unit)
        )
    return gates


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> list[str]:
    al = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else "---" for a in al]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return out


def cross_fit_sentence(report: Mapping[str, Any]) -> str:
    """The line comparing the cross-fitted fire rate with the in-sample (non-split) one."""
    k = report["params"]["k"]
    fr = report["fire_rate"]
    if k <= 1:
        return (
            f"Not cross-fitted (k = 1): the checker was mined on the audited traces themselves, so the fire "
            f"rate {pct(fr.get('value'))} understates what unseen traces would show; audit with --fold 5."
        )
    ins = report.get("in_sample") or {}
    ir = ins.get("fire_rate") or {}
    v, iv = fr.get("value"), ir.get("value")
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


def to_markdown(report: Mapping[str, Any], *, max_rows: int = 30) -> str:
    """A Markdown report for a pull request: headline figures, tables, abstention curve, ledger anchor."""
    L: list[str] = []
    c = report["corpus"]
    p = report["params"]
    pop = report["population"]
    L.append("# Contract audit")
    L.append("")
    L.append(
        f"Corpus `{c.get('name', '')}` ({pop['checked']} calls checked, {pop['episodes']} episodes, "
        f"{pop['tasks']} tasks); k = {p['k']}, seed = {p['seed']}, {p['bootstrap']} task-clustered bootstrap "
        f"resamples, 95% intervals."
    )
    L.append("")
    L.append(cross_fit_sentence(report))
    L.append("")
    fr, sp, det = report["fire_rate"], report["spurious"], report["detection"]
    rr, cost = report["recovery_retention"], report["receipt_cost"]
    rows = [
        (
            "Fire rate (organic calls)",
            pct(fr["value"]),
            f"[{pct(fr['low'])}, {pct(fr['high'])}]",
            f"{fr['numerator']}/{fr['denominator']}",
        ),
        (
            "Spurious receipts per 100 clean episodes",
            num(sp["per_100_episodes"]["value"]),
            f"[{num(sp['per_100_episodes']['low'])}, {num(sp['per_100_episodes']['high'])}]",
            f"{sp['numerator']}/{sp['denominator']}",
        ),
        (
            "Detection (labelled calls)",
            pct(det["overall"]["value"]),
            f"[{pct(det['overall']['low'])}, {pct(det['overall']['high'])}]",
            f"{det['overall']['numerator']}/{det['overall']['denominator']}",
        ),
        (
            "Recovery retention (>= 2 tools)",
            pct(rr["value"]),
            f"[{pct(rr['low'])}, {pct(rr['high'])}]",
            f"{rr['numerator']}/{rr['denominator']}",
        ),
        (
            "Receipt bytes per 1,000 calls",
            num(cost["bytes_per_1000_calls"]["value"], 1),
            f"[{num(cost['bytes_per_1000_calls']['low'], 1)}, {num(cost['bytes_per_1000_calls']['high'], 1)}]",
            f"{cost['bytes']} B in {cost['receipts']} receipts",
        ),
        (
            "Receipt tokens per 1,000 calls (approx.)",
            num(cost["tokens_per_1000_calls"]["value"], 1),
            f"[{num(cost['tokens_per_1000_calls']['low'], 1)}, {num(cost['tokens_per_1000_calls']['high'], 1)}]",
            f"{cost['approx_tokens']} tokens",
        ),
    ]
    L += _table(["Metric", "Value", "95% interval", "Counts"], rows, "lrrr")
    L.append("")
    gates = report.get("gates") or []
    if gates:
        L.append("## Gates")
        L.append("")
        grow = []
        for g in gates:
            gate = Gate.from_json(g)
            grow.append(("pass" if g["passed"] else "**FAIL**", gate.message()))
        L += _table(["Verdict", "Gate"], grow, "ll")
        L.append("")
    L.append("## Detection by fault kind")
    L.append("")
    by_kind = det.get("by_kind", {})
    pm = det.get("path_match", {}).get("by_kind", {})
    if by_kind:
        drow = [
            (
                f"`{k}`",
                pct(r["value"]),
                f"[{pct(r['low'])}, {pct(r['high'])}]",
                f"{r['numerator']}/{r['denominator']}",
                pct(pm.get(k, {}).get("value")),
            )
            for k, r in by_kind.items()
        ]
        L += _table(["Kind", "Detected", "95% interval", "Counts", "Path matched"], drow, "lrrrr")
    else:
        L.append("No fault-labelled calls: detection not measured (run with `--inject all --rate 0.1`).")
    L.append("")
    L.append("## Fire rate by tool (organic calls, sorted by fires)")
    L.append("")
    trow = [
        (
            f"`{t['tool']}`",
            t["fires"],
            t["organic"],
            pct(t["fire_rate"]["value"]),
            f"[{pct(t['fire_rate']['low'])}, {pct(t['fire_rate']['high'])}]",
            t["labelled"],
            t["detected"],
        )
        for t in report["tools"][:max_rows]
    ]
    L += _table(["Tool", "Fires", "Organic calls", "Fire rate", "95% interval", "Labelled", "Detected"], trow)
    if len(report["tools"]) > max_rows:
        L.append(f"\n({len(report['tools']) - max_rows} more tools in the JSON report.)")
    L.append("")
    L.append("## Fire rate by property code (organic calls)")
    L.append("")
    crow = [
        (f"`{code}`", r["numerator"], pct(r["value"]), f"[{pct(r['low'])}, {pct(r['high'])}]")
        for code, r in fr.get("by_code", {}).items()
    ]
    if crow:
        L += _table(["Code", "Fires", "Fire rate", "95% interval"], crow)
    else:
        L.append("No organic fires.")
    L.append("")
    L.append("## Rules by fires")
    L.append("")
    rules = [r for r in report["rules"] if r["fires"] > 0]
    if rules:
        rrow = [
            (
                f"`{r['rule']}`",
                f"`{r['tool']}`",
                r["code"],
                f"`{', '.join(r['paths']) or '(root)'}`",
                r["support"],
                r["fires"],
                r["organic_fires"],
                r["clean_fires"],
                r["labelled_fires"],
            )
            for r in rules[:max_rows]
        ]
        L += _table(
            ["Rule", "Tool", "Code", "Paths", "Support", "Fires", "Organic", "Clean ep.", "Labelled"],
            rrow,
            "llllrrrrr",
        )
        if len(rules) > max_rows:
            L.append(f"\n({len(rules) - max_rows} more firing rules in the JSON report.)")
    else:
        L.append("No rule fired.")
    L.append("")
    L.append("## Selective abstention (coverage and risk by minimum rule support)")
    L.append("")
    L.append(
        "Only rules whose support (clean calls in the fold checker) is at least *s* may fire. Coverage = "
        "fired calls kept / fired calls at s = 0; risk = share of kept fired calls that carry no fault label."
    )
    L.append("")
    arow = [
        (
            a["min_support"],
            a["rules"],
            a["fired_calls"],
            pct(a["coverage"]),
            pct(a["risk"]),
            pct(a["fire_rate"]),
            num(a["spurious_per_100"]),
            pct(a["detection"]),
        )
        for a in report["abstention"]
    ]
    L += _table(
        ["s", "Rules", "Fired calls", "Coverage", "Risk", "Fire rate", "Spurious/100", "Detection"], arow
    )
    L.append("")
    spur = report.get("spurious_receipts") or []
    L.append(f"## Receipts on clean episodes ({len(spur)} listed of {sp['numerator']})")
    L.append("")
    if spur:
        srow = [
            (
                f"`{s['trace_id']}`",
                f"`{s['tool']}`",
                ", ".join(f"{v['code']} `{v['path'] or '(root)'}`" for v in s["violations"]),
                s["call_id"],
            )
            for s in spur[:max_rows]
        ]
        L += _table(["Episode", "Tool", "Violations", "Call"], srow, "llll")
    else:
        L.append("None.")
    L.append("")
    led = report["ledger"]
    L.append("## Ledger")
    L.append("")
    L.append(
        f"Fire events were frozen in `{led['path']}` ({led['entries']} entries) before labels and rewards "
        f"were joined. Head `{led['head']}`, Merkle root `{led['root']}`. Re-score with "
        f"`contracts audit-score {led['path']} --corpus <corpus>`; check with "
        f"`contracts ledger verify {led['path']} --head {led['head']}`."
    )
    L.append("")
    return "\n".join(L)


def _escape_annotation(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_annotations(report: Mapping[str, Any], gates: Sequence[Gate]) -> list[str]:
    """GitHub Actions workflow commands: one `::error` per failed gate, one `::notice` summary line."""
    out = []
    for g in gates:
        if not g.passed:
            out.append(f"::error title=contracts audit gate::{_escape_annotation(g.message())}")
    fr, sp, det = report["fire_rate"], report["spurious"], report["detection"]["overall"]
    summary = (
        f"fire rate {rate_text(fr)}; spurious per 100 episodes {per100_text(sp)}; detection {rate_text(det)}; "
        f"ledger head {report['ledger']['head']}"
    )
    out.append(f"::notice title=contracts audit::{_escape_annotation(summary)}")
    return out
