"""Benchmark `contracts audit --folds 5` against `contracts mine --folds 5` on the same corpus.

    python bench/audit.py                    # 1,000,000 calls (inputs cached in bench/data/)
    python bench/audit.py --calls 100000
    python bench/audit.py --calls 100000 --phases   # CPU seconds of audit --folds 5 by phase
    python bench/audit.py --corpus DIR --phases     # the same on an ingested corpus (τ-bench retail, ...)

Input: the sample world's flat JSONL (`bench/generate.py`, the file `bench/run_all.py` reads: ten tools,
five episodes a task), whose every `--fault-every`-th task carries labelled injected faults — labelled
faults to detect, organic calls to fire on. It is ingested once into
`<data>/world-<calls>-<seed>-f<N>.corpus/` (cached beside the input; delete it to re-ingest).

Each measurement runs in a fresh interpreter that reports its own wall time and peak RSS
(`RUSAGE_SELF` at exit), one at a time:

* mine      — `mine(corpus, folds=5, seed=13)`: the 5 fold checkers and the full checker.
* audit     — what `contracts audit --folds 5` runs: mining as above (without mine's own verification),
              one flat checker pass giving the verification, the in-sample replay (full checker) and the
              cross-fitted replay, fire events into a frozen ledger, and scoring with 1,000
              task-clustered bootstrap resamples. Its stages are timed inside the child.
* audit (no in-sample) — the same without the in-sample comparison replay (`--no-in-sample`).

The ratio printed is audit CPU seconds / mine CPU seconds (the target: <= 1.5). Times are CPU
seconds (`time.process_time()`, every thread of the process): wall time on a shared machine also
measures the neighbours.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py: the one generated world every benchmark reads)

CHILD_MINE = """
import resource, sys, time
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
t = time.process_time()
cs = mine(Corpus.open(sys.argv[1]), folds=5, seed=13)
secs = time.process_time() - t
print(secs, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(cs.all_rules()))
"""

CHILD_AUDIT = """
import resource, sys, time
from output_contracts.audit import pipeline as A
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
corpus = Corpus.open(sys.argv[1])
in_sample = sys.argv[3] == "1"
t0 = time.process_time()
cs = mine(corpus, folds=5, seed=13, verify=not in_sample)
t1 = time.process_time()
rep = A.replay(cs, corpus, sys.argv[2], k=5, seed=13, in_sample=in_sample, corpus_name="bench", verify=in_sample)
t2 = time.process_time()
# the population digest was just computed from this corpus, as `contracts audit` passes it (audit_report)
report = A.rescore(rep, corpus, bootstrap=1000, population_verified=True)
t3 = time.process_time()
print(t3 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, t1 - t0, t2 - t1, t3 - t2,
      report["population"]["fired_calls"], report["fire_rate"]["value"], report["detection"]["overall"]["value"])
"""


#: `--phases`: the library audit (what `contracts audit --folds 5` runs on a corpus folder) with timers
#: wrapped around its parts (nothing re-implemented here). Each phase is exclusive: a timed part
#: called inside another is subtracted from it, so the phases add up to the total. CPU seconds of the
#: whole process, threads included.
CHILD_PHASES = """
import collections, sys, tempfile, time
from pathlib import Path
from output_contracts.audit import pipeline as A, scoring as S
from output_contracts.checks import checker as C
from output_contracts.mining import data as D, verify as V
from output_contracts.mining import mine
from output_contracts.codes.consistent import episodes as EP
from output_contracts.codes.engine import evaluate as E
from output_contracts.traces.corpus import Corpus
T = collections.defaultdict(float)
stack = []
def timed(name, fn):
    def run(*a, **kw):
        stack.append(0.0)
        t = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            spent = time.process_time() - t
            inner = stack.pop()
            T[name] += spent - inner
            if stack:
                stack[-1] += spent
    return run
