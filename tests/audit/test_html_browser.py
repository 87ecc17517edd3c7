"""The report in a real headless Chromium: it loads with no console message, no uncaught error
and no blocked fetch; every chart is drawn with data and has its table; a screenshot is written.

Chromium comes from the distribution's packages: `.ci/run` installs it on a fresh CI machine where it is
missing. Here the test skips, saying why, only when no browser binary can be found. The detection of
console errors is itself tested on a page that logs one and throws one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from tests.audit.browser import Browser, find_chromium

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
INPUTS = [
    GOLDEN / "audit-clean-inject.json",
    GOLDEN / "sample-contracts.json",
    GOLDEN / "repair-score.json",
    GOLDEN / "check-faulty-receipts.jsonl",
]

#: Per chart: is it an accessible image, how many data marks, and how many rows its table fallback has.
CHARTS_JS = """
[...document.querySelectorAll('svg')].map(s => {
  const fig = s.closest('figure');
  return {
    id: s.id,
    role: s.getAttribute('role'),
    title: (s.querySelector(':scope > title') || {}).textContent || '',
    desc: (s.querySelector(':scope > desc') || {}).textContent || '',
    marks: s.querySelectorAll('.mark').length,
    drawn: s.getBoundingClientRect().width,
    rows: fig ? fig.querySelectorAll('details table tbody tr').length : 0,
  };
})
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        pytest.skip(
            "no Chromium found (/usr/lib/chromium/chromium, /usr/bin/chromium or $CHROMIUM): "
            "`apt-get install -y chromium` (.ci/run does it on CI)"
        )
    with Browser(binary) as b:
        yield b


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", "not a PNG"
    w, h = struct.unpack(">II", head[16:24])
    return w, h


def test_report_loads_clean_and_draws_every_chart(browser: Browser, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["report", *map(str, INPUTS), "-o", str(page), "-q"])
    assert r.exit_code == 0, r.output
    browser.load(page.as_uri())
    assert browser.problems() == []
    charts = browser.evaluate(CHARTS_JS)
    assert len(charts) >= 8
    for c in charts:
        assert c["role"] == "img" and c["title"] and c["desc"], c
        assert c["marks"] >= 1 and c["rows"] >= 1 and c["drawn"] > 300, c
    # the print hook opens every data table (the page's one script)
    assert browser.evaluate("document.querySelectorAll('details[open]').length") == 0
    browser.evaluate("window.dispatchEvent(new Event('beforeprint')); 0")
    n = browser.evaluate("document.querySelectorAll('details').length")
    assert browser.evaluate("document.querySelectorAll('details[open]').length") == n > 0
    assert browser.problems() == []
    pdf = browser.pdf(tmp_path / "report.pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 50_000
    assert browser.problems() == []
    shot = browser.screenshot(tmp_path / "report.png")
    w, h = _png_size(shot)
    assert w >= 1000 and h >= 3000 and shot.stat().st_size > 100_000, (w, h, shot.stat().st_size)


def test_the_detection_catches_console_errors_and_exceptions(browser: Browser, tmp_path: Path) -> None:
    """A deliberately broken page: the checks above would fail on it."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><p>broken</p>"
        "<script>console.error('boom from console');</script>"
        "<script>notAFunction();</script></body></html>"
    )
    browser.load(bad.as_uri())
    problems = browser.problems()
    assert any(p.startswith("console.error: boom from console") for p in problems), problems
    assert any("uncaught: ReferenceError: notAFunction" in p for p in problems), problems


def test_the_page_cannot_fetch_anything(browser: Browser, tmp_path: Path) -> None:
    """The page's Content-Security-Policy refuses any fetch; a refused one is reported, so a report
    that tried to load a script or image from anywhere would fail the test above."""
    r = CliRunner().invoke(app, ["report", str(INPUTS[2]), "-o", str(tmp_path / "r.html"), "-q"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "r.html").read_text()
    (tmp_path / "x.png").write_bytes(b"")
    tampered = tmp_path / "tampered.html"
    tampered.write_text(html.replace("</main>", '<img src="x.png" alt=""></main>'))
    browser.load(tampered.as_uri())
    assert any("Content Security Policy" in p for p in browser.problems()), browser.problems()
