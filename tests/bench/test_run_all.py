"""The benchmark harness at a tiny size: `make bench`'s entry point runs end to end, writes results that
validate against their schema, and every stage sits beside the peer a user would pick, with ratios
computed from the two measured medians (never a timing written in).

The figures themselves are machine-dependent; what is tested is their shape and their consistency
(ratios and targets recomputed from the recorded seconds, the Markdown quoting the JSON, the peers'
versions those installed), plus the parts that are deterministic: the generator's bytes, the genson rule
counting, the fastjsonschema peer's verdicts, the medians of interleaved rounds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from output_contracts.schemas import schema_errors
from tests.loaders import bench_module, run_bench
from tests.once import made_once, run_folder

REPO = Path(__file__).resolve().parents[2]
STAGES = [
    "ingest",
    "mine --folds 5",
    "audit, 5 folds",
    "check (corpus)",
    "check - (stream)",
    "check_call (all classes)",
    "check_call (schema classes)",
    "ledger append",
    "ledger verify",
]
TARGETS = [
    "mine_vs_scan",
    "mine_vs_genson",
    "mine_classes",
    "mine_linear",
    "mine_rss_10m",
    "call_schema",
    "call_all",
    "stream_rate",
    "ingest_vs_ndjson",
    "ingest_rss_flat",
    "audit_vs_mine",
]


def _run_all(*args: str) -> subprocess.CompletedProcess[str]:
    return run_bench("run_all.py", *args)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """One run of bench/run_all.py at 2,000 calls (scale point 400), through a subprocess as `make bench`
    runs it (the scratch folder kept in `work/`, so the `--corpus` test can reuse its corpus). Made once
    per pytest run (`tests/once.py`): when `--dist worksteal` hands this file's tests to both workers,
    the second reads the first's run instead of running the whole bench again."""

    def make(tmp: Path) -> None:
        proc = _run_all(
            "--calls", "2000", "--scale-calls", "400", "--repeat", "1", "--ledger-entries", "3000",
            "--data", str(tmp / "data"), "--json", str(tmp / "results.json"),
            "--markdown", str(tmp / "results.md"), "--work", str(tmp / "work"), "--keep",
        )  # fmt: skip
        (tmp / "run.json").write_text(json.dumps([proc.returncode, proc.stdout, proc.stderr[-3000:]]))

    tmp = made_once(run_folder(tmp_path_factory), "bench-smoke", make)
    code, stdout, stderr = json.loads((tmp / "run.json").read_text())
    assert code == 0, stderr
    out_md = (tmp / "results.md").read_text()
    assert stdout == out_md  # the table printed is the table written
    return json.loads((tmp / "results.json").read_text()), out_md, tmp


def _ratio(ours: dict[str, Any], peer: dict[str, Any], key: str) -> float:
    a, b = (ours, peer) if peer["ratio"]["kind"] == "time" else (peer, ours)
    return a[key] / b[key]


