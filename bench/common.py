"""Shared helpers of the benchmarks: run one measurement in a fresh child process, read its peak RSS.

Why a child per measurement: peak RSS is a high-water mark of a process, so two measurements in one
process would hide the smaller one, and a warm interpreter (imported modules, cached frames) would
flatter whichever runs second. Each child here is waited for with `os.wait4`, which returns the
resource usage of *that* child alone (its peak RSS and CPU seconds, including any helpers it waited
for), so nothing depends on the order measurements run in.

Timing: the child times its own work with `time.perf_counter()` and `_cpu()` (`time.process_time()`,
the CPU of all its threads, plus the CPU of any child process it waited for) around the call (interpreter start-up, imports and untimed warm-up runs excluded on both
sides, so the ratio compares work with work) and writes a small JSON result to the file named by
`$BENCH_RESULT`. Wall time is the headline; CPU seconds are recorded beside
it, because on a shared machine wall time also measures the neighbours.

Page cache: `warm(path)` reads files once before anything is timed, so neither side pays the first
cold read from disk; the peers that scan Parquet also run their scan once untimed before the timed run.
Repeated measurements are reduced with `median_of` (median wall and CPU, highest peak RSS).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
MIB = 2**20

#: Prepended to every child: `RESULT` is filled by the child's code and written at exit (also on
#: SystemExit, which the CLI raises), so a child's figures survive its own exit code.
PRELUDE = """
import atexit, json, os, resource, sys, time
RESULT = {}
def _cpu():
    # CPU seconds of this process (all threads: polars' pool counts) and of the children it waited for
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + c.ru_utime + c.ru_stime
def _bench_write():
    with open(os.environ["BENCH_RESULT"], "w") as fh:
        json.dump(RESULT, fh)
atexit.register(_bench_write)
"""

#: Runs the CLI in-process with the given argv, timing only `main()` (imports excluded).
CLI_CHILD = """
sys.argv = ["contracts", *sys.argv[1:]]
from output_contracts.cli.app import main
t = time.perf_counter(); c0 = _cpu()
try:
    main()
    RESULT["exit"] = 0
except SystemExit as e:
    RESULT["exit"] = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
RESULT["seconds"] = time.perf_counter() - t; RESULT["cpu"] = _cpu() - c0
"""


@dataclass(frozen=True)
class Measure:
    """One child's figures: its own timed seconds, CPU seconds, peak RSS, exit code and extra output."""

    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    exit: int
    extra: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    killed_at_mib: float | None = None  # set when the RSS watchdog stopped the child
    cpu_runs: tuple[float, ...] = ()  # CPU seconds of each repetition (`median_of`)


class ChildFailed(RuntimeError):
    """A measured child exited with an unexpected code; the message carries its stderr tail."""


def run_child(
    code: str,
    *args: str,
    stdin: Path | None = None,
    ok_exits: tuple[int, ...] = (0,),
    env: dict[str, str] | None = None,
    rss_limit_mib: float | None = None,
) -> Measure:
    """Run `PRELUDE + code` in a fresh interpreter (cwd = repo root) and measure it.

    `code` must set `RESULT["seconds"]` (the timed part); anything else it puts in `RESULT` comes back
    in `Measure.extra`. stdout goes to /dev/null (data outputs are written to files or discarded);
    stderr is kept for error messages. Exit codes outside `ok_exits` raise `ChildFailed`.

    `rss_limit_mib`: a watchdog polls the child's resident set (/proc/PID/status, every 0.2 s) and
    kills it when it passes the limit, so a stage that does not stream cannot take a shared machine
    down with it; the result then has `killed_at_mib` set and the seconds it ran until then.
    """
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        result_file = Path(tmp) / "result.json"
        err_file = Path(tmp) / "stderr.txt"
        child_env = {**os.environ, "BENCH_RESULT": str(result_file), **(env or {})}
        with (
            open(stdin if stdin else os.devnull, "rb") as fin,
            open(os.devnull, "wb") as fout,
            open(err_file, "wb") as ferr,
        ):
            proc = subprocess.Popen(
                [sys.executable, "-c", PRELUDE + code, *args],
                cwd=ROOT,
                stdin=fin,
                stdout=fout,
                stderr=ferr,
                env=child_env,
            )
            t0 = time.perf_counter()
            killed = _watch(proc.pid, rss_limit_mib) if rss_limit_mib else False
            _pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = err_file.read_text(errors="replace")
        if killed:
            return Measure(
                seconds=time.perf_counter() - t0,
                cpu_seconds=usage.ru_utime + usage.ru_stime,
                peak_rss_mib=usage.ru_maxrss / 1024,
                exit=proc.returncode,
                stderr=stderr,
                killed_at_mib=rss_limit_mib,
            )
        if proc.returncode not in ok_exits:
            raise ChildFailed(f"child exited {proc.returncode}:\n{stderr[-3000:]}")
        result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.exists() else {}
    seconds = float(result.pop("seconds"))
    cpu = result.pop("cpu", None)
    exit_code = int(result.pop("exit", proc.returncode))
    if exit_code not in ok_exits:
        raise ChildFailed(f"command exited {exit_code}:\n{stderr[-3000:]}")
    return Measure(
        seconds=seconds,
        cpu_seconds=float(cpu) if cpu is not None else usage.ru_utime + usage.ru_stime,
        peak_rss_mib=usage.ru_maxrss / 1024,  # Linux reports KiB
        exit=exit_code,
        extra=result,
        stderr=stderr,
    )


