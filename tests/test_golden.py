"""Golden files: the CLI's outputs on the bundled sample world, compared byte for byte.

Every command runs in-process through `typer.testing.CliRunner` on `output_contracts.cli.app:app`, the way the
Makefile's `demo` target and sample_traces/README.md run it: from a scratch folder holding a copy of
`sample_traces/{clean,faulty,tools.json}`, with relative paths, so no path of this machine reaches the
outputs. The corpus is ingested and mined once per module (per xdist worker).

Each output is compared with `tests/golden/<name>`; tests/golden/README.md says what each file is.
After an intended change of behaviour, rewrite them and review the diff:

    .venv/bin/python -m pytest tests/test_golden.py --update-golden

Normalised (never stored raw), because they vary between runs or machines and are not behaviour:
- the repair ledger's `created_at` (the wall clock) and `source_revision` (the git commit checked out);
- the scratch folder and the repository path, replaced by <TMP> and <REPO> should an output ever print
  them (the relative paths above mean none does today).
`contracts repair-replay` runs with `--no-latency`, which the demo does not pass: step latencies are wall
clock, and they feed the ledger entries and so the ledger's head and root and the score's p95 latency.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from output_contracts.cli.app import app
from tests.conftest import CLI_ENV, INJECT_AUDIT, CliRun, copy_sample_world

REPO = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
UPDATE_HINT = ".venv/bin/python -m pytest tests/test_golden.py --update-golden"

DIFF_LINES = 40  # lines of unified diff shown per mismatching file
HEAD_LINES = 200  # lines kept of an output too large to store whole
# Outputs of ~2 MB and more are stored as their first HEAD_LINES lines plus the sha256 of the whole (which
# still pins every byte). The choice is fixed per output, not made at run time, so a file's name never
# depends on the size it happens to have. Only the SARIF report is at the limit (1,987,564 bytes, 58,928
# lines of pretty-printed JSON holding the same violations as the receipts JSONL, which is stored whole:
# 1,346,046 bytes; GitHub annotations 454,944; JUnit 384,293).

# The CLI runs with tests/conftest.py's CLI_ENV (COLUMNS=80). (A COLUMNS or FORCE_COLOR already set when
# output_contracts.cli is first imported is read once by its consoles and would still win.)

# Every file tests/golden/ may hold: each is written by a test below (test_golden_folder checks both ways).
GOLDEN_FILES = frozenset(
    {
        "mine.txt",
        "sample-contracts.json",
        "rules-get_order.txt",
        "rules-lookup_inventory-folds.txt",
        "rules-get_order.json",
        "check-faulty.txt",
        "check-faulty-receipts.jsonl",
        "check-faulty.sarif.head.txt",
        "check-faulty.junit.xml",
        "check-faulty.github.txt",
        "audit-clean.txt",
        "audit-clean.json",
        "audit-clean.md",
        "audit-clean-inject.txt",
        "audit-clean-inject.json",
        "audit-clean-inject.md",
        "repair-cases.txt",
        "repair-replay.txt",
        "repair-score.txt",
        "repair-score.json",
        "repair-score.md",
        "repair-ledger.json",
        "registry-infer.txt",
        "registry-infer.json",
    }
)
NOT_PRODUCED = frozenset({"README.md", ".gitattributes"})  # hand-written, not outputs


# --- the golden fixture ------------------------------------------------------------------------------


class Golden:
    """Compare produced outputs with tests/golden/<name>, or (with --update-golden) rewrite them."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def __call__(self, name: str, produced: bytes | str) -> None:
        self.verify({name: produced})

    def verify(self, outputs: Mapping[str, bytes | str]) -> None:
        """Check every output (all of them, not only up to the first mismatch); fail once for all."""
        problems = []
        for name, produced in outputs.items():
            assert name in GOLDEN_FILES, f"{name!r}: add it to GOLDEN_FILES and tests/golden/README.md"
            data = produced.replace("\r\n", "\n").encode("utf-8") if isinstance(produced, str) else produced
            path = GOLDEN_DIR / name
            shown = path.relative_to(REPO).as_posix()
            if self.update:
                if not path.is_file() or path.read_bytes() != data:
                    GOLDEN_DIR.mkdir(exist_ok=True)
                    path.write_bytes(data)
            elif not path.is_file():
                problems.append(f"golden file {shown} is missing; create it with: {UPDATE_HINT}")
            else:
                expected = path.read_bytes()
                if expected != data:
                    problems.append(_mismatch(shown, expected, data))
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)


