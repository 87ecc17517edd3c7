"""The committed sample world is exactly what the generator makes, byte for byte, and stays small."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.sample_traces.conftest import SAMPLE


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def committed_files(gen: ModuleType) -> dict[str, bytes]:
    return {
        p.relative_to(SAMPLE).as_posix(): p.read_bytes()
        for p in sorted(SAMPLE.rglob("*"))
        if p.is_file()
        and p.relative_to(SAMPLE).as_posix() not in gen.HAND_WRITTEN
        and not any(part == "__pycache__" or part.startswith(".") for part in p.relative_to(SAMPLE).parts)
    }


def test_committed_files_equal_a_fresh_build(gen: ModuleType, built: dict[str, bytes]) -> None:
    # gzip members are compared by content (sha256 of the payload): the compressed bytes depend on
    # the zlib build, the content only on the generator.
    committed = committed_files(gen)
    assert sorted(committed) == sorted(built), "stale or missing files: run `make sample`"
    for name, data in built.items():
        assert sha(gen.payload(committed[name])) == sha(gen.payload(data)), (
            f"{name} differs: run `make sample`"
        )
    assert gen.differences(SAMPLE, built) == []


def test_gzip_members_are_deterministic(built: dict[str, bytes]) -> None:
    for name, data in built.items():
        if name.endswith(".gz"):
            assert data[:2] == b"\x1f\x8b"
            assert data[4:8] == b"\0\0\0\0", f"{name}: gzip mtime must be 0"
            assert data[3] & 0x08 == 0, f"{name}: gzip header must not carry a file name"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The world written by the generator's command line, in a fresh process, to a temp folder."""
    out = tmp_path_factory.mktemp("regen") / "world"
    proc = subprocess.run(
        [sys.executable, str(SAMPLE / "generate.py"), "--out", str(out), "--seed", "13"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out, proc


def test_cli_regenerates_identical_bytes(
    regenerated: tuple[Path, subprocess.CompletedProcess[str]], built: dict[str, bytes]
) -> None:
    out, proc = regenerated
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"clean \d+ calls", proc.stderr) and proc.stdout == ""
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert sorted(written) == sorted(built)
    for name, data in built.items():
        assert sha(written[name]) == sha(data), name  # same process family, same zlib: same bytes


def test_other_seed_other_data(gen: ModuleType) -> None:
    """The seed matters (same-seed determinism is the subprocess test above: a second process)."""
    episodes = []
    for seed in (13, 14):
        world = gen.build_world(seed)
        task = gen.make_task(world, 0)
        episodes.append(gen.make_episode(world, task, "ep-00000", gen.episode_start(0), 1.0))
    assert episodes[0] != episodes[1]
    assert gen.registry() == gen.registry()  # the registry does not depend on the seed


def test_committed_size_is_small(gen: ModuleType) -> None:
    total = sum(len(b) for b in committed_files(gen).values())
    total += sum((SAMPLE / name).stat().st_size for name in gen.HAND_WRITTEN)
    assert total <= 10 * 1024 * 1024, f"sample_traces/ is {total} bytes, over 10 MB"


def test_shipped_config_resolves_to_the_world() -> None:
    """sample_traces/contracts.toml lets `contracts ingest|mine|audit` run there with no path arguments."""
    from output_contracts.config import load_config

    cfg = load_config(SAMPLE)
    assert cfg.file == SAMPLE / "contracts.toml"
    assert cfg.get("paths.traces") == [SAMPLE / "clean", SAMPLE / "faulty"]
    registry = cfg.path("paths.registry")
    assert registry == SAMPLE / "tools.json" and registry.is_file()
    assert all(p.is_dir() for p in cfg.get("paths.traces"))
    for key in ("paths.corpus", "paths.contracts", "paths.ledger", "paths.reports"):
        out = cfg.path(key)
        assert out is not None and SAMPLE / ".contracts" in out.parents, key  # git-ignored outputs
    assert (cfg.get("mine.folds"), cfg.get("audit.folds"), cfg.get("mine.seed")) == (5, 5, 13)


def test_check_mode_detects_changed_missing_and_stale_files(
    tmp_path: Path, regenerated: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    script = [sys.executable, str(SAMPLE / "generate.py"), "--check", "--out"]

    def check(out: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*script, str(out)], capture_output=True, text=True, check=False)

    missing = check(tmp_path / "nowhere")
    assert missing.returncode == 1 and "missing folder" in missing.stderr
    out = tmp_path / "w"
    shutil.copytree(regenerated[0], out)
    fresh = check(out)
    assert fresh.returncode == 0 and "is up to date (11 files" in fresh.stderr, fresh.stderr
    (out / "tools.json").write_bytes(b"{}\n")
    (out / "formats" / "otel.jsonl").unlink()
    (out / "clean" / "old.jsonl").write_bytes(b"")
    (out / ".contracts").mkdir()
    (out / ".contracts" / "contracts.json").write_bytes(b"{}")  # outputs of a configured run: ignored
    bad = check(out)
    assert bad.returncode == 1
    assert [line.split(": ", 1)[1] for line in bad.stderr.splitlines()[:3]] == [
        "missing formats/otel.jsonl",
        "changed tools.json",
        "stale clean/old.jsonl",
    ]
    assert "out of date: run `make sample`" in bad.stderr
