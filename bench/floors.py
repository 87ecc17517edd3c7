#!/usr/bin/env python3
"""Measure the floors that the two per-line performance targets run into (docs/performance.md, "Floors").

    python bench/floors.py                  # 1,000,000 calls: the generated world of bench/
    python bench/floors.py --calls 100000 --json /tmp/floors.json

Both targets ask plain Python to do per line what native code does, so each is set against what the
cheapest Python for that line costs, measured here on the same generated flat JSONL:

* `ingest` >= 1x `polars.read_ndjson` (CPU). The peer's CPU (`infer_schema_length=None`, the setting
  that reads this data) less the CPU of ingest's phases that are not per-line Python (Parquet writing,
  the task-ordering merge, the mining view, `calls.parquet`, episodes, digests: `bench/ingest.py
  --phases`) is the budget left for all of ingest's per-line work. Beside it: `orjson.loads` of every
  line, and the smallest flattening of every argument and result node into four lists (path, kind code,
  number, string: no canonical text, no validation, no columns built), in one interpreter.
* `check -` >= 100,000 calls per CPU second, i.e. 10 µs a call. Beside it: `orjson.loads` of the line
  and reading its flat fields (`_flat_fields`), which `check -` does before any rule is tested.

Timing: CPU seconds (`time.process_time`) of this process for the loops, with the garbage collector off
(lines read in batches of 10,000, so memory stays flat), a child process for the peer and the phases.
Prints a table; `--json` also writes the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402
import ingest as ingest_bench  # noqa: E402  (bench/ingest.py)

from output_contracts.checks.checker import _flat_fields  # noqa: E402
from output_contracts.traces.ingest import DEFAULT_CHUNK_ROWS  # noqa: E402

BATCH = 10_000
#: `check -`'s goal: calls per CPU second.
STREAM_GOAL = 100_000


def batches(path: Path) -> Iterator[list[bytes]]:
    """The file's lines, BATCH at a time."""
    with path.open("rb") as f:
        batch: list[bytes] = []
        for line in f:
            batch.append(line)
            if len(batch) == BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def flatten(recs: list[Any]) -> int:
    """The smallest flattening of the records' arguments and results: one (path, kind, number, string)
    entry per JSON node appended to four lists; returns the nodes."""
    paths: list[str] = []
    kinds: list[int] = []
    nums: list[Any] = []
    strs: list[Any] = []
    pa, ka, na, sa = paths.append, kinds.append, nums.append, strs.append
    stack: list[tuple[str, Any]] = []
    push, pop = stack.append, stack.pop
    for r in recs:
        push(("", r.get("arguments")))
        push(("", r.get("result")))
        while stack:
            p, v = pop()
            t = type(v)
            if t is dict:
                pa(p)
                ka(6)
                na(len(v))
                sa(None)
                for k, x in v.items():
                    push((p + "/" + k, x))
            elif t is list:
                pa(p)
                ka(5)
                na(len(v))
                sa(None)
                for i, x in enumerate(v):
                    push((p + "/" + str(i), x))
            elif t is str:
                pa(p)
                ka(4)
                na(None)
                sa(v)
            else:
                pa(p)
                ka(2)
                na(v)
                sa(None)
    return len(paths)


def loops(path: Path) -> dict[str, float]:
    """CPU seconds of `orjson.loads`, of `flatten`, and of `_flat_fields`, over every line, with the
    cyclic garbage collector off (it walks the batch's live records: the floor is the cost without it)."""
    parse = walk = fields = 0.0
    lines = nodes = 0
    gc.disable()
    try:
        for batch in batches(path):
            n, times = _batch(batch)
            nodes += n
            parse, walk, fields = parse + times[0], walk + times[1], fields + times[2]
            lines += len(batch)
    finally:
        gc.enable()
    return {"lines": lines, "nodes": nodes, "parse": parse, "walk": walk, "fields": fields}


