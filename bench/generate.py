#!/usr/bin/env python3
"""Generate a large flat-JSONL corpus of the sample world's shape, streaming, seeded, bounded memory.

    python bench/generate.py --calls 1000000 -o bench/data/world-1000000-13.jsonl
    python bench/generate.py --calls 10000000 --seed 13 --fault-every 50 -o big.jsonl

Why the sample world and not a toy: the benchmarks must measure mining, checking and auditing on the
data shape the tool is built for — ten tools, nested arrays (`/items/*/price`), echoed ids, ordered
timestamps, exact relations, small domains, optional fields and free text — so every rule class does
real work. The world (catalog, customers, tasks, episode plans, tool results, fault injection) is
imported from `sample_traces/world/` (through `sample_traces/generate.py`), not copied, so the two
cannot drift apart.

Shape: task `t` is the sample world's `make_task(world, t)` (ids `retail-NNN`, past 999 just longer);
each task has 5 episodes (`ep-NNNNNNNN`), about 6.6 calls an episode, so 1M calls are about 30,000
tasks. Every `--fault-every`-th task (default 50, i.e. 2% of tasks; 0 = none) is a faulty task: its
episodes go through the sample world's `inject` (about a fifth of their ok calls carry one fault,
recorded only in `labels`, reward 0.0), so `check` and `audit` have real findings to report and mining
has labelled calls to leave out. Generation stops after exactly `--calls` records (the last episode
may be cut short; a benchmark wants an exact count more than a whole last episode).

Memory stays bounded: one task and one episode live at a time, lines go to disk as they are made.
Determinism: every episode draws from its own `random.Random(f"{seed}:{trace_id}")` (the sample
world's rule), so the same `--calls` and `--seed` give the same bytes; a larger `--calls` gives a file
whose first lines are the smaller file (handy: a 1M file is a prefix of the 10M file). The output is
written to a temporary name and renamed, so a half-written file is never mistaken for a finished one.
Throughput is pure-Python bound (about 25-30k calls/s on one core of the bench machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
WORLD_SCRIPT = ROOT / "sample_traces" / "generate.py"
EPISODES_PER_TASK = 5
DEFAULT_FAULT_EVERY = 50


@lru_cache(maxsize=1)
def world_module() -> ModuleType:
    """The package `sample_traces/world/`, through `sample_traces/generate.py`, which imports it by path
    (sample_traces/ is a script folder, not an installed package)."""
    spec = importlib.util.spec_from_file_location("sample_world_generate", WORLD_SCRIPT)
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with the repo
        raise SystemExit(f"cannot load {WORLD_SCRIPT}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.world


def records(calls: int, seed: int = 13, fault_every: int = DEFAULT_FAULT_EVERY) -> Iterator[dict[str, Any]]:
    """Yield exactly `calls` flat call records (DESIGN §2.1) of the sample world, episode by episode."""
    w = world_module()
    world = w.build_world(seed)
    rules = w.planted_rules() if fault_every else []
    emitted = 0
    task_num = 0
    while emitted < calls:
        task = w.make_task(world, task_num)
        faulty = bool(fault_every) and task_num % fault_every == fault_every - 1
        for e in range(EPISODES_PER_TASK):
            idx = task_num * EPISODES_PER_TASK + e
            trace_id = f"ep-{idx:08d}"
            ep = w.make_episode(world, task, trace_id, w.episode_start(idx), 0.0 if faulty else 1.0)
            if faulty:
                ep = w.inject(world, ep, rules, trace_id)
            for rec in ep:
                yield rec
                emitted += 1
                if emitted == calls:
                    return
        task_num += 1


def write(out: Path, calls: int, seed: int = 13, fault_every: int = DEFAULT_FAULT_EVERY) -> dict[str, Any]:
    """Stream `calls` records to `out` (temp file, then rename); return counts for the caller's log."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    n = faulted = 0
    tasks: set[str] = set()
    buf: list[bytes] = []
    with open(tmp, "wb") as fh:
        for rec in records(calls, seed, fault_every):
            buf.append(orjson.dumps(rec))
            n += 1
            if rec["labels"]:
                faulted += 1
            if rec["step"] == 0:
                tasks.add(rec["task_id"])
            if len(buf) >= 10_000:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    tmp.replace(out)
    return {"calls": n, "faulted_calls": faulted, "tasks": len(tasks), "bytes": out.stat().st_size}


def ensure(out: Path, calls: int, seed: int = 13, fault_every: int = DEFAULT_FAULT_EVERY) -> Path:
    """`out`, generated once: benchmarks cache the file, since generation is slower than ingest."""
    if not out.is_file():
        write(out, calls, seed, fault_every)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--calls", type=int, default=1_000_000, help="records to write (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=13, help="world and episode seed (default 13)")
    ap.add_argument(
        "--fault-every",
        type=int,
        default=DEFAULT_FAULT_EVERY,
        help="every N-th task is faulty (labelled injected faults); 0 = a clean corpus (default 50)",
    )
    ap.add_argument("-o", "--out", type=Path, required=True, help="output .jsonl file")
    ns = ap.parse_args(argv)
    if ns.calls < 1 or ns.fault_every < 0:
        ap.error("--calls must be >= 1 and --fault-every >= 0")
    t = time.perf_counter()
    c = write(ns.out, ns.calls, ns.seed, ns.fault_every)
    secs = time.perf_counter() - t
    print(
        f"wrote {ns.out}: {c['calls']:,} calls, {c['tasks']:,} tasks, {c['faulted_calls']:,} faulted calls, "
        f"{c['bytes'] / 2**20:,.0f} MiB in {secs:.1f} s ({c['calls'] / secs:,.0f} calls/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
