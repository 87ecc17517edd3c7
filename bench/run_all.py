#!/usr/bin/env python3
"""`make bench`: every stage on one generated corpus, each against its baseline, in one run.

    python bench/run_all.py                         # 1,000,000 calls -> bench/results.json, results.md
    python bench/run_all.py --calls 10000000        # the bounded-memory run (adds a 10M entry)
    python bench/run_all.py --calls 2000 --json /tmp/r.json --markdown /tmp/r.md   # smoke size
    python bench/run_all.py --calls 10000000 --stages mine5,audit --no-baselines --corpus DIR
                                                    # repeat the 10M memory run on a kept corpus

Why one file of ~700 lines: one table of stages, each a few lines of command and baseline; the stage
runners share the child-process measuring and the report writers below them.

The input is `bench/generate.py`'s sample-world JSONL (cached in `bench/data/`, gitignored). Each
measurement runs in its own child process (`bench/common.py`: its own peak RSS and CPU seconds via
`os.wait4`), one at a time, stage by stage on the same data:

| stage | ours | baseline (ratio = ours / baseline time unless noted) |
|---|---|---|
| ingest | `contracts ingest SRC -o CORPUS` | `polars.read_ndjson(SRC, infer_schema_length=None)`; ratio reported as throughput ours/theirs (target >= 0.5) |
| mine --folds 1 / 5 | `contracts mine CORPUS --folds K` | one warm `scan_parquet(...).select(<columns mining reads>).collect()` of leaves, calls, episodes (target <= 3 for k = 5); also folds5/folds1 (target <= 2) |
| check (corpus) | `contracts check -c C CORPUS` | warm scan of the columns the checker reads; and genson (peer time / our time, target >= 10) |
| check (stream) | `contracts check -c C -` fed the JSONL on stdin | the same two; peak RSS target < 1 GiB |
| audit --folds 5 | `contracts audit CORPUS --folds 5` (mines, replays, freezes a ledger, bootstraps) | our `mine --folds 5` (target <= 2) |
| ledger append | `Ledger.append_many` of N audit-like entries, batches of 1,000 | writing the same bytes in the same batches with one fsync each |
| ledger verify | `contracts ledger verify DIR` | one SHA-256 per line of the same `ledger.jsonl` |

Baselines are floors, so each runs twice and the faster run counts (`best_of`); the input files are read
once into the page cache before anything is timed. The contracts `check` uses are the `--folds 1` set
mined in the mine stage from the same corpus: the faulty tasks' labelled calls are left out of mining,
so check has real violations to find and render.

`--corpus DIR` reuses a corpus already ingested from the same generated input (checked: one source with
the input's sha256 and size, the same call count; the folder is only read) instead of ingesting: the
ingest stage is then not run nor measured, and every stage row of that run says so in its notes
(`corpus_reused`).

Outputs: `results.json` (JSON Schema `output_contracts/schemas/bench-results.schema.json`; sorted keys; one
entry per corpus size under `runs`, so the 1M and 10M figures live side by side) and `results.md` (the
table of that size's entry, then peak RSS by size). A run replaces the stages it measured in the entry
of its own size; stages it did not measure (the ingest of a `--corpus` run, stages left out of
`--stages`) stay from the earlier run of the same input, marked `from_earlier_run` in their notes. A run
of another seed or fault rate replaces the entry whole.
Timings are measurements, so they vary between runs and machines; the one timestamp is `measured_at`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import generate

from output_contracts.jsonutil import atomic_write_bytes, write_json

ROOT = common.ROOT
DATA = common.DATA
RESULTS_VERSION = 1

#: Columns each stage reads (the baseline scans exactly these). Kept in step with
#: `output_contracts.mining.data.load`/`clean_calls` and `output_contracts.checks.checker.check_corpus`.
MINE_COLUMNS = {
    "leaves": ["cid", "task_id", "tool", "side", "pattern", "kind", "num", "str", "len"],
    "calls": ["cid", "call_id", "trace_id", "task_id", "tool", "status", "fault"],
    "episodes": ["trace_id", "faulty", "reward"],
}
CHECK_COLUMNS = {
    "leaves": ["cid", "tool", "side", "path", "pattern", "kind", "num", "str"],
    "calls": ["cid", "call_id", "trace_id", "task_id", "tool", "status", "source", "line"],
}

SCAN_CHILD = """
import polars as pl
from output_contracts.traces.corpus import Corpus
cols = json.loads(sys.argv[2])
c = Corpus.open(sys.argv[1])
scans = {"leaves": c.scan_leaves, "calls": c.scan_calls, "episodes": c.scan_episodes}
def scan():
    return sum(scans[name]().select(cs).collect().height for name, cs in sorted(cols.items()))
