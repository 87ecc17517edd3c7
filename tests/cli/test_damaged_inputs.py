"""Damaged inputs through the CLI: one `error[...]` line naming the file, exit 2, no traceback, nothing
half-written.

The inputs are made in each test from the bundled sample world, never committed. The table runs every
command that reads the damaged kind of input; a subprocess case proves the real entry point (where Click
would print `Aborted!` for an EOFError) behaves the same.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import IOFailure, io_failure, reading

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
        [sys.executable, "-m", "output_contracts.cli.app", "ingest", str(bad), "-o", str(tmp_path / "out")],
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


# ---- a damaged corpus ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "c"
    r = CliRunner().invoke(app, ["ingest", str(CLEAN), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


def _damaged(corpus: Path, tmp_path: Path, damage: Callable[[Path], None]) -> Path:
    c = tmp_path / "c"
    shutil.copytree(corpus, c)
    damage(c)
    return c


def _flip(f: Path) -> None:
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0xFF
    f.write_bytes(bytes(b))


def _set_version(c: Path) -> None:
    m = json.loads((c / "corpus.json").read_text())
    m["format_version"] = 999
    (c / "corpus.json").write_text(json.dumps(m))


def _rename_source_key(c: Path) -> None:
    """One flipped byte in a key of corpus.json ("sha256" -> "sha2r6"): still JSON, no longer a manifest."""
    raw = (c / "corpus.json").read_bytes()
    (c / "corpus.json").write_bytes(raw.replace(b'"sha256"', b'"sha2r6"', 1))


CORPUS_DAMAGE: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("leaves-deleted", lambda c: (c / "leaves.parquet").unlink(), "leaves.parquet", "is missing"),
    ("episodes-deleted", lambda c: (c / "episodes.parquet").unlink(), "episodes.parquet", "is missing"),
    (
        "calls-truncated",
        lambda c: (c / "calls.parquet").write_bytes((c / "calls.parquet").read_bytes()[:1000]),
        "calls.parquet",
        "corpus.json records",
    ),
    ("manifest-garbage", lambda c: (c / "corpus.json").write_text("garbage"), "corpus.json", "not JSON"),
    (
        "manifest-sources-not-a-list",
        lambda c: (c / "corpus.json").write_text('{"sources": "x"}'),
        "corpus.json",
        "no list of sources",
    ),
    ("manifest-version-999", _set_version, "corpus.json", "format version 999"),
    ("manifest-key-flipped", _rename_source_key, "corpus.json", "does not match its schema"),
]


@pytest.mark.parametrize("damage", CORPUS_DAMAGE, ids=[d[0] for d in CORPUS_DAMAGE])
@pytest.mark.parametrize("command", ["ingest-append", "mine", "check", "corpus-info"])
def test_damaged_corpus_is_refused(
    corpus: Path, tmp_path: Path, damage: tuple[str, Callable[[Path], None], str, str], command: str
) -> None:
    _id, how, names, says = damage
    c = _damaged(corpus, tmp_path, how)
    before = sorted((p.name, p.stat().st_size) for p in c.iterdir())
    argv = {
        "ingest-append": ["ingest", str(REPO / "sample_traces" / "faulty"), "-o", str(c)],
        "mine": ["mine", str(c), "-o", str(tmp_path / "out.json")],
        "check": ["check", "--contracts", str(REPO / "tests" / "golden" / "sample-contracts.json"), str(c)],
        "corpus-info": ["corpus", "info", str(c)],
    }[command]
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert (
        len(lines) == 1 and lines[0].startswith("error[E_TRACE]: ") and names in lines[0] and says in lines[0]
    ), lines
    # the damaged corpus was not "repaired" by an append that rebuilt a part from the new sources only
    assert sorted((p.name, p.stat().st_size) for p in c.iterdir()) == before
    assert not (tmp_path / "out.json").exists()


def test_corpus_verify_finds_a_changed_byte(corpus: Path, tmp_path: Path) -> None:
    """A flipped byte keeps the size (the cheap open check passes); `corpus verify` recomputes digests."""
    ok = CliRunner().invoke(app, ["corpus", "verify", str(corpus)])
    assert ok.exit_code == 0 and ok.stdout.startswith("ok: "), ok.output
    c = _damaged(corpus, tmp_path, lambda c: _flip(c / "calls.parquet"))
    r = CliRunner().invoke(app, ["corpus", "verify", str(c)])
    assert r.exit_code == 1, r.output
    assert "calls.parquet: sha256 differs from corpus.json" in r.stderr


def test_manifest_records_each_file(corpus: Path) -> None:
    m = json.loads((corpus / "corpus.json").read_text())
    for name in ("calls.parquet", "leaves.parquet", "episodes.parquet", "rejects.jsonl"):
        entry = m["files"][name]
        f = corpus / name
        assert entry["bytes"] == f.stat().st_size
        assert entry["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()


# ---- a damaged ledger ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real frozen audit ledger of the sample world's clean traces (no injection: quick)."""
    d = tmp_path_factory.mktemp("ledger")
    r = CliRunner().invoke(
        app, ["audit", str(CLEAN), "--folds", "2", "--bootstrap", "0", "--ledger", str(d / "L"), "-q"]
    )
    assert r.exit_code in (0, 1), r.output
    return d / "L"


