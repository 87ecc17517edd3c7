"""Every `console` example of README.md and of the docs pages, run as written, against its shown output.

The pages promise that each example runs as written from a fresh clone after `make demo` (which creates
`.venv`; `source .venv/bin/activate` puts `contracts` on PATH) and prints what is shown. This test holds
them to that: it runs every `$ ` command of every ```console block of README.md and of each `docs/*.md`
page that has such blocks, in a scratch folder laid out like the repository (`sample_traces/` is copied
in, `docs/` and `bench/` are linked, `../shared` is the real data folder beside the repository), and
compares the output and exit code.

One test per block, so that pytest-xdist spreads the pages over its workers (run in one test, in order,
they were the longest test of the suite by far). A reader runs a page's blocks in order in one folder,
so a block may read files an earlier block of the same page wrote: the examples write under `demo/`,
and the first block of a page that names `demo/NAME` is the one that writes it (`needs`). Pages do not
share files: each starts from an empty `demo/`. A block runs in a fresh copy of the repository layout
holding what the blocks it needs left in `demo/` (and, through them, what their own needs left), and
the test fails when a block changes a file one of those blocks wrote: the order is checked, not
assumed. Each block runs once per pytest run, whichever test asks first (its own, or a later block
that reads its files); the xdist workers share the runs through a folder and a file lock.

The expected text is matched, not compared byte for byte, only where the page says so: `…` inside a
line stands for any text on that line, and a line holding only `…` for any number of lines (a table
shortened for reading). Numbers, ledger heads and Merkle roots are compared exactly: the pipeline is
deterministic, so a changed number is a changed behaviour and the page must change with it.

Conventions of the blocks (what an author of an example needs to know):
- a command is a `$ ` line, continued by lines ending in `\\`; what follows up to the next `$ ` line is
  its output (stdout and stderr interleaved, as a terminal shows them), run at COLUMNS=120;
- a last output line `[exit N]` is the expected exit code (default 0);
- files an example writes go under `demo/`; a block reading a file an earlier block of its page wrote
  names it as `demo/NAME/...` and never changes it (write a new name instead: `cp -r demo/corpus
  demo/copy`);
- `<!-- example: skip REASON -->` on the line before a block skips it (an optional extra that the dev
  install does not have); a block needing ../shared/data is skipped, with the reason, when absent, and
  so is a block that reads files of a skipped block. A session that cannot run as written (timings, a
  machine's own paths) is not a `console` block: fence it as ```text.

`pytest tests/cli/test_examples.py --update-examples` rewrites, in the page, the output of each command
whose output does not match with the real output, keeping the author's shortenings (`reelide`): a shown
line whose numbers changed is replaced by the new one, a `…` line keeps standing for what it stood for,
and only lines that are new and next to no `…` are added. Read the diff before committing it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.once import locked, run_folder

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
COLUMNS = "120"
ELLIPSIS = "…"
SKIP_MARK = re.compile(r"<!--\s*example:\s*skip\s*(.*?)\s*-->")
EXIT_LINE = re.compile(r"^\[exit (\d+)\]$")
DEMO_NAME = re.compile(r"(?<![\w./-])demo/([\w.-]+)")


@dataclass
class Command:
    """One `$ ` command of a page: its text, the page lines of its shown output, the exit code."""

    text: str
    line: int  # 1-based page line of the `$ `
    out_start: int  # 0-based index of its first output line in the page's lines
    out_end: int  # one past its last output line (the `[exit N]` line included)
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


@dataclass
class Block:
    line: int
    commands: list[Command]
    skip: str | None


def parse(text: str) -> list[Block]:
    """A page's console blocks, their commands and shown outputs."""
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


def needs(blocks: list[Block]) -> list[tuple[int, ...]]:
    """For each block, the earlier blocks whose files it reads: the first block that names `demo/NAME`
    wrote it, and every later block naming it reads it."""
    writer: dict[str, int] = {}
    out: list[tuple[int, ...]] = []
    for i, b in enumerate(blocks):
        names = {n for c in b.commands for n in DEMO_NAME.findall(c.text)}
        out.append(tuple(sorted({writer[n] for n in names if n in writer})))
        for n in names:
            writer.setdefault(n, i)
    return out


@dataclass(frozen=True)
class Page:
    """A page with examples: its path from the repository's root, its blocks and what each block reads."""

    name: str
    blocks: list[Block]
    needs: list[tuple[int, ...]]

    @property
    def path(self) -> Path:
        return REPO / self.name

    def where(self, i: int) -> str:
        """`page:line` of block `i`: a test id and what failures name."""
        return f"{self.name}:{self.blocks[i].line}"