scan()  # warm: page cache and polars' first-use costs
t = time.perf_counter(); c0 = time.process_time()
RESULT["rows"] = scan()
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
"""

NDJSON_CHILD = """
import polars as pl
t = time.perf_counter(); c0 = time.process_time()
df = pl.read_ndjson(sys.argv[1], infer_schema_length=None)
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
RESULT["rows"] = df.height
"""

GENSON_CHILD = """
sys.path.insert(0, "bench")
import peer_genson
t = time.perf_counter(); c0 = time.process_time()
schemas, n = peer_genson.build_schemas(sys.argv[1])
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
RESULT["results"] = n
RESULT["rules"] = peer_genson.rule_counts(schemas)
"""

LEDGER_CHILD = """
from output_contracts.ledger import Ledger
n, batch, where = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
TOOLS = ["lookup_inventory", "query_warehouse", "get_stock_by_sku", "get_order", "create_invoice"]
CODES = ["NONNEG", "REQUIRED", "TYPE", "DOMAIN", "RELATION"]
def body(i):
    return {"call_id": f"{i * 2654435761 % 2**64:016x}", "tool": TOOLS[i % 5], "code": CODES[(i // 5) % 5],
            "path": "/items/*/unit_price" if i % 3 else "/available",
            "observed": -(i % 97) if i % 2 else (i % 1000) / 8, "fold": i % 5, "rule": f"r-{(i * 40503) % 65536:04x}"}
led = Ledger.create(where, {"bench": "run_all"}, 0, source_revision="bench")
t = time.perf_counter(); c0 = time.process_time()
for s in range(0, n, batch):
    led.append_many([("audit.fire", body(i)) for i in range(s, min(n, s + batch))])
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
led.freeze()
RESULT["bytes"] = os.path.getsize(os.path.join(where, "ledger.jsonl"))
"""

RAW_WRITE_CHILD = """
src, dst, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as fh:
    lines = fh.readlines()
t = time.perf_counter(); c0 = time.process_time()
with open(dst, "wb") as out:
    for s in range(0, len(lines), batch):
        out.write(b"".join(lines[s:s + batch]))
        out.flush()
        os.fsync(out.fileno())
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
"""

RAW_HASH_CHILD = """
import hashlib
with open(sys.argv[1], "rb") as fh:
    fh.read()
t = time.perf_counter(); c0 = time.process_time()
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        hashlib.sha256(line).digest()
        n += 1
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = time.process_time() - c0
RESULT["rows"] = n
"""


def _m(m: common.Measure) -> dict[str, Any]:
    out: dict[str, Any] = {
        "seconds": round(m.seconds, 6),
        "cpu_seconds": round(m.cpu_seconds, 6),
        "peak_rss_mib": round(m.peak_rss_mib, 1),
    }
    if m.killed_at_mib is not None:
        out["killed_at_mib"] = m.killed_at_mib
    return out


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b > 0 else 0.0


def _stage(
    name: str,
    ours: common.Measure,
    baseline_name: str,
    baseline: common.Measure | None,
    *,
    ratio_kind: str = "time",
    target: dict[str, Any] | None = None,
    peer: tuple[str, common.Measure] | None = None,
    notes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row: ours, the baseline, ratio ours/baseline time (or baseline/ours for throughput), target.

    `baseline` is None when baselines were skipped (`--no-baselines`, the 10M memory run): the row then
    has null `baseline` and `ratio`, and a ratio target is not evaluated."""
    row: dict[str, Any] = {
        "stage": name,
        "ours": _m(ours),
        "baseline": None,
        "ratio": None,
        "notes": notes or {},
    }
    if baseline is not None:
        if ratio_kind == "time":
            wall, cpu = _ratio(ours.seconds, baseline.seconds), _ratio(ours.cpu_seconds, baseline.cpu_seconds)
        else:
            wall, cpu = _ratio(baseline.seconds, ours.seconds), _ratio(baseline.cpu_seconds, ours.cpu_seconds)
        row["baseline"] = {"name": baseline_name, **_m(baseline)}
        row["ratio"] = {"kind": ratio_kind, "wall": wall, "cpu": cpu}
    if peer is not None:
        pname, pm = peer
        row["peer"] = {
            "name": pname,
            **_m(pm),
            "speedup_wall": _ratio(pm.seconds, ours.seconds),
            "speedup_cpu": _ratio(pm.cpu_seconds, ours.cpu_seconds),
        }
    if target is not None:
        value: float | None
        if target["of"] == "peer":
            value = row["peer"]["speedup_wall"] if peer is not None else None
        elif target["of"] == "rss":
            value = ours.peak_rss_mib
        else:
            value = row["ratio"]["wall"] if row["ratio"] else None
        if value is not None:
            met = value <= target["value"] if target["op"] == "<=" else value >= target["value"]
            row["target"] = {**target, "met": bool(met)}
    return row


def rule_codes(contracts_file: Path) -> dict[str, int]:
    """Rules per property code in the full checker of a contract set file."""
    doc = json.loads(contracts_file.read_text())
    counts: dict[str, int] = {}
    for tool in doc["tools"].values():
        for r in tool["rules"]:
            counts[r["code"]] = counts.get(r["code"], 0) + 1
    return dict(sorted(counts.items()))


class CorpusMismatch(ValueError):
    """`--corpus` cannot stand in for this run's ingest (another input, or ingest selected)."""


#: Stage groups `--stages` can select, in run order. `check` and `stream` use the `mine1` contract set
#: (mined first, untimed, if `mine1` is not selected); `audit` is compared with `mine5` (measured first
#: if not selected).
STAGE_KEYS = ("ingest", "mine1", "mine5", "check", "stream", "audit", "ledger")

#: Stage row names in table order (a merged entry keeps this order).
STAGE_NAMES = (
    "ingest",
    "mine --folds 1",
    "mine --folds 5",
    "check (corpus)",
    "check - (stream)",
    "audit --folds 5",
    "ledger append",
    "ledger verify",
)


def run(
    calls: int,
    seed: int,
    fault_every: int,
    ledger_entries: int,
    work: Path,
    data: Path = DATA,
    stages_wanted: tuple[str, ...] = STAGE_KEYS,
    baselines: bool = True,
    rss_limit: float | None = None,
    reuse_corpus: Path | None = None,
) -> dict[str, Any]:
    """The selected stages at `calls`; returns the run's results entry. Inputs are cached in `data`.

    With `baselines=False` only our side runs (the 10M run: `read_ndjson` alone would need about
    30 GiB there, and the in-memory scans several GiB; that run is about our peak RSS).

    `reuse_corpus`: a corpus ingested from the same input, read instead of ingesting (ingest must not be
    selected); raises `CorpusMismatch` when it is not the ingest of this run's input."""
    clock = common.Clock()

    def base_of(n: int, fn: Any) -> common.Measure | None:
        return common.best_of(n, fn) if baselines else None

    want = set(stages_wanted)
    if reuse_corpus is not None and "ingest" in want:
        raise CorpusMismatch("--corpus skips ingest: leave ingest out of --stages")
    if reuse_corpus is not None and reuse_corpus.resolve().is_relative_to(work.resolve()):
        raise CorpusMismatch(
            f"--corpus {reuse_corpus} lies inside the scratch folder {work}, which is deleted"
        )
    src = common.world_input(calls, seed, fault_every, data)
    common.log(f"{clock()} input {src.name} ({src.stat().st_size / common.MIB:,.0f} MiB)")
    if reuse_corpus is not None:
        problem = common.corpus_mismatch(reuse_corpus, src, calls)
        if problem:
            raise CorpusMismatch(f"--corpus: {problem}")
        common.log(f"{clock()} reusing {reuse_corpus} (same input: sha256 checked); ingest not measured")
    if reuse_corpus is None or want & {"check", "stream"}:
        common.warm(src)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = reuse_corpus or work / "corpus"
    stages: list[dict[str, Any]] = []

    # ingest (run unless a corpus is reused: every other stage reads the corpus; recorded when selected)
    ours = (
        common.run_cli("ingest", str(src), "-o", str(corpus), "-q", rss_limit_mib=rss_limit)
        if reuse_corpus is None
        else None
    )
    if ours is not None and ours.killed_at_mib is not None:  # nothing else can run without a corpus
        common.log(f"{clock()} ingest stopped at the RSS limit of {rss_limit:,.0f} MiB")
        stages.append(_stage("ingest", ours, "", None, notes={"killed_at_mib": rss_limit}))
        return {
            "calls": calls,
            "seed": seed,
            "fault_every": fault_every,
            "input_mib": round(src.stat().st_size / common.MIB, 1),
            "stages": stages,
            "total_seconds": round(clock.elapsed(), 1),
        }
    if ours is not None and "ingest" in want:
        manifest = json.loads((corpus / "corpus.json").read_text())
        # one run: it takes about as long as our ingest and is already warm (the input was read)
        base = base_of(1, lambda: common.run_child(NDJSON_CHILD, str(src)))
        assert base is None or base.extra["rows"] == calls, (base, calls)
        stages.append(
            _stage(
                "ingest",
                ours,
                "polars.read_ndjson",
                base,
                ratio_kind="throughput",
                target={"of": "ratio", "op": ">=", "value": 0.5},
                notes={"rows": manifest.get("counts", manifest.get("rows", {}))},
            )
        )
        common.log(f"{clock()} ingest {ours.seconds:.1f} s, peak RSS {ours.peak_rss_mib:,.0f} MiB")
    common.warm(corpus)

    # mine
    mined: dict[int, common.Measure] = {}
    mine_scan: common.Measure | None = None
    for k in (1, 5):
        key = f"mine{k}"
        needed = key in want or (k == 1 and want & {"check", "stream"}) or (k == 5 and "audit" in want)
        if not needed:
            continue
        if key in want and mine_scan is None:
            mine_scan = base_of(
                2, lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(MINE_COLUMNS))
            )
        out = work / f"contracts-k{k}.json"
        mined[k] = common.run_cli(
            "mine", str(corpus), "--folds", str(k), "--seed", str(seed), "-o", str(out), "-q",
            rss_limit_mib=rss_limit,
        )  # fmt: skip
        killed = mined[k].killed_at_mib is not None
        if key in want:
            stages.append(
                _stage(
                    f"mine --folds {k}",
                    mined[k],
                    "scan_parquet(mine columns).collect()",
                    None if killed else mine_scan,
                    target={"of": "ratio", "op": "<=", "value": 3.0} if k == 5 else None,
                    notes={"killed_at_mib": rss_limit} if killed else {"rules": rule_codes(out)},
                )
            )
            common.log(
                f"{clock()} mine --folds {k} {mined[k].seconds:.1f} s, peak RSS {mined[k].peak_rss_mib:,.0f} MiB"
                + (" (killed at the RSS limit)" if killed else "")
            )
    contracts = work / "contracts-k1.json"

    # the peer, then check both ways
    peer: common.Measure | None = None
    if want & {"check", "stream"} and contracts.is_file():
        peer = common.run_child(GENSON_CHILD, str(src))
        common.log(f"{clock()} genson {peer.seconds:.1f} s")
        check_scan = base_of(2, lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(CHECK_COLUMNS)))
        receipts = work / "receipts.jsonl"
        for key, name, arg, stdin in (
            ("check", "check (corpus)", str(corpus), None),
            ("stream", "check - (stream)", "-", src),
        ):
            if key not in want:
                continue
            ours = common.run_cli(
                "check", "-c", str(contracts), arg, "-q", "-o", str(receipts), stdin=stdin, ok_exits=(0, 1),
                rss_limit_mib=rss_limit,
            )  # fmt: skip
            with open(receipts, "rb") as fh:
                fired = sum(1 for _ in fh)
            notes: dict[str, Any] = {"receipts": fired}
            if key == "stream":
                notes |= {"rss_target_mib": 1024, "rss_met": ours.peak_rss_mib < 1024}
            stages.append(
                _stage(
                    name,
                    ours,
                    "scan_parquet(check columns).collect()",
                    check_scan,
                    peer=("genson", peer),
                    target={"of": "peer", "op": ">=", "value": 10.0},
                    notes=notes,
                )
            )
            common.log(
                f"{clock()} {name} {ours.seconds:.1f} s, peak RSS {ours.peak_rss_mib:,.0f} MiB, {fired:,} receipts"
            )

    # audit
    if "audit" in want:
        report = work / "audit.json"
        ours = common.run_cli(
            "audit", str(corpus), "--folds", "5", "--seed", str(seed), "--ledger", str(work / "audit-ledger"),
            "-o", str(report), "-q", ok_exits=(0, 1), rss_limit_mib=rss_limit,
        )  # fmt: skip
        killed = ours.killed_at_mib is not None
        rep = {} if killed else json.loads(report.read_text())
        m5 = mined.get(5)
        stages.append(
            _stage(
                "audit --folds 5",
                ours,
                "our mine --folds 5",
                None if killed or m5 is None or m5.killed_at_mib is not None else m5,
                target={"of": "ratio", "op": "<=", "value": 2.0},
                notes={"killed_at_mib": rss_limit}
                if killed
                else {
                    "fire_rate": rep.get("fire_rate", {}).get("value"),
                    "detection": rep.get("detection", {}).get("overall", {}).get("value"),
                },
            )
        )
        common.log(f"{clock()} audit {ours.seconds:.1f} s, peak RSS {ours.peak_rss_mib:,.0f} MiB")

    # ledger
    if "ledger" in want:
        led = work / "ledger"
        ours = common.run_child(LEDGER_CHILD, str(ledger_entries), "1000", str(led))
        base = base_of(
            2,
            lambda: common.run_child(
                RAW_WRITE_CHILD, str(led / "ledger.jsonl"), str(work / "raw.jsonl"), "1000"
            ),
        )
        stages.append(
            _stage(
                "ledger append",
                ours,
                "write same bytes, fsync per batch",
                base,
                notes={"entries": ledger_entries, "bytes": ours.extra["bytes"]},
            )
        )
        ours = common.run_cli("ledger", "verify", str(led))
        base = base_of(2, lambda: common.run_child(RAW_HASH_CHILD, str(led / "ledger.jsonl")))
        stages.append(
            _stage("ledger verify", ours, "sha256 per line", base, notes={"entries": ledger_entries})
        )
        common.log(f"{clock()} ledger done")

    if reuse_corpus is not None:
        for row in stages:
            row["notes"]["corpus_reused"] = True

    result: dict[str, Any] = {
        "calls": calls,
        "seed": seed,
        "fault_every": fault_every,
        "input_mib": round(src.stat().st_size / common.MIB, 1),
        "stages": stages,
    }
    if 1 in mined and 5 in mined and not (mined[1].killed_at_mib or mined[5].killed_at_mib):
        folds_ratio = _ratio(mined[5].seconds, mined[1].seconds)
        result["folds5_over_folds1"] = {"wall": folds_ratio, "target": 2.0, "met": folds_ratio <= 2.0}
    if peer is not None and contracts.is_file():
        ours_rules = rule_codes(contracts)
        result["rule_classes"] = {
            "ours": {"classes": sorted(ours_rules), "count": len(ours_rules), "rules": ours_rules},
            "genson": {
                "classes": sorted(peer.extra["rules"]),
                "count": len(peer.extra["rules"]),
                "rules": peer.extra["rules"],
            },
        }
    result["total_seconds"] = round(clock.elapsed(), 1)
    return result