def test_results_validate_and_every_stage_has_its_peer(smoke: tuple[dict, str, Path]) -> None:
    doc, _md, _tmp = smoke
    assert schema_errors(doc, "bench-results") == []
    (run,) = doc["runs"]
    assert run["calls"] == 2000 and run["repeat"] == 1
    assert [s["stage"] for s in run["stages"]] == STAGES
    for s in run["stages"]:
        assert s["ours"]["seconds"] > 0 and s["ours"]["cpu_seconds"] > 0 and s["ours"]["peak_rss_mib"] > 0
        assert s["peers"], s["stage"]
        for p in s["peers"]:
            assert p["seconds"] > 0 and p["cpu_seconds"] > 0
            # the ratios are the recorded medians divided, CPU and wall
            assert p["ratio"]["cpu"] == pytest.approx(
                _ratio(s["ours"], p, "cpu_seconds"), rel=0.01, abs=0.002
            )
            assert p["ratio"]["wall"] == pytest.approx(_ratio(s["ours"], p, "seconds"), rel=0.01, abs=0.002)
            assert p["cpu_runs"] and len(p["cpu_runs"]) == p["runs"] == 1
    peers = {s["stage"]: [p["name"].split(" ")[0] for p in s["peers"]] for s in run["stages"]}
    assert peers["ingest"] == ["polars.read_ndjson"]
    assert peers["mine --folds 5"] == ["scan_parquet(mine", "genson"]
    assert peers["audit, 5 folds"] == ["our"]
    assert peers["check (corpus)"] == ["fastjsonschema", "scan_parquet(check"]
    assert peers["check - (stream)"] == ["fastjsonschema"]
    assert peers["check_call (all classes)"] == peers["check_call (schema classes)"] == ["fastjsonschema"]
    by = {s["stage"]: s for s in run["stages"]}
    assert by["ingest"]["peers"][0]["ratio"]["kind"] == "throughput"
    assert by["ingest"]["notes"]["rows"]["calls"] == 2000
    # audit's peer is the mine of the same rounds, the very figures of the mine row
    assert by["audit, 5 folds"]["peers"][0]["cpu_seconds"] == by["mine --folds 5"]["ours"]["cpu_seconds"]
    # Both check paths see the same calls with the same contracts: the same receipts; so does check_call.
    receipts = by["check (corpus)"]["notes"]["receipts"]
    assert (
        receipts
        == by["check - (stream)"]["notes"]["receipts"]
        == by["check_call (all classes)"]["notes"]["receipts"]
        > 0
    )
    assert by["ledger append"]["notes"]["entries"] == 3000


def test_peer_versions_and_load_are_recorded(smoke: tuple[dict, str, Path]) -> None:
    doc, _md, _tmp = smoke
    versions = doc["machine"]["versions"]
    for dist in ("polars", "genson", "fastjsonschema"):
        assert versions[dist] == metadata.version(dist)
    run = doc["runs"][0]
    by = {s["stage"]: s for s in run["stages"]}
    assert by["mine --folds 5"]["peers"][1]["version"] == f"genson {metadata.version('genson')}"
    assert (
        by["check (corpus)"]["peers"][0]["version"] == f"fastjsonschema {metadata.version('fastjsonschema')}"
    )
    assert by["ingest"]["peers"][0]["version"] == f"polars {metadata.version('polars')}"
    load = run["load_average"]
    assert len(load["start"]) == len(load["end"]) == 3 and all(x >= 0 for x in load["start"] + load["end"])


def test_check_call_compares_the_same_calls(smoke: tuple[dict, str, Path]) -> None:
    """Per call, ours and fastjsonschema see the same calls; the schema-class set is the full checker's
    REQUIRED/TYPE/DOMAIN/NONNEG/POSITIVE rules, which the inferred schemas state."""
    doc, _md, _tmp = smoke
    run = doc["runs"][0]
    by = {s["stage"]: s for s in run["stages"]}
    full, schema = by["check_call (all classes)"]["notes"], by["check_call (schema classes)"]["notes"]
    assert full["calls"] == schema["calls"] == by["check (corpus)"]["notes"]["peer_calls"] > 1900
    rules = run["rule_classes"]["ours"]["rules"]
    assert full["rules"] == sum(rules.values())
    assert schema["rules"] == sum(v for k, v in rules.items() if k in schema["codes"]) < full["rules"]
    assert 0 < schema["receipts"] <= full["receipts"]
    assert schema["peer_invalid"] > 0  # the faulty tasks break the inferred schemas too
    for n in (full, schema):
        us = by["check_call (all classes)" if n is full else "check_call (schema classes)"]["ours"][
            "cpu_seconds"
        ]
        assert n["us_per_call_cpu"] == pytest.approx(us / n["calls"] * 1e6, rel=0.01)


