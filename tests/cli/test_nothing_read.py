"""Nothing read is an error everywhere: an input that yields no tool call (prose, a registry, a file of
bad lines) is exit 2 with one line naming the input as typed and its reject count, in every command that
reads trace files, and nothing is written; `--allow-empty` (one shared option) lets the read pass."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from output_contracts.cli.app import app

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
CONTRACTS = REPO / "tests" / "golden" / "sample-contracts.json"
ADVICE = "check the path and --format, or pass --allow-empty"

Argv = Callable[[Path, Path], list[str]]

#: Every command that reads trace files, with where it would write (`d / "out*"`).
COMMANDS: dict[str, Argv] = {
    "ingest": lambda d, x: ["ingest", str(x), "-o", str(d / "out")],
    "check": lambda d, x: ["check", "--contracts", str(CONTRACTS), str(x), "-o", str(d / "out.jsonl")],
    "mine": lambda d, x: ["mine", str(x), "-o", str(d / "out.json")],
    "audit": lambda d, x: ["audit", str(x), "--ledger", str(d / "out")],
    "compare": lambda d, x: ["compare", str(x), str(CLEAN), "--markdown", str(d / "out.md")],
    "inject": lambda d, x: ["inject", str(x), "-o", str(d / "out.jsonl")],
}


def _prose(d: Path) -> Path:
    p = d / "notes.md"
    p.write_text("# Notes\n\nThis is not a trace file.\nNor is this line.\n")
    return p


def _error_line(r: Result, expected: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == [expected]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_input_with_no_tool_call_is_an_error(command: str, tmp_path: Path) -> None:
    x = _prose(tmp_path)
    r = CliRunner().invoke(app, COMMANDS[command](tmp_path, x))
    _error_line(r, f"error[E_TRACE]: {x}: no tool call found (3 rejects); {ADVICE}")
    assert not list(tmp_path.glob("out*")), list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["ingest", "check", "inject"])
def test_allow_empty_restores_exit_0(command: str, tmp_path: Path) -> None:
    x = _prose(tmp_path)
    r = CliRunner().invoke(app, [*COMMANDS[command](tmp_path, x), "--allow-empty"])
    assert r.exit_code == 0, r.output
    assert list(tmp_path.glob("out*"))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "mine",
            "error[E_MINE]: {x}: no clean calls to mine (every call is an error, faulty or filtered out)",
        ),
        (
            "audit",
            "error[E_MINE]: {x}: no clean calls to mine (every call is an error, faulty or filtered out)",
        ),
        (
            "compare",
            "error[E_USAGE]: {name}: the baseline arm has no episode with a reward (0 episodes): nothing to compare",
        ),
    ],
)
def test_allow_empty_lets_the_read_pass_and_the_command_says_why_it_cannot_go_on(
    command: str, expected: str, tmp_path: Path
) -> None:
    """With nothing to mine or compare, the command's own error names the user's file, never the
    temporary or work folder the traces were ingested into; nothing is left behind."""
    x = _prose(tmp_path)
    r = CliRunner().invoke(app, [*COMMANDS[command](tmp_path, x), "--allow-empty"])
    _error_line(r, expected.format(x=x, name=x.name))
    assert not list(tmp_path.glob("out*")), list(tmp_path.iterdir())


def test_check_of_stdin_with_no_tool_call(tmp_path: Path) -> None:
    argv = ["check", "--contracts", str(CONTRACTS), "-"]
    r = CliRunner().invoke(app, argv, input="not json\n\nnor this\n")
    _error_line(r, f"error[E_TRACE]: -: no tool call found (2 rejects); {ADVICE}")
    r = CliRunner().invoke(app, [*argv, "--allow-empty"], input="not json\n")
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, argv, input="")
    _error_line(
        r,
        "error[E_TRACE]: -: no tool call found (0 rejects: an empty input, or a format whose calls this "
        f"reader does not see); {ADVICE}",
    )


def test_a_registry_named_as_traces(tmp_path: Path) -> None:
    reg = tmp_path / "tools.json"
    shutil.copy(REPO / "sample_traces" / "tools.json", reg)
    r = CliRunner().invoke(app, COMMANDS["check"](tmp_path, reg))
    _error_line(
        r,
        f"error[E_TRACE]: {reg}: no tool call found (0 rejects; skipped: a tool registry, not traces); {ADVICE}",
    )


def test_each_named_input_must_yield_a_call_a_folder_as_a_whole(tmp_path: Path) -> None:
    """Several inputs: the one typed that yields nothing is named, even when others yield calls; inside a
    folder, a file that yields nothing is only noted, as long as the folder yields a call."""
    x = _prose(tmp_path)
    r = CliRunner().invoke(app, ["ingest", str(CLEAN), str(x), "-o", str(tmp_path / "out")])
    _error_line(r, f"error[E_TRACE]: {x}: no tool call found (3 rejects); {ADVICE}")
    assert not (tmp_path / "out").exists()

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(CLEAN, mixed / "a.jsonl.gz")
    (mixed / "b.jsonl").write_text("not json\n")
    r = CliRunner().invoke(app, ["ingest", str(mixed), "-o", str(tmp_path / "c1"), "-q"])
    assert r.exit_code == 0, r.output

    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.jsonl").write_text("not json\n")
    (junk / "b.jsonl").write_text("nor this\n\nnor that\n")
    (junk / "tools.json").write_bytes((REPO / "sample_traces" / "tools.json").read_bytes())
    r = CliRunner().invoke(app, ["check", "--contracts", str(CONTRACTS), str(junk)])
    _error_line(
        r,
        f"error[E_TRACE]: {junk}: no tool call found in 3 files (3 rejects; skipped 1, first: "
        f"{junk / 'tools.json'}: a tool registry, not traces); {ADVICE}",
    )
    r = CliRunner().invoke(app, ["ingest", str(x), str(junk), "-o", str(tmp_path / "out")])
    _error_line(
        r, f"error[E_TRACE]: {x}: no tool call found (3 rejects); 1 more input(s) yield none either; {ADVICE}"
    )


def test_mining_errors_name_the_users_files_not_a_temporary_folder(tmp_path: Path) -> None:
    errs = tmp_path / "errors.jsonl"
    errs.write_text('{"trace_id": "t", "tool": "x", "arguments": {}, "status": "error", "error": "boom"}\n')
    r = CliRunner().invoke(app, ["mine", str(errs), "-o", str(tmp_path / "out.json")])
    _error_line(
        r, f"error[E_MINE]: {errs}: no clean calls to mine (every call is an error, faulty or filtered out)"
    )
