#!/usr/bin/env python3
"""`make bench`: every stage on one generated corpus, each against its baseline, in one run.

    python bench/run_all.py                         # 1,000,000 calls -> bench/results.json, results.md
    python bench/run_all.py --calls 10000000        # the bounded-memory run (adds a 10M entry)
    python bench/run_all.py --calls 2000 --json /tmp/r.json --markdown /tmp/r.md   # smoke size

The input is `bench/generate.py`'s sample-world JSONL (cached in `bench/data/`, gitignored). Each
measurement runs in its own child process (`bench/common.py`: its own peak RSS and CPU seconds via
`os.wait4`), one at a time, stage by stage on the same data:

| stage | ours | baseline (ratio = ours / baseline time unless noted) |
|---|---|---|
| ingest | `contracts ingest SRC -o CORPUS` | `polars.read_ndjson(SRC, infer_schema_length=None)`; ratio reported as throughput ours/theirs (target >= 0.5) |
| mine --folds 1 / 5 | `contracts mine CORPUS --folds K` | one warm `scan_parquet(...).select(<columns mining reads>).collect()` of leaves, calls, episodes (target <= 3 for k = 5); also folds5/folds1 (target <= 2) |
| check (corpus) | `contracts check -c C CORPUS` | warm scan of the columns the checker reads; and genson (peer time / our time, target >= 10) |
| check (stream) | `contracts check -c C -` fed the JSONL on stdin | the same two; peak RSS target < 1 GiB |
| audit --fold 5 | `contracts audit CORPUS --fold 5` (mines, replays, freezes a ledger, bootstraps) | our `mine --folds 5` (target <= 2) |
| ledger append | `Ledger.append_many` of N audit-like entries, batches of 1,000 | writing the same bytes in the same batches with one fsync each |
| ledger verify | `contracts ledger verify DIR` | one SHA-256 per line of the same `ledger.jsonl` |

Baselines are floors, so each runs twice and the faster run counts (`best_of`); the input files are read
once into the page cache before anything is timed. The contracts `check` uses are the `--folds 1` set
mined in the mine stage from the same corpus: the faulty tasks' labelled calls are left out of mining,
so check has real violations to find and render.

Outputs: `results.json` (JSON Schema `contracts/schemas/bench-results.schema.json`; sorted keys; one
entry per corpus size under `runs`, a run replacing only the entry of its own size, so the 1M and 10M
figures live side by side) and `results.md` (the table of the run just made, then peak RSS by size).
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

from contracts.jsonutil import atomic_write_bytes, write_json

ROOT = common.ROOT
DATA = ROOT / "bench" / "data"
RESULTS_VERSION = 1

#: Columns each stage reads (the baseline scans exactly these). Kept in step with
#: `contracts.mining.data.load`/`clean_calls` and `contracts.checks.checker.check_corpus`.
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
from contracts.traces.corpus import Corpus
cols = json.loads(sys.argv[2])
c = Corpus.open(sys.argv[1])
scans = {"leaves": c.scan_leaves, "calls": c.scan_calls, "episodes": c.scan_episodes}
def scan():
    return sum(scans[name]().select(cs).collect().height for name, cs in sorted(cols.items()))
scan()  # warm: page cache and polars' first-use costs
t = time.perf_counter()
RESULT["rows"] = scan()
RESULT["seconds"] = time.perf_counter() - t
"""

NDJSON_CHILD = """
import polars as pl
t = time.perf_counter()
df = pl.read_ndjson(sys.argv[1], infer_schema_length=None)
RESULT["seconds"] = time.perf_counter() - t
RESULT["rows"] = df.height
"""

GENSON_CHILD = """
sys.path.insert(0, "bench")
import peer_genson
t = time.perf_counter()
schemas, n = peer_genson.build_schemas(sys.argv[1])
RESULT["seconds"] = time.perf_counter() - t
RESULT["results"] = n
RESULT["rules"] = peer_genson.rule_counts(schemas)
"""

