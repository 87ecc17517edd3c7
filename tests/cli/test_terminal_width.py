"""Every command that prints a table, at COLUMNS=80: no line is wider, and no tool name is cut at its end.

The sample world (ingested, mined, audited, repaired once per module) and τ-bench airline (the real
data, skipped when ../shared/data is absent) go through the CLI entry point with a non-TTY stderr;
nothing progress-like (carriage returns, bar characters) may reach it. The renderer's own rules
(paths wrap at `/`, names shortened in the middle) are checked on their own, with Hypothesis.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.cli.tables import ELLIPSIS, Column, Grid, abbreviate, wrap_path
from tests.conftest import SAMPLE

WIDTH = 80
ENV = {"COLUMNS": str(WIDTH), "NO_COLOR": "1", "TERM": "dumb"}
runner = CliRunner()
BAR = re.compile("\r|━|╸|╺")  # rich's bar glyphs and the carriage return a live bar uses


def run(*args: str, code: int | None = 0, cwd: Path | None = None) -> tuple[str, str]:
    """stdout and stderr of `contracts ARGS` at COLUMNS=80 (CliRunner: neither stream is a TTY)."""
    r = runner.invoke(app, [str(a) for a in args], env=ENV)
    if code is not None:
        assert r.exit_code == code, (args, r.output)
    return r.stdout, r.stderr


def assert_fits(text: str, tools: set[str], what: str) -> None:
    """Every line at most 80 wide; every tool name either whole or shortened in its middle."""
    lines = text.split("\n")
    wide = [x for x in lines if len(x) > WIDTH]
    assert not wide, f"{what}: {len(wide)} line(s) over {WIDTH}: {wide[:3]}"
    for line in lines:
        for token in re.findall(r"[A-Za-z0-9_]*" + ELLIPSIS + r"[A-Za-z0-9_]*", line):
            head, tail = token.split(ELLIPSIS)[:2]
            if not head:
                continue
            hits = [t for t in tools if t.startswith(head) and t.endswith(tail) and len(t) > len(token) - 1]
            if any(t.startswith(head) for t in tools):
                assert hits, f"{what}: {token!r} keeps the ends of no tool name in {line!r}"
    assert not BAR.search(text), f"{what}: progress output on a non-TTY stream"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample world: corpus C, contracts.json, a stricter set, an audit ledger, a repair ledger."""
    w = tmp_path_factory.mktemp("width-world")
    (w / "contracts.toml").write_text("", encoding="utf-8")
    tools = SAMPLE / "tools.json"
    run("ingest", SAMPLE / "clean" / "part-1.jsonl.gz", "-o", w / "C", "--registry", tools, "-q")
    run("mine", w / "C", "-o", w / "contracts.json", "-q")
    run("mine", w / "C", "-o", w / "strict.json", "--min-support", "DOMAIN=1500", "-q")
    run("audit", w / "C", "--folds", "2", "--bootstrap", "50", "--ledger", w / "L", "-q")
    run("repair-cases", w / "C", "--registry", tools, "--kinds", "all", "--per-kind", "2", "-q",
        "-o", w / "cases.jsonl", "--targets", w / "targets.jsonl")  # fmt: skip
    run("repair-replay", w / "cases.jsonl", "--policy", "heuristic", "--ledger", w / "RL", "-q")
    return w


def tool_names(contracts: Path) -> set[str]:
    return set(json.loads(contracts.read_text(encoding="utf-8"))["tools"])


