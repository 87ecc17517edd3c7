"""Benchmark `contracts mine` against one warm `polars.scan_parquet('leaves.parquet').collect()`.

    python bench/mine.py                    # 1,000,000 calls (JSONL and corpus cached in bench/data/)
    python bench/mine.py --calls 200000

The calls come from a seeded generator of the sample world's shape (inventory, orders with item arrays,
shipping quotes, customers, product search): every rule class has something to find — echoed ids,
categorical statuses, non-negative stock, `available = on_hand − reserved`, `line_total = quantity ×
unit_price`, `subtotal = Σ items`, `total = freight + taxes + fees`, ordered timestamps — next to ids and
free text that must not become rules. It is ingested once with `contracts.traces.ingest.ingest`.

Each measurement runs in a child process so its peak RSS is its own. Reported, wall and CPU seconds:
  scan     the second of two `pl.scan_parquet(leaves).collect()` (all columns: the "raw scan")
  mine k=1 `mine(corpus, folds=1, verify=False)`
  mine k=5 `mine(corpus, folds=5, verify=False)`
  mine k=5 + verify  the default: every checker re-checked by the shipped checker on its mining data
and the ratios mine/scan and (k=5)/(k=1). The machine this runs on may be shared: the CPU column is the
steadier one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
WAREHOUSES = ("east", "west", "north", "central")
STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
TIERS = ("bronze", "silver", "gold")
WORDS = ("red", "blue", "lamp", "chair", "mug", "desk", "soft", "steel", "oak", "pro", "mini", "max")


def _ts(base: dt.datetime, hours: float) -> str:
    return (base + dt.timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def record(rng: random.Random, i: int) -> dict[str, object]:
    """One flat call record (DESIGN §2.1); eight calls an episode, five episodes a task."""
    trace = i // 8
    task = trace // 5
    tool = rng.choice(("lookup_inventory", "get_order", "quote_shipping", "get_customer", "search_products"))
    base = T0 + dt.timedelta(hours=rng.randrange(0, 8000))
    if tool == "lookup_inventory":
        sku = f"SKU-{rng.randrange(20_000):05d}"
        on_hand = rng.randrange(0, 400)
        reserved = rng.randrange(0, on_hand + 1)
        args: dict[str, object] = {"sku": sku}
        result: object = {
            "sku": sku,
            "warehouse": rng.choice(WAREHOUSES),
            "on_hand": on_hand,
            "reserved": reserved,
            "available": on_hand - reserved,
            "status": "in_stock"
            if on_hand - reserved > 5
            else "low_stock"
            if on_hand > reserved
            else "out_of_stock",
            "last_counted_at": _ts(base, 0),
            "unit_cost": round(rng.uniform(0.5, 300), 2),
        }
        if rng.random() < 0.6:
            result["restock_eta"] = _ts(base, rng.uniform(1, 400))  # type: ignore[index]
    elif tool == "get_order":
        oid = f"#W{rng.randrange(10**7):07d}"
        items = []
        for _ in range(rng.randrange(1, 5)):
            q, p = rng.randrange(1, 5), round(rng.uniform(1, 250), 2)
            items.append(
                {
                    "sku": f"SKU-{rng.randrange(20_000):05d}",
                    "quantity": q,
                    "unit_price": p,
                    "line_total": round(q * p, 2),
                }
            )
        sub = round(sum(x["line_total"] for x in items), 2)  # type: ignore[misc]
        tax = round(sub * rng.choice((0.0, 0.05, 0.08)), 2)
        args = {"order_id": oid}
        result = {
            "order_id": oid,
            "customer_id": f"C{rng.randrange(50_000):05d}",
            "status": rng.choice(STATUSES),
            "items": items,
            "subtotal": sub,
            "tax": tax,
            "total": round(sub + tax, 2),
            "created_at": _ts(base, 0),
        }
        if rng.random() < 0.7:
            result["shipped_at"] = _ts(base, rng.uniform(2, 72))  # type: ignore[index]
    elif tool == "quote_shipping":
        qty, rate = rng.randrange(1, 20), round(rng.uniform(1, 40), 2)
        freight = round(qty * rate, 2)
        taxes, fees = round(freight * rng.choice((0.0, 0.1)), 2), round(rng.uniform(0, 15), 2)
        args = {
            "sku": f"SKU-{rng.randrange(20_000):05d}",
            "quantity": qty,
            "service": rng.choice(("ground", "express")),
        }
        result = {
            "quote_id": f"Q{i:08d}",
            "service": args["service"],
            "unit_rate": rate,
            "freight": freight,
            "taxes": taxes,
            "fees": fees,
            "total": round(freight + taxes + fees, 2),
            "quoted_at": _ts(base, 0),
            "valid_until": _ts(base, rng.uniform(1, 240)),
        }
    elif tool == "get_customer":
        cid = f"C{rng.randrange(50_000):05d}"
        args = {"customer_id": cid}
        result = {
            "customer_id": cid,
            "name": " ".join(rng.choice(WORDS).title() for _ in range(2)),
            "tier": rng.choice(TIERS),
            "lifetime_orders": rng.randrange(0, 80),
            "member_since": _ts(base, -rng.uniform(100, 20000)),
            "last_login": _ts(base, 0),
            "referrer": None if rng.random() < 0.5 else f"C{rng.randrange(50_000):05d}",
        }
    else:
        q = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
        n = rng.randrange(0, 6)
        args = {"query": q}
        result = {
            "query": q,
            "total_hits": n + rng.randrange(0, 50) if n else 0,
            "results": [
                {
                    "sku": f"SKU-{rng.randrange(20_000):05d}",
                    "name": f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
                    "price": round(rng.uniform(1, 500), 2),
                }
                for _ in range(n)
            ],
        }
    return {
        "trace_id": f"ep-{trace:07d}",
        "task_id": f"task-{task:06d}",
        "tool": tool,
        "arguments": args,
        "result": result,
        "status": "ok",
    }


def generate(calls: int, seed: int) -> Path:
    """The JSONL file for (calls, seed), generated once."""
    DATA.mkdir(parents=True, exist_ok=True)
    out = DATA / f"mine-flat-{calls}-{seed}.jsonl"
    if not out.exists():
        rng = random.Random(seed)
        tmp = out.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            for i in range(calls):
                fh.write(orjson.dumps(record(rng, i)) + b"\n")
        tmp.rename(out)
    return out


def corpus(calls: int, seed: int) -> Path:
    """The ingested corpus for (calls, seed), built once."""
    folder = DATA / f"mine-corpus-{calls}-{seed}"
    if not (folder / "corpus.json").exists():
        src = generate(calls, seed)
        _child(f"from contracts.traces.ingest import ingest; ingest([{str(src)!r}], {str(folder)!r})")
    return folder


_PRELUDE = f"""
import json, resource, sys, time
sys.path.insert(0, {str(ROOT)!r})
import polars as pl
def _report(**kw):
    kw["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(kw))
"""


def _child(code: str) -> dict[str, float]:
    p = subprocess.run([sys.executable, "-c", _PRELUDE + code], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"child failed:\n{p.stderr}")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])  # type: ignore[no-any-return]
    return {}


def measure_scan(folder: Path) -> dict[str, float]:
    return _child(
        f"""
f = {str(folder / "leaves.parquet")!r}
pl.scan_parquet(f).collect()
w, c = time.perf_counter(), time.process_time()
df = pl.scan_parquet(f).collect()
_report(wall=time.perf_counter() - w, cpu=time.process_time() - c, rows=df.height)
"""
    )


def measure_mine(folder: Path, folds: int, verify: bool) -> dict[str, float]:
    return _child(
        f"""
from contracts.mining import mine
from contracts.traces.corpus import Corpus
c = Corpus.open({str(folder)!r})
pl.scan_parquet(c.path / "leaves.parquet").collect()  # same warm cache as the scan
w, t = time.perf_counter(), time.process_time()
cs = mine(c, folds={folds}, verify={verify})
_report(wall=time.perf_counter() - w, cpu=time.process_time() - t, rules=len(cs.rules_for(None)))
"""
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--skip-verify", action="store_true", help="do not time the verified (default) mine")
    a = ap.parse_args(argv)
    t = time.perf_counter()
    folder = corpus(a.calls, a.seed)
    print(f"corpus {folder.name}: ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    scan = measure_scan(folder)
    k1 = measure_mine(folder, 1, False)
    k5 = measure_mine(folder, 5, False)
    rows = [
        ("scan (warm, all columns)", scan),
        ("mine --folds 1 (no verify)", k1),
        ("mine --folds 5 (no verify)", k5),
    ]
    if not a.skip_verify:
        rows.append(("mine --folds 5 (verified)", measure_mine(folder, 5, True)))
    print(f"{int(scan['rows']):,} leaf rows of {a.calls:,} calls")
    print(
        f"{'':28} {'wall s':>8} {'cpu s':>8} {'x scan (wall)':>14} {'x scan (cpu)':>13} {'peak RSS MiB':>13}"
    )
    for name, r in rows:
        print(
            f"{name:28} {r['wall']:8.2f} {r['cpu']:8.2f} {r['wall'] / scan['wall']:14.1f} "
            f"{r['cpu'] / scan['cpu']:13.1f} {r['rss_mib']:13.0f}"
        )
    print(f"--folds 5 / --folds 1: wall {k5['wall'] / k1['wall']:.2f}, cpu {k5['cpu'] / k1['cpu']:.2f}")
    print(f"rules (full checker): {int(k1['rules'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
