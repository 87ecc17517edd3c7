"""Benchmark `contracts mine` against one warm `polars.scan_parquet('leaves.parquet').collect()`.

    python bench/mine.py                    # 1,000,000 calls (JSONL and corpus cached in bench/data/)
    python bench/mine.py --calls 200000
    python bench/mine.py --calls 300000 --phases   # CPU seconds of mine --folds 5 by phase

The calls are the sample world's flat JSONL (`bench/generate.py`, the file `bench/run_all.py` reads: ten
tools, nested item arrays, echoed ids, small domains, ordered timestamps, exact relations, next to ids
and free text that must not become rules; every `--fault-every`-th task labelled faulty, which mining
leaves out). It is ingested once (`contracts ingest`) and cached beside the input in `--data`.

Each measurement runs in a child process so its peak RSS is its own. Reported, wall and CPU seconds:
  scan     the second of two `pl.scan_parquet(leaves).collect()` (all columns: the "raw scan")
  mine k=1 `mine(corpus, folds=1, verify=False)`
  mine k=5 `mine(corpus, folds=5, verify=False)`
  mine k=5 + verify  `--verify`, opt-in: every checker re-checked by the shipped checker on its mining data
and the ratios mine/scan and (k=5)/(k=1). The machine this runs on may be shared: the CPU column is the
steadier one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py: the one generated world every benchmark reads)

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
            result: dict[str, float] = json.loads(line[7:])
            return result
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
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
c = Corpus.open({str(folder)!r})
pl.scan_parquet(c.path / "leaves.parquet").collect()  # same warm cache as the scan
w, t = time.perf_counter(), time.process_time()
cs = mine(c, folds={folds}, verify={verify})
_report(wall=time.perf_counter() - w, cpu=time.process_time() - t, rules=len(cs.rules_for(None)))
"""
    )


#: `--phases`: the real `mine` with timers wrapped around its parts (nothing re-implemented here): the
#: load's three reads, path statistics, each rule class's plan / scan / finish, assembling; "other" is
#: the rest (the candidate sample, pools, glue). CPU seconds of the whole process, threads included.
_PHASES = """
import collections
from output_contracts.mining import data as D, miner as M, patterns as P
from output_contracts.codes.table import miners
from output_contracts.mining.schema_rules import SchemaRules
from output_contracts.traces.corpus import Corpus
T = collections.defaultdict(float)
def timed(name, fn):
    def run(*a, **kw):
        t = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            T[name] += time.process_time() - t
    return run
D.clean_calls = timed("load: clean calls", D.clean_calls)
P.patterns_of = timed("load: pattern table", P.patterns_of)
D._read_leaves = timed("load: read leaves + map to ids", D._read_leaves)
M.path_stats_part = timed("path statistics", M.path_stats_part)
M.merge_path_stats = timed("path statistics", M.merge_path_stats)
M.assemble = timed("assemble (ids, examples, contract set)", M.assemble)
for cls in (*(type(m) for m in miners()), SchemaRules):
    for step in ("plan", "scan", "finish"):
        setattr(cls, step, timed(f"{cls.__name__.removesuffix('Miner')}: {step}", getattr(cls, step)))
c = Corpus.open(FOLDER)
pl.scan_parquet(c.path / "leaves.parquet").collect()
t = time.process_time()
cs = M.mine(c, folds=FOLDS)
total = time.process_time() - t
t = time.process_time()
from output_contracts.jsonutil import pretty_json
pretty_json(cs.to_json())
T["write (JSON text)"] = time.process_time() - t
T["other (sample, pools, glue)"] = total - sum(v for k, v in T.items() if not k.startswith("write"))
_report(phases=dict(T), total=total + T["write (JSON text)"], view=c.view() is not None)
"""


def measure_phases(folder: Path, folds: int) -> dict[str, object]:
    code = _PHASES.replace("FOLDER", repr(str(folder))).replace("FOLDS", str(folds))
    return _child(code)  # type: ignore[return-value]


def print_phases(r: dict[str, object]) -> None:
    phases: dict[str, float] = r["phases"]  # type: ignore[assignment]
    total = float(r["total"])  # type: ignore[arg-type]
    print(f"mine --folds 5 by phase (CPU s; corpus {'with' if r['view'] else 'without'} the mining view)")
    for name, cpu in sorted(phases.items(), key=lambda kv: -kv[1]):
        if cpu >= 0.005:
            print(f"  {name:44} {cpu:8.3f} {100 * cpu / total:6.1f}%")
    print(f"  {'total':44} {total:8.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    common.world_args(ap)
    ap.add_argument("--skip-verify", action="store_true", help="do not time the verified (default) mine")
    ap.add_argument("--phases", action="store_true", help="only: CPU seconds of mine --folds 5 by phase")
    ap.add_argument(
        "--corpus", type=Path, help="an ingested corpus to measure instead of the generated world"
    )
    a = ap.parse_args(argv)
    if a.phases:
        print_phases(
            measure_phases(a.corpus or common.world_corpus(a.calls, a.seed, a.fault_every, a.data), 5)
        )
        return 0
    t = time.perf_counter()
    folder = common.world_corpus(a.calls, a.seed, a.fault_every, a.data)
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