def _mismatch(shown: str, expected: bytes, produced: bytes) -> str:
    diff = list(
        difflib.unified_diff(
            expected.decode("utf-8", "replace").splitlines(keepends=True),
            produced.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=shown,
            tofile="produced",
            n=2,
        )
    )
    lines = [d if d.endswith("\n") else d + "\n\\ No newline at end of file\n" for d in diff[:DIFF_LINES]]
    if len(diff) > DIFF_LINES:
        lines.append(f"... ({len(diff) - DIFF_LINES} more diff lines)\n")
    if not diff:
        lines.append("(no line differs once decoded: encoding or line endings)\n")
    head = (
        f"golden file {shown} differs from the produced output "
        f"({len(expected):,} vs {len(produced):,} bytes); if the change is intended: {UPDATE_HINT}\n"
    )
    return head + "".join(lines)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    return Golden(update=bool(request.config.getoption("--update-golden")))


# --- running the CLI in the scratch world -----------------------------------------------------------


@dataclass(frozen=True)
class World:
    """A scratch folder with a copy of the sample world; commands run there with relative paths."""

    work: Path

    def run(self, *args: str, exit_code: int = 0) -> Result:
        with contextlib.chdir(self.work):
            result = CliRunner(env=CLI_ENV).invoke(app, list(args), catch_exceptions=False)
        assert result.exit_code == exit_code, (
            f"contracts {shlex.join(args)}: exit {result.exit_code}, expected {exit_code}\n{result.output}"
        )
        return result

    def scrub(self, data: bytes) -> bytes:
        """Placeholders for the scratch folder and the repository, should an output ever print them."""
        places = {
            str(self.work.resolve()): "<TMP>",
            str(self.work): "<TMP>",
            str(REPO): "<REPO>",
            str(REPO.resolve()): "<REPO>",
        }
        for raw in sorted(places, key=len, reverse=True):
            data = data.replace(raw.encode(), places[raw].encode())
        return data

    def read(self, name: str) -> bytes:
        return self.scrub((self.work / name).read_bytes())

    def transcript(self, args: tuple[str, ...], result: Result | CliRun) -> str:
        """The command, its exit code, stdout and stderr (as CliRunner captured them, separately)."""
        parts = [f"$ contracts {shlex.join(args)}\n", f"[exit {result.exit_code}]\n"]
        for label, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            parts.append(f"[{label}]\n{text}")
            if text and not text.endswith("\n"):
                parts.append("\n[no newline at end]\n")
        return self.scrub("".join(parts).encode()).decode()

    def run_transcript(self, *args: str, exit_code: int = 0) -> str:
        return self.transcript(args, self.run(*args, exit_code=exit_code))


def head_and_sha256(data: bytes) -> bytes:
    """A small stand-in for a large output: the sha256 of the whole, its size, and its first lines."""
    lines = data.splitlines(keepends=True)
    header = (
        f"sha256 {hashlib.sha256(data).hexdigest()}  {len(data):,} bytes, {len(lines):,} lines; "
        f"the first {HEAD_LINES} lines follow\n"
    )
    return header.encode() + b"".join(lines[:HEAD_LINES])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    work = tmp_path_factory.mktemp("golden-world")
    copy_sample_world(work)
    return World(work)


