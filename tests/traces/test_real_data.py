"""The real τ-bench and τ²-bench trajectories in ../shared/data ingest to their documented counts."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest


def test_tau_bench_airline(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "tau_bench" / "trajectories" / "gpt-4o-airline.json"
    rep = ingest([src], tmp_path / "c")
    s = rep.sources[0]
    assert (s.format, s.unit, s.lines, s.ok, s.rejects, s.dropped_calls) == (
        "tau-bench",
        "record",
        200,
        200,
        0,
        0,
    )
    assert (rep.episodes, rep.calls) == (200, 1164)
    c = Corpus.open(tmp_path / "c")
    calls = c.scan_calls().collect()
    assert calls.filter(pl.col("status") == "error").height == 73
    assert calls.filter(pl.col("status") == "error")["error"].str.starts_with("Error:").all()
    assert calls["tool"].cast(pl.String).n_unique() == 14
    eps = c.scan_episodes().collect()
    assert eps.height == 200 and eps["reward"].null_count() == 0
    assert round(eps["reward"].mean(), 2) == 0.42  # SOURCES.md: mean reward 0.42
    assert eps.filter(pl.col("n_calls") == 0).height == 18  # runs without any tool call are episodes too
    assert eps["task_id"].cast(pl.String).n_unique() == 50
    assert schema_errors(c.manifest(), "corpus-manifest") == []


def test_tau2_bench_telecom(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "tau2_bench" / "telecom" / "trajectories"
    rep = ingest(sorted(folder.glob("*.json")), tmp_path / "c")
    assert (rep.episodes, rep.calls, rep.rejects) == (20, 215, 0)
    c = Corpus.open(tmp_path / "c")
    calls = c.scan_calls().collect()
    requestors = calls["meta"].str.json_path_match("$.requestor").value_counts().sort("meta")
    assert dict(requestors.rows()) == {"assistant": 90, "user": 125}  # user-device calls are kept
    assert calls.filter(pl.col("status") == "error").height == 1
    eps = c.scan_episodes().collect()
    assert sorted(eps["reward"].to_list()) == [0.0] * 6 + [1.0] * 14


def test_whole_shared_folder_skips_registries(shared_data: Path, tmp_path: Path) -> None:
    rep = ingest([shared_data / "tau2_bench"], tmp_path / "c")
    by = {Path(s.source).name: s for s in rep.sources}
    assert by["tools.json"].skipped and by["tools.json"].format == "registry"
    assert rep.calls == 215
