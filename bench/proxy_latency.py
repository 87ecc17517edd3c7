#!/usr/bin/env python3
"""The latency `contracts proxy` adds to an MCP tool call (the target: < 1 ms at p95).

    python bench/proxy_latency.py [--calls 2000] [--contracts tests/golden/sample-contracts.json] [--json F]

Two connections to the same MCP server script are opened side by side: one direct, one through
`contracts proxy --contracts K -- SERVER`. The server replays the sample world's recorded tool results
(`sample_traces/clean`, and every tenth call one of `sample_traces/faulty`'s calls with a planted
fault), in order, so the proxy checks real results against the sample world's mined contract set and
appends receipts to most of the faulty ones. Calls alternate between the two connections,
one at a time (request written, response line read), so both see the same machine load; the round trip
is timed on the client with `perf_counter_ns`. Reported: p50 / p95 / p99 of each, the added latency
(proxied minus direct) at each, and the checker's own share (the same calls through `Session.check`
in this process). Not hooked into `run_all.py`: that harness measures corpus stages in child
processes, this a live round trip.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "sample-contracts.json"
SOURCES = [
    ROOT / "sample_traces" / "clean" / "part-1.jsonl.gz",
    ROOT / "sample_traces" / "faulty" / "part-1.jsonl.gz",
]

SERVER = r"""
import sys, orjson
recs = [orjson.loads(line) for line in open(sys.argv[1], "rb")]
tools = sorted({r["tool"] for r in recs})
n = 0
for line in sys.stdin.buffer:
    msg = orjson.loads(line)
    if "id" not in msg:
        continue
    m = msg["method"]
    if m == "initialize":
        res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "replay", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": t, "inputSchema": {"type": "object"}} for t in tools]}
    elif m == "tools/call":
        data = recs[n]["result"]  # the recorded result of the n-th call: the client replays them in order
        n += 1
        res = {"content": [{"type": "text", "text": orjson.dumps(data).decode()}], "structuredContent": data}
    else:
        res = {}
    sys.stdout.buffer.write(orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + b"\n")
    sys.stdout.buffer.flush()
"""


def recorded_calls(n: int) -> list[dict[str, Any]]:
    """`n` recorded calls (status ok): clean sample calls, and every tenth a faulty sample call that
    carries a fault label (a planted fault; most, not all, break a mined rule)."""
    clean, faulty = (
        [
            r
            for r in map(orjson.loads, gzip.decompress(p.read_bytes()).splitlines())
            if r.get("status", "ok") == "ok"
        ]
        for p in SOURCES
    )
    faulty = [r for r in faulty if (r.get("labels") or {}).get("fault")]
    out: list[dict[str, Any]] = []
    ci = fi = 0
    while len(out) < n:
        if len(out) % 10 == 9 and fi < len(faulty):
            out.append(faulty[fi])
            fi += 1
        else:
            out.append(clean[ci % len(clean)])
            ci += 1
    return out


class Conn:
    """One stdio JSON-RPC connection: request, then read the response line."""

    def __init__(self, argv: list[str]) -> None:
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, bytes]:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        raw = orjson.dumps(msg) + b"\n"
        t0 = time.perf_counter_ns()
        self.p.stdin.write(raw)
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        return time.perf_counter_ns() - t0, line

    def close(self) -> int:
        assert self.p.stdin is not None
        self.p.stdin.close()
        return self.p.wait(60)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process so far (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=1000, method="inclusive")[int(q * 1000) - 1] if len(xs) > 1 else xs[0]


def run(calls: int, contracts: Path, warmup: int = 200) -> dict[str, Any]:
    from output_contracts.checks.api import Checker

    recs = recorded_calls(calls + warmup)
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        table = Path(tmp) / "calls.jsonl"
        table.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
        server_py = Path(tmp) / "server.py"
        server_py.write_text(SERVER)
        server = [sys.executable, str(server_py), str(table)]
        direct = Conn(server)
        proxied = Conn(
            [
                sys.executable,
                "-m",
                "output_contracts.cli.app",
                "proxy",
                "--contracts",
                str(contracts),
                "-q",
                "--",
                *server,
            ]
        )
        for c in (direct, proxied):
            c.call(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            )
            c.call("tools/list")
        times: dict[str, list[float]] = {"direct": [], "proxied": []}
        receipts = 0
        cpu0 = 0.0
        for i, r in enumerate(recs):
            if i == warmup:
                cpu0 = cpu_seconds(proxied.p.pid)
            params = {"name": r["tool"], "arguments": r["arguments"]}
            order = (direct, proxied) if i % 2 == 0 else (proxied, direct)
            for c in order:
                ns, line = c.call("tools/call", params)
                if i >= warmup:
                    times["direct" if c is direct else "proxied"].append(ns / 1e6)
                    if c is proxied and b"contracts/outcome_contract" in line:
                        receipts += 1
        proxy_cpu = cpu_seconds(proxied.p.pid) - cpu0
        assert direct.close() == 0 and proxied.close() == 0
    # the checker's own share: the same calls through one Session, in process
    checker = Checker.load(contracts)
    session = checker.session()
    check_ms: list[float] = []
    for i, r in enumerate(recs):
        t0 = time.perf_counter_ns()
        session.check(r["tool"], r["arguments"], r["result"])
        if i >= warmup:
            check_ms.append((time.perf_counter_ns() - t0) / 1e6)
    out: dict[str, Any] = {
        "calls": calls,
        "rules": len(checker.contracts.rules_for(None)),
        "receipts": receipts,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        # CPU the proxy process spent per call (relay both ways, parsing, checking, receipts): what the
        # proxy costs whatever the machine's load; wall-clock percentiles also wait for a free CPU
        "proxy_cpu_ms_per_call": round(proxy_cpu / calls * 1e3, 3),
        "cpus": os.cpu_count(),
    }
    for name, xs in (*times.items(), ("check_only", check_ms)):
        out[name] = {f"p{int(q * 100)}_ms": round(pct(xs, q), 3) for q in (0.5, 0.95, 0.99)}
    out["added_ms"] = {
        k: round(out["proxied"][k] - out["direct"][k], 3) for k in ("p50_ms", "p95_ms", "p99_ms")
    }
    out["budget_ms_p95"] = 1.0
    out["met"] = out["added_ms"]["p95_ms"] < 1.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200, help="calls made first and not timed")
    ap.add_argument("--contracts", type=Path, default=GOLDEN)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args()
    res = run(a.calls, a.contracts, a.warmup)
    print(
        f"{res['calls']} calls, {res['rules']} rules, {res['receipts']} receipts; load {res['load_avg_1m']} on {res['cpus']} CPUs"
    )
    print(f"{'':12}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for name in ("direct", "proxied", "added_ms", "check_only"):
        row = res[name]
        print(f"{name:12}{row['p50_ms']:>10.3f}{row['p95_ms']:>10.3f}{row['p99_ms']:>10.3f}")
    print(
        f"added at p95: {res['added_ms']['p95_ms']:.3f} ms (budget < 1 ms: {'met' if res['met'] else 'NOT met'})"
    )
    print(f"proxy CPU per call: {res['proxy_cpu_ms_per_call']:.3f} ms")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