def test_targets_are_computed_from_the_rows(smoke: tuple[dict, str, Path]) -> None:
    """Every target's measured value is the row's ratio (or rate, or size ratio) and its verdict follows
    from it; changing a measured figure changes the target (nothing is written in)."""
    run_all = bench_module("run_all")
    doc, _md, _tmp = smoke
    run = doc["runs"][0]
    t = {x["id"]: x for x in run["targets"]}
    assert list(t) == TARGETS
    by = {s["stage"]: s for s in run["stages"]}
    assert t["mine_vs_scan"]["measured"] == by["mine --folds 5"]["peers"][0]["ratio"]["cpu"]
    assert t["mine_vs_genson"]["measured"] == by["mine --folds 5"]["peers"][1]["ratio"]["cpu"]
    assert t["call_schema"]["measured"] == by["check_call (schema classes)"]["peers"][0]["ratio"]["cpu"]
    assert t["call_all"]["measured"] == by["check_call (all classes)"]["peers"][0]["ratio"]["cpu"]
    assert t["ingest_vs_ndjson"]["measured"] == by["ingest"]["peers"][0]["ratio"]["cpu"]
    assert t["audit_vs_mine"]["measured"] == by["audit, 5 folds"]["peers"][0]["ratio"]["cpu"]
    assert t["stream_rate"]["measured"] == pytest.approx(
        2000 / by["check - (stream)"]["ours"]["cpu_seconds"], rel=1e-3
    )
    assert t["mine_classes"]["measured"] == 0  # genson's REQUIRED and TYPE are among ours
    mine_small, mine_big = run["scale"]["mine"], by["mine --folds 5"]["ours"]
    assert t["mine_linear"]["measured"] == pytest.approx(
        (mine_big["cpu_seconds"] / 2000) / (mine_small["cpu_seconds"] / 400), rel=1e-3
    )
    assert t["ingest_rss_flat"]["measured"] == pytest.approx(
        by["ingest"]["ours"]["peak_rss_mib"] / run["scale"]["ingest"]["peak_rss_mib"], rel=1e-3
    )
    assert t["mine_rss_10m"]["measured"] is None and t["mine_rss_10m"]["met"] is None  # not at 10M here
    for x in run["targets"]:
        if x["measured"] is not None:
            assert x["met"] == (
                x["measured"] <= x["value"] if x["op"] == "<=" else x["measured"] >= x["value"]
            )
    # a slower mine, a faster audit: the targets follow the figures
    changed = json.loads(json.dumps(run))
    mine = next(s for s in changed["stages"] if s["stage"] == "mine --folds 5")
    mine["peers"][0]["ratio"]["cpu"] = 2.5
    audit = next(s for s in changed["stages"] if s["stage"] == "audit, 5 folds")
    audit["peers"][0]["ratio"]["cpu"] = 9.0
    again = {x["id"]: x for x in run_all.targets(changed)}
    assert again["mine_vs_scan"]["measured"] == 2.5 and again["mine_vs_scan"]["met"] is True
    assert again["audit_vs_mine"]["measured"] == 9.0 and again["audit_vs_mine"]["met"] is False
    # a 10M scale point is the 10M memory target
    changed["scale"] = {
        **changed["scale"],
        "calls": 10_000_000,
        "mine": {**mine_small, "peak_rss_mib": 3000.0},
    }
    again = {x["id"]: x for x in run_all.targets(changed)}
    assert again["mine_rss_10m"]["measured"] == 3000.0 and again["mine_rss_10m"]["met"] is False


def test_markdown_quotes_the_json(smoke: tuple[dict, str, Path]) -> None:
    doc, md, _tmp = smoke
    run = doc["runs"][0]
    for s in run["stages"]:
        rows = [line for line in md.splitlines() if line.startswith(f"| {s['stage']} |")]
        assert len(rows) == len(s["peers"])
        for row, p in zip(rows, s["peers"], strict=True):
            assert f"{p['ratio']['cpu']:.2f}×" in row and f"{p['ratio']['wall']:.2f}×" in row
            assert p["version"] in row
            assert f"{s['ours']['peak_rss_mib']:,.0f}" in row
    lines = md.splitlines()
    for t in run["targets"]:
        row = next(line for line in lines if line.startswith(f"| {t['text']}"))
        verdict = "not measured" if t["met"] is None else "PASS" if t["met"] else "**FAIL**"
        assert row.endswith(f"{verdict} |") or verdict in row
    la = run["load_average"]["start"]
    assert "/".join(f"{x:g}" for x in la) in md
    assert f"fastjsonschema {doc['machine']['versions']['fastjsonschema']}" in md


