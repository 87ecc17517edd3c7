"""The sample world (sample_traces/generate.py) ingests to the generator's exact counts, in every format."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A fresh build of the sample world written to a temp folder, and its `planted.json` counts."""
    if not (SAMPLE / "generate.py").is_file():
        pytest.skip("sample_traces/generate.py is not there yet")
    spec = importlib.util.spec_from_file_location("sample_generate_for_ingest", SAMPLE / "generate.py")
    assert spec is not None and spec.loader is not None
    mod: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    files: dict[str, bytes] = mod.build()
    root = tmp_path_factory.mktemp("sample")
    mod.write(root, files)
    return root, orjson.loads(files["planted.json"])["counts"]


def test_each_format_file(world: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, counts = world
    assert counts["formats"], "the generator writes one file per non-flat format"
    for name, expected in sorted(counts["formats"].items()):
        out = tmp_path / name.replace(".", "_")
        rep = ingest([root / "formats" / name], out)
        s = rep.sources[0]
        assert (s.rejects, s.dropped_calls) == (0, 0), name
        assert rep.calls == expected["calls"], name
        assert rep.episodes == expected["episodes"], name
        calls = Corpus.open(out).scan_calls().collect()
        assert calls.filter(pl.col("status") == "error").height == expected["error_calls"], name
        assert sorted(calls["trace_id"].unique().to_list()) == sorted(expected["trace_ids"]), name


def test_whole_world_folder(world: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, counts = world
    rep = ingest([root], tmp_path / "c")
    assert rep.calls == counts["all_calls"] and rep.rejects == 0
    skipped = {Path(s.source).name: s.format for s in rep.sources if s.skipped}
    assert skipped.get("tools.json") == "registry"
    clean = ingest([root / "clean"], tmp_path / "clean")
    assert clean.calls == counts["clean"]["calls"] and clean.episodes == counts["clean"]["episodes"]


def test_corrupted_copy_of_a_sample_file(world: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The acceptance case on real sample data: truncated last line, invalid JSON, binary, no `tool`."""
    root, _ = world
    lines = gzip.decompress((root / "clean" / "part-1.jsonl.gz").read_bytes()).splitlines()
    n = len(lines)
    lines[9] = lines[9][:-7] + b"}}}oops"
    lines[99] = b"\x00\x9f\x92\x96 not text"
    rec = orjson.loads(lines[499])
    del rec["tool"]
    lines[499] = orjson.dumps(rec)
    lines[-1] = lines[-1][:40]
    f = tmp_path / "corrupt.jsonl"
    f.write_bytes(b"\n".join(lines))
    rep = ingest([f], tmp_path / "c")
    s = rep.sources[0]
    assert (s.lines, s.calls, s.rejects, s.blank) == (n, n - 4, 4, 0)
    got = [(r["line"], r["code"]) for r in Corpus.open(tmp_path / "c").rejects()]
    assert got == [(10, "R_JSON"), (100, "R_UTF8"), (500, "R_FIELD"), (n, "R_JSON")]
    r = CliRunner().invoke(app, ["ingest", str(f), "-o", str(tmp_path / "s"), "--strict"])
    assert r.exit_code == 2 and f"{f}:10: invalid JSON" in r.stderr
