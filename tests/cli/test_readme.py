"""Every `console` example of README.md, run as written and in order, against its shown output.

The README promises that each example runs as written from a fresh clone after `make demo` (which
creates `.venv`; `source .venv/bin/activate` puts `contracts` on PATH) and prints what is shown. This
test holds it to that: it runs every `$ ` command of every ```console block, in README order, in one
scratch folder laid out like the repository (`sample_traces/` and `docs/` are linked in, `../shared`
is the real data folder beside the repository), and compares the output and exit code.

The expected text is matched, not compared byte for byte, only where the README says so: `…` inside a
line stands for any text on that line, and a line holding only `…` for any number of lines (a table
shortened for reading). Numbers, ledger heads and Merkle roots are compared exactly: the pipeline is
deterministic, so a changed number is a changed behaviour and the README must change with it.

Conventions of the blocks (what an author of a README example needs to know):
- a command is a `$ ` line, continued by lines ending in `\\`; what follows up to the next `$ ` line is
  its output (stdout and stderr interleaved, as a terminal shows them), run at COLUMNS=120;
- a last output line `[exit N]` is the expected exit code (default 0);
- `<!-- readme-test: skip REASON -->` on the line before a block skips it (an optional extra that the
  dev install does not have); a block needing ../shared/data is skipped, with the reason, when absent.

`pytest tests/cli/test_readme.py --update-readme` rewrites, in README.md, the output of each command
whose output does not match with the real output, keeping the author's shortenings (`reelide`): a shown
line whose numbers changed is replaced by the new one, a `…` line keeps standing for what it stood for,
and only lines that are new and next to no `…` are added. Read the diff before committing it.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SHARED = REPO.parent / "shared"
COLUMNS = "120"
ELLIPSIS = "…"
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s*(.*?)\s*-->")
EXIT_LINE = re.compile(r"^\[exit (\d+)\]$")


@dataclass
class Command:
    """One `$ ` command of the README: its text, the README lines of its shown output, the exit code."""

    text: str
    line: int  # 1-based README line of the `$ `
    out_start: int  # 0-based index of its first output line in the README's lines
    out_end: int  # one past its last output line (the `[exit N]` line included)
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


@dataclass
class Block:
    line: int
    commands: list[Command]
    skip: str | None


def parse(text: str) -> list[Block]:
    """The README's console blocks, their commands and shown outputs."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        prev = lines[i - 1] if i else ""
        m = SKIP_MARK.search(prev)
        start = i
        i += 1
        cmds: list[Command] = []
        while i < len(lines) and lines[i].strip() != "```":
            if lines[i].startswith("$ "):
                first = i
                text_ = lines[i][2:]
                while text_.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text_ = text_ + "\n" + lines[i]  # bash reads backslash-newline as one line
                cmds.append(Command(text_, first + 1, i + 1, i + 1))
            elif cmds:
                cmds[-1].expected.append(lines[i])
                cmds[-1].out_end = i + 1
            i += 1
        for c in cmds:
            while c.expected and not c.expected[-1].strip():  # a blank line separates commands
                c.expected.pop()
                c.out_end -= 1
            if c.expected and EXIT_LINE.match(c.expected[-1].strip()):
                c.exit_code = int(EXIT_LINE.match(c.expected[-1].strip()).group(1))  # type: ignore[union-attr]
                c.expected = c.expected[:-1]
        blocks.append(Block(start + 1, cmds, m.group(1) or "skipped" if m else None))
        i += 1
    return blocks


def pattern(expected: list[str]) -> re.Pattern[str]:
    """A regex for a shown output: `…` alone on a line is any lines, inside a line any text."""
    parts: list[str] = []
    for line in expected:
        s = line.rstrip()
        if s.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = [re.escape(p) for p in s.split(ELLIPSIS)]
        parts.append("[^\\n]*".join(pieces) + r"[ \t]*\n")
    return re.compile("".join(parts) + r"\Z")


_VOLATILE = re.compile(r"[0-9a-f]{12,}|\d[\d,.]*")


def _shape(line: str) -> str:
    """A line with its numbers and hashes blanked: how shown and produced lines are aligned."""
    return _VOLATILE.sub("#", line.rstrip())


