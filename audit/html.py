"""One self-contained static HTML page of every artifact given: what `contracts report` writes.

The page draws the figures other commands computed (`output_contracts.audit.artifacts` reads and validates
them); it recomputes only a diff between two contract sets. Everything is inline: CSS, SVG charts
(`output_contracts.audit.svg`), and one line of script that opens the data tables before printing (the page is
complete without it). A Content-Security-Policy forbids every fetch, so the file reads the same offline.

Accessibility: each chart is an `<svg role="img">` with a `<title>` and `<desc>`, followed by a table of
the same numbers (in a `<details>` element: there for screen readers and for anyone who wants the digits).
Deterministic: sections follow the inputs' order, rows a stated sort, and the only time in the page is
`generated_at`, printed only when the caller passes it.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from output_contracts import __version__
from output_contracts.audit.artifacts import Artifact, Kind
from output_contracts.audit.report_model import RULES_TITLE, Gate, rule_display_key
from output_contracts.audit.svg import Bar, Curve, CurvePoint, Row, curve_chart, interval_chart
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.table import describe
from output_contracts.jsonutil import canonical_str
from output_contracts.mining.diff import diff_sets

#: Rows shown in the charts and tables that rank things (the full lists are in the input files).
TOP_RULES = 15
TOP_RULE_ROWS = 30
EXAMPLES_PER_RULE = 2
TOP_EXAMPLE_RULES = 25
MAX_REVIEW = 25

SCRIPT = (
    "addEventListener('beforeprint',function(){"
    "document.querySelectorAll('details').forEach(function(d){d.open=true})});"
)

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--pass:#1a7f37;--fail:#cf222e;--link:#0969da}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif;color:var(--fg);background:#fff}
main{max-width:1060px;margin:0 auto;padding:28px 32px 64px}
a{color:var(--link)}
header.page{border-bottom:1px solid var(--line);padding-bottom:14px;margin-bottom:8px}
h1{font-size:28px;margin:0 0 4px;letter-spacing:-.01em}
h2{font-size:21px;margin:44px 0 10px;padding-top:14px;border-top:3px solid var(--fg)}
h3{font-size:16px;margin:30px 0 6px}
p{margin:6px 0 10px;max-width:78ch}
.muted,figcaption,.note{color:var(--muted)}
.note{font-size:13px}
nav.toc ol{margin:8px 0 0;padding:0;list-style:none;display:flex;flex-wrap:wrap;gap:6px 16px;font-size:14px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:10px;margin:10px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
.card .k{font-size:13px;color:var(--muted)}
.card .v{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums}
.card .s{font-size:12px;color:var(--muted);font-variant-numeric:tabular-nums}
ul.gates{list-style:none;padding:0;margin:8px 0}
ul.gates li{padding:6px 0;border-bottom:1px solid var(--line)}
.badge{display:inline-block;min-width:44px;text-align:center;padding:1px 8px;margin-right:8px;border-radius:10px;font-weight:700;font-size:12px;color:#fff}
.pass{background:var(--pass)}.fail{background:var(--fail)}
table{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.w{max-width:30ch;overflow-wrap:anywhere}
td a code{white-space:nowrap}
.wide{overflow-x:auto}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.hash{word-break:break-all}
figure{margin:10px 0 22px}
svg.chart{width:100%;height:auto;display:block}
figcaption{font-size:13px;margin-top:2px}
details.data>summary{cursor:pointer;color:var(--link);font-size:13px;margin-top:4px}
:target{background:#fff8c5}
footer{margin-top:48px;border-top:1px solid var(--line);padding-top:10px;font-size:13px}
@media print{
 body{font-size:11px}main{max-width:none;padding:0}nav.toc{display:none}
 h2{margin-top:24px}figure,.card,tr{break-inside:avoid}
 details.data>summary{display:none}a{color:inherit;text-decoration:none}
 .card{background:#fff}
}
""".strip()


# ------------------------------------------------------------------------------------------------------
# Formatting


def e(x: Any) -> str:
    """Text for HTML (escaped)."""
    return escape(str(x), quote=True)


def pct(x: float | None) -> str:
    """A share as a percentage, with enough decimals for small rates (`0.086%`); `n/a` when None."""
    if x is None:
        return "n/a"
    a = abs(x)
    digits = 1 if a == 0 or a >= 0.1 else 2 if a >= 0.01 else 3 if a >= 0.001 else 4
    return f"{100 * x:.{digits}f}%"


def tick_pct(x: float | None) -> str:
    """An axis tick as a percentage without trailing zeros (`0.5%`, `1%`, `0.025%`)."""
    if x is None:
        return ""
    text = f"{100 * x:.4f}".rstrip("0").rstrip(".")
    return f"{text}%"


def tick_num(x: float | None) -> str:
    """An axis tick as a plain number without trailing zeros (`2.5`, `30`)."""
    return "" if x is None else f"{x:,.2f}".rstrip("0").rstrip(".")


def num(x: float | None, digits: int = 2) -> str:
    """A plain number; `n/a` when None."""
    return "n/a" if x is None else f"{x:,.{digits}f}"


def count(x: float | None) -> str:
    """A whole number with thousands separators."""
    return "n/a" if x is None else f"{round(x):,}"


def span(r: Mapping[str, Any], fmt: Callable[[float | None], str] = pct) -> str:
    """`[0.80%, 1.70%]` (empty when there is no interval)."""
    if r.get("low") is None or r.get("high") is None:
        return ""
    return f"[{fmt(r['low'])}, {fmt(r['high'])}]"


def ratio(r: Mapping[str, Any]) -> str:
    """`12/975`: the counts behind a rate."""
    return f"{r['numerator']:,}/{r['denominator']:,}"


