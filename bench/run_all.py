#!/usr/bin/env python3
"""`make bench`: each stage beside the peer a user would pick, measured in the same run, as CPU ratios.

    python bench/run_all.py                         # 100,000 calls (+ the 1,000,000 scale point)
    python bench/run_all.py --calls 1000000         # the size the targets are stated at (scale point: 100,000)
    python bench/run_all.py --calls 2000 --scale-calls 200 --repeat 1 --json /tmp/r.json --markdown /tmp/r.md
    python bench/run_all.py --calls 10000000 --stages ingest,mine,audit --no-baselines --repeat 1 --keep
                                                    # the bounded-memory run (our side only)

Why one file: one table of stages, each a few lines of command and peers; the stage runners share the
child-process measuring (`bench/common.py`) and the report writers below them.

| stage | ours | peers (ratio = ours / peer CPU seconds unless noted) |
|---|---|---|
| ingest | `contracts ingest SRC -o CORPUS` | `polars.read_ndjson(SRC)` with its default inference (if that fails on the data, the setting that works, and the failure is recorded): throughput ratio = peer / ours |
| mine --folds 5 | `contracts mine CORPUS --folds 5` | the raw scan of the columns mining reads; genson's schema inference on the same results (`peer_genson.py`, 2 classes) |
| audit, 5 folds | `contracts audit CORPUS --folds 5` | our `mine --folds 5` of the same rounds |
| check (corpus) | `contracts check -c C CORPUS` | fastjsonschema parsing and validating the same JSONL against the schemas `contracts registry infer` writes from C (`peer_fastjsonschema.py`); the raw scan of the columns the checker reads |
| check - (stream) | `contracts check -c C -` fed the JSONL | fastjsonschema as above |
| check_call (all / schema classes) | `check_call` per call on the same parsed calls, the full checker / its REQUIRED, TYPE, DOMAIN, NONNEG, POSITIVE rules | fastjsonschema's validator per call |
| ledger append / verify | `Ledger.append_many` / `contracts ledger verify` | the same bytes written with one fsync a batch / one SHA-256 a line |

How: every measurement is a fresh child process (its own peak RSS via `os.wait4`; CPU seconds of the
timed part: the process with all its threads, plus any child process it waited for); start-up, imports
and set-up are outside the timed part on both sides. Each stage's measurements run interleaved (ours,
peer, ours, peer, ...) `--repeat` times (default 3) and the median counts; the inputs are read into the
page cache first. The scale point (`--scale-calls`, default 10x the size, or a tenth above 100,000)
ingests and mines a second size once, for the linearity of mining (CPU per call) and the flatness of
ingest's peak RSS. The performance targets (docs/performance.md) are evaluated on the CPU ratios and
written as pass/fail lines beside the measured value (`targets`), never assumed.

Outputs: `results.json` (JSON Schema `output_contracts/schemas/bench-results.schema.json`; one entry per
corpus size under `runs`) and `results.md`. A run replaces the stages it measured in the entry of its
own size; stages it did not measure stay from the earlier run of the same input, marked
`from_earlier_run`; the targets are recomputed from the merged rows. The machine's load average at the
start and the end of a run is recorded with it: on a shared machine the wall clock also measures the
neighbours, the CPU ratios much less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import generate

from output_contracts.jsonutil import atomic_write_bytes, write_json

ROOT = common.ROOT
DATA = common.DATA
RESULTS_VERSION = 2

#: Columns each stage reads (the raw-scan peer scans exactly these). Kept in step with
#: `output_contracts.mining.data.load`/`clean_calls` and `output_contracts.checks.checker.check_corpus`.
MINE_COLUMNS = {
    "leaves": ["cid", "task_id", "tool", "side", "pattern", "kind", "num", "str", "len"],
    "calls": ["cid", "call_id", "trace_id", "task_id", "tool", "status", "fault"],
    "episodes": ["trace_id", "faulty", "reward"],
}
CHECK_COLUMNS = {
    "leaves": ["cid", "tool", "side", "path", "pattern", "kind", "num", "str"],
    "calls": ["cid", "call_id", "trace_id", "task_id", "tool", "status", "source", "line"],
}
#: The rule classes a JSON Schema can state (`registry infer` writes them as required, type, enum,
#: minimum, exclusiveMinimum): `check_call` restricted to them is compared like with like.
SCHEMA_CODES = ("DOMAIN", "NONNEG", "POSITIVE", "REQUIRED", "TYPE")

SCAN_CHILD = """
import polars as pl
from output_contracts.traces.corpus import Corpus
cols = json.loads(sys.argv[2])
c = Corpus.open(sys.argv[1])
scans = {"leaves": c.scan_leaves, "calls": c.scan_calls, "episodes": c.scan_episodes}
def scan():
    return sum(scans[name]().select(cs).collect().height for name, cs in sorted(cols.items()))
scan()  # warm: page cache and polars' first-use costs
t = time.perf_counter(); c0 = _cpu()
RESULT["rows"] = scan()
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
"""

NDJSON_CHILD = """
import polars as pl
RESULT["setting"] = "default inference"
try:
    t = time.perf_counter(); c0 = _cpu()
    df = pl.read_ndjson(sys.argv[1])
