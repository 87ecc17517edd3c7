"""Damaged inputs through the CLI: one `error[...]` line naming the file, exit 2, no traceback, nothing
half-written (issue 17, rows 1-4, 8, 13, 17).

The inputs are made in each test from the bundled sample world, never committed. The table runs every
command that reads the damaged kind of input; a subprocess case proves the real entry point (where Click
would print `Aborted!` for an EOFError) behaves the same.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from contracts.cli.app import app
from contracts.errors import IOFailure, io_failure, reading

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"


def _truncated(d: Path) -> Path:
    p = d / "trunc.jsonl.gz"
    p.write_bytes(CLEAN.read_bytes()[:20_000])
    return p


def _fake_gz(d: Path) -> Path:
    p = d / "fake.jsonl.gz"
    p.write_bytes(b'{"tool": "t", "arguments": {}, "result": {}}\n')
    return p


def _corrupt_gz(d: Path) -> Path:
    """A real gzip header with its deflate stream damaged in the middle."""
    data = bytearray(gzip.compress(gzip.decompress(CLEAN.read_bytes())[:200_000]))
    for i in range(200, 260):
        data[i] ^= 0xFF
    p = d / "corrupt.jsonl.gz"
    p.write_bytes(bytes(data))
    return p


def _empty_dir(d: Path) -> Path:
    p = d / "empty"
    p.mkdir()
    return p


def _corpus_without_manifest(d: Path) -> Path:
    p = d / "corpusish"
    p.mkdir()
    (p / "calls.parquet").write_bytes(b"PAR1")
    return p


def _contracts(d: Path) -> Path:
    """A real contract set mined from the sample world (for the commands that need one)."""
    out = d / "contracts.json"
    r = CliRunner().invoke(app, ["mine", str(CLEAN), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


Case = tuple[str, Callable[[Path], Path], Callable[[Path, Path], list[str]], str]

#: (case id, make the damaged input, the command line, what the one error line must say)
CASES: list[Case] = [
    ("ingest-truncated-gz", _truncated, lambda d, x: ["ingest", str(x), "-o", str(d / "out")], "truncated"),
    ("ingest-fake-gz", _fake_gz, lambda d, x: ["ingest", str(x), "-o", str(d / "out")], "not a gzip file"),
    ("ingest-corrupt-gz", _corrupt_gz, lambda d, x: ["ingest", str(x), "-o", str(d / "out")], "compress"),
    ("mine-truncated-gz", _truncated, lambda d, x: ["mine", str(x), "-o", str(d / "out.json")], "truncated"),
    (
        "check-truncated-gz",
        _truncated,
        lambda d, x: ["check", "--contracts", str(_contracts(d)), str(x), "-o", str(d / "out.jsonl")],
        "truncated",
    ),
    (
        "audit-truncated-gz",
        _truncated,
        lambda d, x: ["audit", str(x), "--ledger", str(d / "out")],
        "truncated",
    ),
    (
        "inject-truncated-gz",
        _truncated,
        lambda d, x: ["inject", str(x), "-o", str(d / "out.jsonl")],
        "truncated",
    ),
    (
        "inject-fake-gz",
        _fake_gz,
        lambda d, x: ["inject", str(x), "-o", str(d / "out.jsonl")],
        "not a gzip file",
    ),
    (
        "ingest-empty-folder",
        _empty_dir,
        lambda d, x: ["ingest", str(x), "-o", str(d / "out")],
        "no trace files",
    ),
    (
        "check-corpus-without-manifest",
        _corpus_without_manifest,
        lambda d, x: ["check", "--contracts", str(_contracts(d)), str(x), "-o", str(d / "out.jsonl")],
        "no corpus.json",
    ),
    ("rules-folder-as-contracts", _empty_dir, lambda d, x: ["rules", str(x)], "is a folder"),
    (
        "check-folder-as-contracts",
        _empty_dir,
        lambda d, x: ["check", "--contracts", str(x), str(CLEAN), "-o", str(d / "out.jsonl")],
        "is a folder",
    ),
    ("diff-folder-as-contracts", _empty_dir, lambda d, x: ["diff", str(x), str(x)], "is a folder"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_damaged_input_is_one_error_line(case: Case, tmp_path: Path) -> None:
    _id, make, argv, says = case
    bad = make(tmp_path)
    args = argv(tmp_path, bad)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, (args, r.output)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error[") and bad.name in lines[0] and says in lines[0], lines[0]
    assert "Traceback" not in r.output and "Aborted" not in r.output
    # nothing half-written: no output file or folder appeared
    assert not list(tmp_path.glob("out*")), sorted(p.name for p in tmp_path.iterdir())


def test_truncated_gz_through_the_real_entry_point(tmp_path: Path) -> None:
    """Click's own main turns an EOFError into `Aborted!` exit 1; the group catches it first."""
    bad = _truncated(tmp_path)
    p = subprocess.run(
        [sys.executable, "-m", "contracts.cli.app", "ingest", str(bad), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"error[E_IO]: {bad}: compressed stream ends early: the .gz file is truncated"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: no permission error to provoke")
def test_unreadable_file(tmp_path: Path) -> None:
    p = tmp_path / "locked.jsonl"
    p.write_bytes(b'{"tool": "t", "arguments": {}, "result": {}}\n')
    p.chmod(0)
    try:
        r = CliRunner().invoke(app, ["ingest", str(p), "-o", str(tmp_path / "out")])
    finally:
        p.chmod(0o600)
    assert r.exit_code == 2 and "permission denied" in r.stderr and str(p) in r.stderr


def test_malformed_ledger_anchor_is_a_usage_error(tmp_path: Path) -> None:
    for argv in (
        ["ledger", "verify", str(tmp_path), "--head", "zz"],
        ["ledger", "verify", str(tmp_path), "--root", "Z" * 64],
    ):
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 2 and "must be a SHA-256 hash" in r.stderr, r.output


# ---- the translator itself -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc,says",
    [
        (gzip.BadGzipFile("Not a gzipped file (b'{\"')"), "not a gzip file"),
        (EOFError("Compressed file ended before the end-of-stream marker was reached"), "truncated"),
        (IsADirectoryError(21, "Is a directory", "x"), "is a folder"),
        (NotADirectoryError(20, "Not a directory", "x"), "is a file"),
        (PermissionError(13, "Permission denied", "x"), "permission denied"),
        (FileNotFoundError(2, "No such file or directory", "x"), "no such file"),
        (OSError(28, "No space left on device", "x"), "no space left"),
        (OSError(5, "Input/output error", "x"), "Input/output error"),
    ],
)
def test_io_failure_words_each_error(exc: BaseException, says: str) -> None:
    e = io_failure(exc, "some/file")
    assert isinstance(e, IOFailure) and e.code == "E_IO" and e.source == "some/file"
    assert says in e.message and e.render().startswith("error[E_IO]: some/file: ")
    # without a path, the error's own filename is used
    if isinstance(exc, OSError) and exc.filename:
        assert io_failure(exc).source == "x"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=11, max_value=60_000), flips=st.lists(st.integers(0, 59_999), max_size=4))
def test_random_gzip_damage_never_escapes(cut: int, flips: list[int], tmp_path: Path) -> None:
    """Any truncation or byte damage of a .gz either reads (damage the checksum did not cover is caught
    by gzip's CRC) or raises the one `IOFailure`; never another exception."""
    data = bytearray(CLEAN.read_bytes()[:cut])
    for i in flips:
        if i < len(data):
            data[i] ^= 0x5A
    p = tmp_path / f"d{cut}.jsonl.gz"
    p.write_bytes(bytes(data))
    try:
        with reading(p), gzip.open(p, "rb") as fh:
            while fh.read(1 << 16):
                pass
    except IOFailure as e:
        assert e.source == str(p)