def _batch(batch: list[bytes]) -> tuple[int, tuple[float, float, float]]:
    """One batch's nodes and CPU seconds of parsing, flattening and reading the flat fields."""
    cpu = time.process_time
    t = cpu()
    recs = [orjson.loads(b) for b in batch]
    parse = cpu() - t
    t = cpu()
    nodes = flatten(recs)
    walk = cpu() - t
    seen: list[Any] = []
    t = cpu()
    for rec in recs:
        _flat_fields(rec, seen)
    return nodes, (parse, walk, cpu() - t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.world_args(ap)
    ap.add_argument("--input", type=Path, help="a flat JSONL file instead of the generated world")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ns = ap.parse_args(argv)
    path = ns.input or common.world_input(ns.calls, ns.seed, ns.fault_every, ns.data)
    common.warm(path)
    _, _, _, peer_cpu, _ = ingest_bench.run_child(ingest_bench.CHILD_POLARS, str(path))
    ns.data.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="floors-", dir=ns.data))
    try:
        ph = ingest_bench.phases(path, DEFAULT_CHUNK_ROWS, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    missing = [p for p in ingest_bench.PER_LINE_PHASES if p not in ph["phases"]]
    if missing:
        raise SystemExit(f"bench/ingest.py no longer reports the phases {missing}")
    per_line = sum(ph["phases"][p] for p in ingest_bench.PER_LINE_PHASES)
    rest = ph["total"] - per_line
    lp = loops(path)
    n, nodes = lp["lines"], lp["nodes"]
    budget = peer_cpu - rest
    out = {
        "input": path.name,
        "lines": n,
        "nodes": nodes,
        "ingest": {
            "peer_read_ndjson_cpu": peer_cpu,
            "ours_total_cpu": ph["total"],
            "ours_per_line_cpu": per_line,
            "ours_rest_cpu": rest,
            "budget_per_line_cpu": budget,
            "orjson_loads_cpu": lp["parse"],
            "minimal_flatten_cpu": lp["walk"],
        },
        "stream": {
            "goal_us_per_call": 1e6 / STREAM_GOAL,
            "orjson_loads_us": 1e6 * lp["parse"] / n,
            "flat_fields_us": 1e6 * lp["fields"] / n,
        },
    }
    us = 1e6 / n
    print(f"floors on {path.name}: {n:,} lines, {nodes:,} argument and result nodes (CPU seconds)")
    print("ingest >= 1x polars.read_ndjson")
    print(f"  peer: read_ndjson(infer_schema_length=None)           {peer_cpu:9.2f}")
    print(f"  ingest, all phases                                    {ph['total']:9.2f}")
    print(f"  ingest, phases that are not per-line Python           {rest:9.2f}")
    print(
        f"  left for the per-line work (peer - those)             {budget:9.2f}   {budget * us:6.2f} µs a line"
    )
    print(
        f"  ingest's per-line work today                          {per_line:9.2f}   {per_line * us:6.2f} µs a line"
    )
    print(
        f"  orjson.loads of every line alone                      {lp['parse']:9.2f}   {lp['parse'] * us:6.2f} µs a line"
    )
    print(
        f"  smallest flattening of every node alone               {lp['walk']:9.2f}   "
        f"{1e9 * lp['walk'] / max(nodes, 1):6.0f} ns a node"
    )
    both = lp["parse"] + lp["walk"]
    if budget > 0:
        print(f"  the two together / what is left                       {both / budget:9.2f}x")
    else:
        print("  nothing is left: the other phases alone cost more than the peer")
    print(f"check - >= {STREAM_GOAL:,} calls per CPU second: {1e6 / STREAM_GOAL:.1f} µs a call")
    print(f"  orjson.loads of the line                              {lp['parse'] * us:9.2f} µs")
    print(f"  reading its flat fields                               {lp['fields'] * us:9.2f} µs")
    left = 1e6 / STREAM_GOAL - (lp["parse"] + lp["fields"]) * us
    print(f"  left for every rule of the call and its receipt       {left:9.2f} µs")
    if ns.json:
        ns.json.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