except Exception as e:  # the default infers from the first 100 rows; a field typed later fails
    RESULT["default_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    RESULT["setting"] = "infer_schema_length=None"
    t = time.perf_counter(); c0 = _cpu()
    df = pl.read_ndjson(sys.argv[1], infer_schema_length=None)
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
RESULT["rows"] = df.height
"""

GENSON_CHILD = """
sys.path.insert(0, "bench")
import peer_genson
t = time.perf_counter(); c0 = _cpu()
schemas, n = peer_genson.build_schemas(sys.argv[1])
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
RESULT["results"] = n
RESULT["rules"] = peer_genson.rule_counts(schemas)
"""

#: The corpus peer of `check`: a user's script, compile then parse-and-validate the file (timed whole).
FJS_FILE_CHILD = """
from pathlib import Path
sys.path.insert(0, "bench")
import peer_fastjsonschema as P
t = time.perf_counter(); c0 = _cpu()
vals = P.validators(Path(sys.argv[2]))
RESULT["calls"], RESULT["invalid"] = P.validate_file(vals, Path(sys.argv[1]))
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
"""

#: Per call: the calls are parsed before timing; only the validation loop is timed.
FJS_CALL_CHILD = """
from pathlib import Path
sys.path.insert(0, "bench")
import peer_fastjsonschema as P
vals = P.validators(Path(sys.argv[2]))
calls = P.load_calls(Path(sys.argv[1]), vals, int(sys.argv[3]))
P.validate_calls(vals, calls[:1000])  # warm
t = time.perf_counter(); c0 = _cpu()
RESULT["invalid"] = P.validate_calls(vals, calls)
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
RESULT["calls"] = len(calls)
"""

#: Ours per call: `check_call` (the agent-loop path, full checker) on the same parsed calls; with a
#: list of codes, on a contract set holding only those rules.
CALL_CHILD = """
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, "bench")
import peer_fastjsonschema as P
from output_contracts.checks.checker import check_call
from output_contracts.codes.contract_set import ContractSet
cs = ContractSet.load(sys.argv[2])
codes = json.loads(sys.argv[5])
if codes is not None:
    tools = {n: replace(tc, rules=tuple(r for r in tc.rules if r.code in codes)) for n, tc in cs.tools.items()}
    cs = replace(cs, tools=tools, folds=())
RESULT["rules"] = len(cs.rules_for(None))
calls = P.load_calls(Path(sys.argv[1]), P.declared_outputs(Path(sys.argv[3])), int(sys.argv[4]))
for tool, args, result in calls[:1000]:  # warm: the per-set compiled caches
    check_call(cs, tool, args, result)