def _rss_mib(pid: int) -> float:
    """Current resident set of a live process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _watch(pid: int, limit_mib: float) -> bool:
    """Poll until the child exits (True if it was killed for passing `limit_mib`); it stays a zombie
    for `os.wait4` to reap."""
    while True:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except OSError:
            return False
        if _rss_mib(pid) > limit_mib:
            os.kill(pid, signal.SIGKILL)
            return True
        time.sleep(0.2)


def child_stdout(code: str, *args: str) -> str:
    """Run `code` (no prelude, nothing measured) in a fresh interpreter in the repo root: its stdout, or
    SystemExit with its stderr (the per-phase profiles of `bench/audit.py` and `bench/ingest.py`)."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def run_cli(
    *argv: str,
    stdin: Path | None = None,
    ok_exits: tuple[int, ...] = (0,),
    rss_limit_mib: float | None = None,
) -> Measure:
    """Measure `contracts ARGV...` run in-process in a fresh child (the same code path as the CLI)."""
    return run_child(CLI_CHILD, *argv, stdin=stdin, ok_exits=ok_exits, rss_limit_mib=rss_limit_mib)


def warm(*paths: Path) -> int:
    """Read every file under `paths` once so the page cache holds them; return the bytes read."""
    total = 0
    for p in paths:
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        for f in files:
            with open(f, "rb") as fh:
                while chunk := fh.read(16 * MIB):
                    total += len(chunk)
    return total


def median_of(runs: list[Measure]) -> Measure:
    """The median wall and the median CPU seconds of repeated runs of one measurement (each median
    taken on its own), the highest peak RSS, and every run's CPU seconds: on a shared machine one
    run can be slowed by a neighbour, the median of three is not."""
    if not runs:
        raise ValueError("median_of: no runs")
    return Measure(
        seconds=statistics.median(m.seconds for m in runs),
        cpu_seconds=statistics.median(m.cpu_seconds for m in runs),
        peak_rss_mib=max(m.peak_rss_mib for m in runs),
        exit=runs[-1].exit,
        extra=runs[-1].extra,
        killed_at_mib=next((m.killed_at_mib for m in runs if m.killed_at_mib is not None), None),
        cpu_runs=tuple(m.cpu_seconds for m in runs),
    )


class Clock:
    """Elapsed wall time of the whole benchmark, for the progress lines on stderr."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def __call__(self) -> str:
        return f"[{self.elapsed():6.0f} s]"


def log(msg: str) -> None:
    """Progress text for people: stderr, flushed (stdout carries the table)."""
    print(msg, file=sys.stderr, flush=True)


def world_args(ap: Any, calls: int = 1_000_000) -> None:
    """The options of the generated world every stage script takes: `--calls`, `--seed`,
    `--fault-every`, `--data` (what `world_input` reads)."""
    import generate  # bench/ is on sys.path wherever this module is imported

    ap.add_argument("--calls", type=int, default=calls)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--fault-every", type=int, default=generate.DEFAULT_FAULT_EVERY)
    ap.add_argument("--data", type=Path, default=DATA, help="where inputs are cached (bench/data)")


def world_input(calls: int, seed: int = 13, fault_every: int | None = None, data: Path = DATA) -> Path:
    """The sample world's flat JSONL of `calls` records (`bench/generate.py`), generated once into `data`:
    the one input every benchmark reads, cached under the same name by all of them."""
    import generate  # bench/ is on sys.path wherever this module is imported

    fe = generate.DEFAULT_FAULT_EVERY if fault_every is None else fault_every
    return generate.ensure(data / f"world-{calls}-{seed}-f{fe}.jsonl", calls, seed, fe)


def world_corpus(calls: int, seed: int = 13, fault_every: int | None = None, data: Path = DATA) -> Path:
    """`world_input(...)` ingested once (`contracts ingest`, in a child) into `data/<input>.corpus/`.

    Ingest writes to a temporary sibling folder that is renamed when complete, so a cached folder is
    always a finished corpus; delete it to re-ingest (for instance after a change to ingest)."""
    src = world_input(calls, seed, fault_every, data)
    folder = src.with_name(src.stem + ".corpus")
    if not (folder / "corpus.json").is_file():
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        run_cli("ingest", str(src), "-o", str(tmp), "-q")
        tmp.replace(folder)
    return folder


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (what ingest records per source in `corpus.json`)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def corpus_mismatch(corpus: Path, src: Path, calls: int) -> str | None:
    """Why `corpus` is not the ingest of exactly `src` (`calls` calls, no other source), or None.

    Compared: one source in `corpus.json`, with the sha256 and size of `src`, and the call count."""
    manifest_file = corpus / "corpus.json"
    if not manifest_file.is_file():
        return f"{corpus} is not a corpus (no corpus.json)"
    manifest = json.loads(manifest_file.read_text())
    sources = manifest.get("sources", [])
    if len(sources) != 1:
        return f"{corpus} holds {len(sources)} sources, not the one input {src.name}"
    if sources[0].get("bytes") != src.stat().st_size or sources[0].get("sha256") != file_sha256(src):
        return f"{corpus} was not ingested from {src.name} (sha256 or size differ)"
    got = manifest.get("counts", {}).get("calls")
    if got != calls:
        return f"{corpus} holds {got} calls, not {calls}"
    return None