def reelide(shown: list[str], got: list[str]) -> list[str]:
    """The new output `got` shortened as `shown` was: lines aligned by `_shape`; an aligned line is the
    new one (or the shown one where its inline `…` still matches it); a lone `…` keeps standing for the
    new lines around it; a new line that meets no `…` is added, a shown line with no counterpart goes."""
    out: list[str] = []
    ops = difflib.SequenceMatcher(None, [_shape(x) for x in shown], [_shape(x) for x in got], autojunk=False)
    for tag, i1, i2, j1, j2 in ops.get_opcodes():
        old, new = shown[i1:i2], got[j1:j2]
        dots = [x for x in old if x.strip() == ELLIPSIS]
        if tag == "equal":
            out.extend(
                o if ELLIPSIS in o and pattern([o]).match(n + "\n") else n
                for o, n in zip(old, new, strict=True)
            )
        elif dots:
            out.append(ELLIPSIS)  # what a `…` stood for, whatever else changed beside it
        elif tag == "insert" and out and out[-1].strip() == ELLIPSIS:
            continue
        elif tag in ("replace", "insert"):
            out.extend(new)
    return out


def normalise(out: str) -> str:
    """Output as compared: lines right-stripped, one final newline, nothing else."""
    lines = [x.rstrip() for x in out.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "".join(x + "\n" for x in lines)


def run(cmd: str, cwd: Path) -> tuple[str, int]:
    env = dict(os.environ)
    env.update(
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
        COLUMNS=COLUMNS,
        LINES="40",
        NO_COLOR="1",
        TERM="dumb",
        PYTHONHASHSEED="0",
    )
    for var in ("FORCE_COLOR", "CONTRACTS_CONFIG"):
        env.pop(var, None)
    p = subprocess.run(
        ["bash", "-c", cmd],  # as an interactive shell: a pipeline exits as its last command
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    return p.stdout, p.returncode


def _workspace(tmp: Path) -> Path:
    """A folder laid out like the repository: the README's relative paths resolve as in a clone."""
    root = tmp / "repo"
    root.mkdir()
    # copied, not linked: `cd sample_traces && contracts ingest` writes beside its contracts.toml
    shutil.copytree(
        REPO / "sample_traces", root / "sample_traces", ignore=shutil.ignore_patterns(".contracts")
    )
    (root / "docs").symlink_to(REPO / "docs")
    (root / "bench").symlink_to(REPO / "bench")  # the τ-bench corpus generator an example runs
    if SHARED.is_dir():
        (tmp / "shared").symlink_to(SHARED)
    return root


def test_readme_blocks_parse() -> None:
    """The README has examples for every subcommand, and the parser sees each one."""
    blocks = parse(README.read_text(encoding="utf-8"))
    cmds = [c.text for b in blocks for c in b.commands]
    assert len(cmds) >= 30
    import typer.main

    from output_contracts.cli.app import app

    click_app = typer.main.get_command(app)
    names = set(click_app.commands)  # type: ignore[attr-defined]
    shown = {w for c in cmds for w in re.findall(r"(?:^|&& |\| )contracts ([a-z-]+)", c)}
    assert names <= shown, f"subcommands without a README example: {sorted(names - shown)}"


def test_readme_examples_run_as_shown(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    update = bool(request.config.getoption("--update-readme"))
    text = README.read_text(encoding="utf-8")
    blocks = parse(text)
    root = _workspace(tmp_path)
    failures: list[str] = []
    skipped: list[str] = []
    replace: list[tuple[Command, list[str], int]] = []
    for b in blocks:
        if b.skip is not None:
            skipped.append(f"README.md:{b.line}: {b.skip}")
            continue
        if not SHARED.is_dir() and any("../shared" in c.text for c in b.commands):
            skipped.append(f"README.md:{b.line}: ../shared/data is absent")
            continue
        for c in b.commands:
            out, rc = run(c.text, root)
            got = normalise(out)
            ok = rc == c.exit_code and pattern(c.expected).match(got) is not None
            if not ok:
                failures.append(
                    f"README.md:{c.line}: $ {c.text}\n  exit {rc} (shown {c.exit_code})\n"
                    + "".join(f"  | {x}\n" for x in got.split("\n")[:40])
                )
                replace.append((c, got.rstrip("\n").split("\n") if got else [], rc))
    if update and replace:
        lines = text.split("\n")
        for c, got_lines, rc in sorted(replace, key=lambda t: -t[0].out_start):
            new = reelide(c.expected, got_lines) + ([f"[exit {rc}]"] if rc else [])
            lines[c.out_start : c.out_end] = new
        README.write_text("\n".join(lines), encoding="utf-8")
        pytest.fail(f"README.md rewritten for {len(replace)} commands: shorten long outputs with … by hand")
    for s in skipped:
        print(f"skipped {s}")
    assert not failures, "README examples whose output differs:\n" + "\n".join(failures)
