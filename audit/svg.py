"""Inline SVG charts for the HTML report, drawn here so the page needs no network, library or script.

Two shapes cover every figure the report shows: `interval_chart` (horizontal rows, one mark a value
with its 95% interval as a whisker, grouped by category, one colour per series) and `curve_chart`
(points joined in x order, each with a vertical interval: coverage against risk). Each chart is an
`<svg role="img">` whose `<title>` and `<desc>` carry its alt text; the page puts a table with the same
numbers beside it. Every data mark has class `mark`, so a test can count them. Coordinates are rounded
to 0.1 and numbers formatted by the caller's function: the same data gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

#: Series colours (colour-blind safe: Okabe-Ito blue, vermillion, bluish green, orange).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#e69f00")
WIDTH = 760
LABEL_W = 230  # left column: row labels
VALUE_W = 150  # right column: the value's text
ROW_H = 20
TOP = 34  # room for the axis labels
FONT = 12

Fmt = Callable[[float | None], str]


@dataclass(frozen=True)
class Bar:
    """One mark: a value with its interval (None where unmeasured), and a short text for the value."""

    value: float | None
    low: float | None = None
    high: float | None = None
    text: str = ""


@dataclass(frozen=True)
class Row:
    """One category of an interval chart: a label and one `Bar` per series (None: not in that series)."""

    label: str
    bars: tuple[Bar | None, ...]


@dataclass(frozen=True)
class CurvePoint:
    """A point of a curve: x, y and y's interval."""

    x: float
    y: float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Curve:
    """A named series of points, joined in x order when there are two or more."""

    name: str
    points: tuple[CurvePoint, ...]


def _n(x: float) -> str:
    """A coordinate, rounded to 0.1 (no `-0.0`)."""
    v = round(x, 1)
    return f"{v + 0.0:g}"


def nice_max(x: float) -> float:
    """The smallest of 1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8 × 10^k at or above `x` (1 for nothing to
    show): four ticks on it fall on round numbers."""
    if not x > 0 or not math.isfinite(x):
        return 1.0
    base = 10 ** math.floor(math.log10(x))
    for m in (1, 1.2, 1.6, 2, 2.4, 3, 4, 5, 6, 8, 10):
        if m * base >= x * (1 - 1e-12):
            return float(m * base)
    return float(10 * base)


def _ticks(top: float, n: int = 4) -> list[float]:
    return [top * i / n for i in range(n + 1)]


def _head(chart_id: str, title: str, desc: str, height: float) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {WIDTH} {_n(height)}" '
        f'aria-labelledby="{chart_id}-t {chart_id}-d" id="{chart_id}" class="chart" '
        f'font-size="{FONT}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
        f'<desc id="{chart_id}-d">{escape(desc)}</desc>',
    ]