def test_rounds_interleave_and_take_medians() -> None:
    run_all = bench_module("run_all")
    common = sys.modules["common"]
    order: list[str] = []
    cpu = {"a": iter([3.0, 1.0, 2.0]), "b": iter([10.0, 30.0, 20.0])}

    def fn(key: str) -> Any:
        def go() -> Any:
            order.append(key)
            c = next(cpu[key])
            return common.Measure(seconds=c * 2, cpu_seconds=c, peak_rss_mib=100 + c, exit=0)

        return go

    got = run_all.rounds({"a": fn("a"), "b": fn("b")}, 3)
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert got["a"].cpu_seconds == 2.0 and got["a"].seconds == 4.0 and got["a"].cpu_runs == (3.0, 1.0, 2.0)
    assert got["b"].cpu_seconds == 20.0 and got["b"].peak_rss_mib == 130.0
    row = run_all._row("x", got["a"], [("peer", "peer 1.0", "time", got["b"])])
    assert row["peers"][0]["ratio"] == {"kind": "time", "cpu": 0.1, "wall": 0.1}
    assert row["ours"]["runs"] == 3 and row["ours"]["cpu_runs"] == [3.0, 1.0, 2.0]
    thr = run_all._row("x", got["a"], [("peer", "peer 1.0", "throughput", got["b"])])
    assert thr["peers"][0]["ratio"]["cpu"] == 10.0


def test_fastjsonschema_peer_judges_and_filters(tmp_path: Path) -> None:
    peer = bench_module("peer_fastjsonschema")
    reg = tmp_path / "tools.json"
    reg.write_text(
        json.dumps(
            {
                "tools": [
                    {
                        "name": "get",
                        "parameters": {"type": "object", "properties": {}},
                        "output": {
                            "type": "object",
                            "properties": {"n": {"type": "integer", "minimum": 0}},
                            "required": ["n"],
                        },
                    },
                    {"name": "undeclared", "parameters": {"type": "object", "properties": {}}},
                ]
            }
        )
    )
    src = tmp_path / "calls.jsonl"
    recs = [
        {"tool": "get", "status": "ok", "result": {"n": 1}},
        {"tool": "get", "status": "ok", "result": {"n": -1}},  # below the minimum
        {"tool": "get", "status": "ok", "result": {}},  # n missing
        {"tool": "get", "status": "error", "result": {"n": -5}},  # failed calls are not checked
        {"tool": "undeclared", "status": "ok", "result": {"n": -1}},  # no output declared
        {"tool": "get", "status": "ok", "result": {"n": 7}, "arguments": {"q": 1}},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in recs) + "\n")
    vals = peer.validators(reg)
    assert sorted(vals) == ["get"]
    calls = peer.load_calls(src, vals)
    assert [c[2] for c in calls] == [{"n": 1}, {"n": -1}, {}, {"n": 7}]
    assert calls[3][1] == {"q": 1}
    assert peer.validate_calls(vals, calls) == 2
    assert peer.validate_file(vals, src) == (4, 2)
    assert len(peer.load_calls(src, vals, limit=2)) == 2


