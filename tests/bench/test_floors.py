"""bench/floors.py: its smallest flattening counts every argument and result node, and the script's
figures add up (the ingest budget is the peer's CPU less ingest's phases that are not per-line Python;
those and the per-line ones make ingest's total)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from tests.json_tree import subtrees
from tests.loaders import bench_module, run_bench

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def floors() -> ModuleType:
    return bench_module("floors")


def test_flatten_counts_every_node(floors: ModuleType) -> None:
    recs = [
        orjson.loads(line)
        for line in gzip.decompress(
            (REPO / "sample_traces" / "clean" / "part-1.jsonl.gz").read_bytes()
        ).splitlines()
        if line.strip()
    ][:500]
    want = sum(len(subtrees(r.get("arguments"))) + len(subtrees(r.get("result"))) for r in recs)
    assert floors.flatten(recs) == want
    assert floors.flatten([{"arguments": {"a": [1, "x", {}]}, "result": None}]) == 6


def test_floors_script_figures_add_up(tmp_path: Path) -> None:
    out = tmp_path / "floors.json"
    p = run_bench("floors.py", "--calls", "2000", "--data", str(tmp_path), "--json", str(out))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["lines"] == 2000
    lines = (tmp_path / r["input"]).read_bytes().splitlines()
    recs = [orjson.loads(b) for b in lines]
    assert r["nodes"] == sum(len(subtrees(x.get("arguments"))) + len(subtrees(x.get("result"))) for x in recs)
    ing = r["ingest"]
    assert ing["ours_per_line_cpu"] + ing["ours_rest_cpu"] == pytest.approx(ing["ours_total_cpu"])
    assert ing["budget_per_line_cpu"] == pytest.approx(ing["peer_read_ndjson_cpu"] - ing["ours_rest_cpu"])
    assert ing["peer_read_ndjson_cpu"] > 0 and ing["orjson_loads_cpu"] > 0 and ing["minimal_flatten_cpu"] > 0
    assert r["stream"]["goal_us_per_call"] == 10.0
    assert "left for every rule of the call" in p.stdout