def test_sample_world_commands_fit_80_columns(world: Path) -> None:
    w, tools = world, tool_names(world / "contracts.json")
    cases: list[tuple[str, tuple[object, ...], int]] = [
        ("corpus info", ("corpus", "info", w / "C"), 0),
        ("mine", ("mine", w / "C", "-o", w / "again.json", "--folds", "2"), 0),
        ("rules", ("rules", w / "contracts.json"), 0),
        ("rules --by-fold", ("rules", w / "contracts.json", "--by-fold", "--corpus", w / "C"), 0),
        ("diff", ("diff", w / "contracts.json", w / "strict.json"), 0),
        ("check", ("check", "--contracts", w / "contracts.json", SAMPLE / "faulty", "-o", w / "r.jsonl"), 1),
        ("codes", ("codes",), 0),
        ("audit-score", ("audit-score", w / "L", "--corpus", w / "C", "--bootstrap", "50"), 0),
        ("repair-score", ("repair-score", w / "RL", "--targets", w / "targets.jsonl", "--coverage-risk"), 0),
        (
            "registry infer",
            ("registry", "infer", w / "C", "--contracts", w / "contracts.json", "-o", w / "i.json"),
            0,
        ),
        ("registry check", ("registry", "check", SAMPLE / "tools.json", w / "C"), None),
        ("config", ("config",), 0),
    ]
    for what, args, code in cases:
        out, err = run(*map(str, args), code=code)
        assert out.strip() or err.strip(), what
        assert_fits(out + err, tools, what)


def test_audit_fits_80_columns(world: Path) -> None:
    out, err = run("audit", world / "C", "--folds", "2", "--bootstrap", "50", "--ledger", world / "L2")
    assert "By tool (sorted by fires)" in out and "head " in out
    assert_fits(out + err, tool_names(world / "contracts.json"), "audit")


