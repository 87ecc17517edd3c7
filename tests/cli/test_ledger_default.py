"""Where ledgers go: an audit given no `--ledger` writes under the audited corpus or into a
temporary folder, never into the working folder, and names the place on stderr; both ledger writers
(`audit`, `repair-replay`) treat an existing folder alike: refused, naming `--overwrite`."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import LedgerError
from output_contracts.ledger import claim_folder, verify
from output_contracts.ledger.lock import WriterLock

PART = "sample_traces/clean/part-1.jsonl.gz"
AUDIT_ARGS = ("--folds", "2", "--bootstrap", "0", "--no-in-sample")
REFUSED = "pass --overwrite to replace it, or give a new folder with --ledger"


def run(*args: str | Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def world(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small ingested corpus and repair cases built from it (shared: each costs seconds)."""
    d = tmp_path_factory.mktemp("ledger-default")
    tools = repo / "sample_traces" / "tools.json"
    code, _, err = run("ingest", repo / PART, "-o", d / "corpus", "--registry", tools, "-q")
    assert code == 0, err
    code, _, err = run(
        "repair-cases", d / "corpus", "--registry", tools, "-o", d / "cases.jsonl",
        "--targets", d / "targets.jsonl", "--kinds", "missing_required", "--per-kind", "2", "--seed", "13",
    )  # fmt: skip
    assert code == 0, err
    return {"corpus": d / "corpus", "cases": d / "cases.jsonl", "traces": repo / PART, "tools": tools}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, and temporary folders made under tmp_path (nothing left in /tmp)."""
    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "cwd"


def _named(err: str) -> Path:
    m = re.search(r"no --ledger given: the audit ledger goes to (\S+) \(", err)
    assert m, err
    return Path(m.group(1))


def test_audit_of_trace_files_writes_into_a_temporary_folder(cwd: Path, world: dict[str, Path]) -> None:
    code, _, err = run("audit", world["traces"], "--registry", world["tools"], *AUDIT_ARGS)
    assert code == 0, err
    assert list(cwd.iterdir()) == []  # nothing in the working folder
    ledger = _named(err)
    lines = [ln for ln in err.splitlines() if "no --ledger given" in ln]
    assert len(lines) == 1  # one line says where
    assert ledger.name == "ledger" and ledger.parent.parent == Path(tempfile.gettempdir())
    assert ledger.parent.name.startswith("contracts-audit-")
    assert verify(ledger, require_frozen=True).ok
    # the ingested corpus audit-score needs sits beside it, and the re-score hint names both
    assert (ledger.parent / "ledger.corpus" / "corpus" / "corpus.json").is_file()
    assert f"contracts audit-score {ledger} --corpus {ledger.parent / 'ledger.corpus' / 'corpus'}" in err


def test_audit_of_a_corpus_writes_under_it_with_a_stable_name(cwd: Path, world: dict[str, Path]) -> None:
    corpus = world["corpus"]
    code, _, err = run("audit", corpus, *AUDIT_ARGS)
    assert code == 0, err
    assert list(cwd.iterdir()) == []
    ledger = _named(err)
    assert "(under the audited corpus)" in err
    assert ledger.parent == corpus / "audits" and re.fullmatch(r"k2-seed13-[0-9a-f]{8}", ledger.name)
    first = verify(ledger, require_frozen=True)
    assert first.ok and first.entries == 3
    # the same audit again names the same folder and is refused; --overwrite replaces it
    code, _, err = run("audit", corpus, *AUDIT_ARGS)
    assert code == 2
    assert _named(err) == ledger
    assert (
        f"error[E_USAGE]: {ledger}: the ledger folder holds a ledger (from an earlier run?): {REFUSED}" in err
    )
    code, _, err = run("audit", corpus, *AUDIT_ARGS, "--overwrite", "-q")
    assert code == 0, err
    again = verify(ledger, require_frozen=True)
    assert again.ok and again.entries == first.entries
    # other parameters, another folder: nothing collides
    code, _, err = run("audit", corpus, *AUDIT_ARGS, "--seed", "7")
    assert code == 0, err
    other = _named(err)
    assert other.parent == ledger.parent and other.name.startswith("k2-seed7-") and other != ledger
    assert sorted(p.name for p in (corpus / "audits").iterdir()) == sorted([ledger.name, other.name])
    assert list(cwd.iterdir()) == []


def _audit(world: dict[str, Path], ledger: Path, *extra: str) -> tuple[int, str, str]:
    return run("audit", world["corpus"], *AUDIT_ARGS, "--ledger", ledger, "-q", *extra)


def _replay(world: dict[str, Path], ledger: Path, *extra: str) -> tuple[int, str, str]:
    return run("repair-replay", world["cases"], "--policy", "heuristic", "--ledger", ledger, "-q", *extra)


WRITERS: dict[str, Callable[..., tuple[int, str, str]]] = {"audit": _audit, "repair-replay": _replay}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_both_ledger_writers_treat_an_existing_folder_alike(
    writer: str, cwd: Path, world: dict[str, Path]
) -> None:
    write = WRITERS[writer]
    ledger = cwd / "L"
    code, _, err = write(world, ledger)
    assert code == 0, err
    head = verify(ledger, require_frozen=True).head
    # a second run into it: refused with one line naming the flag, the ledger untouched
    code, out, err = write(world, ledger)
    assert code == 2 and out == ""
    assert (
        err.strip()
        == f"error[E_USAGE]: {ledger}: the ledger folder holds a ledger (from an earlier run?): {REFUSED}"
    )
    assert verify(ledger, require_frozen=True).head == head
    # --overwrite replaces it with a fresh, frozen ledger
    code, _, err = write(world, ledger, "--overwrite")
    assert code == 0, err
    assert verify(ledger, require_frozen=True).ok
    # a folder holding other files is refused, with or without --overwrite, and kept as it was
    other = cwd / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    code, _, err = write(world, other)
    assert code == 2 and f"error[E_USAGE]: {other}: the ledger folder is not empty: {REFUSED}" in err
    code, _, err = write(world, other, "--overwrite")
    assert code == 2 and "--overwrite replaces only a ledger" in err
    assert [p.name for p in other.iterdir()] == ["keep.txt"]


def test_overwrite_never_removes_a_ledger_another_process_writes(tmp_path: Path) -> None:
    ledger = tmp_path / "L"
    ledger.mkdir()
    (ledger / "ledger.jsonl").write_bytes(b"")
    lock = WriterLock(ledger)
    try:
        with pytest.raises(LedgerError, match="locked by another writer"):
            claim_folder(ledger, overwrite=True)
        assert (ledger / "ledger.jsonl").is_file()
    finally:
        lock.release()
    claim_folder(ledger, overwrite=True)
    assert list(ledger.iterdir()) == []


def test_a_failed_audit_leaves_no_temporary_folder(cwd: Path) -> None:
    bad = cwd.parent / "bad.jsonl"
    bad.write_text('{"tool": "get_order", "arguments": [1]}\n')
    code, _, err = run("audit", bad, *AUDIT_ARGS)
    assert code == 2 and err.strip().splitlines()[-1].startswith("error[")
    assert _named(err).parent.parent == Path(tempfile.gettempdir())  # it was named, then removed
    assert list(Path(tempfile.gettempdir()).iterdir()) == []
    assert list(cwd.iterdir()) == []