def rate_text(r: Mapping[str, Any]) -> str:
    """`1.23% [0.80%, 1.70%] (12/975)`."""
    return f"{pct(r['value'])} {span(r)} ({ratio(r)})".replace("  ", " ")


def bar_of(r: Mapping[str, Any]) -> Bar:
    """A rate as a chart mark."""
    return Bar(r["value"], r.get("low"), r.get("high"), f"{pct(r['value'])} ({ratio(r)})")


def slug(text: str) -> str:
    """An id-safe form of `text` (letters, digits, dashes)."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "x"


# ------------------------------------------------------------------------------------------------------
# Building blocks


NUM = ' class="n"'
WRAP = ' class="w"'


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numeric: Iterable[int] = (),
    ids: Sequence[str] | None = None,
    caption: str = "",
    wrap: Iterable[int] = (),
) -> str:
    """A table; `rows` hold HTML (escape text first); `numeric` columns align right, `wrap` columns
    (values, file names) break anywhere rather than widen the page."""
    nums = set(numeric)
    wraps = set(wrap)

    def cls(i: int) -> str:
        return NUM if i in nums else WRAP if i in wraps else ""

    out = ['<div class="wide"><table>']
    if caption:
        out.append(f'<caption class="note">{caption}</caption>')
    out.append(
        "<thead><tr>"
        + "".join(f'<th scope="col"{NUM if i in nums else ""}>{h}</th>' for i, h in enumerate(head))
        + "</tr></thead><tbody>"
    )
    for ri, row in enumerate(rows):
        rid = f' id="{ids[ri]}"' if ids is not None and ids[ri] else ""
        out.append(f"<tr{rid}>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def figure(svg: str, data_table: str, caption: str) -> str:
    """A chart, its caption, and the same numbers as a table (the chart's text alternative)."""
    return (
        f"<figure>{svg}<figcaption>{caption}</figcaption>"
        f'<details class="data"><summary>The numbers of this chart</summary>{data_table}</details></figure>'
    )


def card(key: str, value: str, sub: str = "") -> str:
    return f'<div class="card"><div class="k">{e(key)}</div><div class="v">{e(value)}</div><div class="s">{e(sub)}</div></div>'


def rate_card(key: str, r: Mapping[str, Any], unit: str = "") -> str:
    return card(key, pct(r["value"]), f"{span(r)} · {ratio(r)}{unit}")


@dataclass
class Page:
    """The page being built: sections in order, the contents list, and ids handed out once."""

    sections: list[str] = field(default_factory=list)
    toc: list[tuple[str, str]] = field(default_factory=list)
    ids: Counter[str] = field(default_factory=Counter)

    def new_id(self, base: str) -> str:
        b = slug(base)
        self.ids[b] += 1
        return b if self.ids[b] == 1 else f"{b}-{self.ids[b]}"

    def section(self, title: str, body: Sequence[str], *, base: str) -> None:
        sid = self.new_id(base)
        self.toc.append((sid, title))
        self.sections.append(
            f'<section id="{sid}" aria-labelledby="{sid}-h"><h2 id="{sid}-h">{e(title)}</h2>{"".join(body)}</section>'
        )


# ------------------------------------------------------------------------------------------------------
# Receipts (from `contracts check -o`): examples the other sections link to


@dataclass(frozen=True)
class Example:
    """One violation of one receipt, for the examples table."""

    anchor: str
    call_id: str
    tool: str
    rule: str
    code: str
    path: str
    expected: Any
    observed: Any
    recovery: tuple[str, ...] | None
    where: str


def _value(v: Any) -> str:
    text = canonical_str(v) if not isinstance(v, str) else v
    return e(text if len(text) <= 80 else text[:79] + "…")


def examples_table(rows: Sequence[Example], rule_links: Mapping[str, str]) -> str:
    """Example receipts, one row a violation: the call id row is the anchor other tables link to."""

    def rule_cell(x: Example) -> str:
        a = rule_links.get(x.rule)
        return f'<a href="#{a}"><code>{e(x.rule)}</code></a>' if a else f"<code>{e(x.rule)}</code>"

    return table(
        ["call", "tool", "rule", "code", "path", "expected", "observed", "recovery tools", "from"],
        [
            [
                f"<code>{e(x.call_id)}</code>",
                e(x.tool),
                rule_cell(x),
                e(x.code),
                f"<code>{e(x.path)}</code>",
                _value(x.expected),
                _value(x.observed),
                e(", ".join(x.recovery))
                if x.recovery is not None
                else '<span class="muted">not recorded</span>',
                f'<code title="{e(x.where)}">{e(x.where.rsplit("/", 1)[-1])}</code>',
            ]
            for x in rows
        ],
        ids=[x.anchor for x in rows],
        wrap=[5, 6],
    )


@dataclass
class ReceiptIndex:
    """Example receipts by rule id (anchors into the receipts sections), filled before anything renders."""

    by_rule: dict[str, list[Example]] = field(default_factory=lambda: defaultdict(list))
    rule_links: dict[str, str] = field(default_factory=dict)  # rule id -> anchor of its row in a rules table


def _receipt_model(
    art: Artifact, page: Page, index: ReceiptIndex
) -> tuple[list[tuple[tuple[str, str, str, str], int]], list[Example]]:
    """Fires per rule of a receipts file, and the examples shown (the first receipts of the top rules)."""
    fires: Counter[tuple[str, str, str, str]] = Counter()
    first: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for rec in art.data:
        oc = rec["outcome_contract"]
        for v in oc.get("violations", []):
            fires[(v["rule"], oc["tool"], v["code"], v["path"])] += 1
            if len(first[v["rule"]]) < EXAMPLES_PER_RULE:
                first[v["rule"]].append((rec, v))
    ranked = sorted(fires.items(), key=lambda kv: (-kv[1], kv[0]))
    shown: list[Example] = []
    for (rule, _tool, _code, _path), _n in ranked[:TOP_EXAMPLE_RULES]:
        for rec, v in first[rule]:
            oc = rec["outcome_contract"]
            ex = Example(
                anchor=page.new_id(f"call-{rec['call_id'] or 'none'}"),
                call_id=rec["call_id"] or "(none)",
                tool=oc["tool"],
                rule=rule,
                code=v["code"],
                path=v["path"],
                expected=v.get("expected"),
                observed=v.get("observed"),
                recovery=tuple(oc.get("recovery_tools", [])),
                where=f"{rec.get('source') or '?'}:{rec.get('line') or '?'}",
            )
            shown.append(ex)
            index.by_rule[rule].append(ex)
    return ranked, shown


def receipts_section(
    art: Artifact,
    ranked: list[tuple[tuple[str, str, str, str], int]],
    shown: list[Example],
    page: Page,
    index: ReceiptIndex,
) -> None:
    n_calls = len(art.data)
    n_viol = sum(n for _, n in ranked)
    body = [
        f"<p>{n_calls:,} receipts ({n_viol:,} violations of {len(ranked):,} rules) in <code>{e(art.name)}</code>. "
        "A receipt is nonbinding: the tool result is returned unchanged, with the violation and the tools that "
        "could recover it beside it.</p>"
    ]
    if ranked:
        top = ranked[:TOP_RULES]
        rows = [Row(f"{t} {c} {p}", (Bar(float(n), text=f"{n:,}"),)) for (_r, t, c, p), n in top]
        cid = page.new_id("chart-receipt-rules")
        body.append(
            figure(
                interval_chart(
                    cid,
                    f"Violations per rule in {art.name}",
                    f"Horizontal bars: the {len(top)} rules with most violations among {n_calls:,} receipts; "
                    f"the most is {top[0][1]:,} ({top[0][0][1]} {top[0][0][2]} {top[0][0][3]}).",
                    rows,
                    ["violations"],
                    count,
                    tick=tick_num,
                ),
                table(
                    ["rule", "tool", "code", "path", "violations"],
                    [
                        [f"<code>{e(r)}</code>", e(t), e(c), f"<code>{e(p)}</code>", f"{n:,}"]
                        for (r, t, c, p), n in top
                    ],
                    numeric=[4],
                ),
                f"The {len(top)} rules with most violations (of {len(ranked):,} that fired).",
            )
        )
        body.append(
            f'<h3>Example receipts</h3><p class="note">Up to {EXAMPLES_PER_RULE} receipts for each of the {min(len(ranked), TOP_EXAMPLE_RULES)} rules that fired most; rules tables elsewhere on the page link here by rule id.</p>'
        )
        body.append(examples_table(shown, index.rule_links))
    page.section(f"Receipts: {art.name}", body, base="receipts")


# ------------------------------------------------------------------------------------------------------
# Audit


def _gate(g: Mapping[str, Any]) -> Gate:
    unit = "count" if g["metric"] == "spurious_per_100" else "share"
    return Gate(g["metric"], g["op"], g["threshold"], g["value"], g["low"], g["high"], g["passed"], unit)


def gates_html(gates: Sequence[Mapping[str, Any]]) -> str:
    """The gates' verdicts, each with its value, interval and threshold."""
    if not gates:
        return (
            '<p class="note">No gate was set for this audit (set them with <code>--max-fire-rate</code>, '
            "<code>--max-spurious-per-100</code>, <code>--min-detection</code>, <code>--min-coverage</code>).</p>"
        )
    items = []
    for g in gates:
        ok = bool(g["passed"])
        items.append(
            f'<li><span class="badge {"pass" if ok else "fail"}">{"PASS" if ok else "FAIL"}</span>'
            f"{e(_gate(g).message())}</li>"
        )
    return f'<ul class="gates">{"".join(items)}</ul>'


def audit_headline(a: Mapping[str, Any]) -> str:
    """The audit's headline figures as cards, and its gates."""
    sp = a["spurious"]["per_100_episodes"]
    cov = a["coverage"]
    cards = [
        rate_card("Fire rate (organic calls)", a["fire_rate"]),
        card(
            "Spurious receipts / 100 clean episodes",
            num(sp["value"]),
            f"{span(sp, num)} · {a['spurious']['numerator']:,} on {a['spurious']['denominator']:,} episodes",
        ),
        rate_card("Detection (labelled calls)", a["detection"]["overall"]),
        rate_card("Recovery retention", a["recovery_retention"]),
        card(
            "Rule coverage (census)",
            pct(cov["share"]),
            f"{cov['calls']:,}/{cov['checked']:,} calls · {cov['tools']}/{cov['called_tools']} tools",
        ),
    ]
    return f'<div class="cards">{"".join(cards)}</div>' + gates_html(a["gates"])


def _rate_rows(items: Iterable[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, Mapping[str, Any]]]:
    """Rows by value (highest first; unmeasured last), then name."""
    return sorted(items, key=lambda kv: (kv[1]["value"] is None, -(kv[1]["value"] or 0.0), kv[0]))


def rate_figure(
    page: Page,
    base: str,
    title: str,
    what: str,
    items: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    axis_max: float | None = None,
    label: str = "name",
) -> str:
    """An interval chart of rates (one row each) and its table."""
    cid = page.new_id(base)
    measured = [(k, r) for k, r in items if r["value"] is not None]
    top = max(measured, key=lambda kv: kv[1]["value"], default=None)
    desc = f"Horizontal bars with 95% interval whiskers for {len(items)} {what}." + (
        f" Highest: {top[0]} at {pct(top[1]['value'])} {span(top[1])}." if top else ""
    )
    svg = interval_chart(
        cid,
        title,
        desc,
        [Row(k, (bar_of(r),)) for k, r in items],
        ["rate"],
        pct,
        axis_max=axis_max,
        tick=tick_pct,
    )
    tab = table(
        [label, "rate", "95% interval", "count", "of"],
        [[e(k), pct(r["value"]), span(r), f"{r['numerator']:,}", f"{r['denominator']:,}"] for k, r in items],
        numeric=[1, 2, 3, 4],
    )
    return figure(svg, tab, f"{e(title)}: point estimate (dot), 95% interval (whisker), counts at the right.")


def audit_section(art: Artifact, page: Page, index: ReceiptIndex, n: int) -> None:
    a = art.data
    body: list[str] = []
    corpus, cs, pop, params = a["corpus"], a["contracts"], a["population"], a["params"]
    body.append(
        f"<p>Corpus <b>{e(corpus['name'])}</b>: {corpus['calls']:,} calls, {pop['checked']:,} checked "
        f"({pop['organic']:,} organic, {pop['labelled']:,} labelled), {pop['episodes']:,} episodes "
        f"({pop['clean_episodes']:,} clean), {pop['tasks']:,} tasks. Contract set: {cs['rules']:,} rules, "
        f"k = {cs['k']}, seed {cs['seed']} ({e(cs['origin'])}). "
        + (
            "Cross-fitted: each call was judged by a checker mined without its task. "
            if a["cross_fitted"]
            else "<b>Not cross-fitted (k = 1)</b>: rates are optimistic. "
        )
        + f"Intervals: {params['level']:.0%} task-clustered bootstrap ({params['bootstrap']:,} resamples).</p>"
    )
    tools = _rate_rows((t["tool"], t["fire_rate"]) for t in a["tools"])
    body.append("<h3>Fire rate per tool</h3>")
    body.append(
        rate_figure(
            page,
            "chart-fire-tool",
            "Fire rate per tool",
            "tools (organic calls with a receipt / organic calls)",
            tools,
            label="tool",
        )
    )
    codes = _rate_rows(a["fire_rate"]["by_code"].items())
    body.append("<h3>Fire rate per property code</h3>")
    body.append(
        rate_figure(
            page, "chart-fire-code", "Fire rate per property code", "property codes", codes, label="code"
        )
    )
    det = a["detection"]
    body.append("<h3>Detection per fault kind</h3>")
    if not det["by_kind"]:
        body.append(
            '<p class="note">No labelled call in this corpus: detection is not measured (audit with <code>--inject</code> or labelled traces).</p>'
        )
    else:
        kinds = sorted(det["by_kind"], key=lambda k: (-(det["by_kind"][k]["value"] or 0.0), k))
        pm = det["path_match"]["by_kind"]
        rows = [Row(k, (bar_of(det["by_kind"][k]), bar_of(pm[k]) if k in pm else None)) for k in kinds]
        cid = page.new_id("chart-detection")
        low = min(kinds, key=lambda k: (det["by_kind"][k]["value"] or 0.0, k))
        svg = interval_chart(
            cid,
            "Detection per fault kind",
            f"Two bars per fault kind ({len(kinds)} kinds): labelled calls with any violation, and with one at the faulted path, "
            f"each with a 95% interval. Overall {pct(det['overall']['value'])}; lowest {low} at {pct(det['by_kind'][low]['value'])}.",
            rows,
            ["any violation", "at the faulted path"],
            pct,
            axis_max=1.0,
            tick=tick_pct,
        )
        tab = table(
            ["fault kind", "detected", "95% interval", "count", "at the path", "95% interval"],
            [
                [
                    e(k),
                    pct(det["by_kind"][k]["value"]),
                    span(det["by_kind"][k]),
                    ratio(det["by_kind"][k]),
                    pct(pm[k]["value"]) if k in pm else "",
                    span(pm[k]) if k in pm else "",
                ]
                for k in kinds
            ],
            numeric=[1, 2, 3, 4, 5],
        )
        body.append(
            figure(
                svg,
                tab,
                f"Detection overall {e(rate_text(det['overall']))}; at the faulted path {e(rate_text(det['path_match']['overall']))}.",
            )
        )
    if a["coverage"]["uncovered"]:
        names = ", ".join(a["coverage"]["uncovered"])
        body.append(
            f'<p class="note">No rule checks {e(names)}: their calls count as checked but nothing can fire on them. '
            "Why each has none: pass the output of <code>contracts mine --json</code> to the report.</p>"
        )
    body.append(_abstention(a, page))
    body.append(_rules(a, page, index))
    body.append(_review(a, page))
    led = a["ledger"]
    body.append(
        f'<p class="note">Fire events frozen in ledger <code>{e(led["path"])}</code> ({led["entries"]:,} entries) before labels were joined; '
        f'head <code class="hash">{e(led["head"])}</code>, Merkle root <code class="hash">{e(led["root"])}</code>.</p>'
    )
    page.section(f"Audit: {corpus['name']}" + (f" ({n})" if n > 1 else ""), body, base="audit")


def _abstention(a: Mapping[str, Any], page: Page) -> str:
    rows = [r for r in a["abstention"] if r["coverage"] is not None and r["risk"] is not None]
    if not rows:
        return ""
    pts = tuple(CurvePoint(r["coverage"], r["risk"]) for r in rows)
    cid = page.new_id("chart-audit-coverage-risk")
    svg = curve_chart(
        cid,
        "Coverage and risk of the audit as rules of low support abstain",
        f"A curve of {len(pts)} points, one per support threshold: x is the share of fired calls still reported (coverage), "
        f"y the share of those on organic calls (risk). From coverage {pct(rows[0]['coverage'])} at risk {pct(rows[0]['risk'])} "
        f"to {pct(rows[-1]['coverage'])} at {pct(rows[-1]['risk'])}.",
        [Curve("rules with support ≥ threshold", pts)],
        "coverage",
        "risk",
        pct,
        pct,
        tick=tick_pct,
    )
    tab = table(
        [
            "min support",
            "rules",
            "fired calls",
            "coverage",
            "risk",
            "fire rate",
            "spurious / 100",
            "detection",
        ],
        [
            [
                f"{r['min_support']:,}",
                f"{r['rules']:,}",
                f"{r['fired_calls']:,}",
                pct(r["coverage"]),
                pct(r["risk"]),
                pct(r["fire_rate"]),
                num(r["spurious_per_100"]),
                pct(r["detection"]),
            ]
            for r in a["abstention"]
        ],
        numeric=range(8),
    )
    return "<h3>Coverage and risk (abstention by rule support)</h3>" + figure(
        svg,
        tab,
        "Only violations of rules with support at or above a threshold count; each point is one threshold (point figures, no interval).",
    )


def _rules(a: Mapping[str, Any], page: Page, index: ReceiptIndex) -> str:
    fired = sorted(
        (r for r in a["rules"] if r["fires"] > 0),
        key=lambda r: rule_display_key(r["organic_fires"], r["fires"], r["tool"], r["code"], r["rule"]),
    )
    out = [f"<h3>{RULES_TITLE}</h3>"]
    if not fired:
        return out[0] + f'<p class="note">None of the {len(a["rules"]):,} rules fired.</p>'
    top = fired[:TOP_RULES]
    rows = [
        Row(
            f"{r['tool']} {r['code']} {' '.join(r['paths'])}",
            (Bar(float(r["fires"]), text=f"{r['fires']:,} ({r['organic_fires']:,} organic)"),),
        )
        for r in top
    ]
    cid = page.new_id("chart-rules")
    out.append(
        figure(
            interval_chart(
                cid,
                RULES_TITLE,
                f"Horizontal bars: fires of {len(top)} rules that fired, those with the most organic (unfaulted) "
                f"fires first, then the most fires. First: {top[0]['tool']} {top[0]['code']} with "
                f"{top[0]['fires']:,} fires ({top[0]['organic_fires']:,} organic).",
                rows,
                ["fires"],
                count,
                tick=tick_num,
            ),
            table(
                ["tool", "code", "paths", "labelled", "organic", "all"],
                [
                    [
                        e(r["tool"]),
                        e(r["code"]),
                        f"<code>{e(' '.join(r['paths']))}</code>",
                        f"{r['labelled_fires']:,}",
                        f"{r['organic_fires']:,}",
                        f"{r['fires']:,}",
                    ]
                    for r in top
                ],
                numeric=[3, 4, 5],
            ),
            f"{len(fired):,} of {len(a['rules']):,} rules fired; {len(top)} shown, organic fires first.",
        )
    )
    review = {v["rule"]: s for s in a["spurious_receipts"][:MAX_REVIEW] for v in s["violations"]}
    shown = fired[:TOP_RULE_ROWS]
    ids = []
    cells = []
    for r in shown:
        rid = page.new_id(f"rule-{r['rule']}")
        index.rule_links.setdefault(r["rule"], rid)
        ids.append(rid)
        links = [
            f'<a href="#{x.anchor}"><code>{e(x.call_id)}</code></a>' for x in index.by_rule.get(r["rule"], [])
        ]
        if r["rule"] in review:
            s = review[r["rule"]]
            links.append(
                f'<a href="#{e(_review_anchor(s))}"><code>{e(s["call_id"])}</code></a> (clean episode)'
            )
        cells.append(
            [
                f"<code>{e(r['rule'])}</code>",
                e(r["tool"]),
                e(r["code"]),
                f"<code>{e(' '.join(r['paths']))}</code>",
                f"{r['support']:,}",
                f"{r['fires']:,}",
                f"{r['organic_fires']:,}",
                f"{r['clean_fires']:,}",
                f"{r['labelled_fires']:,}",
                " ".join(links) or '<span class="muted">—</span>',
            ]
        )
    out.append(
        table(
            [
                "rule",
                "tool",
                "code",
                "paths",
                "support",
                "fires",
                "organic",
                "in clean episodes",
                "labelled",
                "example receipts",
            ],
            cells,
            numeric=[4, 5, 6, 7, 8],
            ids=ids,
            caption=f"{len(shown)} of the {len(fired):,} rules that fired, organic fires first. Example receipts link to receipts given to the report (<code>contracts check -o</code>) and to receipts in clean episodes below.",
        )
    )
    return "".join(out)


def _review_anchor(s: Mapping[str, Any]) -> str:
    return f"review-{slug(s['call_id'])}"


def _review(a: Mapping[str, Any], page: Page) -> str:
    rows = a["spurious_receipts"][:MAX_REVIEW]
    if not rows:
        return ""
    ex = [
        Example(
            anchor=page.new_id(_review_anchor(s)),
            call_id=s["call_id"],
            tool=s["tool"],
            rule=v["rule"],
            code=v["code"],
            path=v["path"],
            expected=v["expected"],
            observed=v["observed"],
            recovery=None,
            where=f"{s['trace_id']} (fold {s['fold']})",
        )
        for s in rows
        for v in s["violations"][:1]
    ]
    return (
        f'<h3>Receipts in clean episodes, for review</h3><p class="note">{len(a["spurious_receipts"]):,} fired calls in episodes with no fault label'
        f"{f' (the first {MAX_REVIEW})' if len(a['spurious_receipts']) > MAX_REVIEW else ''}: each is a false alarm or an unlabelled fault. "
        "The audit JSON does not record recovery tools; pass the receipts of <code>contracts check</code> for them.</p>"
        + examples_table(ex, {})
    )


# ------------------------------------------------------------------------------------------------------
# Contract sets and mining coverage


def coverage_section(art: Artifact | None, mine: Artifact | None, page: Page) -> None:
    """Rules per tool (from a contract set, else a mine summary), and every tool with none and why."""
    body: list[str] = []
    per_tool: dict[str, Counter[str]] = {}
    subs: dict[str, list[str]] = {}
    if art is not None:
        cs = ContractSet.from_json(art.data)
        for r in cs.rules_for(None):
            per_tool.setdefault(r.tool, Counter())[r.code] += 1
        for name, tc in cs.tools.items():
            per_tool.setdefault(name, Counter())
            subs[name] = list(tc.substitutes)
        corpus = art.data.get("corpus", {})
        body.append(
            f"<p>Contract set <code>{e(art.name)}</code>: {sum(sum(c.values()) for c in per_tool.values()):,} rules in the full checker "
            f"for {sum(1 for c in per_tool.values() if c):,} tools, {len(cs.folds)} fold checkers (k = {cs.k}, seed {cs.seed})"
            + (
                f", mined from {corpus['clean_calls']:,} clean calls of {corpus.get('tasks', 0):,} tasks"
                if "clean_calls" in corpus
                else ""
            )
            + ".</p>"
        )
    elif mine is not None:
        for t, nrules in mine.data["by_tool"].items():
            per_tool[t] = Counter({"rules": nrules})
    gaps = list(mine.data["uncovered"]) if mine is not None else []
    for g in gaps:
        per_tool.setdefault(g["tool"], Counter())
    names = sorted(per_tool, key=lambda t: (-sum(per_tool[t].values()), t))
    if names:
        cid = page.new_id("chart-coverage")
        rows = [
            Row(t, (Bar(float(sum(per_tool[t].values())), text=f"{sum(per_tool[t].values()):,}"),))
            for t in names
        ]
        empty = [t for t in names if not per_tool[t]]
        svg = interval_chart(
            cid,
            "Rules per tool",
            f"Horizontal bars: rules of the full checker for each of {len(names)} tools; "
            + (
                f"{len(empty)} tools have none ({', '.join(empty)})."
                if empty
                else "every tool has at least one."
            ),
            rows,
            ["rules"],
            count,
            tick=tick_num,
        )
        tab = table(
            ["tool", "rules", "by code", "substitutes"],
            [
                [
                    e(t),
                    f"{sum(per_tool[t].values()):,}",
                    e(", ".join(f"{c} {k}" for c, k in sorted(per_tool[t].items())))
                    if art is not None
                    else "",
                    e(", ".join(subs.get(t, []))),
                ]
                for t in names
            ],
            numeric=[1],
        )
        body.append(
            figure(
                svg, tab, "Rules per tool in the full checker (the one <code>contracts check</code> applies)."
            )
        )
    body.append("<h3>Tools with no rule, and why</h3>")
    if gaps:
        body.append(
            table(
                ["tool", "calls", "clean calls", "tasks", "why no rule"],
                [
                    [
                        e(g["tool"]),
                        f"{g['calls']:,}",
                        f"{g['clean_calls']:,}",
                        f"{g['tasks']:,}",
                        e(g["reason"]),
                    ]
                    for g in gaps
                ],
                numeric=[1, 2, 3],
            )
        )
    elif mine is not None:
        body.append('<p class="note">Every called tool has at least one rule.</p>')
    else:
        body.append(
            '<p class="note">The reasons come from <code>contracts mine --json</code>: pass its output to the report to list '
            "each tool with no rule and why.</p>"
        )
    title = f"Rule coverage: {art.name if art is not None else mine.name if mine is not None else ''}"
    page.section(title, body, base="coverage")


# ------------------------------------------------------------------------------------------------------
# Repair


#: The repair score's rates shown per family: validity, exact object match.
REPAIR_SERIES = (("structural_validity", "valid after repair"), ("m_object", "M_object (exact object)"))


def coverage_risk_points(score: Mapping[str, Any]) -> tuple[list[CurvePoint], bool]:
    """The repair's coverage–risk points, and whether they are a sweep: the points of `repair-score
    --coverage-risk` (`coverage_risk.points`, or a bare list of `{"coverage": x, "risk": y}`, numbers
    or rates) when the score has them, else its single operating point (the `abstention` block)."""

    def val(x: Any) -> float | None:
        return x.get("value") if isinstance(x, Mapping) else x

    sweep = score.get("coverage_risk")
    if isinstance(sweep, Mapping):  # `repair-score --coverage-risk`: {cases, gate, mean_risk, points}
        sweep = sweep.get("points")
    if isinstance(sweep, list) and sweep:
        pts = [
            CurvePoint(
                float(c),
                float(r),
                (p["risk"].get("low") if isinstance(p["risk"], Mapping) else None),
                (p["risk"].get("high") if isinstance(p["risk"], Mapping) else None),
            )
            for p in sweep
            if (c := val(p.get("coverage"))) is not None and (r := val(p.get("risk"))) is not None
        ]
        return pts, True
    ab = score["abstention"]
    if ab["coverage"]["value"] is None or ab["risk"]["value"] is None:
        return [], False
    return [
        CurvePoint(ab["coverage"]["value"], ab["risk"]["value"], ab["risk"]["low"], ab["risk"]["high"])
    ], False


def repair_section(art: Artifact, page: Page) -> None:
    s = art.data
    pol = s.get("policy") or {}
    body = [
        f"<p>{s['cases']:,} repair cases replayed by policy <b>{e(pol.get('name', '?'))}</b>"
        f"{' v' + e(pol['version']) if 'version' in pol else ''}, seed {s['seed']}; intervals from {s['bootstrap']:,} bootstrap resamples.</p>"
    ]
    ab = s["abstention"]
    cards = [
        rate_card("Valid after repair", s["structural_validity"]),
        rate_card("Valid at the first attempt", s["first_attempt_validity"]),
        rate_card("M_object (exact object)", s["m_object"]),
        rate_card("M_patch (exact patch)", s["m_patch"]),
        rate_card("Collateral edits", s["collateral"]),
        rate_card("Abstained", ab["rate"]),
        rate_card("Risk when answering", ab["risk"]),
    ]
    body.append(f'<div class="cards">{"".join(cards)}</div>')
    fams = sorted(s["by_family"])
    if fams:
        cid = page.new_id("chart-repair-family")
        rows = [
            Row(
                f"{f} ({s['by_family'][f]['cases']})",
                tuple(bar_of(s["by_family"][f][k]) for k, _ in REPAIR_SERIES),
            )
            for f in fams
        ]
        svg = interval_chart(
            cid,
            "Validity and M_object per repair family",
            f"Two bars per family ({len(fams)} families, cases in brackets): share valid after repair and share repaired to exactly the target object, each with a 95% interval.",
            rows,
            [label for _, label in REPAIR_SERIES],
            pct,
            axis_max=1.0,
            tick=tick_pct,
        )
        tab = table(
            ["family", "cases", "valid", "95% interval", "M_object", "95% interval", "abstained", "risk"],
            [
                [
                    e(f),
                    f"{s['by_family'][f]['cases']:,}",
                    pct(s["by_family"][f]["structural_validity"]["value"]),
                    span(s["by_family"][f]["structural_validity"]),
                    pct(s["by_family"][f]["m_object"]["value"]),
                    span(s["by_family"][f]["m_object"]),
                    pct(s["by_family"][f]["abstention"]["rate"]["value"]),
                    pct(s["by_family"][f]["abstention"]["risk"]["value"]),
                ]
                for f in fams
            ],
            numeric=range(1, 8),
        )
        body.append(
            "<h3>Validity and M_object per family</h3>"
            + figure(
                svg,
                tab,
                "Per family of planted malformation: valid after repair, and exactly the hidden target.",
            )
        )
    pts, sweep = coverage_risk_points(s)
    body.append("<h3>Coverage and risk</h3>")
    if pts:
        cid = page.new_id("chart-repair-coverage-risk")
        svg = curve_chart(
            cid,
            "Repair coverage and risk",
            (f"A curve of {len(pts)} operating points" if sweep else "One operating point")
            + ": coverage (share of cases answered, not abstained) against risk (share of answers that are wrong). "
            + ", ".join(f"coverage {pct(p.x)} at risk {pct(p.y)}" for p in pts[:6]),
            [Curve(str(pol.get("name", "policy")), tuple(pts))],
            "coverage",
            "risk",
            pct,
            pct,
            tick=tick_pct,
        )
        tab = table(
            ["operating point", "coverage", "risk", "risk 95% interval"],
            [
                [
                    str(i + 1),
                    pct(p.x),
                    pct(p.y),
                    f"[{pct(p.low)}, {pct(p.high)}]" if p.low is not None else "",
                ]
                for i, p in enumerate(pts)
            ],
            numeric=[1, 2, 3],
        )
        note = (
            ""
            if sweep
            else " The score holds one operating point (the policy's own abstention), so this is a point, not a curve: "
            "a sweep of abstention thresholds in the score would draw the whole curve here."
        )
        body.append(
            figure(
                svg, tab, f"Coverage {e(rate_text(ab['coverage']))}; risk {e(rate_text(ab['risk']))}.{note}"
            )
        )
    else:
        body.append('<p class="note">No case was answered: coverage and risk are not measured.</p>')
    led = s["ledger"]
    body.append(
        f'<p class="note">Scored from the verified, frozen ledger <code>{e(led["path"])}</code> ({led["entries"]:,} entries): head '
        f'<code class="hash">{e(led["head"])}</code>, Merkle root <code class="hash">{e(led["root"])}</code>.</p>'
    )
    page.section(f"Repair: {art.name}", body, base="repair")


# ------------------------------------------------------------------------------------------------------
# Diff


def _statement(d: Mapping[str, Any]) -> str:
    try:
        return describe(Rule.from_json({**d, "source": ["mined"]}))
    except (KeyError, TypeError, ValueError):
        return f"{d['code']} {' '.join(d['paths'])} {canonical_str(d['params'])}"


def diff_section(name: str, d: Mapping[str, Any], page: Page) -> None:
    added, removed, changed = d["added"], d["removed"], d["changed"]
    body = [
        f"<p>{len(removed):,} rules removed, {len(changed):,} changed, {len(added):,} added, {d['unchanged']:,} unchanged.</p>"
    ]
    tools = sorted({r["tool"] for r in [*added, *removed]} | {c["new"]["tool"] for c in changed})
    if tools:
        per = {
            t: (
                sum(r["tool"] == t for r in removed),
                sum(r["tool"] == t for r in added),
                sum(c["new"]["tool"] == t for c in changed),
            )
            for t in tools
        }
        rows = [Row(t, tuple(Bar(float(x), text=f"{x:,}") for x in per[t])) for t in tools]
        cid = page.new_id("chart-diff")
        svg = interval_chart(
            cid,
            "Rules removed, added and changed per tool",
            f"Three bars per tool ({len(tools)} tools): rules removed, added and changed between the two contract sets.",
            rows,
            ["removed", "added", "changed"],
            count,
            tick=tick_num,
        )
        tab = table(
            ["tool", "removed", "added", "changed"],
            [[e(t), *(f"{x:,}" for x in per[t])] for t in tools],
            numeric=[1, 2, 3],
        )
        body.append(figure(svg, tab, "Drift between the contract sets, per tool."))
    for title, rules in (("Removed", removed), ("Added", added)):
        if rules:
            body.append(
                f"<h3>{title}</h3>"
                + table(
                    ["tool", "code", "rule", "support (calls / tasks)"],
                    [
                        [
                            e(r["tool"]),
                            e(r["code"]),
                            f"<code>{e(_statement(r))}</code>",
                            f"{r['support']['calls']:,} / {r['support']['tasks']:,}",
                        ]
                        for r in rules
                    ],
                    numeric=[3],
                )
            )
    if changed:
        body.append(
            "<h3>Changed</h3>"
            + table(
                ["tool", "code", "old", "new"],
                [
                    [
                        e(c["new"]["tool"]),
                        e(c["new"]["code"]),
                        f"<code>{e(_statement(c['old']))}</code>",
                        f"<code>{e(_statement(c['new']))}</code>",
                    ]
                    for c in changed
                ],
            )
        )
    page.section(f"Diff: {name}", body, base="diff")


# ------------------------------------------------------------------------------------------------------
# Ledgers


def ledger_section(artifacts: Sequence[Artifact], page: Page) -> None:
    """Every ledger anchor the inputs carry: record these elsewhere, check with `ledger verify --head`."""
    rows = []
    for a in artifacts:
        if a.kind in (Kind.AUDIT, Kind.REPAIR):
            led = a.data["ledger"]
            rows.append(
                [
                    f"<code>{e(led['path'])}</code> (from {e(a.name)})",
                    f"{led['entries']:,}",
                    f'<code class="hash">{e(led["head"])}</code>',
                    f'<code class="hash">{e(led["root"])}</code>',
                ]
            )
        elif a.kind is Kind.LEDGER:
            rows.append(
                [
                    f"<code>{e(a.name)}</code>",
                    f"{a.data['entries']:,}",
                    f'<code class="hash">{e(a.data["head"])}</code>',
                    f'<code class="hash">{e(a.data["root"])}</code>',
                ]
            )
    if not rows:
        return
    page.section(
        "Ledger anchors",
        [
            "<p>The head hash and RFC 6962 Merkle root of each ledger: a ledger is tamper-evident relative to an anchor recorded "
            "elsewhere; check one with <code>contracts ledger verify DIR --head HASH --root HASH</code>.</p>",
            table(["ledger", "entries", "head", "Merkle root"], rows, numeric=[1]),
        ],
        base="ledgers",
    )


# ------------------------------------------------------------------------------------------------------
# The page


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"


def render_html(
    artifacts: Sequence[Artifact], *, title: str = "contracts report", generated_at: str | None = None
) -> str:
    """The whole page for `artifacts` (in the order given); same inputs, same text."""
    page = Page()
    index = ReceiptIndex()
    receipts = {id(a): _receipt_model(a, page, index) for a in artifacts if a.kind is Kind.RECEIPTS}
    head_cards: list[str] = []
    audits = [a for a in artifacts if a.kind is Kind.AUDIT]
    mines = [a for a in artifacts if a.kind is Kind.MINE]
    sets = [a for a in artifacts if a.kind is Kind.CONTRACTS]
    for i, a in enumerate(audits, start=1):
        head_cards.append(
            f"<h3>Audit: {e(a.data['corpus']['name'])}{f' ({i})' if len(audits) > 1 else ''}</h3>"
            + audit_headline(a.data)
        )
    n_audit = 0
    used_mine = False
    for a in artifacts:
        if a.kind is Kind.AUDIT:
            n_audit += 1
            audit_section(a, page, index, n_audit if len(audits) > 1 else 1)
        elif a.kind is Kind.CONTRACTS:
            mine = mines[0] if mines and not used_mine else None
            used_mine = used_mine or mine is not None
            coverage_section(a, mine, page)
        elif a.kind is Kind.MINE and not sets:
            coverage_section(None, a, page)
        elif a.kind is Kind.REPAIR:
            repair_section(a, page)
            ab = a.data
            head_cards.append(
                f'<h3>Repair: {e(a.name)}</h3><div class="cards">'
                + rate_card("Valid after repair", ab["structural_validity"])
                + rate_card("M_object", ab["m_object"])
                + rate_card("Risk when answering", ab["abstention"]["risk"])
                + "</div>"
            )
        elif a.kind is Kind.DIFF:
            diff_section(a.name, a.data, page)
        elif a.kind is Kind.RECEIPTS:
            ranked, shown = receipts[id(a)]
            receipts_section(a, ranked, shown, page, index)
    for old, new in itertools.pairwise(sets):
        d = diff_sets(ContractSet.from_json(old.data), ContractSet.from_json(new.data))
        diff_section(f"{old.name} → {new.name}", d.to_json(), page)
    ledger_section(artifacts, page)
    if head_cards:
        page.sections.insert(0, "")
        page.toc.insert(0, ("headline", "Headline"))
        page.sections[0] = (
            f'<section id="headline" aria-labelledby="headline-h"><h2 id="headline-h">Headline</h2>{"".join(head_cards)}</section>'
        )
    inputs = table(
        ["kind", "file", "sha256"],
        [
            [e(a.kind.value), f"<code>{e(a.name)}</code>", f'<code class="hash">{a.sha256}</code>']
            for a in artifacts
        ],
    )
    when = f' · generated at <span id="generated-at">{e(generated_at)}</span>' if generated_at else ""
    toc = "".join(f'<li><a href="#{sid}">{e(t)}</a></li>' for sid, t in page.toc)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="contracts {e(__version__)}">'
        f"<title>{e(title)}</title><style>{CSS}</style></head>\n<body><main>"
        f'<header class="page"><h1>{e(title)}</h1><div class="muted">{len(artifacts)} input{"s" if len(artifacts) != 1 else ""}: '
        f"{e(', '.join(a.name for a in artifacts))}{when}</div>"
        f'<nav class="toc" aria-label="Contents"><ol>{toc}</ol></nav></header>\n'
        + "\n".join(page.sections)
        + f'\n<footer><h2 id="inputs">Inputs</h2>{inputs}<p class="muted">Written by contracts {e(__version__)}. '
        "Every figure is read from the inputs above; intervals are the 95% intervals they carry.</p></footer>"
        f"</main><script>{SCRIPT}</script></body></html>\n"
    )
