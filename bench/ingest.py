"""Benchmark `contracts ingest` on a generated flat JSONL file against `polars.read_ndjson`.

    python bench/ingest.py                 # 1,000,000 calls (file cached in bench/data/)
    python bench/ingest.py --calls 100000 --chunk-rows 25000
    python bench/ingest.py --calls 100000 --phases     # CPU seconds of ingest by phase
    python bench/ingest.py --input retail.jsonl --phases  # another flat JSONL file (bench/tau_tools.py)

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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py: the one generated world every benchmark reads)

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


#: The phases of `CHILD_PHASES` that are per-line Python work (the rest writes, sorts and codes columns
#: in polars and pyarrow): what `bench/floors.py` sets against the peer's time.
PER_LINE_PHASES = (
    "read: lines, JSON, validation, ids, episode rows",
    "leaf walk + canonical JSON texts",
    "frames (columns from the walk's lists)",
)

#: `--phases`: the real `ingest` with timers wrapped around its parts (nothing re-implemented here);
#: each phase is exclusive of the phases it calls. "read" is everything per line outside the walk:
#: reading, `orjson.loads`, validation, call ids, episode rows. The timers cost about 1 µs a call.
CHILD_PHASES = """
import collections, json, sys, time
import output_contracts.traces.ingest.columns as C
import output_contracts.traces.ingest.commit as K
import output_contracts.traces.ingest.order as O
import output_contracts.traces.ingest.read as R
import output_contracts.traces.ingest.run as U
import output_contracts.traces.mining_view as V
from output_contracts.traces.ingest import ingest
T = collections.defaultdict(float)
inner = []
def timed(owner, attr, name):
    fn = getattr(owner, attr)
    def run(*a, **kw):
        t = time.process_time()
        inner.append(0.0)
        try:
            return fn(*a, **kw)
        finally:
            d = time.process_time() - t
            T[name] += d - inner.pop()
            if inner:
                inner[-1] += d
    setattr(owner, attr, run)
timed(R._SourceReader, "text_line", "read: lines, JSON, validation, ids, episode rows")
timed(C.Columns, "add_fields", "leaf walk + canonical JSON texts")
timed(C.Columns, "frames", "frames (columns from the walk's lists)")
timed(U.StagedCalls, "write", "calls.parquet")
timed(U.StagedCalls, "finish", "calls.parquet")
timed(O.DirectLeaves, "take", "leaves.parquet: written directly")
timed(U, "write_run", "leaves: sorted runs staged (Arrow)")
timed(K, "write_sorted", "leaves.parquet: merged from sorted runs")
timed(V.ViewStage, "add", "view: frames coded and staged")
timed(K, "write_staged", "view: mapped to the corpus's codes, written")
timed(K, "write_episodes", "episodes")
timed(U.Run, "spill_episodes", "episodes")
t = time.process_time()
r = ingest([sys.argv[1]], sys.argv[2], chunk_rows=int(sys.argv[3]))
total = time.process_time() - t
T["other (commit, digests, glue)"] = total - sum(T.values())
print(json.dumps({"phases": T, "total": total, "calls": r.calls, "leaves": r.leaves}))
"""


def phases(path: Path, chunk_rows: int, scratch: Path) -> dict[str, Any]:
    """Run `CHILD_PHASES` on `path` (the corpus goes to `scratch`): {"phases": {name: CPU s}, "total",
    "calls", "leaves"}."""
    import json

    out: dict[str, Any] = json.loads(
        common.child_stdout(CHILD_PHASES, str(path), str(scratch / "corpus"), str(chunk_rows))
    )
    return out


def print_phases(path: Path, chunk_rows: int, scratch: Path) -> None:
    """Run `CHILD_PHASES` on `path` and print its table."""
    r = phases(path, chunk_rows, scratch)
    total = r["total"]
    print(f"ingest by phase (CPU s; {r['calls']:,} calls, {r['leaves']:,} leaves)")
    for name, cpu in sorted(r["phases"].items(), key=lambda kv: -kv[1]):
        print(f"  {name:50} {cpu:8.2f} {100 * cpu / total:6.1f}%")
    print(f"  {'total':50} {total:8.2f}")


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
    common.world_args(ap)
    ap.add_argument(
        "--chunk-rows",
        type=int,
        default=DEFAULT_CHUNK_ROWS,
        help=f"rows a chunk (default {DEFAULT_CHUNK_ROWS:,}: ingest's own)",
    )
    ap.add_argument("--input", type=Path, help="a flat JSONL file to ingest instead of the generated world")
    ap.add_argument("--phases", action="store_true", help="only: CPU seconds of ingest by phase")
    ns = ap.parse_args(argv)
    t = time.perf_counter()
    path = ns.input or common.world_input(ns.calls, ns.seed, ns.fault_every, ns.data)
    size_mb = path.stat().st_size / 2**20
    print(f"input: {path.name} ({size_mb:,.0f} MiB; ready in {time.perf_counter() - t:.1f} s)")
    ns.data.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="ingest-bench-", dir=ns.data))
    if ns.phases:
        try:
            print_phases(path, ns.chunk_rows, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    try:
        out = scratch / "corpus"
        ours, rows, leaves, cpu_ours, rss_ours = run_child(
            CHILD_OURS, str(path), str(out), str(ns.chunk_rows)
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    theirs, rows_pl, _, cpu_theirs, _ = run_child(CHILD_POLARS, str(path))
    assert rows == rows_pl and (ns.input or rows == ns.calls), (rows, rows_pl, ns.calls)
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