def test_merge_keeps_other_sizes_and_drops_old_formats(tmp_path: Path, smoke: tuple[dict, str, Path]) -> None:
    run_all = bench_module("run_all")
    doc, _md, _tmp = smoke
    path = tmp_path / "results.json"
    # a run written before runs carried their own date
    big = {**{k: v for k, v in doc["runs"][0].items() if k != "measured_at"}, "calls": 10_000_000}
    path.write_text(json.dumps({**doc, "runs": [big]}))
    merged = run_all.merge(path, doc["runs"][0])
    assert [r["calls"] for r in merged["runs"]] == [2000, 10_000_000]
    assert schema_errors(merged, "bench-results") == []
    md = run_all.markdown(merged, 2000)
    assert "## Peak RSS (MiB) by corpus size" in md and "10,000,000 calls" in md
    # each column of the by-size table says when it was measured: an old 10M run is not read as today's
    assert merged["runs"][0]["measured_at"] == merged["measured_at"]
    assert md.splitlines()[-1] == f"| *measured* | {merged['measured_at']} | not recorded |"
    assert f"; measured {merged['measured_at']};" in md
    again = run_all.merge(path, {**big, "total_seconds": 1.0})
    assert [r["total_seconds"] for r in again["runs"]] == [1.0]
    path.write_text(json.dumps({**doc, "version": 1, "runs": [big]}))  # the format before peers
    assert [r["calls"] for r in run_all.merge(path, doc["runs"][0])["runs"]] == [2000]


def test_generator_is_seeded_streaming_and_prefix_stable(tmp_path: Path) -> None:
    gen = bench_module("generate")
    a = gen.write(tmp_path / "a.jsonl", 700, seed=13, fault_every=3)
    b = gen.write(tmp_path / "b.jsonl", 700, seed=13, fault_every=3)
    small = gen.write(tmp_path / "s.jsonl", 250, seed=13, fault_every=3)
    other = gen.write(tmp_path / "o.jsonl", 700, seed=14, fault_every=3)
    da, db = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "b.jsonl").read_bytes()
    assert da == db and a == b
    assert da.startswith((tmp_path / "s.jsonl").read_bytes()) and small["calls"] == 250
    assert (tmp_path / "o.jsonl").read_bytes() != da
    lines = [json.loads(x) for x in da.splitlines()]
    assert len(lines) == a["calls"] == 700
    assert a["faulted_calls"] == sum(1 for r in lines if r["labels"]) > 0
    assert other["calls"] == 700
    # the sample world's shape: its ten tools, nested arrays, labelled faults only in faulty tasks
    assert len({r["tool"] for r in lines}) == 10
    faulty_tasks = {r["task_id"] for r in lines if r["labels"]}
    assert all(r["reward"] == 0.0 for r in lines if r["task_id"] in faulty_tasks)
    assert all(r["reward"] == 1.0 for r in lines if r["task_id"] not in faulty_tasks)
    assert not list(tmp_path.glob("*.tmp"))


def test_genson_rules_are_required_and_type_by_path() -> None:
    peer = bench_module("peer_genson")
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {
                "type": "array",
                "items": {"type": "object", "properties": {"x/y": {"type": "number"}}, "required": ["x/y"]},
            },
            "c": {"type": ["null", "string"]},
        },
        "required": ["a", "b"],
    }
    got = sorted(peer.schema_rules(schema))
    assert got == [
        ("REQUIRED", "/a"),
        ("REQUIRED", "/b"),
        ("REQUIRED", "/b/*/x~1y"),
        ("TYPE", ""),
        ("TYPE", "/a"),
        ("TYPE", "/b"),
        ("TYPE", "/b/*"),
        ("TYPE", "/b/*/x~1y"),
    ]
    assert peer.rule_counts({"t": schema}) == {"REQUIRED": 3, "TYPE": 5}