def load_pages() -> list[Page]:
    """README.md and every docs page holding a console block, in that order."""
    docs = [p for p in (REPO / "docs").glob("*.md") if "```console" in p.read_text(encoding="utf-8")]
    names = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in docs)]
    out = []
    for name in names:
        blocks = parse((REPO / name).read_text(encoding="utf-8"))
        out.append(Page(name, blocks, needs(blocks)))
    return out


PAGES = load_pages()
CASES = [(page, i) for page in PAGES for i in range(len(page.blocks))]


def skip_reason(page: Page, i: int) -> str | None:
    """Why block `i` cannot run here (its mark, absent data, a skipped block it reads), or None."""
    b = page.blocks[i]
    if b.skip is not None:
        return b.skip
    if not SHARED.is_dir() and any("../shared" in c.text for c in b.commands):
        return "../shared/data is absent"
    for j in page.needs[i]:
        why = skip_reason(page, j)
        if why is not None:
            return f"it reads files of {page.where(j)}, skipped: {why}"
    return None


def _workspace(tmp: Path, *, demo: bool) -> Path:
    """A folder laid out like the repository: a page's relative paths resolve as in a clone. `demo/`
    exists after a page's first block (a reader running the page in order has it from then on)."""
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
    if demo:
        (root / "demo").mkdir()
    return root


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of each file under `folder`: what a block must leave unchanged."""
    out: dict[str, tuple[int, int]] = {}
    for p in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            out[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


@dataclass(frozen=True)
class Runs:
    """The blocks' runs of one pytest run, kept in `root` (shared by its xdist workers)."""

    root: Path

    def get(self, page: Page, i: int) -> tuple[list[tuple[str, int]], list[str]]:
        """Block `i` of `page` run once (now, or earlier by any worker): each command's normalised output
        and exit code, and the files of the blocks it reads that it changed (none, or the order is wrong)."""
        for j in page.needs[i]:
            self.get(page, j)  # before taking this block's lock: a worker never waits holding one
        folder = self.root / page.name.replace("/", "_")
        folder.mkdir(exist_ok=True)
        d = folder / f"block-{i:03d}"
        with locked(folder / f"block-{i:03d}.lock"):
            done = d / "outputs.json"
            if not done.is_file():
                if d.exists():
                    shutil.rmtree(d)  # a run cut short (its worker died): run it again
                d.mkdir()
                root = _workspace(d, demo=i > 0)
                for j in page.needs[i]:
                    src = folder / f"block-{j:03d}" / "repo" / "demo"
                    shutil.copytree(src, root / "demo", symlinks=True, dirs_exist_ok=True)
                before = _files(root / "demo")
                outs = []
                for c in page.blocks[i].commands:
                    out, rc = run(c.text, root)
                    outs.append((normalise(out), rc))
                after = _files(root / "demo")
                changed = sorted(p for p, st in before.items() if after.get(p) != st)
                tmp = d / "outputs.json.tmp"
                tmp.write_text(json.dumps({"outputs": outs, "changed": changed}), encoding="utf-8")
                tmp.replace(done)
            data = json.loads(done.read_text(encoding="utf-8"))
        return [(o, rc) for o, rc in data["outputs"]], data["changed"]


@pytest.fixture(scope="session")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = run_folder(tmp_path_factory) / "example-runs"
    root.mkdir(exist_ok=True)
    return Runs(root)


def _page(name: str) -> Page:
    return next(p for p in PAGES if p.name == name)


def _command_names() -> list[str]:
    """Every command a user can type, members of groups included (`ledger verify-proof`): the leaves of
    the tree docs/cli.md is rendered from."""
    from output_contracts.cli.reference import commands

    return sorted(
        name.removeprefix("contracts ") for name, cmd, _ in commands() if not hasattr(cmd, "list_commands")
    )


def _runs_command(text: str, name: str) -> bool:
    """Whether a `$ ` line runs `contracts NAME` (first in it, or after `&&`, `|`, `;` or a `cd`)."""
    return re.search(rf"(?:^|&& |\| |; )(?:\.\./)?contracts {re.escape(name)}(?![\w-])", text) is not None


def test_pages_hold_examples_of_every_command() -> None:
    """Every command, group members included, has an executed example on some page, and the README's
    own examples are the three commands a newcomer runs on their traces: ingest, mine, audit."""
    cmds = [c.text for page in PAGES for b in page.blocks for c in b.commands]
    assert len(cmds) >= 80
    missing = [n for n in _command_names() if not any(_runs_command(c, n) for c in cmds)]
    assert missing == [], f"commands without an executed example: {missing}"
    readme = [c.text for b in _page("README.md").blocks for c in b.commands]
    assert [n for n in ("ingest", "mine", "audit") if not any(_runs_command(c, n) for c in readme)] == []
    assert "docs/tour.md" in [p.name for p in PAGES]


