"""Every command has help text, and the README names every command (its table links each to docs/cli.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from output_contracts.cli.app import app

REPO = Path(__file__).resolve().parents[2]


def _commands() -> list[tuple[str, object]]:
    root = get_command(app)
    found: list[tuple[str, object]] = []

    def walk(cmd: object, prefix: str) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                walk(sub, f"{prefix} {name}".strip())
        else:
            found.append((prefix, cmd))

    walk(root, "")
    return found


def test_every_command_has_help_text() -> None:
    missing = [name for name, cmd in _commands() if not (getattr(cmd, "help", None) or "").strip()]
    assert missing == []


def test_every_command_help_runs() -> None:
    runner = CliRunner()
    for name, _cmd in _commands():
        result = runner.invoke(app, [*name.split(), "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Usage" in result.output


def test_short_help_is_the_long_help_everywhere() -> None:
    """`-h` is what a newcomer types first: every command and group answers it exactly as `--help`."""
    runner = CliRunner()
    names = [name for name, _ in _commands()] + ["", "ledger", "corpus", "registry", "tools", "config"]
    for name in names:
        short = runner.invoke(app, [*name.split(), "-h"])
        long = runner.invoke(app, [*name.split(), "--help"])
        assert short.exit_code == 0, (name, short.output)
        assert short.output == long.output, name


def test_readme_shows_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [name for name, _ in _commands() if f"contracts {name}" not in readme]
    assert missing == [], f"README.md does not name: {missing}"


def test_console_entry_point_lists_subcommands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "output_contracts.cli.app", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0
    for name in ("ingest", "mine", "check", "audit", "repair-replay", "ledger", "plan-check", "config"):
        assert name in result.stdout


def test_unknown_command_is_usage_error() -> None:
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def test_library_errors_name_settings_and_the_cli_names_flags(tmp_path: Path) -> None:
    """The library says `chunk_rows must be >= 1`; the command line says `--chunk-rows must be >= 1`."""
    from output_contracts.errors import TraceError
    from output_contracts.traces.ingest import ingest

    src = tmp_path / "t.jsonl"
    src.write_text('{"trace_id": "t", "tool": "x", "arguments": {}, "result": 1}\n')
    with pytest.raises(TraceError, match=r"\]: chunk_rows must be >= 1"):
        ingest([src], tmp_path / "c", chunk_rows=0)
    r = CliRunner().invoke(app, ["inject", str(src), "-o", str(tmp_path / "i.jsonl"), "--rate", "2"])
    assert r.exit_code == 2
    assert "error[E_USAGE]: --rate must be between 0 and 1, got 2.0" in r.output