def machine() -> dict[str, Any]:
    """Where the figures come from (no host names)."""
    import polars as pl

    return {
        "cpus": os.cpu_count() or 0,
        "python": platform.python_version(),
        "polars": pl.__version__,
        "system": platform.system(),
    }


#: Run-level figures and the stage rows they are computed from: an earlier run's figure is kept only
#: when the new run measured none of those stages (otherwise it would mix two runs).
DERIVED = {
    "folds5_over_folds1": ("mine --folds 1", "mine --folds 5"),
    "rule_classes": ("mine --folds 1", "check (corpus)", "check - (stream)"),
}


def _stage_order(row: dict[str, Any]) -> int:
    name = row["stage"]
    return STAGE_NAMES.index(name) if name in STAGE_NAMES else len(STAGE_NAMES)


def merge_run(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the stages it did not measure kept from `old`, the earlier entry of the same size.

    Only an earlier run of the same input (seed and fault rate) contributes; its kept rows are marked
    `notes.from_earlier_run`, so a `--corpus` run (no ingest) does not erase the ingest figure, and a
    stage that ran again (completed or stopped at the limit) replaces the earlier row whole."""
    if old is None or (old.get("seed"), old.get("fault_every")) != (new["seed"], new["fault_every"]):
        return new
    measured = {s["stage"] for s in new["stages"]}
    kept = [
        {**s, "notes": {**s.get("notes", {}), "from_earlier_run": True}}
        for s in old["stages"]
        if s["stage"] not in measured
    ]
    out = {**new, "stages": sorted(new["stages"] + kept, key=_stage_order)}
    for key, sources in DERIVED.items():
        if key not in new and key in old and not measured & set(sources):
            out[key] = old[key]
    return out


def merge(path: Path, new_run: dict[str, Any]) -> dict[str, Any]:
    """The results document with `new_run` merged into the entry of its size (`merge_run`; other sizes
    kept as they are)."""
    runs: list[dict[str, Any]] = []
    if path.is_file():
        try:
            runs = json.loads(path.read_text()).get("runs", [])
        except (OSError, ValueError):
            runs = []
    old = next((r for r in runs if r.get("calls") == new_run["calls"]), None)
    runs = [r for r in runs if r.get("calls") != new_run["calls"]] + [merge_run(old, new_run)]
    return {
        "version": RESULTS_VERSION,
        "machine": machine(),
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": sorted(runs, key=lambda r: r["calls"]),
    }


def _fmt_s(x: float) -> str:
    return f"{x:,.2f}" if x < 10 else f"{x:,.1f}"


def markdown(doc: dict[str, Any], calls: int) -> str:
    """The table of the run of `calls`, then peak RSS per stage for every size recorded."""
    run = next(r for r in doc["runs"] if r["calls"] == calls)
    lines = [
        f"# Benchmark results: {calls:,} calls",
        "",
        f"Generated by `bench/run_all.py` (`make bench`); input {run['input_mib']:,} MiB of sample-world JSONL "
        f"(seed {run['seed']}, every {run['fault_every']}th task faulty); {doc['machine']['cpus']} CPUs, "
        f"polars {doc['machine']['polars']}; measured {doc['measured_at']}; whole run {run['total_seconds']:,} s.",
        "Ratio = our time / baseline time, wall clock (CPU seconds in brackets); ingest: throughput ours / "
        "theirs. vs genson = genson time / our time. Wall figures on a shared machine include waiting for "
        "the neighbours; the CPU ratio is the steadier one.",
        "",
        "| stage | ours (s) | CPU (s) | peak RSS (MiB) | baseline | baseline (s) | ratio | vs genson | target |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for s in run["stages"]:
        peer = s.get("peer")
        t = s.get("target")
        vs_peer = f"{peer['speedup_wall']:.1f}×" if peer else ""
        base = s["baseline"]
        ratio = s["ratio"]["wall"] if s["ratio"] else None
        cpu = s["ratio"]["cpu"] if s["ratio"] else None
        tgt = ""
        if t:
            what = {"peer": "genson/ours", "ratio": "ratio", "rss": "RSS"}[t["of"]]
            tgt = f"{what} {t['op']} {t['value']:g}: {'met' if t['met'] else '**not met**'}"
        if s["ours"].get("killed_at_mib"):
            tgt += f"stopped at the {s['ours']['killed_at_mib']:,.0f} MiB RSS limit"
        if "rss_met" in s["notes"]:
            tgt += f"; RSS < {s['notes']['rss_target_mib']} MiB: {'met' if s['notes']['rss_met'] else '**not met**'}"
        if s["notes"].get("from_earlier_run"):
            tgt += ("; " if tgt else "") + "earlier run (not re-measured)"
        lines.append(
            f"| {s['stage']} | {_fmt_s(s['ours']['seconds'])} | {_fmt_s(s['ours']['cpu_seconds'])} | "
            f"{s['ours']['peak_rss_mib']:,.0f} | {base['name'] if base else '—'} | "
            f"{_fmt_s(base['seconds']) if base else '—'} | {f'{ratio:.2f}× (CPU {cpu:.2f}×)' if ratio is not None else '—'} | "
            f"{vs_peer} | {tgt} |"
        )
    if any(s["notes"].get("corpus_reused") for s in run["stages"]):
        lines += [
            "",
            "Ingest was not measured in the latest run of this size: it reused a corpus ingested earlier from "
            "the same input (`--corpus`). Rows marked *earlier run* are kept from an earlier run of this size.",
        ]
    elif any(s["notes"].get("from_earlier_run") for s in run["stages"]):
        lines += [
            "",
            "Rows marked *earlier run* are kept from an earlier run of this size (not re-measured).",
        ]
    f = run.get("folds5_over_folds1")
    if f:
        lines += [
            "",
            f"`mine --folds 5` / `mine --folds 1`: {f['wall']:.2f}× (target <= {f['target']:g}: "
            f"{'met' if f['met'] else '**not met**'}).",
        ]
    rc = run.get("rule_classes")
    if rc:
        lines += [
            "",
            f"Rule classes found: ours {rc['ours']['count']} ({', '.join(rc['ours']['classes'])}); "
            f"genson {rc['genson']['count']} ({', '.join(rc['genson']['classes'])}).",
            "Rules (full checker): ours "
            + ", ".join(f"{k} {v:,}" for k, v in rc["ours"]["rules"].items())
            + "; genson "
            + ", ".join(f"{k} {v:,}" for k, v in rc["genson"]["rules"].items())
            + ".",
        ]
    if len(doc["runs"]) > 1:
        sizes = [r["calls"] for r in doc["runs"]]
        names = list(dict.fromkeys(s["stage"] for r in doc["runs"] for s in r["stages"]))
        lines += [
            "",
            "## Peak RSS (MiB) by corpus size",
            "",
            "| stage | " + " | ".join(f"{n:,} calls" for n in sizes) + " |",
            "|---|" + "---:|" * len(sizes),
        ]
        for name in names:
            cells = []
            for r in doc["runs"]:
                st = next((s for s in r["stages"] if s["stage"] == name), None)
                if st and st["ours"].get("killed_at_mib"):
                    cells.append(f"> {st['ours']['killed_at_mib']:,.0f} (stopped at the limit)")
                else:
                    cells.append(f"{st['ours']['peak_rss_mib']:,.0f}" if st else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--calls", type=int, default=1_000_000, help="corpus size (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--fault-every", type=int, default=generate.DEFAULT_FAULT_EVERY)
    ap.add_argument("--ledger-entries", type=int, default=None, help="default: --calls")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results.json", dest="json_out")
    ap.add_argument("--markdown", type=Path, default=ROOT / "bench" / "results.md")
    ap.add_argument("--data", type=Path, default=DATA, help="where generated inputs are cached (bench/data)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default DATA/run-N)")
    ap.add_argument(
        "--stages",
        default=None,
        help=f"comma-separated subset of {','.join(STAGE_KEYS)} (default: all; with --corpus all but ingest)",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="reuse this corpus, ingested earlier from the same generated input (read only): skips ingest",
    )
    ap.add_argument("--no-baselines", action="store_true", help="measure only our side (the 10M memory run)")
    ap.add_argument(
        "--rss-limit-mib",
        type=float,
        default=12288,
        help="kill a stage of ours whose RSS passes this (recorded as killed; default 12288 MiB)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (corpus, contracts)")
    ns = ap.parse_args(argv)
    default = ",".join(k for k in STAGE_KEYS if not (ns.corpus and k == "ingest"))
    stages = tuple(x.strip() for x in (ns.stages or default).split(",") if x.strip())
    if not stages or set(stages) - set(STAGE_KEYS):
        ap.error(f"--stages: choose from {', '.join(STAGE_KEYS)}")
    work = ns.work or ns.data / f"run-{ns.calls}"
    if ns.corpus is not None:  # checked here, before anything can delete the scratch folder
        if "ingest" in stages:
            ap.error("--corpus skips ingest: leave ingest out of --stages")
        if not (ns.corpus / "corpus.json").is_file():
            ap.error(f"--corpus: {ns.corpus} is not a corpus (no corpus.json)")
        if ns.corpus.resolve().is_relative_to(work.resolve()):
            ap.error(f"--corpus: {ns.corpus} lies inside the scratch folder {work}, which is deleted")
    try:
        result = run(
            ns.calls,
            ns.seed,
            ns.fault_every,
            ns.ledger_entries or ns.calls,
            work,
            ns.data,
            stages,
            not ns.no_baselines,
            ns.rss_limit_mib,
            ns.corpus,
        )
    except common.ChildFailed as e:
        common.log(f"bench failed: {e}")
        return 2
    except CorpusMismatch as e:
        common.log(f"bench: {e}")
        return 2
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    doc = merge(ns.json_out, result)
    write_json(ns.json_out, doc)
    md = markdown(doc, ns.calls)
    atomic_write_bytes(ns.markdown, md.encode())
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
