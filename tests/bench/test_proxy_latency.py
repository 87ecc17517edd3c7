"""bench/proxy_latency.py at a tiny size: both connections answer every call, the proxied one appends
receipts to the faulty sample calls, and the reported added latency is proxied minus direct."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loaders import run_bench


def test_proxy_latency_bench_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = run_bench("proxy_latency.py", "--calls", "60", "--warmup", "10", "--json", str(out))
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    assert res["calls"] == 60 and res["rules"] == 485
    # every tenth call replays a faulty sample call; the sample's faults are planted, so some fire
    assert 1 <= res["receipts"] <= 6
    for k in ("p50_ms", "p95_ms", "p99_ms"):
        assert res["added_ms"][k] == round(res["proxied"][k] - res["direct"][k], 3)
        assert res["direct"][k] > 0 and res["proxied"][k] > 0
    assert res["met"] == (res["added_ms"]["p95_ms"] < 1.0)
    assert "added at p95" in p.stdout