MINE = ("mine", "C", "--folds", "5", "--seed", "13", "-o", "contracts.json")


@pytest.fixture(scope="module")
def mined(world: World) -> str:
    """Ingest the clean set into C and mine contracts.json, as the demo does; the mine transcript."""
    world.run("ingest", "sample_traces/clean", "-o", "C", "--registry", "sample_traces/tools.json", "-q")
    return world.run_transcript(*MINE)


# --- 1. mine --------------------------------------------------------------------------------------------


def test_mine(golden: Golden, world: World, mined: str) -> None:
    # contracts.json is deterministic (same corpus, options and seed: same bytes): stored whole.
    golden.verify({"mine.txt": mined, "sample-contracts.json": world.read("contracts.json")})


# --- 2. rules -------------------------------------------------------------------------------------------


def test_rules(golden: Golden, world: World, mined: str) -> None:
    as_json = world.run("rules", "contracts.json", "--json", "--tool", "get_order")
    assert as_json.stderr == ""
    golden.verify(
        {
            "rules-get_order.txt": world.run_transcript("rules", "contracts.json", "--tool", "get_order"),
            "rules-lookup_inventory-folds.txt": world.run_transcript(
                "rules", "contracts.json", "--tool", "lookup_inventory", "--by-fold"
            ),
            "rules-get_order.json": world.scrub(as_json.stdout_bytes),
        }
    )


# --- 3. check -------------------------------------------------------------------------------------------


def test_check(golden: Golden, world: World, mined: str) -> None:
    base = ("check", "--contracts", "contracts.json", "sample_traces/faulty")
    jsonl = (*base, "-o", "receipts.jsonl")
    summary = world.transcript(jsonl, world.run(*jsonl, exit_code=1))
    outputs: dict[str, bytes | str] = {
        "check-faulty.txt": summary,
        "check-faulty-receipts.jsonl": world.read("receipts.jsonl"),
    }
    for fmt, name in (
        ("sarif", "check-faulty.sarif.head.txt"),
        ("junit", "check-faulty.junit.xml"),
        ("github", "check-faulty.github.txt"),
    ):
        args = (*base, "--output-format", fmt, "-o", f"receipts.{fmt}")
        result = world.run(*args, exit_code=1)
        # The summary on stderr does not depend on the receipt format: the same as the JSONL run's.
        assert world.transcript(jsonl, result) == summary, fmt
        data = world.read(f"receipts.{fmt}")
        outputs[name] = head_and_sha256(data) if fmt == "sarif" else data
    golden.verify(outputs)


# --- 4. audit -------------------------------------------------------------------------------------------

AUDIT = (
    "audit",
    "sample_traces/clean",
    "--folds",
    "5",
    "--seed",
    "13",
    "--registry",
    "sample_traces/tools.json",
)


def test_audit(golden: Golden, world: World) -> None:
    # The default 1,000 bootstrap resamples: the audit takes ~3 s.
    text = world.run_transcript(*AUDIT, "--ledger", "L", "-o", "audit.json", "--markdown", "audit.md")
    golden.verify(
        {
            "audit-clean.txt": text,
            "audit-clean.json": world.read("audit.json"),
            "audit-clean.md": world.read("audit.md"),
        }
    )


def test_audit_inject(golden: Golden, sample_inject_audit: CliRun) -> None:
    # `AUDIT` with every fault kind planted (conftest's INJECT_AUDIT, whose command line the transcript
    # shows), in a copy of the sample world like `world`: run once per pytest run and shared with
    # tests/audit/test_propagation.py. Here its transcript and files are compared whole.
    run = World(sample_inject_audit.work)
    golden.verify(
        {
            "audit-clean-inject.txt": run.transcript(INJECT_AUDIT, sample_inject_audit),
            "audit-clean-inject.json": run.read("audit-inject.json"),
            "audit-clean-inject.md": run.read("audit-inject.md"),
        }
    )


# --- 5. repair ------------------------------------------------------------------------------------------