LEDGER_DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("entries-emptied", lambda d: (d / "ledger.jsonl").write_bytes(b""), "REMOVED"),
    ("header-deleted", lambda d: (d / "ledger.json").unlink(), "MISSING_FILE"),
    ("entry-edited", lambda d: _flip(d / "ledger.jsonl"), "ledger.jsonl"),
]


@pytest.mark.parametrize("damage", LEDGER_DAMAGE, ids=[d[0] for d in LEDGER_DAMAGE])
@pytest.mark.parametrize("command", [["head"], ["show"], ["prove", "0"]])
def test_damaged_ledger_is_not_spoken_for(
    ledger: Path, tmp_path: Path, damage: tuple[str, Callable[[Path], None], str], command: list[str]
) -> None:
    _id, how, says = damage
    d = tmp_path / "L"
    shutil.copytree(ledger, d)
    how(d)
    r = CliRunner().invoke(app, ["ledger", command[0], str(d), *command[1:]])
    assert r.exit_code == 1, r.output
    assert r.stdout == "" and r.stderr.startswith("FAILED: ") and says in r.stderr, r.output
    ok = CliRunner().invoke(app, ["ledger", command[0], str(ledger), *command[1:]])
    assert ok.exit_code == 0 and ok.stdout, ok.output


# ---- inject rejects per line, as ingest does ----------------------------------------------------------


def test_inject_rejects_a_bad_line_like_ingest(tmp_path: Path) -> None:
    good = gzip.decompress(CLEAN.read_bytes()).splitlines()[:40]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b"\n".join([*good[:20], b"{not json", b'{"no_tool": 1}', *good[20:]]) + b"\n")
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(
        app, ["inject", str(src), "-o", str(out), "--rate", "0.5", "--seed", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["records"] == 40
    assert [(x["line"], x["error"].split(":")[0]) for x in rep["rejected"]] == [
        (21, "invalid JSON"),
        (22, "not a flat call record (needs 'tool'); ingest other formats first and pass the corpus"),
    ]
    assert "2 input line(s) rejected" in r.stderr and f"{src}:21" in r.stderr
    assert len(out.read_bytes().splitlines()) == 40  # every good line written back, the bad two left out
    # ingest of the same file keeps the same 40 calls and rejects the same two lines
    ing = CliRunner().invoke(app, ["ingest", str(src), "-o", str(tmp_path / "c"), "--json"])
    assert (
        ing.exit_code == 0
        and json.loads(ing.stdout)["calls"] == 40
        and json.loads(ing.stdout)["rejects"] == 2
    )


def test_inject_of_nothing_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b"{not json\n")
    r = CliRunner().invoke(app, ["inject", str(src), "-o", str(tmp_path / "out.jsonl")])
    assert r.exit_code == 2
    assert (
        r.stderr
        == f"error[E_TRACE]: {src}: no tool call found (1 reject); check the path and --format, or pass --allow-empty\n"
    )
    assert not (tmp_path / "out.jsonl").exists()
