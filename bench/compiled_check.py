#!/usr/bin/env python3
"""Benchmark the per-call checker: the generic engine, the compiled checker and fastjsonschema, per call.

    python bench/compiled_check.py                 # sample world + τ-bench airline and retail, JSON on stdout
    python bench/compiled_check.py --tasks 150 --reps 5 --stream-calls 100000

Inputs, the same calls for every contender:
* the sample world (`sample_traces/`, clean and faulty parts): its contract set is the committed one
  (`tests/golden/sample-contracts.json`, mined from the clean part);
* τ-bench airline and retail (`--domains`): `bench/tau_tools.py` runs τ-bench's own tool code on its
  database (read from `../shared/data`), contracts mined (one fold) from the first half of the tasks;
  every call is checked.

The schema fastjsonschema validates is the one `contracts registry infer` writes from the same contract
set and corpus (`infer_registry`: required, type, enum, minimum/exclusiveMinimum), compiled once per
tool (`fastjsonschema.compile`); a call that fails raises `JsonSchemaException`, caught.

Contenders, on ok calls of tools the contract set knows:
* `engine`   — `check_call` through the generic engine (`rules.evaluate.call_violations`: a full node
               index of the call, then a finder per rule): the per-call path before the compiled checker.
* `compiled` — `check_call` as shipped (`rules.compiled`: one generated function per tool).
* `fastjsonschema` — `validate(result)` of the tool's inferred output schema.
Each is measured on "all classes" (every rule) and on "schema classes" (REQUIRED, TYPE, DOMAIN, POSITIVE,
NONNEG, RANGE, LENGTH: the rule classes a JSON Schema can state; `codes=` restricts the checker).

Timing: CPU seconds of this process (`time.process_time`), contenders interleaved (A B C A B C ...),
`--reps` repetitions, the median per call in µs; ratios are against fastjsonschema in the same run.
`check -` throughput: `contracts check -` in a child process fed `--stream-calls` sample-world lines on
stdin, receipts to /dev/null, child CPU from `RUSAGE_CHILDREN`; start-up (a one-line run, measured the
same way) is subtracted and reported apart. The JSON result goes to stdout; notes to stderr.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

from output_contracts.checks import checker as checker_mod
from output_contracts.checks.checker import check_call
from output_contracts.checks.receipts import Receipt, recovery_plan
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.engine.compiled import compiled_violations
from output_contracts.codes.engine.evaluate import call_violations
from output_contracts.mining import mine
from output_contracts.registry.infer import infer_registry
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_CODES = ("REQUIRED", "TYPE", "DOMAIN", "POSITIVE", "NONNEG", "RANGE", "LENGTH")
Call = tuple[str, dict[str, Any], Any]


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _tau_tools() -> Any:
    spec = importlib.util.spec_from_file_location("bench_tau_tools", ROOT / "bench" / "tau_tools.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _read_jsonl(paths: list[Path]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        with gzip.open(p) as fh:
            out.extend(orjson.loads(line) for line in fh if line.strip())
    return out


def _ok_calls(records: list[dict[str, Any]], cs: ContractSet) -> list[Call]:
    return [
        (r["tool"], r["arguments"], r["result"])
        for r in records
        if (r.get("status") or "ok") == "ok" and r["tool"] in cs.tools
    ]


def _schemas(cs: ContractSet, corpus: Corpus) -> dict[str, Callable[[Any], Any]]:
    reg = infer_registry(cs, corpus).registry
    return {name: fastjsonschema.compile(spec.output) for name, spec in reg.tools.items() if spec.output}


def sample_world(work: Path) -> tuple[ContractSet, list[Call], dict[str, Callable[[Any], Any]], list[bytes]]:
    cs = ContractSet.load(ROOT / "tests" / "golden" / "sample-contracts.json")
    clean = sorted((ROOT / "sample_traces" / "clean").glob("*.jsonl.gz"))
    faulty = sorted((ROOT / "sample_traces" / "faulty").glob("*.jsonl.gz"))
    ingest(clean, work / "sample-corpus")
    records = _read_jsonl(clean + faulty)
    lines = [orjson.dumps(r) for r in records]
    return cs, _ok_calls(records, cs), _schemas(cs, Corpus.open(work / "sample-corpus")), lines


def tau_domain(
    work: Path, data: Path, domain: str, tasks: int
) -> tuple[ContractSet, list[Call], dict[str, Callable[[Any], Any]]]:
    tt = _tau_tools()
    records = list(tt.generate(domain, tasks=tasks, trials=4, seed=1, data=data))
    head = [r for r in records if int(r["task_id"].rsplit("-", 1)[1]) < tasks // 2]
    src = work / f"{domain}-head.jsonl.gz"
    tt.write(iter(head), src)
    ingest([src], work / f"{domain}-corpus", registry=data / "tau_bench" / domain / "tools.json")
    corpus = Corpus.open(work / f"{domain}-corpus")
    cs = mine(corpus, folds=1, seed=13)
    return cs, _ok_calls(records, cs), _schemas(cs, corpus)


def _per_call(fn: Callable[[], None], n: int) -> float:
    t = time.process_time()
    fn()
    return (time.process_time() - t) / n * 1e6


def measure(
    cs: ContractSet, calls: list[Call], schemas: dict[str, Callable[[Any], Any]], reps: int
) -> dict[str, Any]:
    """Median per-call CPU µs of each contender, interleaved, on the calls."""
    jcalls = [(schemas[t], r) for t, _a, r in calls if t in schemas]

    def engine(codes: tuple[str, ...] | None) -> Callable[[], None]:
        def run() -> None:
            checker_mod.compiled_violations = call_violations  # type: ignore[assignment]
            try:
                for t, a, r in calls:
                    _receipt(cs, t, a, r, codes)
            finally:
                checker_mod.compiled_violations = compiled_violations

        return run

    def compiled(codes: tuple[str, ...] | None) -> Callable[[], None]:
        def run() -> None:
            for t, a, r in calls:
                _receipt(cs, t, a, r, codes)

        return run

    def fjs() -> None:
        for v, r in jcalls:
            try:  # noqa: SIM105 - contextlib.suppress would add a context manager per call to the timing
                v(r)
            except fastjsonschema.JsonSchemaException:
                pass

    contenders = {
        "engine_all": (engine(None), len(calls)),
        "compiled_all": (compiled(None), len(calls)),
        "engine_schema_classes": (engine(SCHEMA_CODES), len(calls)),
        "compiled_schema_classes": (compiled(SCHEMA_CODES), len(calls)),
        "fastjsonschema": (fjs, len(jcalls)),
    }
    for fn, _n in contenders.values():  # warm: programs compiled, caches filled
        fn()
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(reps):
        for k, (fn, n) in contenders.items():
            times[k].append(_per_call(fn, n))
    med = {k: statistics.median(v) for k, v in times.items()}
    fj = med["fastjsonschema"]
    invalid = 0
    for v, r in jcalls:
        try:
            v(r)
        except fastjsonschema.JsonSchemaException:
            invalid += 1
    return {
        "calls": len(calls),
        "calls_with_schema": len(jcalls),
        "schema_invalid_calls": invalid,
        "rules": len(cs.rules_for(None)),
        "tools": len(cs.tools),
        "us_per_call_median": {k: round(x, 3) for k, x in med.items()},
        "us_per_call_runs": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "ratio_vs_fastjsonschema": {
            "compiled_schema_classes": round(med["compiled_schema_classes"] / fj, 3),
            "compiled_all": round(med["compiled_all"] / fj, 3),
            "engine_schema_classes": round(med["engine_schema_classes"] / fj, 3),
            "engine_all": round(med["engine_all"] / fj, 3),
        },
        "speedup_compiled_vs_engine": {
            "all": round(med["engine_all"] / med["compiled_all"], 3),
            "schema_classes": round(med["engine_schema_classes"] / med["compiled_schema_classes"], 3),
        },
    }


def _receipt(cs: ContractSet, tool: str, args: Any, result: Any, codes: tuple[str, ...] | None) -> Any:
    if codes is None:
        return check_call(cs, tool, args, result)
    # check_call has no codes filter: the same work (a receipt when anything breaks) on fewer classes
    vs = checker_mod.compiled_violations(cs, tool, args, result, codes=codes)
    if not vs:
        return None
    rec, inferred = recovery_plan(cs, tool, None)
    return Receipt(
        tool=tool, result=result, violations=tuple(vs), recovery_tools=tuple(rec), recovery_inferred=inferred
    )


def stream(lines: list[bytes], contracts: Path, n_calls: int, work: Path) -> dict[str, Any]:
    """`contracts check -` CPU per call in a child, start-up subtracted."""
    exe = Path(sys.executable).with_name("contracts")
    cmd = [str(exe), "check", "-", "-c", str(contracts), "-q", "-o", os.devnull]

    def child(data: Path) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with data.open("rb") as fh:
            subprocess.run(cmd, stdin=fh, stdout=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    big = work / "stream.jsonl"
    one = work / "one.jsonl"
    with big.open("wb") as fh:
        # the sample world's lines, repeated with fresh trace ids until n_calls lines
        i = 0
        while i < n_calls:
            for line in lines:
                if i >= n_calls:
                    break
                rec = orjson.loads(line)
                rec["trace_id"] = f"{rec['trace_id']}-{i // len(lines)}"
                fh.write(orjson.dumps(rec) + b"\n")
                i += 1
    one.write_bytes(lines[0] + b"\n")
    runs = []
    starts = []
    for _ in range(3):
        starts.append(child(one))
        runs.append(child(big))
    start, total = statistics.median(starts), statistics.median(runs)
    work_s = max(total - start, 1e-9)
    return {
        "calls": n_calls,
        "cpu_s_total_median": round(total, 3),
        "cpu_s_startup_median": round(start, 3),
        "calls_per_s_excluding_startup": round(n_calls / work_s),
        "calls_per_s_including_startup": round(n_calls / total),
        "runs_cpu_s": [round(x, 3) for x in runs],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=150, help="τ-bench tasks per domain (4 trials each)")
    ap.add_argument(
        "--domains",
        nargs="*",
        default=["airline", "retail"],
        choices=["airline", "retail"],
        help="τ-bench domains",
    )
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--stream-calls", type=int, default=100_000)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    out: dict[str, Any] = {
        "benchmark": "compiled_check",
        "python": platform.python_version(),
        "fastjsonschema": fastjsonschema.VERSION,
        "load_average_start": os.getloadavg(),
        "timing": "CPU seconds of this process (time.process_time), interleaved, median of reps",
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        note("sample world: ingest, infer schemas")
        cs, calls, schemas, lines = sample_world(work)
        note(f"sample world: {len(calls)} calls, measuring")
        out["sample_world"] = measure(cs, calls, schemas, args.reps)
        for domain in args.domains:
            if not (args.data / "tau_bench" / domain).is_dir():
                out[f"tau_{domain}"] = {"skipped": f"no τ-bench {domain} data under {args.data}"}
                continue
            note(f"τ-bench {domain}: generate, ingest, mine, infer schemas")
            tcs, tcalls, tschemas = tau_domain(work, args.data, domain, args.tasks)
            note(f"τ-bench {domain}: {len(tcalls)} calls, measuring")
            out[f"tau_{domain}"] = measure(tcs, tcalls, tschemas, args.reps)
        if args.stream_calls:
            note(f"check -: {args.stream_calls} calls through the CLI")
            out["check_stdin"] = stream(
                lines, ROOT / "tests" / "golden" / "sample-contracts.json", args.stream_calls, work
            )
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