def _replace_field(data: bytes, key: str, pattern: str, placeholder: str) -> bytes:
    """`"key": "<value>"` -> `"key": "<placeholder>"`, after checking the value looks as expected."""
    found = re.findall(rb'"%s": "([^"]*)"' % key.encode(), data)
    assert len(found) == 1, f"{key}: expected one, found {found}"
    assert re.fullmatch(pattern, found[0].decode()), f"{key}: unexpected value {found[0]!r}"
    return data.replace(
        b'"%s": "%s"' % (key.encode(), found[0]), b'"%s": "%s"' % (key.encode(), placeholder.encode())
    )


def test_repair(golden: Golden, world: World, mined: str) -> None:
    cases = world.run_transcript(
        *("repair-cases", "C", "--registry", "sample_traces/tools.json", "-o", "repair-cases.jsonl"),
        *("--targets", "repair-targets.jsonl", "--kinds", "all", "--per-kind", "8", "--seed", "13"),
    )
    # --no-latency (not in the demo): without it each entry records wall-clock step latencies, so the
    # ledger's head and root and the score's p95 latency change on every run.
    replay = world.run_transcript(
        "repair-replay",
        "repair-cases.jsonl",
        "--policy",
        "heuristic",
        "--ledger",
        "RL",
        "--seed",
        "13",
        "--no-latency",
    )
    score = world.run_transcript(
        *("repair-score", "RL", "--targets", "repair-targets.jsonl"),
        *("-o", "repair-score.json", "--markdown", "repair-score.md"),
    )
    header = world.read("RL/ledger.json")
    # The header's one timestamp and the git commit of this checkout vary; head, root, inputs do not.
    header = _replace_field(header, "created_at", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<CREATED_AT>")
    header = _replace_field(
        header, "source_revision", r"git:[0-9a-f]{40}([0-9a-f]{24})?|contracts .+", "<SOURCE_REVISION>"
    )
    golden.verify(
        {
            "repair-cases.txt": cases,
            "repair-replay.txt": replay,
            "repair-score.txt": score,
            "repair-score.json": world.read("repair-score.json"),
            "repair-score.md": world.read("repair-score.md"),
            "repair-ledger.json": header,
        }
    )


# --- 6. registry infer ----------------------------------------------------------------------------------


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def test_registry_infer(golden: Golden, world: World, mined: str) -> None:
    text = world.run_transcript(
        "registry", "infer", "C", "--contracts", "contracts.json", "-o", "inferred-tools.json"
    )
    raw = world.read("inferred-tools.json")
    # Raw bytes: field order follows first appearance in the corpus (deterministic since the row order
    # is taken before the join in `observed_patterns`).
    golden.verify({"registry-infer.txt": text, "registry-infer.json": raw})


# --- the folder itself ----------------------------------------------------------------------------------


def test_golden_folder(request: pytest.FixtureRequest) -> None:
    """No stale file in tests/golden/ (each is produced by a test above) and the README names them all."""
    present = {p.name for p in GOLDEN_DIR.iterdir()} - NOT_PRODUCED
    stale = sorted(present - GOLDEN_FILES)
    if request.config.getoption("--update-golden"):
        for name in stale:
            (GOLDEN_DIR / name).unlink()
        stale = []
    assert not stale, f"stale files in tests/golden/ (no test writes them; delete them): {stale}"
    if request.config.getoption("--update-golden"):
        return  # the other tests (maybe on another xdist worker) write the rest
    missing = sorted(GOLDEN_FILES - present)
    assert not missing, f"golden files missing from tests/golden/: {missing}; create them with: {UPDATE_HINT}"
    readme = (GOLDEN_DIR / "README.md").read_text(encoding="utf-8")
    unlisted = sorted(n for n in GOLDEN_FILES if f"`{n}`" not in readme)
    assert not unlisted, f"tests/golden/README.md does not describe: {unlisted}"