@pytest.fixture(scope="module")
def airline(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """τ-bench airline (gpt-4o): a corpus, its contract set, and trials 0-1 / 2-3 for compare."""
    w = tmp_path_factory.mktemp("width-airline")
    (w / "contracts.toml").write_text("", encoding="utf-8")
    src = shared_data / "tau_bench" / "trajectories" / "gpt-4o-airline.json"
    run("ingest", src, "-o", w / "tau", "-q")
    run("mine", w / "tau", "-o", w / "airline.json", "-q")
    runs = json.loads(src.read_text(encoding="utf-8"))
    for name, trials in (("trials-01.json", (0, 1)), ("trials-23.json", (2, 3))):
        (w / name).write_text(json.dumps([r for r in runs if r["trial"] in trials]), encoding="utf-8")
    return w


def test_tau_bench_airline_fits_80_columns(airline: Path) -> None:
    w, tools = airline, tool_names(airline / "airline.json")
    assert "update_reservation_passengers" in tools  # the 29-character name the tables must not cut
    for what, args, code in (
        ("corpus info", ("corpus", "info", w / "tau"), 0),
        ("mine", ("mine", w / "tau", "-o", w / "again.json"), 0),
        ("rules", ("rules", w / "airline.json"), 0),
        ("rules --by-fold", ("rules", w / "airline.json", "--by-fold"), 0),
        ("compare", ("compare", w / "trials-01.json", w / "trials-23.json"), 0),
        ("audit", ("audit", w / "tau", "--folds", "5", "--bootstrap", "100", "--ledger", w / "L"), 0),
        ("registry infer", ("registry", "infer", w / "tau", "--substitutes", "-o", w / "t.json"), 0),
    ):
        out, err = run(*map(str, args), code=code)
        assert_fits(out + err, tools, what)
        if what == "mine":
            # the 14 tools, each whole or shortened in the middle, in the summary table
            shown = {line.split("  ")[0].strip() for line in err.split("\n")}
            for t in tools:
                assert t in shown or any(
                    s.endswith(t[-3:]) and s.startswith(t[:3]) and ELLIPSIS in s for s in shown
                ), t


def test_progress_stays_off_a_pipe(tmp_path: Path) -> None:
    """A real process with stderr a pipe: no bar, no carriage return, whatever the command does."""
    (tmp_path / "contracts.toml").write_text("", encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "output_contracts.cli.app",
        "mine",
        str(SAMPLE / "clean" / "part-2.jsonl.gz"),
    ]
    p = subprocess.run(
        [*cmd, "-o", str(tmp_path / "c.json"), "--tool", "refund_order"],
        cwd=tmp_path,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "80", "HOME": str(tmp_path)},
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert b"\r" not in p.stderr and b"\x1b[" not in p.stderr and "━".encode() not in p.stderr
    assert b"mined " in p.stderr  # the summary itself is there


def test_a_terminal_sees_the_bar() -> None:
    """On a TTY (forced), progress_bar renders; with -q, and on a pipe, it is the silent null."""
    from output_contracts.cli import common
    from output_contracts.progress import NULL_PROGRESS

    assert common.progress_bar(False) is NULL_PROGRESS  # stderr is not a terminal under pytest
    forced = common.Console(stderr=True, force_terminal=True, width=80, file=open("/dev/null", "w"))  # noqa: SIM115
    saved = common.err
    try:
        common.err = forced
        bar = common.progress_bar(False)
        assert isinstance(bar, common.RichBar)
        bar.start("ingest", 100)
        bar.advance(50)
        bar.start("mine", 4)  # a second task replaces the first
        bar.advance()
        bar.finish()
        assert common.progress_bar(True) is NULL_PROGRESS
    finally:
        common.err = saved
        forced.file.close()


# --- the renderer itself ---------------------------------------------------------------------------------


def test_abbreviate_keeps_both_ends() -> None:
    assert abbreviate("get_reservation_details", 20) == "get_reserv…n_details"
    assert abbreviate("refund_order", 20) == "refund_order"


@given(st.text(alphabet="abc_/XYZ0", min_size=1, max_size=60), st.integers(min_value=3, max_value=40))
def test_abbreviate_property(name: str, width: int) -> None:
    s = abbreviate(name, width)
    assert len(s) <= width
    if s != name:
        head, tail = s.split(ELLIPSIS)
        assert name.startswith(head) and name.endswith(tail) and head and tail


@given(
    st.lists(st.text(alphabet="abcdefgh_*0", min_size=1, max_size=14), min_size=1, max_size=8),
    st.integers(min_value=6, max_value=30),
)
def test_wrap_path_breaks_before_a_slash(segments: list[str], width: int) -> None:
    path = "/" + "/".join(segments)
    lines = wrap_path(path, width)
    assert "".join(lines) == path and all(len(x) <= width for x in lines)
    if all(len(s) + 1 <= width for s in segments):
        assert all(x.startswith("/") for x in lines)


def test_a_wide_table_splits_into_groups_that_repeat_the_key() -> None:
    g = Grid([Column("tool", "name"), *(Column(f"C{i}", "num") for i in range(20))])
    g.add_row("update_reservation_passengers", *range(1000, 1020))
    lines = [t for t, _ in g.render(60)]
    assert max(map(len, lines)) <= 60
    assert sum(x.startswith("update_reservation_passengers") for x in lines) >= 2
    assert g.tsv()[1].split("\t")[0] == "update_reservation_passengers"
    assert g.tsv()[1].split("\t")[1] == "1000"  # plain: digits, no thousands separator


def test_compare_and_audit_plain_are_the_json(airline: Path) -> None:
    """`--plain` of compare and audit-score (real τ-bench data): the rows of their JSON reports."""
    w = airline
    plain, _ = run("compare", w / "trials-01.json", w / "trials-23.json", "--plain", "-q")
    data = json.loads(run("compare", w / "trials-01.json", w / "trials-23.json", "--json", "-q")[0])
    lines = [x.split("\t") for x in plain.rstrip("\n").split("\n")]
    assert lines[0][:2] == ["stratum", "units"] and len({len(x) for x in lines}) == 1
    assert [r[1] for r in lines[1:]] == [str(data["overall"]["units"])] + [
        str(s["units"]) for s in data["strata"]
    ]
    run("audit", w / "tau", "--folds", "2", "--bootstrap", "50", "--ledger", w / "LP", "-q")
    plain, _ = run("audit-score", w / "LP", "--corpus", w / "tau", "--bootstrap", "50", "--plain", "-q")
    rows = [x.split("\t") for x in plain.rstrip("\n").split("\n")]
    assert rows[0] == ["tool", "fires", "organic", "fire rate", "labelled", "detected"]
    assert {r[0] for r in rows[1:]} == tool_names(w / "airline.json")  # every tool, names whole
    assert all(r[2].isdigit() for r in rows[1:])  # plain digits, no thousands separators
