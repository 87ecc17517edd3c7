"""docs/performance.md states the figures of the committed bench runs (`bench/results.json`), not older ones.

A new `make bench` run rewrites `bench/results.json` and `bench/results.md`; this test then fails until
the page cites the new run: its date, and each target's figure and verdict as `make bench` words them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.loaders import bench_module

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "performance.md"
RESULTS = REPO / "bench" / "results.json"
#: The runs the page cites: the ratios are stated at 1M calls, mining's memory bound at 10M.
CITED = (1_000_000, 10_000_000)


def _runs() -> dict[int, dict[str, Any]]:
    doc = json.loads(RESULTS.read_text(encoding="utf-8"))
    return {r["calls"]: r for r in doc["runs"] if r["calls"] in CITED}


def _targets_table() -> dict[str, list[str]]:
    """The page's Targets table: each row's cells, by the target's text."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Targets\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| target")
    ]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}


def test_page_cites_the_committed_runs() -> None:
    text = PAGE.read_text(encoding="utf-8")
    runs = _runs()
    assert set(runs) == set(CITED)
    for calls, run in runs.items():
        assert f"measured {run['measured_at']}" in text, (
            f"docs/performance.md does not cite the {calls:,}-call run"
        )


@pytest.mark.parametrize("calls", CITED)
def test_every_measured_target_is_on_the_page_as_measured(calls: int) -> None:
    fmt = bench_module("run_all")._fmt_v
    table = _targets_table()
    measured = [t for t in _runs()[calls]["targets"] if t["measured"] is not None]
    assert measured
    for t in measured:
        assert t["text"] in table, f"docs/performance.md's Targets table has no row for {t['text']!r}"
        goal, got, result = table[t["text"]][:3]
        assert goal == f"{t['op']} {fmt(t['value'])}"
        assert got == fmt(t["measured"]), (t["text"], got, fmt(t["measured"]))
        assert result == ("met" if t["met"] else "not met"), t["text"]


def test_targets_table_is_read_as_written() -> None:
    """The parser sees every row (a row it skipped would let a stale figure through)."""
    table = _targets_table()
    assert len(table) == 11
    assert table["audit, 5 folds / mine --folds 5 (CPU)"][:3] == ["<= 1.50", "1.43", "met"]
