"""docs/cli.md is the commands' own `--help`, regenerated (`output_contracts.cli.reference`), never stale."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from output_contracts.cli import reference
from output_contracts.cli.app import app

REPO = Path(__file__).resolve().parents[2]
CLI_MD = REPO / "docs" / "cli.md"


def test_docs_cli_md_is_the_rendered_help() -> None:
    got = CLI_MD.read_text(encoding="utf-8")
    want = reference.render()
    assert got == want, f"docs/cli.md is stale: run `{reference.REGENERATE}` and commit it"


def test_every_command_has_its_section_and_index_row() -> None:
    """The walk reaches every command a user can type, groups and their members alike."""
    names = [name for name, _, _ in reference.commands()]
    assert len(names) == len(set(names))
    for must in ("contracts", "contracts ingest", "contracts ledger", "contracts ledger verify-proof"):
        assert must in names
    text = reference.render()
    for name in names:
        assert f"\n## `{name}`\n" in text
        assert f"| [`{name}`](#{reference.anchor(name)}) |" in text
    # a group's members are all listed: `contracts ledger --help` names six commands
    ledger = [n for n in names if n.startswith("contracts ledger ")]
    want = ["head", "prove", "repair", "show", "verify", "verify-proof"]
    assert sorted(n.split()[-1] for n in ledger) == want


def test_a_section_is_the_help_the_command_prints() -> None:
    """What the page shows for a command is what `contracts ... --help` prints at the same width."""
    section = reference.render().split("\n## `contracts ledger verify`\n\n```text\n")[1].split("\n```")[0]
    r = CliRunner().invoke(app, ["ledger", "verify", "--help"], terminal_width=reference.WIDTH)
    assert r.exit_code == 0
    assert section == "\n".join(x.rstrip() for x in r.output.rstrip("\n").split("\n"))
    assert section.startswith("Usage: contracts ledger verify [OPTIONS] DIR\n")


def test_render_does_not_depend_on_the_terminal(tmp_path: Path) -> None:
    """Another width, colour forced, another folder: the same bytes (the page is compared byte for byte)."""
    env = {**os.environ, "COLUMNS": "40", "LINES": "10", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    out = tmp_path / "cli.md"
    p = subprocess.run(
        [sys.executable, "-m", "output_contracts.cli.reference", "-o", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert out.read_text(encoding="utf-8") == reference.render()
    assert "\x1b[" not in out.read_text(encoding="utf-8")


def test_readme_links_every_command_into_the_reference() -> None:
    """README.md's command table links each command to its section of docs/cli.md, and each link lands."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    anchors = {reference.anchor(name) for name, _, _ in reference.commands()}
    linked = set(re.findall(r"\(docs/cli\.md#([\w-]+)\)", readme))
    assert linked, "README.md links no command into docs/cli.md"
    assert linked <= anchors, (
        f"README.md links to sections docs/cli.md does not have: {sorted(linked - anchors)}"
    )
    leaves = {reference.anchor(n) for n, cmd, _ in reference.commands() if not hasattr(cmd, "list_commands")}
    assert leaves <= linked, f"commands README.md does not link: {sorted(leaves - linked)}"
