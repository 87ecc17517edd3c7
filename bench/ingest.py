"""Benchmark `contracts ingest` on a generated flat JSONL file against `polars.read_ndjson`.

    python bench/ingest.py                 # 1,000,000 calls (file cached in bench/data/)
    python bench/ingest.py --calls 100000 --chunk-rows 50000

The file is generated once per (calls, seed) with a seeded `random.Random`, so reruns compare like with
like. Each side runs in a child process so its peak RSS (`resource.getrusage(RUSAGE_CHILDREN)`) is its
own. The ratio is throughput ours / theirs: `read_ndjson` only parses into typed columns, while ingest
also validates every line, canonicalises arguments and results, hashes call ids, flattens every JSON
node into `leaves.parquet` and writes three Parquet files, so a ratio well below 1 is expected; the
number to watch is that it does not regress.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"

TOOLS = ("lookup_inventory", "get_order", "quote_shipping", "list_payments", "search_products")


def _record(rng: random.Random, i: int) -> dict[str, object]:
    trace = i // 8
    task = trace // 5
    tool = TOOLS[rng.randrange(len(TOOLS))]
    sku = f"SKU-{rng.randrange(10_000):05d}"
    if tool == "lookup_inventory":
        args: dict[str, object] = {"sku": sku}
        result: object = {
            "sku": sku,
            "available": rng.randrange(0, 500),
            "warehouse": rng.choice(["east", "west"]),
        }
    elif tool == "get_order":
        n = rng.randrange(1, 5)
        prices = [rng.randrange(100, 10_000) / 100 for _ in range(n)]
        items = [{"sku": f"SKU-{rng.randrange(10_000):05d}", "price": p} for p in prices]
        sub = round(sum(prices), 2)
        tax = round(sub * 0.08, 2)
        args = {"order_id": f"#W{rng.randrange(10**7):07d}"}
        result = {
            "order_id": args["order_id"],
            "status": rng.choice(["pending", "shipped", "delivered"]),
            "items": items,
            "subtotal": sub,
            "tax": tax,
            "total": round(sub + tax, 2),
            "created_at": f"2026-03-{rng.randrange(1, 29):02d}T10:00:00Z",
        }
    elif tool == "quote_shipping":
        args = {"sku": sku, "zip": f"{rng.randrange(10_000, 99_999)}", "express": rng.random() < 0.3}
        result = {"sku": sku, "cost": rng.randrange(0, 3000) / 100, "days": rng.randrange(1, 8)}
    elif tool == "list_payments":
        args = {"user_id": f"user_{rng.randrange(5000)}"}
        result = {
            "user_id": args["user_id"],
            "methods": [
                {"id": f"pm_{rng.randrange(10**6)}", "kind": rng.choice(["card", "gift"])}
                for _ in range(rng.randrange(0, 4))
            ],
        }
    else:
        args = {"query": rng.choice(["lamp", "desk", "chair", "mug"]), "limit": 5}
        result = {"hits": rng.randrange(0, 50), "next": None}
    rec: dict[str, object] = {
        "trace_id": f"ep-{trace:07d}",
        "task_id": f"task-{task:06d}",
        "step": i % 8,
        "tool": tool,
        "arguments": args,
        "result": result,
        "status": "ok",
        "error": None,
        "labels": {},
    }
    return rec


def generate(calls: int, seed: int) -> Path:
    """Write (once) and return `bench/data/flat-{calls}-{seed}.jsonl`."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"flat-{calls}-{seed}.jsonl"
    if path.exists():
        return path
    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for i in range(calls):
            fh.write(json.dumps(_record(rng, i), separators=(",", ":")) + "\n")
    tmp.rename(path)
    return path


CHILD_OURS = """
import sys, time
from contracts.traces.ingest import ingest
t = time.perf_counter()
r = ingest([sys.argv[1]], sys.argv[2], chunk_rows=int(sys.argv[3]))
print(time.perf_counter() - t, r.calls, r.leaves)
"""

CHILD_POLARS = """
import sys, time
import polars as pl
t = time.perf_counter()
df = pl.read_ndjson(sys.argv[1], infer_schema_length=None)
print(time.perf_counter() - t, df.height, 0)
"""


def with_sign_flips(src: Path, every: int = 100) -> Path:
    """Write (once) and return a copy of `src` where every `every`-th lookup_inventory call has `available`
    made negative (-1 - value) and labelled `sign_flip` with the original value: labelled faults for the
    check and audit benchmarks."""
    import orjson

    out = src.with_name(src.stem + f"-signflip{every}.jsonl")
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp")
    n = 0
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        for line in fin:
            rec = orjson.loads(line)
            if rec["tool"] == "lookup_inventory":
                n += 1
                if n % every == 0:
                    avail = rec["result"]["available"]
                    rec["result"]["available"] = -1 - avail
                    rec["labels"] = {"fault": "sign_flip", "fault_path": "/available", "original": avail}
            fout.write(orjson.dumps(rec) + b"\n")
    tmp.rename(out)
    return out


def run_child(code: str, *args: str) -> tuple[float, int, int, float, float]:
    """Run `code` in a fresh interpreter: (wall seconds, rows, leaves, CPU seconds, peak RSS MiB).

    `RUSAGE_CHILDREN` covers finished children only, so its CPU time is read before and after each
    child, and its `ru_maxrss` (the largest peak among them) after ours, which runs first. CPU seconds
    are printed beside wall time because on a shared machine wall time mostly measures the neighbours.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    secs, rows, leaves = proc.stdout.split()
    return float(secs), int(rows), int(leaves), cpu, after.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--chunk-rows", type=int, default=100_000)
    ns = ap.parse_args(argv)
    t = time.perf_counter()
    path = generate(ns.calls, ns.seed)
    size_mb = path.stat().st_size / 2**20
    print(
        f"input: {path.relative_to(ROOT)} ({ns.calls:,} calls, {size_mb:,.0f} MiB; ready in {time.perf_counter() - t:.1f} s)"
    )
    out = DATA / "corpus"
    shutil.rmtree(out, ignore_errors=True)
    ours, rows, leaves, cpu_ours, rss_ours = run_child(CHILD_OURS, str(path), str(out), str(ns.chunk_rows))
    theirs, rows_pl, _, cpu_theirs, _ = run_child(CHILD_POLARS, str(path))
    assert rows == rows_pl == ns.calls, (rows, rows_pl, ns.calls)
    print(
        f"contracts ingest  : {ours:7.2f} s wall {cpu_ours:7.2f} s CPU  {rows / ours:>10,.0f} calls/s  "
        f"({leaves:,} leaves)  peak RSS {rss_ours:,.0f} MiB"
    )
    print(
        f"polars.read_ndjson: {theirs:7.2f} s wall {cpu_theirs:7.2f} s CPU  {rows / theirs:>10,.0f} calls/s"
    )
    print(f"throughput ratio ours/theirs: {theirs / ours:.3f} (wall), {cpu_theirs / cpu_ours:.3f} (CPU)")
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
