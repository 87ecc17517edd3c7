"""Benchmark `contracts check`: the corpus path and the stdin stream path, against one raw Parquet scan.

    python bench/check.py                  # 1,000,000 calls (inputs cached in bench/data/)
    python bench/check.py --calls 100000

Inputs: the sample world's flat JSONL (`bench/generate.py`, the file `bench/run_all.py` reads, cached in
`--data`), whose every `--fault-every`-th task carries labelled injected faults, so the checker has real
violations to render; contracts are mined (one fold) from the first `--mine-calls` calls of the same
world (the generator is prefix-stable, so that is the smaller file of the same seed), which leaves the
labelled faulty calls out. Each corpus is ingested once and cached beside its input. Each measurement
runs in its own child process, so its peak RSS (`RUSAGE_CHILDREN`, read right after that child,
children run one at a time) is reported; the stream child reports its own peak (`RUSAGE_SELF` at exit).

* raw scan   — one warm `pl.scan_parquet(...).collect()` of the leaves and calls columns the checker
               reads: the floor any Parquet-based checker pays.
* corpus     — `check_corpus` on the ingested corpus plus encoding every receipt (the library path of
               `contracts check CORPUS`).
* stream     — `contracts check -` fed the JSONL on stdin, receipts to /dev/null: parse, check and
               encode call by call; its peak RSS shows memory does not grow with the input.

Ratios are throughput against the raw scan (calls/s ÷ raw-scan calls/s); below 1 means slower.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py: the one generated world every benchmark reads)

CHILD_PREPARE = """
import sys
from output_contracts.traces.corpus import Corpus
from output_contracts.mining import mine
mine(Corpus.open(sys.argv[1]), folds=1, seed=int(sys.argv[3])).save(sys.argv[2])
print(0, 0)
"""

CHILD_SCAN = """
import sys, time
import polars as pl
from output_contracts.traces.corpus import Corpus
c = Corpus.open(sys.argv[1])
def scan():
    leaves = c.scan_leaves().select("cid", "tool", "side", "path", "pattern", "kind", "num", "str").collect()
    calls = c.scan_calls().select("cid", "call_id", "trace_id", "task_id", "tool", "status", "source", "line").collect()
    return calls.height
scan()  # warm the page cache
t = time.perf_counter()
n = scan()
print(time.perf_counter() - t, n)
"""

CHILD_CORPUS = """
import sys, time
from output_contracts.traces.corpus import Corpus
from output_contracts.checks.checker import check_corpus, load_contracts, receipts_from_frame
from output_contracts.checks.receipts import encode_line
c = Corpus.open(sys.argv[1]); cs = load_contracts(sys.argv[2])
n = c.scan_calls().select("cid").collect().height
t = time.perf_counter()
df = check_corpus(cs, c)
total = sum(len(encode_line(r)) for r in receipts_from_frame(cs, c, df))
print(time.perf_counter() - t, n, df.height, total)
"""


CHILD_STREAM = """
import atexit, resource, sys
atexit.register(lambda: sys.stderr.write(f"__RSS_KIB__ {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n"))
sys.argv = ["contracts", *sys.argv[1:]]
from output_contracts.cli.app import main
main()
"""


def run_child(code: str, *args: str, stdin: Path | None = None) -> tuple[list[str], float, float, str]:
    """Run `code` in a fresh interpreter: (stdout fields, wall seconds, peak RSS MiB so far, stderr)."""
    t = time.perf_counter()
    with open(stdin, "rb") if stdin else open("/dev/null", "rb") as fin:
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=ROOT,
            stdin=fin,
            capture_output=True,
            text=True,
            check=False,
        )
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return proc.stdout.split(), wall, peak, proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.world_args(ap)
    ap.add_argument("--mine-calls", type=int, default=100_000)
    ns = ap.parse_args(argv)
    world = (ns.seed, ns.fault_every, ns.data)
    src = common.world_input(ns.calls, *world)
    corpus = common.world_corpus(ns.calls, *world)
    mine_calls = min(ns.mine_calls, ns.calls)
    mine_corpus = common.world_corpus(mine_calls, *world)
    print(f"input: {src.name} ({ns.calls:,} calls); contracts mined from its first {mine_calls:,} calls")

    with tempfile.TemporaryDirectory(prefix="check-bench-") as tmp:
        contracts = Path(tmp) / "contracts.json"
        run_child(CHILD_PREPARE, str(mine_corpus), str(contracts), str(ns.seed))
        cmd = ["check", "--contracts", str(contracts), "-", "-q", "-o", "/dev/null"]
        _, stream_wall, _, stream_err = run_child(CHILD_STREAM, *cmd, stdin=src)
        stream_peak = int(stream_err.split("__RSS_KIB__")[1].split()[0]) / 1024
        (scan_s, scan_n), _, _, _ = run_child(CHILD_SCAN, str(corpus))
        (corp_s, corp_n, corp_v, corp_bytes), _, all_peak, _ = run_child(
            CHILD_CORPUS, str(corpus), str(contracts)
        )
    scan_rate = int(scan_n) / float(scan_s)
    corp_rate = int(corp_n) / float(corp_s)
    stream_rate = ns.calls / stream_wall
    print(f"raw scan     : {float(scan_s):8.2f} s  {scan_rate:>12,.0f} calls/s")
    print(
        f"corpus path  : {float(corp_s):8.2f} s  {corp_rate:>12,.0f} calls/s  ratio {corp_rate / scan_rate:.3f}"
        f"  ({int(corp_v):,} violations, {int(corp_bytes) / 2**20:,.1f} MiB of receipts)"
    )
    print(
        f"stream path  : {stream_wall:8.2f} s  {stream_rate:>12,.0f} calls/s  ratio {stream_rate / scan_rate:.3f}"
        f"  (wall time of `check -` incl. start-up)"
    )
    print(f"peak RSS of `check -` on {ns.calls:,} calls: {stream_peak:,.0f} MiB")
    print(
        f"peak RSS of the largest other child (ingest when not cached, mining, scan, corpus path): {all_peak:,.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