t = time.perf_counter(); c0 = _cpu()
RESULT["receipts"] = sum(1 for tool, args, result in calls if check_call(cs, tool, args, result) is not None)
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
RESULT["calls"] = len(calls)
"""

LEDGER_CHILD = """
import shutil
from output_contracts.ledger import Ledger
n, batch, where = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
shutil.rmtree(where, ignore_errors=True)
TOOLS = ["lookup_inventory", "query_warehouse", "get_stock_by_sku", "get_order", "create_invoice"]
CODES = ["NONNEG", "REQUIRED", "TYPE", "DOMAIN", "RELATION"]
def body(i):
    return {"call_id": f"{i * 2654435761 % 2**64:016x}", "tool": TOOLS[i % 5], "code": CODES[(i // 5) % 5],
            "path": "/items/*/unit_price" if i % 3 else "/available",
            "observed": -(i % 97) if i % 2 else (i % 1000) / 8, "fold": i % 5, "rule": f"r-{(i * 40503) % 65536:04x}"}
led = Ledger.create(where, {"bench": "run_all"}, 0, source_revision="bench")
t = time.perf_counter(); c0 = _cpu()
for s in range(0, n, batch):
    led.append_many([("audit.fire", body(i)) for i in range(s, min(n, s + batch))])
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
led.freeze()
RESULT["bytes"] = os.path.getsize(os.path.join(where, "ledger.jsonl"))
"""

RAW_WRITE_CHILD = """
src, dst, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as fh:
    lines = fh.readlines()
t = time.perf_counter(); c0 = _cpu()
with open(dst, "wb") as out:
    for s in range(0, len(lines), batch):
        out.write(b"".join(lines[s:s + batch]))
        out.flush()
        os.fsync(out.fileno())
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
"""

RAW_HASH_CHILD = """
import hashlib
with open(sys.argv[1], "rb") as fh:
    fh.read()
t = time.perf_counter(); c0 = _cpu()
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        hashlib.sha256(line).digest()
        n += 1
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
RESULT["rows"] = n
"""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def peer_versions() -> dict[str, str]:
    """The peers' own versions (and ours), as installed where the run happens."""
    return {
        "fastjsonschema": _version("fastjsonschema"),
        "genson": _version("genson"),
        "output-contracts": _version("output-contracts"),
        "polars": _version("polars"),
        "python": platform.python_version(),
    }


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load averages (the machine's condition during a run)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return [0.0, 0.0, 0.0]


def _m(m: common.Measure) -> dict[str, Any]:
    out: dict[str, Any] = {
        "seconds": round(m.seconds, 6),
        "cpu_seconds": round(m.cpu_seconds, 6),
        "peak_rss_mib": round(m.peak_rss_mib, 1),
        "runs": max(1, len(m.cpu_runs)),
    }
    if m.cpu_runs:
        out["cpu_runs"] = [round(x, 6) for x in m.cpu_runs]
    if m.killed_at_mib is not None:
        out["killed_at_mib"] = m.killed_at_mib
    return out


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b > 0 else 0.0


#: A peer of one stage: (name, version, ratio kind, its measure).
Peer = tuple[str, str, str, common.Measure]


def _row(
    name: str, ours: common.Measure, peers: list[Peer], notes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One stage: ours and every peer with its ratio, computed here from the two measured medians.

    kind "time": ours / peer seconds (lower is better); "throughput": peer / ours (higher is better)."""
    out = []
    for pname, version, kind, pm in peers:
        a, b = (ours, pm) if kind == "time" else (pm, ours)
        out.append(
            {
                "name": pname,
                "version": version,
                **_m(pm),
                "ratio": {
                    "kind": kind,
                    "cpu": _ratio(a.cpu_seconds, b.cpu_seconds),
                    "wall": _ratio(a.seconds, b.seconds),
                },
            }
        )
    notes = dict(notes or {})
    if ours.killed_at_mib is not None:
        notes["killed_at_mib"] = ours.killed_at_mib
    return {"stage": name, "ours": _m(ours), "peers": out, "notes": notes}


def rule_codes(contracts_file: Path) -> dict[str, int]:
    """Rules per property code in the full checker of a contract set file."""
    doc = json.loads(contracts_file.read_text())
    counts: dict[str, int] = {}
    for tool in doc["tools"].values():
        for r in tool["rules"]:
            if r.get("in_full", True):
                counts[r["code"]] = counts.get(r["code"], 0) + 1
    return dict(sorted(counts.items()))


class CorpusMismatch(ValueError):
    """`--corpus` cannot stand in for this run's ingest (another input, or ingest selected)."""


#: Stage groups `--stages` can select, in run order. `audit` is measured in the rounds of `mine`, which
#: it is compared with; `check`, `stream` and `call` use the `mine` stage's contract set (mined untimed
#: if `mine` is not selected) and the registry `registry infer` writes from it.
STAGE_KEYS = ("ingest", "mine", "audit", "check", "stream", "call", "ledger", "scale")

#: Stage row names in table order (a merged entry keeps this order).
STAGE_NAMES = (
    "ingest",
    "mine --folds 5",
    "audit, 5 folds",
    "check (corpus)",
    "check - (stream)",
    "check_call (all classes)",
    "check_call (schema classes)",
    "ledger append",
    "ledger verify",
)


def rounds(fns: dict[str, Callable[[], common.Measure]], n: int) -> dict[str, common.Measure]:
    """Each measurement `n` times, interleaved (a b c a b c ...), reduced to medians (`median_of`).

    A measurement stopped by the RSS watchdog is not repeated."""
    runs: dict[str, list[common.Measure]] = {k: [] for k in fns}
    for _ in range(max(1, n)):
        for key, fn in fns.items():
            if runs[key] and runs[key][-1].killed_at_mib is not None:
                continue
            runs[key].append(fn())
    return {k: common.median_of(v) for k, v in runs.items()}


def run(
    calls: int,
    seed: int,
    fault_every: int,
    ledger_entries: int,
    work: Path,
    data: Path = DATA,
    stages_wanted: tuple[str, ...] = STAGE_KEYS,
    baselines: bool = True,
    rss_limit: float | None = None,
    reuse_corpus: Path | None = None,
    repeat: int = 3,
    scale_calls: int = 0,
    call_limit: int = 200_000,
) -> dict[str, Any]:
    """The selected stages at `calls`; returns the run's results entry. Inputs are cached in `data`.

    With `baselines=False` only our side runs (the 10M memory run: `read_ndjson` alone would need about
    30 GiB there). `reuse_corpus`: a corpus ingested from the same input, read instead of ingesting
    (ingest must not be selected); raises `CorpusMismatch` when it is not the ingest of this input."""
    clock = common.Clock()
    load_start = load_average()
    want = set(stages_wanted)
    if reuse_corpus is not None and "ingest" in want:
        raise CorpusMismatch("--corpus skips ingest: leave ingest out of --stages")
    if reuse_corpus is not None and reuse_corpus.resolve().is_relative_to(work.resolve()):
        raise CorpusMismatch(
            f"--corpus {reuse_corpus} lies inside the scratch folder {work}, which is deleted"
        )
    src = common.world_input(calls, seed, fault_every, data)
    common.log(f"{clock()} input {src.name} ({src.stat().st_size / common.MIB:,.0f} MiB)")
    if reuse_corpus is not None:
        problem = common.corpus_mismatch(reuse_corpus, src, calls)
        if problem:
            raise CorpusMismatch(f"--corpus: {problem}")
        common.log(f"{clock()} reusing {reuse_corpus} (same input: sha256 checked); ingest not measured")
    common.warm(src)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = reuse_corpus or work / "corpus"
    versions = peer_versions()
    polars_v, python_v = f"polars {versions['polars']}", f"python {versions['python']}"
    stages: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "calls": calls,
        "seed": seed,
        "fault_every": fault_every,
        "input_mib": round(src.stat().st_size / common.MIB, 1),
        "repeat": repeat,
        "stages": stages,
    }

    def measured(
        fns: dict[str, Callable[[], common.Measure]], peers: tuple[str, ...]
    ) -> dict[str, common.Measure]:
        """`rounds` of `fns`, leaving out the peers named when baselines are off (ours only, once each
        when `repeat` is 1)."""
        chosen = {k: f for k, f in fns.items() if baselines or k not in peers}
        return rounds(chosen, repeat)

    def finish(load_end: list[float]) -> dict[str, Any]:
        result["load_average"] = {"start": load_start, "end": load_end}
        result["total_seconds"] = round(clock.elapsed(), 1)
        return result

    # ingest (run unless a corpus is reused: every other stage reads the corpus; recorded when selected)
    if reuse_corpus is None:

        def ingest_once() -> common.Measure:
            shutil.rmtree(corpus, ignore_errors=True)
            return common.run_cli("ingest", str(src), "-o", str(corpus), "-q", rss_limit_mib=rss_limit)

        fns: dict[str, Callable[[], common.Measure]] = {"ours": ingest_once}
        if "ingest" in want:
            fns["ndjson"] = lambda: common.run_child(NDJSON_CHILD, str(src))
        got = measured(fns, ("ndjson",)) if "ingest" in want else {"ours": ingest_once()}
        ours = got["ours"]
        if ours.killed_at_mib is not None:  # nothing else can run without a corpus
            common.log(f"{clock()} ingest stopped at the RSS limit of {rss_limit:,.0f} MiB")
            stages.append(_row("ingest", ours, []))
            return finish(load_average())
        if "ingest" in want:
            manifest = json.loads((corpus / "corpus.json").read_text())
            peers: list[Peer] = []
            notes: dict[str, Any] = {"rows": manifest.get("counts", manifest.get("rows", {}))}
            if "ndjson" in got:
                nd = got["ndjson"]
                assert nd.extra["rows"] == calls, (nd.extra, calls)
                peers.append((f"polars.read_ndjson ({nd.extra['setting']})", polars_v, "throughput", nd))
                notes["read_ndjson_setting"] = nd.extra["setting"]
                if "default_error" in nd.extra:
                    notes["read_ndjson_default_error"] = nd.extra["default_error"]
            stages.append(_row("ingest", ours, peers, notes))
            common.log(
                f"{clock()} ingest {ours.cpu_seconds:.1f} CPU s, peak RSS {ours.peak_rss_mib:,.0f} MiB"
            )
    common.warm(corpus)

    # mine --folds 5, audit (compared with that mine), the raw scan and genson, all in the same rounds
    contracts = work / "contracts-k5.json"

    def mine_once(where: Path = corpus, out: Path = contracts) -> common.Measure:
        return common.run_cli(
            "mine",
            str(where),
            "--folds",
            "5",
            "--seed",
            str(seed),
            "-o",
            str(out),
            "-q",
            rss_limit_mib=rss_limit,
        )

    genson: common.Measure | None = None
    mine_rules: dict[str, int] = {}
    if want & {"mine", "audit"}:
        fns = {"ours": mine_once}
        if "mine" in want:
            fns["scan"] = lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(MINE_COLUMNS))
            fns["genson"] = lambda: common.run_child(GENSON_CHILD, str(src))
        if "audit" in want:
            fold_opt = "--folds"

            def audit_once() -> common.Measure:
                shutil.rmtree(work / "audit-ledger", ignore_errors=True)
                return common.run_cli(
                    "audit", str(corpus), fold_opt, "5", "--seed", str(seed), "--ledger", str(work / "audit-ledger"),
                    "-o", str(work / "audit.json"), "-q", ok_exits=(0, 1), rss_limit_mib=rss_limit,
                )  # fmt: skip

            fns["audit"] = audit_once
        got = measured(fns, ("scan", "genson"))
        mine5 = got["ours"]
        mine_ok = mine5.killed_at_mib is None
        mine_rules = rule_codes(contracts) if mine_ok else {}
        if "mine" in want or "audit" in want:
            peers = []
            if "scan" in got:
                peers.append(("scan_parquet(mine columns).collect()", polars_v, "time", got["scan"]))
            if "genson" in got:
                genson = got["genson"]
                peers.append(
                    ("genson (schema inference, 2 classes)", f"genson {versions['genson']}", "time", genson)
                )
            stages.append(_row("mine --folds 5", mine5, peers, {"rules": mine_rules}))
            common.log(
                f"{clock()} mine --folds 5 {mine5.cpu_seconds:.1f} CPU s, peak RSS {mine5.peak_rss_mib:,.0f} MiB"
            )
        if "audit" in got:
            am = got["audit"]
            notes = {}
            if am.killed_at_mib is None:
                rep = json.loads((work / "audit.json").read_text())
                notes = {
                    "fire_rate": rep.get("fire_rate", {}).get("value"),
                    "detection": rep.get("detection", {}).get("overall", {}).get("value"),
                    "option": fold_opt,
                }
            peers = (
                [("our mine --folds 5", f"output-contracts {versions['output-contracts']}", "time", mine5)]
                if mine_ok
                else []
            )
            stages.append(_row("audit, 5 folds", am, peers, notes))
            common.log(f"{clock()} audit {am.cpu_seconds:.1f} CPU s, peak RSS {am.peak_rss_mib:,.0f} MiB")
    if genson is not None and mine_rules:
        ours_rules = mine_rules
        result["rule_classes"] = {
            "ours": {"classes": sorted(ours_rules), "count": len(ours_rules), "rules": ours_rules},
            "genson": {
                "classes": sorted(genson.extra["rules"]),
                "count": len(genson.extra["rules"]),
                "rules": genson.extra["rules"],
            },
        }

    # check: the corpus path, the stream, and check_call per call, against fastjsonschema
    if want & {"check", "stream", "call"}:
        if not contracts.is_file():
            mine_once()
            common.log(f"{clock()} mined the contract set check reads (untimed)")
        registry = work / "tools.json"
        common.run_cli("registry", "infer", str(corpus), "--contracts", str(contracts), "-o", str(registry))
        fjs_v = f"fastjsonschema {versions['fastjsonschema']}"
        receipts = work / "receipts.jsonl"
        if want & {"check", "stream"}:
            fns = {}
            if "check" in want:
                fns["corpus"] = lambda: common.run_cli(
                    "check", "-c", str(contracts), str(corpus), "-q", "-o", str(receipts), ok_exits=(0, 1),
                    rss_limit_mib=rss_limit,
                )  # fmt: skip
            if "stream" in want:
                fns["stream"] = lambda: common.run_cli(
                    "check", "-c", str(contracts), "-", "-q", "-o", str(work / "receipts-stream.jsonl"),
                    stdin=src, ok_exits=(0, 1), rss_limit_mib=rss_limit,
                )  # fmt: skip
            fns["fjs"] = lambda: common.run_child(FJS_FILE_CHILD, str(src), str(registry))
            if "check" in want:
                fns["scan"] = lambda: common.run_child(SCAN_CHILD, str(corpus), json.dumps(CHECK_COLUMNS))
            got = measured(fns, ("fjs", "scan"))
            fjs = got.get("fjs")
            fjs_peer: list[Peer] = (
                [("fastjsonschema (parse + validate, inferred schemas)", fjs_v, "time", fjs)] if fjs else []
            )
            fjs_notes = (
                {"peer_calls": fjs.extra["calls"], "peer_invalid": fjs.extra["invalid"]} if fjs else {}
            )
            for key, name, out in (
                ("corpus", "check (corpus)", receipts),
                ("stream", "check - (stream)", work / "receipts-stream.jsonl"),
            ):
                if key not in got:
                    continue
                m = got[key]
                notes = dict(fjs_notes)
                if m.killed_at_mib is None:
                    with open(out, "rb") as fh:
                        notes["receipts"] = sum(1 for _ in fh)
                peers = list(fjs_peer)
                if key == "corpus" and "scan" in got:
                    peers.append(("scan_parquet(check columns).collect()", polars_v, "time", got["scan"]))
                stages.append(_row(name, m, peers, notes))
                common.log(f"{clock()} {name} {m.cpu_seconds:.1f} CPU s, peak RSS {m.peak_rss_mib:,.0f} MiB")
        if "call" in want:
            limit = str(call_limit)
            fns = {
                "all": lambda: common.run_child(
                    CALL_CHILD, str(src), str(contracts), str(registry), limit, "null"
                ),
                "schema": lambda: common.run_child(
                    CALL_CHILD, str(src), str(contracts), str(registry), limit, json.dumps(SCHEMA_CODES)
                ),
                "fjs": lambda: common.run_child(FJS_CALL_CHILD, str(src), str(registry), limit),
            }
            got = measured(fns, ("fjs",))
            fjs = got.get("fjs")
            for key, name in (("all", "check_call (all classes)"), ("schema", "check_call (schema classes)")):
                m = got[key]
                n = m.extra["calls"]
                notes = {
                    "calls": n,
                    "rules": m.extra["rules"],
                    "receipts": m.extra["receipts"],
                    "us_per_call_cpu": round(m.cpu_seconds / n * 1e6, 3) if n else 0.0,
                }
                if key == "schema":
                    notes["codes"] = list(SCHEMA_CODES)
                peers = []
                if fjs is not None:
                    assert fjs.extra["calls"] == n, (fjs.extra, n)  # the same calls on both sides
                    notes["peer_us_per_call_cpu"] = round(fjs.cpu_seconds / n * 1e6, 3) if n else 0.0
                    notes["peer_invalid"] = fjs.extra["invalid"]
                    peers.append(("fastjsonschema validator per call", fjs_v, "time", fjs))
                stages.append(_row(name, m, peers, notes))
                common.log(f"{clock()} {name} {notes['us_per_call_cpu']:.1f} CPU µs/call")

    # ledger
    if "ledger" in want:
        led = work / "ledger"
        got = measured(
            {
                "ours": lambda: common.run_child(LEDGER_CHILD, str(ledger_entries), "1000", str(led)),
                "raw": lambda: common.run_child(
                    RAW_WRITE_CHILD, str(led / "ledger.jsonl"), str(work / "raw.jsonl"), "1000"
                ),
            },
            ("raw",),
        )
        peers = [("write same bytes, fsync per batch", python_v, "time", got["raw"])] if "raw" in got else []
        stages.append(
            _row(
                "ledger append",
                got["ours"],
                peers,
                {"entries": ledger_entries, "bytes": got["ours"].extra["bytes"]},
            )
        )
        got = measured(
            {
                "ours": lambda: common.run_cli("ledger", "verify", str(led)),
                "raw": lambda: common.run_child(RAW_HASH_CHILD, str(led / "ledger.jsonl")),
            },
            ("raw",),
        )
        peers = [("sha256 per line", python_v, "time", got["raw"])] if "raw" in got else []
        stages.append(_row("ledger verify", got["ours"], peers, {"entries": ledger_entries}))
        common.log(f"{clock()} ledger done")

    if reuse_corpus is not None:
        for row in stages:
            row["notes"]["corpus_reused"] = True

    # the scale point: a second size ingested and mined once (linearity of mining, flatness of ingest RSS)
    if "scale" in want and scale_calls > 0 and scale_calls != calls:
        s_src = common.world_input(scale_calls, seed, fault_every, data)
        common.warm(s_src)
        s_corpus = work / "scale-corpus"
        ing = common.run_cli("ingest", str(s_src), "-o", str(s_corpus), "-q", rss_limit_mib=rss_limit)
        scale: dict[str, Any] = {"calls": scale_calls, "ingest": _m(ing)}
        if ing.killed_at_mib is None:
            common.warm(s_corpus)
            mined = mine_once(s_corpus, work / "scale-contracts.json")
            scale["mine"] = _m(mined)
        result["scale"] = scale
        shutil.rmtree(s_corpus, ignore_errors=True)
        common.log(f"{clock()} scale point {scale_calls:,} calls done")
    return finish(load_average())


def machine() -> dict[str, Any]:
    """Where the figures come from (no host names)."""
    import polars as pl

    return {
        "cpus": os.cpu_count() or 0,
        "python": platform.python_version(),
        "polars": pl.__version__,
        "system": platform.system(),
        "versions": peer_versions(),
    }


# ---------------------------------------------------------------------------------------------------
# the performance targets (docs/performance.md), evaluated on what a run measured


def _stage_of(run: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((s for s in run["stages"] if s["stage"] == name), None)


def _peer_ratio(run: dict[str, Any], stage: str, peer_prefix: str) -> tuple[float | None, float | None]:
    """(CPU ratio, wall ratio) of `stage` against its peer whose name starts with `peer_prefix`."""
    s = _stage_of(run, stage)
    p = next((p for p in (s or {}).get("peers", []) if p["name"].startswith(peer_prefix)), None)
    return (p["ratio"]["cpu"], p["ratio"]["wall"]) if p else (None, None)


def _sized(run: dict[str, Any], what: str) -> dict[int, dict[str, Any]]:
    """calls -> our measure of `what` ("ingest" or "mine") at each size this run measured."""
    stage = {"ingest": "ingest", "mine": "mine --folds 5"}[what]
    out: dict[int, dict[str, Any]] = {}
    s = _stage_of(run, stage)
    if s is not None and "killed_at_mib" not in s["ours"]:
        out[run["calls"]] = s["ours"]
    scale = run.get("scale") or {}
    if what in scale and "killed_at_mib" not in scale[what]:
        out[scale["calls"]] = scale[what]
    return out


def targets(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with the value measured in this run (None: not measured at this size or stage), the
    comparison, and whether it is met (None when not measured). CPU ratios decide; wall is beside."""
    out: list[dict[str, Any]] = []

    def add(key: str, text: str, op: str, value: float, measured: float | None, **extra: Any) -> None:
        met = None if measured is None else (measured <= value if op == "<=" else measured >= value)
        out.append(
            {"id": key, "text": text, "op": op, "value": value, "measured": measured, "met": met, **extra}
        )

    cpu, wall = _peer_ratio(run, "mine --folds 5", "scan_parquet")
    add("mine_vs_scan", "mine --folds 5 / raw scan of its columns (CPU)", "<=", 10.0, cpu, wall=wall)
    cpu, wall = _peer_ratio(run, "mine --folds 5", "genson")
    add(
        "mine_vs_genson",
        "mine --folds 5 / genson's inference on the same results (CPU)",
        "<=",
        1.0,
        cpu,
        wall=wall,
    )
    rc = run.get("rule_classes")
    missing = len(set(rc["genson"]["classes"]) - set(rc["ours"]["classes"])) if rc else None
    add("mine_classes", "classes genson finds that mine does not", "<=", 0, missing)
    sizes = _sized(run, "mine")
    lin = None
    if len(sizes) == 2:
        lo, hi = sorted(sizes)
        lin = _ratio(sizes[hi]["cpu_seconds"] / hi, sizes[lo]["cpu_seconds"] / lo)
    add(
        "mine_linear",
        "mine --folds 5 CPU per call, larger size / smaller size"
        + (f" ({min(sizes):,} -> {max(sizes):,})" if lin else ""),
        "<=",
        1.25,
        lin,
    )
    big = [v for k, v in sizes.items() if k >= 10_000_000]
    add(
        "mine_rss_10m",
        "mine --folds 5 peak RSS at 10M calls (MiB)",
        "<=",
        2048.0,
        big[0]["peak_rss_mib"] if big else None,
    )
    cpu, wall = _peer_ratio(run, "check_call (schema classes)", "fastjsonschema")
    add(
        "call_schema",
        "check_call / fastjsonschema per call, classes a JSON Schema can state (CPU)",
        "<=",
        1.0,
        cpu,
        wall=wall,
    )
    cpu, wall = _peer_ratio(run, "check_call (all classes)", "fastjsonschema")
    add("call_all", "check_call / fastjsonschema per call, all classes (CPU)", "<=", 2.0, cpu, wall=wall)
    s = _stage_of(run, "check - (stream)")
    rate = None
    if s is not None and s["ours"]["cpu_seconds"] > 0 and "killed_at_mib" not in s["ours"]:
        rate = round(run["calls"] / s["ours"]["cpu_seconds"], 1)
    add("stream_rate", "check - streams calls per CPU second", ">=", 100_000.0, rate)
    cpu, wall = _peer_ratio(run, "ingest", "polars.read_ndjson")
    add("ingest_vs_ndjson", "ingest throughput / polars.read_ndjson (CPU)", ">=", 1.0, cpu, wall=wall)
    isizes = _sized(run, "ingest")
    flat = None
    if len(isizes) == 2:
        lo, hi = sorted(isizes)
        flat = _ratio(isizes[hi]["peak_rss_mib"], isizes[lo]["peak_rss_mib"])
    add(
        "ingest_rss_flat",
        "ingest peak RSS, larger size / smaller size"
        + (f" ({min(isizes):,} -> {max(isizes):,})" if flat else ""),
        "<=",
        1.25,
        flat,
    )
    cpu, wall = _peer_ratio(run, "audit, 5 folds", "our mine")
    add("audit_vs_mine", "audit, 5 folds / mine --folds 5 (CPU)", "<=", 1.5, cpu, wall=wall)
    return out


#: Run-level figures and the stage rows they are computed from: an earlier run's figure is kept only
#: when the new run measured none of those stages (otherwise it would mix two runs).
DERIVED = {"rule_classes": ("mine --folds 5",)}


def _stage_order(row: dict[str, Any]) -> int:
    name = row["stage"]
    return STAGE_NAMES.index(name) if name in STAGE_NAMES else len(STAGE_NAMES)


def merge_run(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the stages it did not measure kept from `old`, the earlier entry of the same size, and
    its targets recomputed from the merged rows.

    Only an earlier run of the same input (seed and fault rate) contributes; its kept rows are marked
    `notes.from_earlier_run`, so a `--corpus` run (no ingest) does not erase the ingest figure, and a
    stage that ran again replaces the earlier row whole."""
    out = dict(new)
    if old is not None and (old.get("seed"), old.get("fault_every")) == (new["seed"], new["fault_every"]):
        measured = {s["stage"] for s in new["stages"]}
        kept = [
            {**s, "notes": {**s.get("notes", {}), "from_earlier_run": True}}
            for s in old["stages"]
            if s["stage"] not in measured
        ]
        out["stages"] = sorted(new["stages"] + kept, key=_stage_order)
        for key, sources in DERIVED.items():
            if key not in new and key in old and not measured & set(sources):
                out[key] = old[key]
        if "scale" not in new and "scale" in old:
            out["scale"] = {**old["scale"], "from_earlier_run": True}
    out["targets"] = targets(out)
    return out


def merge(path: Path, new_run: dict[str, Any]) -> dict[str, Any]:
    """The results document with `new_run` merged into the entry of its size (`merge_run`; other sizes
    kept as they are). Entries of an earlier results format are dropped (their rows had no peers)."""
    runs: list[dict[str, Any]] = []
    if path.is_file():
        try:
            old_doc = json.loads(path.read_text())
            runs = old_doc.get("runs", []) if old_doc.get("version") == RESULTS_VERSION else []
        except (OSError, ValueError):
            runs = []
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    old = next((r for r in runs if r.get("calls") == new_run["calls"]), None)
    # each run keeps its own date: the by-size table sets runs of different days side by side
    merged = {**merge_run(old, new_run), "measured_at": now}
    runs = [r for r in runs if r.get("calls") != new_run["calls"]] + [merged]
    return {
        "version": RESULTS_VERSION,
        "machine": machine(),
        "measured_at": now,
        "runs": sorted(runs, key=lambda r: r["calls"]),
    }


# ---------------------------------------------------------------------------------------------------
# Markdown


def _fmt_s(x: float) -> str:
    return f"{x:,.3f}" if x < 1 else f"{x:,.2f}" if x < 10 else f"{x:,.1f}"


def _fmt_v(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.2f}" if x != int(x) else f"{x:g}"


def markdown(doc: dict[str, Any], calls: int) -> str:
    """The table of the run of `calls` (one line per stage and peer), its targets, the scale point,
    then peak RSS per stage for every size recorded."""
    run = next(r for r in doc["runs"] if r["calls"] == calls)
    v = doc["machine"]["versions"]
    la = run.get("load_average", {})
    load = (
        f"load average (1/5/15 min) {'/'.join(f'{x:g}' for x in la['start'])} at the start, "
        f"{'/'.join(f'{x:g}' for x in la['end'])} at the end"
        if la
        else "load average not recorded"
    )
    lines = [
        f"# Benchmark results: {calls:,} calls",
        "",
        f"Generated by `bench/run_all.py` (`make bench`); input {run['input_mib']:,} MiB of sample-world JSONL "
        f"(seed {run['seed']}, every {run['fault_every']}th task faulty); {doc['machine']['cpus']} CPUs, "
        f"python {v['python']}; peers: polars {v['polars']}, genson {v['genson']}, fastjsonschema "
        f"{v['fastjsonschema']}; measured {run.get('measured_at', doc['measured_at'])}; {load}; whole run "
        f"{run['total_seconds']:,} s.",
        f"Each figure is the median of {run.get('repeat', 1)} runs, ours and the peers interleaved, each in a "
        "fresh process. CPU = CPU seconds of the timed part (the process with all its threads, plus its "
        "child processes); ratio = ours / peer (lower is better), except ingest: throughput = peer time / "
        "our time (higher is better). Wall seconds on a shared machine include waiting for the neighbours: "
        "the CPU ratio decides.",
        "",
        "| stage | ours CPU (s) | ours wall (s) | peak RSS (MiB) | peer | peer CPU (s) | peer wall (s) | ratio CPU | ratio wall |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for s in run["stages"]:
        o = s["ours"]
        ours = f"| {s['stage']} | {_fmt_s(o['cpu_seconds'])} | {_fmt_s(o['seconds'])} | {o['peak_rss_mib']:,.0f} |"
        flags = []
        if o.get("killed_at_mib"):
            flags.append(f"stopped at the {o['killed_at_mib']:,.0f} MiB RSS limit")
        if s["notes"].get("from_earlier_run"):
            flags.append("earlier run (not re-measured)")
        if not s["peers"]:
            lines.append(f"{ours} {'; '.join(flags) or '—'} | — | — | — | — |")
        for p in s["peers"]:
            name = f"{p['name']}, {p['version']}" + (f" ({'; '.join(flags)})" if flags else "")
            kind = " throughput" if p["ratio"]["kind"] == "throughput" else ""
            lines.append(
                f"{ours} {name} | {_fmt_s(p['cpu_seconds'])} | {_fmt_s(p['seconds'])} | "
                f"{p['ratio']['cpu']:.2f}×{kind} | {p['ratio']['wall']:.2f}× |"
            )
    notes = []
    ing = _stage_of(run, "ingest")
    if ing and "read_ndjson_default_error" in ing["notes"]:
        notes.append(
            f"`polars.read_ndjson` with its default inference fails on this data "
            f"(`{ing['notes']['read_ndjson_default_error']}`), so the peer is the setting that reads it, "
            f"`{ing['notes']['read_ndjson_setting']}`."
        )
    for name in ("check_call (all classes)", "check_call (schema classes)"):
        s = _stage_of(run, name)
        if s and "peer_us_per_call_cpu" in s["notes"]:
            n = s["notes"]
            notes.append(
                f"{name}: {n['us_per_call_cpu']:.2f} CPU µs/call with {n['rules']} rules, fastjsonschema "
                f"{n['peer_us_per_call_cpu']:.2f} µs/call, on the same {n['calls']:,} calls "
                f"({n['receipts']:,} receipts; {n['peer_invalid']:,} invalid for fastjsonschema)."
            )
    if any(s["notes"].get("corpus_reused") for s in run["stages"]):
        notes.append(
            "Ingest was not measured in the latest run of this size: it reused a corpus (`--corpus`)."
        )
    if any(s["notes"].get("from_earlier_run") for s in run["stages"]):
        notes.append("Rows marked *earlier run* are kept from an earlier run of this size (not re-measured).")
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    lines += [
        "",
        "## Targets (CPU ratios)",
        "",
        "| target | measured | goal | result |",
        "|---|---:|---:|---|",
    ]
    for t in run.get("targets", []):
        if t["measured"] is None:
            got, verdict = "—", "not measured in this run"
        else:
            got = _fmt_v(t["measured"]) + (f" (wall {t['wall']:.2f})" if t.get("wall") is not None else "")
            verdict = "PASS" if t["met"] else "**FAIL**"
        lines.append(f"| {t['text']} | {got} | {t['op']} {_fmt_v(t['value'])} | {verdict} |")
    lines += [
        "",
        "The targets' sizes are 1M calls (ratios), 100k to 10M (linearity) and 1M to 10M (flat ingest RSS); "
        "a run at another size states the sizes it measured.",
    ]
    sc = run.get("scale")
    if sc:
        rows = []
        for what, label in (("ingest", "ingest"), ("mine", "mine --folds 5")):
            for n, m in sorted(_sized(run, what).items()):
                rows.append(
                    f"| {n:,} | {label} | {_fmt_s(m['cpu_seconds'])} | {m['cpu_seconds'] / n * 1e6:,.1f} | "
                    f"{m['peak_rss_mib']:,.0f} |"
                )
        lines += [
            "",
            f"## Scale (the second size ingested and mined once{'; earlier run' if sc.get('from_earlier_run') else ''})",
            "",
            "| calls | stage | CPU (s) | CPU µs per call | peak RSS (MiB) |",
            "|---:|---|---:|---:|---:|",
            *rows,
        ]
    rc = run.get("rule_classes")
    if rc:
        lines += [
            "",
            f"Rule classes found: ours {rc['ours']['count']} ({', '.join(rc['ours']['classes'])}); "
            f"genson {rc['genson']['count']} ({', '.join(rc['genson']['classes'])}).",
            "Rules (full checker): ours "
            + ", ".join(f"{k} {v:,}" for k, v in rc["ours"]["rules"].items())
            + "; genson "
            + ", ".join(f"{k} {v:,}" for k, v in rc["genson"]["rules"].items())
            + ".",
        ]
    if len(doc["runs"]) > 1:
        sizes = [r["calls"] for r in doc["runs"]]
        names = list(dict.fromkeys(s["stage"] for r in doc["runs"] for s in r["stages"]))
        lines += [
            "",
            "## Peak RSS (MiB) by corpus size",
            "",
            "| stage | " + " | ".join(f"{n:,} calls" for n in sizes) + " |",
            "|---|" + "---:|" * len(sizes),
        ]
        for name in names:
            cells = []
            for r in doc["runs"]:
                st = _stage_of(r, name)
                if st and st["ours"].get("killed_at_mib"):
                    cells.append(f"> {st['ours']['killed_at_mib']:,.0f} (stopped at the limit)")
                else:
                    cells.append(f"{st['ours']['peak_rss_mib']:,.0f}" if st else "")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        dates = [r.get("measured_at", "not recorded") for r in doc["runs"]]
        lines.append("| *measured* | " + " | ".join(dates) + " |")
    return "\n".join(lines) + "\n"


def default_scale(calls: int) -> int:
    """The second size of the scale point: ten times the run up to 1M calls, else a tenth."""
    return calls * 10 if calls * 10 <= 1_000_000 else calls // 10


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--calls",
        type=int,
        default=100_000,
        help="corpus size (default 100,000; the targets are stated at 1,000,000)",
    )
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--fault-every", type=int, default=generate.DEFAULT_FAULT_EVERY)
    ap.add_argument(
        "--repeat", type=int, default=3, help="interleaved runs per measurement, median counts (3)"
    )
    ap.add_argument(
        "--scale-calls",
        type=int,
        default=None,
        help="second size ingested and mined once for linearity (default 10x --calls up to 1M, else a tenth; 0: none)",
    )
    ap.add_argument(
        "--call-limit",
        type=int,
        default=200_000,
        help="calls in the per-call check_call comparison (200,000)",
    )
    ap.add_argument("--ledger-entries", type=int, default=None, help="default: --calls")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results.json", dest="json_out")
    ap.add_argument("--markdown", type=Path, default=ROOT / "bench" / "results.md")
    ap.add_argument("--data", type=Path, default=DATA, help="where generated inputs are cached (bench/data)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default DATA/run-N)")
    ap.add_argument(
        "--stages",
        default=None,
        help=f"comma-separated subset of {','.join(STAGE_KEYS)} (default: all; with --corpus all but ingest)",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="reuse this corpus, ingested earlier from the same generated input (read only): skips ingest",
    )
    ap.add_argument("--no-baselines", action="store_true", help="measure only our side (the 10M memory run)")
    ap.add_argument(
        "--rss-limit-mib",
        type=float,
        default=12288,
        help="kill a stage of ours whose RSS passes this (recorded as killed; default 12288 MiB)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (corpus, contracts)")
    ns = ap.parse_args(argv)
    default = ",".join(k for k in STAGE_KEYS if not (ns.corpus and k == "ingest"))
    stages = tuple(x.strip() for x in (ns.stages or default).split(",") if x.strip())
    if not stages or set(stages) - set(STAGE_KEYS):
        ap.error(f"--stages: choose from {', '.join(STAGE_KEYS)}")
    if ns.repeat < 1:
        ap.error("--repeat: at least 1")
    work = ns.work or ns.data / f"run-{ns.calls}"
    if ns.corpus is not None:  # checked here, before anything can delete the scratch folder
        if "ingest" in stages:
            ap.error("--corpus skips ingest: leave ingest out of --stages")
        if not (ns.corpus / "corpus.json").is_file():
            ap.error(f"--corpus: {ns.corpus} is not a corpus (no corpus.json)")
        if ns.corpus.resolve().is_relative_to(work.resolve()):
            ap.error(f"--corpus: {ns.corpus} lies inside the scratch folder {work}, which is deleted")
    try:
        result = run(
            ns.calls,
            ns.seed,
            ns.fault_every,
            ns.ledger_entries or ns.calls,
            work,
            ns.data,
            stages,
            not ns.no_baselines,
            ns.rss_limit_mib,
            ns.corpus,
            ns.repeat,
            default_scale(ns.calls) if ns.scale_calls is None else ns.scale_calls,
            ns.call_limit,
        )
    except common.ChildFailed as e:
        common.log(f"bench failed: {e}")
        return 2
    except CorpusMismatch as e:
        common.log(f"bench: {e}")
        return 2
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    doc = merge(ns.json_out, result)
    write_json(ns.json_out, doc)
    md = markdown(doc, ns.calls)
    atomic_write_bytes(ns.markdown, md.encode())
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
