"""Benchmark `contracts ingest` on a generated flat JSONL file against `polars.read_ndjson`.

    python bench/ingest.py                 # 1,000,000 calls (file cached in bench/data/)
    python bench/ingest.py --calls 100000 --chunk-rows 25000

The input is the sample world's flat JSONL (`bench/generate.py`, the same file `bench/run_all.py` and the
other stage scripts read), generated once per (calls, seed, fault rate) and cached in `--data`, so reruns
compare like with like. Each side runs in a child process so its peak RSS
(`resource.getrusage(RUSAGE_CHILDREN)`) is its own. The ratio is throughput ours / theirs: `read_ndjson`
only parses into typed columns, while ingest also validates every line, canonicalises arguments and results,
hashes call ids, flattens every JSON node into `leaves.parquet` and writes three Parquet files, so a ratio
well below 1 is expected; the number to watch is that it does not regress.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py: the one generated world every benchmark reads)
import generate  # noqa: E402

from output_contracts.traces.ingest import DEFAULT_CHUNK_ROWS  # noqa: E402

CHILD_OURS = """
import sys, time
from output_contracts.traces.ingest import ingest
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


def _polars_version() -> str:
    """The peer's own version, printed beside its figures."""
    from importlib.metadata import version

    return version("polars")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--fault-every", type=int, default=generate.DEFAULT_FAULT_EVERY)
    ap.add_argument(
        "--chunk-rows",
        type=int,
        default=DEFAULT_CHUNK_ROWS,
        help=f"rows a chunk (default {DEFAULT_CHUNK_ROWS:,}: ingest's own)",
    )
    ap.add_argument("--data", type=Path, default=common.DATA, help="where inputs are cached (bench/data)")
    ns = ap.parse_args(argv)
    t = time.perf_counter()
    path = common.world_input(ns.calls, ns.seed, ns.fault_every, ns.data)
    size_mb = path.stat().st_size / 2**20
    print(
        f"input: {path.name} ({ns.calls:,} calls, {size_mb:,.0f} MiB; ready in {time.perf_counter() - t:.1f} s)"
    )
    scratch = Path(tempfile.mkdtemp(prefix="ingest-bench-", dir=ns.data))
    try:
        out = scratch / "corpus"
        ours, rows, leaves, cpu_ours, rss_ours = run_child(
            CHILD_OURS, str(path), str(out), str(ns.chunk_rows)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    theirs, rows_pl, _, cpu_theirs, _ = run_child(CHILD_POLARS, str(path))
    assert rows == rows_pl == ns.calls, (rows, rows_pl, ns.calls)
    print(
        f"contracts ingest  : {ours:7.2f} s wall {cpu_ours:7.2f} s CPU  {rows / ours:>10,.0f} calls/s  "
        f"({leaves:,} leaves)  peak RSS {rss_ours:,.0f} MiB"
    )
    print(
        f"polars.read_ndjson: {theirs:7.2f} s wall {cpu_theirs:7.2f} s CPU  {rows / theirs:>10,.0f} calls/s"
        f"  (polars {_polars_version()})"
    )
    print(f"throughput ratio ours/theirs: {theirs / ours:.3f} (wall), {cpu_theirs / cpu_ours:.3f} (CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