LEDGER_CHILD = """
from contracts.ledger import Ledger
n, batch, where = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
TOOLS = ["lookup_inventory", "query_warehouse", "get_stock_by_sku", "get_order", "create_invoice"]
CODES = ["NONNEG", "REQUIRED", "TYPE", "DOMAIN", "RELATION"]
def body(i):
    return {"call_id": f"{i * 2654435761 % 2**64:016x}", "tool": TOOLS[i % 5], "code": CODES[(i // 5) % 5],
            "path": "/items/*/unit_price" if i % 3 else "/available",
            "observed": -(i % 97) if i % 2 else (i % 1000) / 8, "fold": i % 5, "rule": f"r-{(i * 40503) % 65536:04x}"}
led = Ledger.create(where, {"bench": "run_all"}, 0, source_revision="bench")
t = time.perf_counter()
for s in range(0, n, batch):
    led.append_many([("audit.fire", body(i)) for i in range(s, min(n, s + batch))])
RESULT["seconds"] = time.perf_counter() - t
led.freeze()
RESULT["bytes"] = os.path.getsize(os.path.join(where, "ledger.jsonl"))
"""

RAW_WRITE_CHILD = """
src, dst, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as fh:
    lines = fh.readlines()
t = time.perf_counter()
with open(dst, "wb") as out:
    for s in range(0, len(lines), batch):
        out.write(b"".join(lines[s:s + batch]))
        out.flush()
        os.fsync(out.fileno())
RESULT["seconds"] = time.perf_counter() - t
"""

RAW_HASH_CHILD = """
import hashlib
with open(sys.argv[1], "rb") as fh:
    fh.read()
t = time.perf_counter()
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        hashlib.sha256(line).digest()
        n += 1
RESULT["seconds"] = time.perf_counter() - t
RESULT["rows"] = n
"""


def _m(m: common.Measure) -> dict[str, Any]:
    return {
        "seconds": round(m.seconds, 3),
        "cpu_seconds": round(m.cpu_seconds, 3),
        "peak_rss_mib": round(m.peak_rss_mib, 1),
    }


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b > 0 else 0.0