def test_runs_command_reads_the_first_word_and_groups() -> None:
    assert _runs_command("contracts ledger verify-proof p.json", "ledger verify-proof")
    assert not _runs_command("contracts ledger verify-proof p.json", "ledger verify")
    assert _runs_command("cd sample_traces && ../contracts config", "config")
    assert not _runs_command("python -c 'contracts mine'", "mine")


def test_needs_follows_the_files_blocks_write() -> None:
    """A block reads what the first block of its page naming the same `demo/NAME` wrote; other paths do
    not count, and pages do not read each other's files."""
    text = "\n".join(
        [
            "```console",
            "$ contracts ingest x -o demo/corpus",
            "```",
            "```console",
            "$ contracts mine demo/corpus -o demo/c.json && cp -r demo/corpus demo/copy",
            "```",
            "```console",
            "$ contracts check -c demo/c.json y -o .demo/r.jsonl && ls docs/demo/corpus",
            "```",
            "```console",
            "$ python -c \"open('demo/copy/calls.parquet')\"; contracts rules demo/c.json",
            "```",
        ]
    )
    assert needs(parse(text)) == [(), (0,), (1,), (1,)]
    # on the tour: the rules examples read the contract set the mine example wrote
    tour = _page("docs/tour.md")
    mine = next(
        i for i, b in enumerate(tour.blocks) if any("-o demo/contracts.json" in c.text for c in b.commands)
    )
    rules = [
        i
        for i, b in enumerate(tour.blocks)
        if b.commands and b.commands[0].text.startswith("contracts rules")
    ]
    assert rules and all(tour.needs[i] == (mine,) for i in rules)
    # README.md's audit reads the corpus and contract set its own earlier commands wrote, not the tour's
    readme = _page("README.md")
    assert all(j < i for i, ns in enumerate(readme.needs) for j in ns)


def test_skip_mark_is_read() -> None:
    text = "<!-- example: skip duckdb is not a dependency -->\n```console\n$ duckdb -c 'select 1'\n```\n"
    assert [b.skip for b in parse(text)] == ["duckdb is not a dependency"]
    assert [b.skip for b in parse(text.split("\n", 1)[1])] == [None]


def _rewrite(runs: Runs, page: Page, i: int, replace: list[tuple[int, list[str], int]]) -> None:
    """Replace, in the page, the shown output of commands `replace` of block `i` (re-read under a lock:
    other workers may have rewritten other blocks, moving its lines)."""
    with locked(runs.root / f"{page.name.replace('/', '_')}.lock"):
        text = page.path.read_text(encoding="utf-8")
        blocks = parse(text)
        assert len(blocks) == len(page.blocks) and [c.text for c in blocks[i].commands] == [
            c.text for c in page.blocks[i].commands
        ], f"{page.name}'s commands changed during the run"
        lines = text.split("\n")
        for k, got_lines, rc in sorted(replace, key=lambda t: -blocks[i].commands[t[0]].out_start):
            c = blocks[i].commands[k]
            lines[c.out_start : c.out_end] = reelide(c.expected, got_lines) + ([f"[exit {rc}]"] if rc else [])
        page.path.write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize(("page", "i"), CASES, ids=[page.where(i) for page, i in CASES])
def test_example_block_runs_as_shown(
    page: Page, i: int, example_runs: Runs, request: pytest.FixtureRequest
) -> None:
    b = page.blocks[i]
    why = skip_reason(page, i)
    if why is not None:
        pytest.skip(f"{page.where(i)}: {why}")
    outs, changed = example_runs.get(page, i)
    failures: list[str] = []
    replace: list[tuple[int, list[str], int]] = []
    for k, (c, (got, rc)) in enumerate(zip(b.commands, outs, strict=True)):
        if rc == c.exit_code and pattern(c.expected).match(got) is not None:
            continue
        failures.append(
            f"{page.name}:{c.line}: $ {c.text}\n  exit {rc} (shown {c.exit_code})\n"
            + "".join(f"  | {x}\n" for x in got.split("\n")[:40])
        )
        replace.append((k, got.rstrip("\n").split("\n") if got else [], rc))
    if request.config.getoption("--update-examples") and replace:
        _rewrite(example_runs, page, i, replace)
        pytest.fail(f"{page.name} rewritten for {len(replace)} commands: shorten long outputs with … by hand")
    assert not changed, (
        f"{page.where(i)}: the block changes files that earlier blocks wrote, {changed}: a later "
        "block would see them changed or not depending on the order; write a new name under demo/"
    )
    assert not failures, f"{page.name} examples whose output differs:\n" + "\n".join(failures)