def test_memory_run_rows_without_peers_validate(smoke: tuple[dict, str, Path]) -> None:
    """The 10M run (`--no-baselines`, RSS watchdog): rows with no peer, and a stage stopped at the
    limit, still validate and render; its targets are not measured."""
    run_all = bench_module("run_all")
    common = sys.modules["common"]
    doc, _md, _tmp = smoke
    ours = common.Measure(seconds=12.0, cpu_seconds=10.0, peak_rss_mib=6200.0, exit=-9, killed_at_mib=6144.0)
    row = run_all._row("mine --folds 5", ours, [])
    assert row["peers"] == [] and row["notes"]["killed_at_mib"] == 6144.0
    ok = common.Measure(seconds=5.0, cpu_seconds=4.0, peak_rss_mib=900.0, exit=0)
    ingest = run_all._row("ingest", ok, [])
    big = {
        "calls": 10_000_000,
        "seed": 13,
        "fault_every": 50,
        "input_mib": 7000.0,
        "repeat": 1,
        "stages": [ingest, row],
        "load_average": {"start": [1.0, 1.0, 1.0], "end": [2.0, 2.0, 2.0]},
        "total_seconds": 20.0,
    }
    big = run_all.merge_run(None, big)
    t = {x["id"]: x for x in big["targets"]}
    assert t["mine_vs_scan"]["met"] is None and t["mine_rss_10m"]["measured"] is None  # killed: no figure
    merged = {**doc, "runs": [doc["runs"][0], big]}
    assert schema_errors(merged, "bench-results") == []
    md = run_all.markdown(merged, 10_000_000)
    assert "stopped at the 6,144 MiB RSS limit" in md
    assert "| ingest | 4.00 | 5.00 | 900 | — | — | — | — | — |" in md