def _clip(label: str, width: int = 30) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def interval_chart(
    chart_id: str,
    title: str,
    desc: str,
    rows: Sequence[Row],
    series: Sequence[str],
    fmt: Fmt,
    *,
    axis_max: float | None = None,
    tick: Fmt | None = None,
) -> str:
    """Horizontal interval bars: per row one bar per series (a light bar to the value, a whisker from
    low to high, a dot at the value), an axis from 0 to `axis_max` (default: a round number above every
    high), and a legend when there is more than one series."""
    k = max(1, len(series))
    group_h = ROW_H * k + 6
    legend_h = 22 if k > 1 else 0
    height = TOP + legend_h + group_h * len(rows) + 8
    x0, x1 = LABEL_W, WIDTH - VALUE_W
    peaks = [v for r in rows for b in r.bars if b is not None for v in (b.high, b.value) if v is not None]
    top = axis_max if axis_max is not None else nice_max(max(peaks, default=0.0))

    def sx(v: float) -> float:
        return x0 + (x1 - x0) * min(max(v, 0.0), top) / top

    out = _head(chart_id, title, desc, height)
    y_axis = TOP + legend_h
    for t in _ticks(top):
        x = sx(t)
        out.append(
            f'<line class="grid" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(y_axis - 4)}" y2="{_n(height - 6)}" '
            'stroke="#d8dde3" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{_n(x)}" y="{_n(y_axis - 10)}" text-anchor="middle" fill="#555">{escape((tick or fmt)(t))}</text>'
        )
    if k > 1:
        lx = x0
        for i, name in enumerate(series):
            out.append(
                f'<rect x="{_n(lx)}" y="{_n(TOP - 26)}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
            )
            out.append(f'<text x="{_n(lx + 14)}" y="{_n(TOP - 17)}" fill="#222">{escape(name)}</text>')
            lx += 24 + 7 * len(name)
    for gi, row in enumerate(rows):
        gy = y_axis + gi * group_h
        if gi % 2 == 0:
            out.append(f'<rect x="0" y="{_n(gy)}" width="{WIDTH}" height="{group_h}" fill="#f4f6f8"/>')
        out.append(
            f'<text x="{x0 - 8}" y="{_n(gy + group_h / 2 + 4)}" text-anchor="end" fill="#222">'
            f"<title>{escape(row.label)}</title>{escape(_clip(row.label))}</text>"
        )
        for si, bar in enumerate(row.bars):
            if bar is None:
                continue
            colour = PALETTE[si % len(PALETTE)]
            cy = gy + 3 + si * ROW_H + ROW_H / 2
            if bar.value is None:
                out.append(f'<text x="{x0 + 4}" y="{_n(cy + 4)}" fill="#777">not measured</text>')
                continue
            if bar.value == 0 and bar.high is None:  # a zero count: its number, no mark
                out.append(
                    f'<text x="{x1 + 8}" y="{_n(cy + 4)}" fill="#777">{escape(bar.text or fmt(0.0))}</text>'
                )
                continue
            name = series[si] if si < len(series) else ""
            tip = escape(f"{row.label}{' · ' + name if name and k > 1 else ''}: {bar.text or fmt(bar.value)}")
            out.append(f'<g class="mark"><title>{tip}</title>')
            out.append(
                f'<rect x="{x0}" y="{_n(cy - 5)}" width="{_n(max(sx(bar.value) - x0, 0.0))}" height="10" '
                f'fill="{colour}" fill-opacity="0.28"/>'
            )
            if bar.low is not None and bar.high is not None:
                a, b = sx(bar.low), sx(bar.high)
                out.append(
                    f'<path d="M{_n(a)} {_n(cy)}H{_n(b)}M{_n(a)} {_n(cy - 5)}V{_n(cy + 5)}M{_n(b)} {_n(cy - 5)}V{_n(cy + 5)}" '
                    f'stroke="{colour}" stroke-width="1.6" fill="none"/>'
                )
            out.append(f'<circle cx="{_n(sx(bar.value))}" cy="{_n(cy)}" r="4" fill="{colour}"/></g>')
            out.append(
                f'<text x="{x1 + 8}" y="{_n(cy + 4)}" fill="#222">{escape(bar.text or fmt(bar.value))}</text>'
            )
    out.append(
        f'<line x1="{x0}" x2="{x0}" y1="{_n(y_axis - 4)}" y2="{_n(height - 6)}" stroke="#888" stroke-width="1"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def curve_chart(
    chart_id: str,
    title: str,
    desc: str,
    curves: Sequence[Curve],
    x_label: str,
    y_label: str,
    fmt_x: Fmt,
    fmt_y: Fmt,
    *,
    tick: Fmt | None = None,
) -> str:
    """Points of each curve (x from 0 to 1, y from 0 to a round number above every high), joined in x
    order, with a vertical whisker for y's interval; a legend names the curves."""
    height = 320.0
    left, right, top_px, bottom = 70.0, WIDTH - 30.0, 40.0, height - 50.0
    peaks = [v for c in curves for p in c.points for v in (p.high, p.y) if v is not None]
    y_top = nice_max(max(peaks, default=0.0))

    def sx(v: float) -> float:
        return left + (right - left) * min(max(v, 0.0), 1.0)

    def sy(v: float) -> float:
        return bottom - (bottom - top_px) * min(max(v, 0.0), y_top) / y_top

    out = _head(chart_id, title, desc, height)
    for t in _ticks(1.0):
        out.append(
            f'<line class="grid" x1="{_n(sx(t))}" x2="{_n(sx(t))}" y1="{_n(top_px)}" y2="{_n(bottom)}" stroke="#e3e7eb"/>'
        )
        out.append(
            f'<text x="{_n(sx(t))}" y="{_n(bottom + 16)}" text-anchor="middle" fill="#555">{escape((tick or fmt_x)(t))}</text>'
        )
    for t in _ticks(y_top):
        out.append(
            f'<line class="grid" x1="{_n(left)}" x2="{_n(right)}" y1="{_n(sy(t))}" y2="{_n(sy(t))}" stroke="#e3e7eb"/>'
        )
        out.append(
            f'<text x="{_n(left - 6)}" y="{_n(sy(t) + 4)}" text-anchor="end" fill="#555">{escape((tick or fmt_y)(t))}</text>'
        )
    out.append(f'<path d="M{_n(left)} {_n(top_px)}V{_n(bottom)}H{_n(right)}" stroke="#888" fill="none"/>')
    out.append(
        f'<text x="{_n((left + right) / 2)}" y="{_n(height - 12)}" text-anchor="middle" fill="#222">{escape(x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(16 {_n((top_px + bottom) / 2)}) rotate(-90)" text-anchor="middle" '
        f'fill="#222">{escape(y_label)}</text>'
    )
    lx = left
    for ci, c in enumerate(curves):
        colour = PALETTE[ci % len(PALETTE)]
        out.append(f'<rect x="{_n(lx)}" y="12" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{_n(lx + 14)}" y="21" fill="#222">{escape(c.name)}</text>')
        lx += 30 + 7 * len(c.name)
        pts = sorted(c.points, key=lambda p: (p.x, p.y))
        if len(pts) > 1:
            d = "M" + "L".join(f"{_n(sx(p.x))} {_n(sy(p.y))}" for p in pts)
            out.append(f'<path class="mark" d="{d}" stroke="{colour}" stroke-width="2" fill="none"/>')
        for p in pts:
            tip = escape(f"{c.name}: {x_label} {fmt_x(p.x)}, {y_label} {fmt_y(p.y)}")
            out.append(f'<g class="mark"><title>{tip}</title>')
            if p.low is not None and p.high is not None:
                out.append(
                    f'<path d="M{_n(sx(p.x))} {_n(sy(p.low))}V{_n(sy(p.high))}" stroke="{colour}" '
                    'stroke-width="1.4" stroke-opacity="0.7"/>'
                )
            out.append(f'<circle cx="{_n(sx(p.x))}" cy="{_n(sy(p.y))}" r="4.5" fill="{colour}"/></g>')
    out.append("</svg>")
    return "\n".join(out)