for mod, attr, name in (
    (A, "checked_call_ids", "replay: population ids and digest"),
    (A, "population_digest", "replay: population ids and digest"),
    (E, "rule_entries", "checker: rule entries and operand tables"),
    (E, "_op_tables", "checker: rule entries and operand tables"),
    (E, "_find_batch", "checker: leaves joined to operands, per-code hits"),
    (E, "episode_violations", "checker: CONSISTENT episode pass"),
    (C, "find_violations", "checker: other"),
    (D, "clean_calls", "verification: clean calls and folds"),
    (V, "misfires_from", "verification: misfires"),
    (A, "_verified_in_sample", "verification: other"),
    (A, "_in_sample_refers", "in-sample: fired calls and references"),
    (EP, "episode_witnesses", "witnesses: CONSISTENT"),
    (C, "violation_frame", "witnesses: rendering (violation_frame)"),
    (A, "_cross_from_flat", "cross-fitted replay from the flat pass"),
    (A, "fire_events", "fire events (receipts)"),
    (A, "rule_catalog", "ledger: rule catalog and digests"),
    (A, "contracts_sha256", "ledger: rule catalog and digests"),
    (A, "truth_from_corpus", "scoring: truth"),
    (A, "propagation_episodes", "scoring: propagation"),
    (S, "bootstrap_rates", "scoring: bootstrap"),
    (A, "assemble", "scoring: other sections"),
):
    setattr(mod, attr, timed(name, getattr(mod, attr)))
corpus = Corpus.open(sys.argv[1])
t0 = time.process_time()
cs = mine(corpus, folds=5, seed=13, verify=False)
t1 = time.process_time()
with tempfile.TemporaryDirectory() as tmp:
    rep = A.replay(cs, corpus, Path(tmp) / "ledger", k=5, seed=13, in_sample=True, corpus_name="bench", verify=True)
    t2 = time.process_time()
    A.rescore(rep, corpus, bootstrap=1000, population_verified=True)  # as `contracts audit` does
t3 = time.process_time()
T["ledger: writing and other replay"] = (t2 - t1) - sum(v for k, v in T.items() if not k.startswith("scoring"))
T["scoring: other"] = (t3 - t2) - sum(v for k, v in T.items() if k.startswith("scoring"))
print(repr({"mine": t1 - t0, "total": t3 - t0, "phases": dict(T)}))
"""


def print_phases(corpus: Path) -> None:
    import ast

    r = ast.literal_eval(common.child_stdout(CHILD_PHASES, str(corpus)).strip().splitlines()[-1])
    mine_s, total = float(r["mine"]), float(r["total"])
    rest = total - mine_s
    print(
        f"audit --folds 5 by phase (CPU s): mine {mine_s:.3f}, the rest {rest:.3f} ({rest / mine_s:.3f}x mine)"
    )
    for name, cpu in sorted(r["phases"].items(), key=lambda kv: -kv[1]):
        print(f"  {name:52} {cpu:8.3f} {100 * cpu / rest:6.1f}%")
    print(f"  {'total (mine + the rest)':52} {total:8.3f}   audit / mine {total / mine_s:.3f}x")


def run_child(code: str, *args: str) -> list[str]:
    return common.child_stdout(code, *args).split()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.world_args(ap)
    ap.add_argument("--phases", action="store_true", help="only: CPU seconds of audit --folds 5 by phase")
    ap.add_argument(
        "--corpus", type=Path, help="an ingested corpus to measure instead of the generated world"
    )
    ns = ap.parse_args(argv)
    t = time.perf_counter()
    corpus = ns.corpus or common.world_corpus(ns.calls, ns.seed, ns.fault_every, ns.data)
    if ns.phases:
        print_phases(corpus)
        return 0
    print(f"input: {corpus.name} ({ns.calls:,} calls; ready in {time.perf_counter() - t:.1f} s)")
    secs_mine, rss_mine, n_rules = run_child(CHILD_MINE, str(corpus))
    print(
        f"{'mine --folds 5':29s}: {float(secs_mine):7.2f} CPU s  peak RSS {int(rss_mine) / 1024:,.0f} MiB  ({n_rules} rules)"
    )
    results = {}
    for label, flag in (("audit --folds 5", "1"), ("audit --folds 5 --no-in-sample", "0")):
        with tempfile.TemporaryDirectory() as tmp:
            out = run_child(CHILD_AUDIT, str(corpus), str(Path(tmp) / "ledger"), flag)
        secs, rss, m, r, s, fired, fire, det = out
        results[label] = float(secs)
        print(
            f"{label:29s}: {float(secs):7.2f} CPU s  peak RSS {int(rss) / 1024:,.0f} MiB  "
            f"(mine {float(m):.2f} s, replay+ledger {float(r):.2f} s, score+bootstrap {float(s):.2f} s; "
            f"{fired} fired calls, fire rate {float(fire):.4%}, detection {float(det):.2%})"
        )
    for label, audit_secs in results.items():
        print(f"ratio {label} / mine --folds 5: {audit_secs / float(secs_mine):.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