def test_corpus_reuse_skips_ingest_and_keeps_its_figure(smoke: tuple[dict, str, Path]) -> None:
    """`--corpus`: a mine/audit run on a kept corpus of the same input (the 10M memory run without its
    ingest) measures only its stages; the merged entry keeps the earlier rows, marked, and the reused
    corpus is only read."""
    doc, _md, tmp = smoke
    corpus = tmp / "work" / "corpus"
    manifest = (corpus / "corpus.json").read_bytes()
    files = sorted(p.name for p in corpus.iterdir())
    first = doc["runs"][0]
    big = {**first, "calls": 10_000_000}
    out_json, out_md = tmp / "reuse.json", tmp / "reuse.md"
    out_json.write_text(json.dumps({**doc, "runs": [first, big]}))
    proc = _run_all(
        "--calls", "2000", "--ledger-entries", "3000", "--data", str(tmp / "data"), "--repeat", "1",
        "--work", str(tmp / "work2"), "--corpus", str(corpus), "--stages", "mine,audit", "--no-baselines",
        "--json", str(out_json), "--markdown", str(out_md),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ingest not measured" in proc.stderr
    merged = json.loads(out_json.read_text())
    assert schema_errors(merged, "bench-results") == []
    run, other = merged["runs"]
    assert other == big  # the other size is untouched
    assert [s["stage"] for s in run["stages"]] == STAGES
    before = {s["stage"]: s for s in first["stages"]}
    by = {s["stage"]: s for s in run["stages"]}
    for name in ("mine --folds 5", "audit, 5 folds"):
        row = by[name]
        assert row["notes"]["corpus_reused"] is True and "from_earlier_run" not in row["notes"]
        assert row["ours"]["seconds"] > 0 and row["ours"]["peak_rss_mib"] > 0
    assert by["mine --folds 5"]["peers"] == []  # no baselines
    # audit's peer is our own mine --folds 5 of this run, even without baselines
    (peer,) = by["audit, 5 folds"]["peers"]
    assert peer["seconds"] == by["mine --folds 5"]["ours"]["seconds"]
    # the same corpus mined and audited again: the same rules and the same detection rate
    assert by["mine --folds 5"]["notes"]["rules"] == before["mine --folds 5"]["notes"]["rules"]
    assert by["audit, 5 folds"]["notes"]["detection"] == before["audit, 5 folds"]["notes"]["detection"]
    for name in set(STAGES) - {"mine --folds 5", "audit, 5 folds"}:
        assert by[name]["ours"] == before[name]["ours"]
        assert by[name]["notes"] == {**before[name]["notes"], "from_earlier_run": True}
    assert run["scale"] == {**first["scale"], "from_earlier_run": True}
    # targets recomputed from the merged rows: the mine/genson ratio had its peer removed
    t = {x["id"]: x for x in run["targets"]}
    assert t["mine_vs_genson"]["measured"] is None
    assert t["ingest_vs_ndjson"]["measured"] == before["ingest"]["peers"][0]["ratio"]["cpu"]
    md = out_md.read_text()
    assert proc.stdout == md
    assert "it reused a corpus" in md
    row = next(line for line in md.splitlines() if line.startswith("| ingest |"))
    assert "earlier run (not re-measured)" in row
    assert (corpus / "corpus.json").read_bytes() == manifest
    assert sorted(p.name for p in corpus.iterdir()) == files


def test_corpus_of_another_input_is_refused(smoke: tuple[dict, str, Path]) -> None:
    _doc, _md, tmp = smoke
    corpus = tmp / "work" / "corpus"
    out_json = tmp / "refused.json"
    common = ["--data", str(tmp / "data"), "--work", str(tmp / "work3"), "--json", str(out_json)]
    proc = _run_all("--calls", "1000", "--corpus", str(corpus), "--stages", "mine", *common)
    assert proc.returncode == 2
    assert "was not ingested from world-1000-13-f50.jsonl" in proc.stderr
    proc = _run_all("--calls", "2000", "--corpus", str(corpus), "--stages", "ingest,mine", *common)
    assert proc.returncode == 2 and "leave ingest out of --stages" in proc.stderr
    proc = _run_all("--calls", "2000", "--corpus", str(tmp / "work3" / "corpus"), *common)
    assert proc.returncode == 2 and "is not a corpus" in proc.stderr
    assert not out_json.exists()
    assert (corpus / "corpus.json").is_file()


def test_merge_of_another_input_replaces_the_entry(smoke: tuple[dict, str, Path]) -> None:
    run_all = bench_module("run_all")
    doc, _md, _tmp = smoke
    first = doc["runs"][0]
    mine5 = next(s for s in first["stages"] if s["stage"] == "mine --folds 5")
    other_seed = {**first, "seed": 14, "stages": [mine5]}
    del other_seed["scale"]
    got = run_all.merge_run(first, other_seed)
    assert got["stages"] == [mine5] and "scale" not in got
    same = {**first, "stages": [mine5], "total_seconds": 2.5}
    del same["rule_classes"]
    merged = run_all.merge_run(first, same)
    assert [s["stage"] for s in merged["stages"]] == STAGES
    assert merged["total_seconds"] == 2.5 and "rule_classes" not in merged
    assert sum(1 for s in merged["stages"] if s["notes"].get("from_earlier_run")) == len(STAGES) - 1


def test_world_corpus_is_cached_and_matched_to_its_input(tmp_path: Path) -> None:
    """The per-stage scripts' shared input: one world file and its corpus, ingested once, recognised by
    `corpus_mismatch` as the ingest of that file and of no other."""
    bench_module("run_all")
    common = sys.modules["common"]
    corpus = common.world_corpus(300, 13, 3, tmp_path)
    src = tmp_path / "world-300-13-f3.jsonl"
    assert corpus == tmp_path / "world-300-13-f3.corpus"
    manifest = json.loads((corpus / "corpus.json").read_text())
    assert manifest["counts"]["calls"] == 300
    assert manifest["sources"][0]["sha256"] == common.file_sha256(src)
    stamp = (corpus / "corpus.json").stat().st_mtime_ns
    assert common.world_corpus(300, 13, 3, tmp_path) == corpus
    assert (corpus / "corpus.json").stat().st_mtime_ns == stamp  # cached, not re-ingested
    assert common.corpus_mismatch(corpus, src, 300) is None
    assert common.corpus_mismatch(corpus, src, 301) == f"{corpus} holds 300 calls, not 301"
    other = common.world_input(300, 14, 3, tmp_path)
    assert "was not ingested from world-300-14-f3.jsonl" in common.corpus_mismatch(corpus, other, 300)
    assert not list(tmp_path.glob("*.tmp"))
