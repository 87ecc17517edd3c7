"""The benchmark harness at a tiny size: `make bench`'s entry point runs end to end, writes results that
validate against their schema, and every stage carries a ratio to a baseline, not a bare timing.

The figures themselves are machine-dependent; what is tested is their shape and their consistency
(ratios recomputed from the recorded seconds, the Markdown table quoting the JSON), plus the parts that
are deterministic: the generator's bytes and the genson rule counting.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from output_contracts.schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
STAGES = [
    "ingest",
    "mine --folds 1",
    "mine --folds 5",
    "check (corpus)",
    "check - (stream)",
    "audit --folds 5",
    "ledger append",
    "ledger verify",
]


def _load(name: str) -> ModuleType:
    """A bench/ script as a module (bench/ is a script folder, not a package)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(REPO / "bench"))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, Path]:
    """One run of bench/run_all.py at 2,000 calls, through a subprocess as `make bench` runs it (the
    scratch folder kept in `work/`, so the `--corpus` test can reuse its corpus)."""
    tmp = tmp_path_factory.mktemp("bench")
    out_json, out_md = tmp / "results.json", tmp / "results.md"
    proc = subprocess.run(
        [
            sys.executable,
            "bench/run_all.py",
            "--calls",
            "2000",
            "--ledger-entries",
            "3000",
            "--data",
            str(tmp / "data"),
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
            "--work",
            str(tmp / "work"),
            "--keep",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == out_md.read_text()  # the table printed is the table written
    return json.loads(out_json.read_text()), out_md.read_text(), tmp


def test_results_validate_and_carry_ratios(smoke: tuple[dict, str, Path]) -> None:
    doc, _md, _tmp = smoke
    assert schema_errors(doc, "bench-results") == []
    (run,) = doc["runs"]
    assert run["calls"] == 2000
    assert [s["stage"] for s in run["stages"]] == STAGES
    for s in run["stages"]:
        ours, base, ratio = s["ours"]["seconds"], s["baseline"]["seconds"], s["ratio"]
        assert ours > 0 and base > 0 and s["ours"]["peak_rss_mib"] > 0
        expect = ours / base if ratio["kind"] == "time" else base / ours
        assert ratio["wall"] == pytest.approx(expect, rel=0.01, abs=0.002)
    by = {s["stage"]: s for s in run["stages"]}
    assert by["ingest"]["ratio"]["kind"] == "throughput"
    assert by["ingest"]["notes"]["rows"]["calls"] == 2000
    for name in ("check (corpus)", "check - (stream)"):
        peer = by[name]["peer"]
        assert peer["name"] == "genson"
        assert peer["speedup_wall"] == pytest.approx(peer["seconds"] / by[name]["ours"]["seconds"], rel=0.01)
    # Both check paths see the same calls with the same contracts: the same receipts.
    assert by["check (corpus)"]["notes"]["receipts"] == by["check - (stream)"]["notes"]["receipts"] > 0
    assert by["ledger append"]["notes"]["entries"] == 3000
    f = run["folds5_over_folds1"]
    assert f["wall"] == pytest.approx(
        by["mine --folds 5"]["ours"]["seconds"] / by["mine --folds 1"]["ours"]["seconds"], rel=0.01, abs=0.002
    )


def test_rule_classes_ours_versus_genson(smoke: tuple[dict, str, Path]) -> None:
    doc, _md, _tmp = smoke
    rc = doc["runs"][0]["rule_classes"]
    assert rc["genson"]["classes"] == ["REQUIRED", "TYPE"]
    assert set(rc["genson"]["classes"]) < set(rc["ours"]["classes"])
    assert rc["ours"]["count"] == len(rc["ours"]["classes"]) >= 6
    assert sum(rc["ours"]["rules"].values()) > sum(rc["genson"]["rules"].values())


def test_markdown_quotes_the_json(smoke: tuple[dict, str, Path]) -> None:
    doc, md, _tmp = smoke
    run = doc["runs"][0]
    for s in run["stages"]:
        row = next(line for line in md.splitlines() if line.startswith(f"| {s['stage']} |"))
        assert f"{s['ratio']['wall']:.2f}×" in row
        assert f"{s['ours']['peak_rss_mib']:,.0f}" in row


def test_merge_keeps_other_sizes(tmp_path: Path, smoke: tuple[dict, str, Path]) -> None:
    run_all = _load("run_all")
    doc, _md, _tmp = smoke
    path = tmp_path / "results.json"
    big = {**doc["runs"][0], "calls": 10_000_000}
    path.write_text(json.dumps({**doc, "runs": [big]}))
    merged = run_all.merge(path, doc["runs"][0])
    assert [r["calls"] for r in merged["runs"]] == [2000, 10_000_000]
    assert schema_errors(merged, "bench-results") == []
    md = run_all.markdown(merged, 2000)
    assert "## Peak RSS (MiB) by corpus size" in md and "10,000,000 calls" in md
    again = run_all.merge(path, {**big, "total_seconds": 1.0})
    assert [r["total_seconds"] for r in again["runs"]] == [1.0]


def test_generator_is_seeded_streaming_and_prefix_stable(tmp_path: Path) -> None:
    gen = _load("generate")
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
    peer = _load("peer_genson")
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


def test_memory_run_rows_without_baselines_validate(smoke: tuple[dict, str, Path]) -> None:
    """The 10M run (`--no-baselines`, RSS watchdog): rows with no baseline, and a stage stopped at the
    limit, still validate and render."""
    run_all = _load("run_all")
    common = sys.modules["common"]
    doc, _md, _tmp = smoke
    ours = common.Measure(seconds=12.0, cpu_seconds=10.0, peak_rss_mib=6200.0, exit=-9, killed_at_mib=6144.0)
    row = run_all._stage(
        "mine --folds 5", ours, "scan", None, target={"of": "ratio", "op": "<=", "value": 3.0}, notes={}
    )
    assert row["baseline"] is None and row["ratio"] is None and "target" not in row
    ok = common.Measure(seconds=5.0, cpu_seconds=4.0, peak_rss_mib=900.0, exit=0)
    ingest = run_all._stage("ingest", ok, "read_ndjson", None, ratio_kind="throughput", notes={})
    big = {
        "calls": 10_000_000,
        "seed": 13,
        "fault_every": 50,
        "input_mib": 7000.0,
        "stages": [ingest, row],
        "total_seconds": 20.0,
    }
    merged = {**doc, "runs": [doc["runs"][0], big]}
    assert schema_errors(merged, "bench-results") == []
    md = run_all.markdown(merged, 10_000_000)
    assert "stopped at the 6,144 MiB RSS limit" in md
    assert "| ingest | 5.00 | 4.00 | 900 | — | — | — |" in md


def _run_all(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/run_all.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_corpus_reuse_skips_ingest_and_keeps_its_figure(smoke: tuple[dict, str, Path]) -> None:
    """`--corpus`: a mine/audit run on a kept corpus of the same input (the 10M memory run without its
    ingest) measures only its stages; the merged entry keeps the earlier ingest row, marked, and the
    RSS-by-size table still shows it; the reused corpus is only read."""
    doc, _md, tmp = smoke
    corpus = tmp / "work" / "corpus"
    manifest = (corpus / "corpus.json").read_bytes()
    files = sorted(p.name for p in corpus.iterdir())
    first = doc["runs"][0]
    big = {**first, "calls": 10_000_000}
    out_json, out_md = tmp / "reuse.json", tmp / "reuse.md"
    out_json.write_text(json.dumps({**doc, "runs": [first, big]}))
    proc = _run_all(
        "--calls", "2000", "--ledger-entries", "3000", "--data", str(tmp / "data"),
        "--work", str(tmp / "work2"), "--corpus", str(corpus), "--stages", "mine5,audit", "--no-baselines",
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
    # measured now: figures of this run, without baselines, marked as run on a reused corpus
    for name in ("mine --folds 5", "audit --folds 5"):
        row = by[name]
        assert row["notes"]["corpus_reused"] is True and "from_earlier_run" not in row["notes"]
        assert row["ours"]["seconds"] > 0 and row["ours"]["peak_rss_mib"] > 0
    assert by["mine --folds 5"]["baseline"] is None and by["mine --folds 5"]["ratio"] is None
    # audit's baseline is our own mine --folds 5 of this run, even without baselines
    assert by["audit --folds 5"]["baseline"]["seconds"] == by["mine --folds 5"]["ours"]["seconds"]
    assert by["audit --folds 5"]["ratio"]["wall"] == pytest.approx(
        by["audit --folds 5"]["ours"]["seconds"] / by["mine --folds 5"]["ours"]["seconds"],
        rel=0.01,
        abs=0.002,
    )
    # the same corpus mined and audited again: the same rules and the same detection rate
    assert by["mine --folds 5"]["notes"]["rules"] == before["mine --folds 5"]["notes"]["rules"]
    assert by["audit --folds 5"]["notes"]["detection"] == before["audit --folds 5"]["notes"]["detection"]
    # not measured now: the earlier rows, figures unchanged, marked
    for name in set(STAGES) - {"mine --folds 5", "audit --folds 5"}:
        assert by[name]["ours"] == before[name]["ours"]
        assert by[name]["notes"] == {**before[name]["notes"], "from_earlier_run": True}
    # run-level figures: the folds ratio mixed runs (mine --folds 5 re-measured), the rule classes did not
    assert "folds5_over_folds1" not in run
    assert run["rule_classes"] == first["rule_classes"]
    md = out_md.read_text()
    assert proc.stdout == md
    assert "Ingest was not measured in the latest run of this size" in md
    ingest_rss = f"{before['ingest']['ours']['peak_rss_mib']:,.0f}"
    assert f"| ingest | {ingest_rss} | {ingest_rss} |" in md  # RSS by size: 2,000 and (copied) 10M
    row = next(line for line in md.splitlines() if line.startswith("| ingest |"))
    assert "earlier run (not re-measured)" in row
    # the reused corpus is only read, and kept
    assert (corpus / "corpus.json").read_bytes() == manifest
    assert sorted(p.name for p in corpus.iterdir()) == files


def test_corpus_of_another_input_is_refused(smoke: tuple[dict, str, Path]) -> None:
    _doc, _md, tmp = smoke
    corpus = tmp / "work" / "corpus"
    out_json = tmp / "refused.json"
    common = ["--data", str(tmp / "data"), "--work", str(tmp / "work3"), "--json", str(out_json)]
    proc = _run_all("--calls", "1000", "--corpus", str(corpus), "--stages", "mine5", *common)
    assert proc.returncode == 2
    assert "was not ingested from world-1000-13-f50.jsonl" in proc.stderr
    proc = _run_all("--calls", "2000", "--corpus", str(corpus), "--stages", "ingest,mine5", *common)
    assert proc.returncode == 2 and "leave ingest out of --stages" in proc.stderr
    proc = _run_all("--calls", "2000", "--corpus", str(tmp / "work3" / "corpus"), *common)
    assert proc.returncode == 2 and "is not a corpus" in proc.stderr
    assert not out_json.exists()
    assert (corpus / "corpus.json").is_file()


def test_merge_of_another_input_replaces_the_entry(smoke: tuple[dict, str, Path]) -> None:
    run_all = _load("run_all")
    doc, _md, _tmp = smoke
    first = doc["runs"][0]
    mine5 = next(s for s in first["stages"] if s["stage"] == "mine --folds 5")
    other_seed = {**first, "seed": 14, "stages": [mine5]}
    assert run_all.merge_run(first, other_seed) == other_seed
    same = {**first, "stages": [mine5], "total_seconds": 2.5}
    del same["folds5_over_folds1"]
    merged = run_all.merge_run(first, same)
    assert [s["stage"] for s in merged["stages"]] == STAGES
    assert merged["total_seconds"] == 2.5 and "folds5_over_folds1" not in merged
    assert sum(1 for s in merged["stages"] if s["notes"].get("from_earlier_run")) == len(STAGES) - 1


def test_world_corpus_is_cached_and_matched_to_its_input(tmp_path: Path) -> None:
    """The per-stage scripts' shared input: one world file and its corpus, ingested once, recognised by
    `corpus_mismatch` as the ingest of that file and of no other."""
    _load("run_all")
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
