"""`contracts ingest` and `contracts corpus info` through CliRunner and a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.schemas import schema_errors

from .test_ingest import _rec, _write, corrupted

DATA = Path(__file__).parent / "data"
#: The five small files of `data/` (its `formats/` folder holds the producers' fixtures, tested apart).
FILES = [str(p) for p in sorted(DATA.iterdir()) if p.is_file()]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_ingest_json_and_info(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "c"
    r = runner.invoke(app, ["ingest", *FILES, "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rep = orjson.loads(r.stdout)
    by = {Path(s["source"]).name: s for s in rep["sources"]}
    assert {k: v["format"] for k, v in by.items()} == {
        "anthropic.jsonl": "anthropic",
        "flat.jsonl": "flat",
        "openai_chat.jsonl": "openai-chat",
        "openai_responses.jsonl": "openai-responses",
        "otel.json": "otel",
    }
    assert rep["calls"] == 2 + 5 + 3 + 2 + 2 and rep["rejects"] == 2  # two calls without results
    assert "wrote" in r.stderr and "14 calls" in r.stderr
    again = runner.invoke(app, ["ingest", *FILES, "-o", str(out)])
    assert again.exit_code == 0 and "unchanged" in again.stderr and "already ingested" in again.stderr
    info = runner.invoke(app, ["corpus", "info", str(out), "--json"])
    assert info.exit_code == 0
    data = orjson.loads(info.stdout)
    assert data["calls"] == 14 and data["rejects"]["by_code"] == {"R_UNMATCHED": 2}
    assert {t["tool"]: t["calls"] for t in data["tools"]}["read_file"] == 2
    text = runner.invoke(app, ["corpus", "info", str(out)])
    assert text.exit_code == 0 and "read_file" in text.stdout and "rejects: 2" in text.stdout
    assert schema_errors(orjson.loads((out / "corpus.json").read_bytes()), "corpus-manifest") == []


def test_rejects_exit_0_strict_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    f = corrupted(tmp_path)
    r = runner.invoke(app, ["ingest", str(f), "-o", str(tmp_path / "c")])
    assert r.exit_code == 0 and "4 rejects" in r.stderr
    r = runner.invoke(app, ["ingest", str(f), "-o", str(tmp_path / "s"), "--strict"])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines()[-1].startswith(f"error[E_TRACE]: {f}:5: invalid JSON")


def test_usage_errors_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    r = runner.invoke(app, ["ingest", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "c")])
    assert r.exit_code == 2 and "no such file or folder" in r.stderr
    r = runner.invoke(app, ["corpus", "info", str(tmp_path)])
    assert r.exit_code == 2 and "not a corpus folder" in r.stderr
    r = runner.invoke(
        app, ["ingest", str(DATA / "flat.jsonl"), "-o", str(tmp_path / "c"), "--format", "nope"]
    )
    assert r.exit_code == 2


def test_defaults_from_config(runner: CliRunner, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    _write(traces / "a.jsonl", [_rec(i) for i in range(7)])
    cfg = tmp_path / "contracts.toml"
    cfg.write_text('[paths]\ntraces = "traces"\ncorpus = "corpus"\n')
    r = runner.invoke(app, ["--config", str(cfg), "ingest", "--quiet"])
    assert r.exit_code == 0 and r.stderr == ""
    info = runner.invoke(app, ["--config", str(cfg), "corpus", "info", "--json"])
    assert info.exit_code == 0 and orjson.loads(info.stdout)["calls"] == 7


def test_subprocess_end_to_end(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "output_contracts.cli.app"]
    p = subprocess.run(
        [*cmd, "ingest", "tests/traces/data/flat.jsonl", "-o", str(out), "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert orjson.loads(p.stdout)["calls"] == 5
    bad = subprocess.run(
        [*cmd, "corpus", "info", str(tmp_path)], cwd=repo, capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error[E_TRACE]")