def _stage(
    name: str,
    ours: common.Measure,
    baseline_name: str,
    baseline: common.Measure,
    *,
    ratio_kind: str = "time",
    target: dict[str, Any] | None = None,
    peer: tuple[str, common.Measure] | None = None,
    notes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row: ours, the baseline, ratio ours/baseline time (or baseline/ours for throughput), target."""
    ratio = (
        _ratio(ours.seconds, baseline.seconds)
        if ratio_kind == "time"
        else _ratio(baseline.seconds, ours.seconds)
    )
    cpu_ratio = (
        _ratio(ours.cpu_seconds, baseline.cpu_seconds)
        if ratio_kind == "time"
        else _ratio(baseline.cpu_seconds, ours.cpu_seconds)
    )
    row: dict[str, Any] = {
        "stage": name,
        "ours": _m(ours),
        "baseline": {"name": baseline_name, **_m(baseline)},
        "ratio": {"kind": ratio_kind, "wall": ratio, "cpu": cpu_ratio},
        "notes": notes or {},
    }
    if peer is not None:
        pname, pm = peer
        row["peer"] = {
            "name": pname,
            **_m(pm),
            "speedup_wall": _ratio(pm.seconds, ours.seconds),
            "speedup_cpu": _ratio(pm.cpu_seconds, ours.cpu_seconds),
        }
    if target is not None:
        value = row["peer"]["speedup_wall"] if target["of"] == "peer" else ratio
        if target["of"] == "rss":
            value = ours.peak_rss_mib
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


def run(
    calls: int, seed: int, fault_every: int, ledger_entries: int, work: Path, data: Path = DATA
) -> dict[str, Any]:
    """Every stage at `calls`; returns the run's results entry. The input JSONL is cached in `data`."""
    clock = common.Clock()
    src = generate.ensure(data / f"world-{calls}-{seed}-f{fault_every}.jsonl", calls, seed, fault_every)
    common.log(f"{clock()} input {src.name} ({src.stat().st_size / common.MIB:,.0f} MiB)")
    common.warm(src)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = work / "corpus"
    stages: list[dict[str, Any]] = []

    # ingest
    ours = common.run_cli("ingest", str(src), "-o", str(corpus), "-q", "--json")
    manifest = json.loads((corpus / "corpus.json").read_text())
    base = common.best_of(2, lambda: common.run_child(NDJSON_CHILD, str(src)))
    assert base.extra["rows"] == calls, (base.extra, calls)
    rows = manifest.get("counts", manifest.get("rows", {}))
    stages.append(
        _stage(
            "ingest",
            ours,
            "polars.read_ndjson",
            base,
            ratio_kind="throughput",
            target={"of": "ratio", "op": ">=", "value": 0.5},
            notes={"rows": rows},
        )
    )
    common.log(f"{clock()} ingest {ours.seconds:.1f} s vs read_ndjson {base.seconds:.1f} s")
    common.warm(corpus)

    # mine
    mine_scan = common.best_of(2, lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(MINE_COLUMNS)))
    mined: dict[int, common.Measure] = {}
    for k in (1, 5):
        out = work / f"contracts-k{k}.json"
        mined[k] = common.run_cli(
            "mine", str(corpus), "--folds", str(k), "--seed", str(seed), "-o", str(out), "-q"
        )
        stages.append(
            _stage(
                f"mine --folds {k}",
                mined[k],
                "scan_parquet(mine columns).collect()",
                mine_scan,
                target={"of": "ratio", "op": "<=", "value": 3.0} if k == 5 else None,
                notes={"rules": rule_codes(out)},
            )
        )
        common.log(f"{clock()} mine --folds {k} {mined[k].seconds:.1f} s vs scan {mine_scan.seconds:.2f} s")
    folds_ratio = _ratio(mined[5].seconds, mined[1].seconds)

    # the peer, then check both ways
    peer = common.run_child(GENSON_CHILD, str(src))
    common.log(f"{clock()} genson {peer.seconds:.1f} s")
    check_scan = common.best_of(
        2, lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(CHECK_COLUMNS))
    )
    contracts = work / "contracts-k1.json"
    receipts = work / "receipts.jsonl"
    ours = common.run_cli(
        "check", "-c", str(contracts), str(corpus), "-q", "-o", str(receipts), ok_exits=(0, 1)
    )
    with open(receipts, "rb") as fh:
        fired = sum(1 for _ in fh)
    stages.append(
        _stage(
            "check (corpus)",
            ours,
            "scan_parquet(check columns).collect()",
            check_scan,
            peer=("genson", peer),
            target={"of": "peer", "op": ">=", "value": 10.0},
            notes={"receipts": fired},
        )
    )
    common.log(f"{clock()} check corpus {ours.seconds:.1f} s ({fired:,} receipts)")
    ours = common.run_cli(
        "check", "-c", str(contracts), "-", "-q", "-o", str(receipts), stdin=src, ok_exits=(0, 1)
    )
    with open(receipts, "rb") as fh:
        fired_stream = sum(1 for _ in fh)
    row = _stage(
        "check - (stream)",
        ours,
        "scan_parquet(check columns).collect()",
        check_scan,
        peer=("genson", peer),
        target={"of": "peer", "op": ">=", "value": 10.0},
        notes={"receipts": fired_stream, "rss_target_mib": 1024, "rss_met": ours.peak_rss_mib < 1024},
    )
    stages.append(row)
    common.log(f"{clock()} check stream {ours.seconds:.1f} s, peak RSS {ours.peak_rss_mib:,.0f} MiB")

    # audit
    report = work / "audit.json"
    ours = common.run_cli(
        "audit", str(corpus), "--fold", "5", "--seed", str(seed), "--ledger", str(work / "audit-ledger"),
        "--json", str(report), "-q", ok_exits=(0, 1),
    )  # fmt: skip
    rep = json.loads(report.read_text())
    stages.append(
        _stage(
            "audit --fold 5",
            ours,
            "our mine --folds 5",
            mined[5],
            target={"of": "ratio", "op": "<=", "value": 2.0},
            notes={
                "fire_rate": rep.get("fire_rate", {}).get("value"),
                "detection": rep.get("detection", {}).get("overall", {}).get("value"),
            },
        )
    )
    common.log(f"{clock()} audit {ours.seconds:.1f} s")

    # ledger
    led = work / "ledger"
    ours = common.run_child(LEDGER_CHILD, str(ledger_entries), "1000", str(led))
    base = common.best_of(
        2,
        lambda: common.run_child(RAW_WRITE_CHILD, str(led / "ledger.jsonl"), str(work / "raw.jsonl"), "1000"),
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
    base = common.best_of(2, lambda: common.run_child(RAW_HASH_CHILD, str(led / "ledger.jsonl")))
    stages.append(_stage("ledger verify", ours, "sha256 per line", base, notes={"entries": ledger_entries}))
    common.log(f"{clock()} ledger done")

    ours_codes = sorted(rule_codes(contracts))
    genson_codes = sorted(peer.extra["rules"])
    return {
        "calls": calls,
        "seed": seed,
        "fault_every": fault_every,
        "input_mib": round(src.stat().st_size / common.MIB, 1),
        "stages": stages,
        "folds5_over_folds1": {"wall": folds_ratio, "target": 2.0, "met": folds_ratio <= 2.0},
        "rule_classes": {
            "ours": {"classes": ours_codes, "count": len(ours_codes), "rules": rule_codes(contracts)},
            "genson": {"classes": genson_codes, "count": len(genson_codes), "rules": peer.extra["rules"]},
        },
        "total_seconds": round(clock.elapsed(), 1),
    }


def machine() -> dict[str, Any]:
    """Where the figures come from (no host names)."""
    import polars as pl

    return {
        "cpus": os.cpu_count() or 0,
        "python": platform.python_version(),
        "polars": pl.__version__,
        "system": platform.system(),
    }


def merge(path: Path, new_run: dict[str, Any]) -> dict[str, Any]:
    """The results document with `new_run` replacing the run of the same size (others kept)."""
    runs: list[dict[str, Any]] = []
    if path.is_file():
        try:
            runs = json.loads(path.read_text()).get("runs", [])
        except (OSError, ValueError):
            runs = []
    runs = [r for r in runs if r.get("calls") != new_run["calls"]] + [new_run]
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
        "Ratio = our time / baseline time (ingest: throughput ours / theirs). Peer = genson time / our time.",
        "",
        "| stage | ours (s) | CPU (s) | peak RSS (MiB) | baseline | baseline (s) | ratio | vs genson | target |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for s in run["stages"]:
        peer = s.get("peer")
        t = s.get("target")
        vs_peer = f"{peer['speedup_wall']:.1f}×" if peer else ""
        tgt = ""
        if t:
            what = {"peer": "genson/ours", "ratio": "ratio", "rss": "RSS"}[t["of"]]
            tgt = f"{what} {t['op']} {t['value']:g}: {'met' if t['met'] else '**not met**'}"
        if "rss_met" in s["notes"]:
            tgt += f"; RSS < {s['notes']['rss_target_mib']} MiB: {'met' if s['notes']['rss_met'] else '**not met**'}"
        lines.append(
            f"| {s['stage']} | {_fmt_s(s['ours']['seconds'])} | {_fmt_s(s['ours']['cpu_seconds'])} | "
            f"{s['ours']['peak_rss_mib']:,.0f} | {s['baseline']['name']} | {_fmt_s(s['baseline']['seconds'])} | "
            f"{s['ratio']['wall']:.2f}× | {vs_peer} | {tgt} |"
        )
    f = run["folds5_over_folds1"]
    rc = run["rule_classes"]
    lines += [
        "",
        f"`mine --folds 5` / `mine --folds 1`: {f['wall']:.2f}× (target <= {f['target']:g}: "
        f"{'met' if f['met'] else '**not met**'}).",
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
        names = [s["stage"] for s in doc["runs"][0]["stages"]]
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
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (corpus, contracts)")
    ns = ap.parse_args(argv)
    work = ns.work or ns.data / f"run-{ns.calls}"
    try:
        result = run(ns.calls, ns.seed, ns.fault_every, ns.ledger_entries or ns.calls, work, ns.data)
    except common.ChildFailed as e:
        common.log(f"bench failed: {e}")
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
