"""Benchmark the ledger: append throughput (durable and batched), freeze, verify, reopen and prove.

    python bench/ledger.py                       # 1,000,000 batched appends, 2,000 fsynced ones
    python bench/ledger.py --entries 100000 --fsync-appends 500 --json

Bodies look like audit fire events (`call_id`, `tool`, `code`, `path`, `observed`, `fold`, `rule`), about
330 bytes a line with the hashes. Measured, one after the other in one process:

* append (fsync each) — `Ledger.append`, which fsyncs before returning: the durable per-entry rate,
  bound by the disk's fsync latency, so it runs on a smaller count (`--fsync-appends`).
* append_many        — `Ledger.append_many` in batches of `--batch`, one write and one fsync a batch:
  the rate when a run can afford to lose its last unacknowledged batch in a crash.
* freeze             — Merkle root over every entry hash, header rewrite, manifest (sha256 of the files).
* verify             — `verify(dir, require_frozen=True)`: every line parsed, checked canonical and
  re-hashed, the chain, the Merkle root, the header bindings and the manifest.
* reopen             — the scan `Ledger.open` does before it lets a writer continue (on an unfrozen copy).
* prove              — one inclusion proof (reads and checks the whole ledger, then the audit path).

Wall and CPU seconds are both reported: on a shared machine the CPU figures are the steadier ones.

The ledger is written to a temporary folder (`--dir` to choose where) and deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, not whatever was installed last

from output_contracts.ledger import Ledger, verify  # noqa: E402
from output_contracts.ledger.proof import check_proof, prove  # noqa: E402
from output_contracts.ledger.scan import scan_entries  # noqa: E402

TOOLS = ["lookup_inventory", "query_warehouse", "get_stock_by_sku", "create_order", "refund"]
CODES = ["NONNEG", "REQUIRED", "TYPE", "DOMAIN", "RELATION"]


def fire_event(i: int) -> dict[str, Any]:
    """A deterministic, audit-like body."""
    return {
        "call_id": f"{i * 2654435761 % 2**64:016x}",
        "tool": TOOLS[i % 5],
        "code": CODES[(i // 5) % 5],
        "path": "/items/*/price" if i % 3 else "/available",
        "observed": -(i % 97) if i % 2 else (i % 1000) / 8,
        "fold": i % 5,
        "rule": f"r-{(i * 40503) % 65536:04x}",
    }


def batches(total: int, size: int) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    for start in range(0, total, size):
        yield [("audit.fire", fire_event(i)) for i in range(start, min(total, start + size))]


CPU: dict[str, float] = {}


def timed(fn: Any, name: str) -> tuple[Any, float]:
    """Run `fn`, return (result, wall seconds); the process CPU seconds go to CPU[name]."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    CPU[name] = time.process_time() - c
    return out, time.perf_counter() - t


def run(entries: int, fsync_appends: int, batch: int, where: Path | None) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="ledger-bench-", dir=where))
    try:
        results: dict[str, Any] = {"entries": entries, "fsync_appends": fsync_appends, "batch": batch}

        # 1. durable appends, one fsync each
        small = Ledger.create(base / "fsync", {"bench": "fsync"}, 0, source_revision="bench")
        _, secs = timed(
            lambda: [small.append("audit.fire", fire_event(i)) for i in range(fsync_appends)], "append"
        )
        small.close()
        results["append_fsync_per_s"] = fsync_appends / secs
        results["append_fsync_us"] = secs / fsync_appends * 1e6

        # 2. batched appends
        led = Ledger.create(base / "big", {"bench": "batched"}, 0, source_revision="bench")

        def fill() -> None:
            for b in batches(entries, batch):
                led.append_many(b)

        _, secs = timed(fill, "append_many")
        results["append_many_per_s"] = entries / secs
        results["append_many_s"] = secs
        size = (base / "big" / "ledger.jsonl").stat().st_size
        results["bytes_per_entry"] = size / entries
        results["ledger_mib"] = size / 2**20

        # 5. (before freezing) the scan a reopening writer pays
        (scan, secs) = timed(lambda: scan_entries(base / "big" / "ledger.jsonl"), "reopen")
        assert scan.intact
        results["reopen_scan_s"] = secs
        del scan

        # 3. freeze
        info, secs = timed(led.freeze, "freeze")
        results["freeze_s"] = secs
        results["head"], results["root"] = info.head, info.root

        # 4. verify
        report, secs = timed(
            lambda: verify(base / "big", require_frozen=True, head=info.head, root=info.root), "verify"
        )
        assert report.ok, report.problems[:3]
        results["verify_s"] = secs
        results["verify_per_s"] = entries / secs

        # 6. one proof
        doc, secs = timed(lambda: prove(base / "big", entries // 2), "prove")
        assert check_proof(doc, info.root, size=entries).ok
        results["prove_s"] = secs
        results["proof_path_len"] = len(doc["audit_path"])
        results["cpu_s"] = dict(CPU)
        results["verify_per_cpu_s"] = entries / CPU["verify"]
        results["append_many_per_cpu_s"] = entries / CPU["append_many"]
        results["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=1_000_000, help="batched appends (default 1,000,000)")
    ap.add_argument("--fsync-appends", type=int, default=2_000, help="appends fsynced one by one")
    ap.add_argument("--batch", type=int, default=1_000, help="entries per append_many call")
    ap.add_argument("--dir", type=Path, default=None, help="where to put the temporary ledgers")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    r = run(args.entries, args.fsync_appends, args.batch, args.dir)
    if args.json:
        print(json.dumps(r, indent=2, sort_keys=True))
        return
    n = r["entries"]
    print(f"ledger benchmark: {n:,} entries ({r['bytes_per_entry']:.0f} B each, {r['ledger_mib']:.0f} MiB)")
    print(
        f"  append, fsync each   {r['append_fsync_per_s']:>12,.0f} appends/s"
        f"  ({r['append_fsync_us']:.0f} µs each, {r['fsync_appends']:,} appends)"
    )
    print(
        f"  append_many          {r['append_many_per_s']:>12,.0f} appends/s"
        f"  ({r['append_many_s']:.1f} s, batches of {r['batch']:,}, one fsync each)"
    )
    print(f"  reopen scan          {n / r['reopen_scan_s']:>12,.0f} entries/s  ({r['reopen_scan_s']:.1f} s)")
    print(f"  freeze               {r['freeze_s']:>12.2f} s (Merkle root + manifest)")
    print(f"  verify               {r['verify_per_s']:>12,.0f} entries/s  ({r['verify_s']:.1f} s)")
    print(f"  prove one entry      {r['prove_s']:>12.2f} s (audit path of {r['proof_path_len']} hashes)")
    cpu = r["cpu_s"]
    print(
        "  CPU seconds          "
        + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
        + f"  (verify {r['verify_per_cpu_s']:,.0f} entries per CPU-s, "
        f"append_many {r['append_many_per_cpu_s']:,.0f} per CPU-s)"
    )
    print(f"  peak RSS             {r['peak_rss_mib']:>12,.0f} MiB")


if __name__ == "__main__":
    main()
