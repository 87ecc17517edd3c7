#!/usr/bin/env python3
"""The incident suite of docs/audit.md, reproduced: detection per incident kind on three worlds.

    python bench/incident_suite.py [--work DIR] [--worlds sample,retail,airline] [--seeds 1,2]
                                   [--json out.json] [--markdown out.md]

Worlds: the sample world (`sample_traces/clean`, ingested with its registry; injection seeds 1 and 2 on
the one corpus) and τ-bench retail and airline (`bench/tau_tools.py`: the unmodified τ-bench tool code
on its public databases, 600 tasks × 2 trials; corpus seed s injected with seed s). Each run is
`audit --folds 5` with `--inject incidents` at rate 0.1, the contracts mined on the corpus before
injection, as `bench/tau_precision.py` does. Reported per world, summed over its runs: faults detected
/ planted per kind, the clean fire rate on organic calls and spurious receipts per clean episode.

Generated corpora are kept under `--work` (default: a folder in the system's temp dir) and reused when
the folder already holds them, so a change to mining or checking is re-measured without regenerating.
Nothing here is timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from output_contracts.audit.pipeline import audit, open_source
from output_contracts.traces.ingest import ingest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
WORLDS = ("sample", "retail", "airline")


def _tau_tools() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_tau_tools", REPO / "bench" / "tau_tools.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def corpus_for(world: str, seed: int, work: Path, data: Path, tasks: int, trials: int) -> Path:
    """The ingested clean corpus of one world (and corpus seed), made once under `work`."""
    if world == "sample":
        out = work / "sample-corpus"
        if not (out / "corpus.json").exists():
            shutil.rmtree(out, ignore_errors=True)
            ingest([REPO / "sample_traces" / "clean"], out, registry=REPO / "sample_traces" / "tools.json")
        return out
    out = work / f"{world}-{seed}-corpus"
    if not (out / "corpus.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        tt = _tau_tools()
        src = work / f"{world}-{seed}.jsonl.gz"
        tt.write(tt.generate(world, tasks=tasks, seed=seed, data=data, trials=trials), src)
        ingest([src], out, registry=data / "tau_bench" / world / "tools.json")
    return out


def run_one(corpus_dir: Path, seed: int, work: Path, tag: str) -> dict[str, Any]:
    """One injected audit; the figures the table sums."""
    inj = work / f"{tag}-inj"
    led = work / f"{tag}-ledger"
    for p in (inj, led):
        shutil.rmtree(p, ignore_errors=True)
    src = open_source(corpus_dir, inj, inject_kinds=["incidents"], inject_rate=0.1, inject_seed=seed)
    rep, _cs = audit(src.corpus, led, k=5, seed=13, bootstrap=0, inject=src.inject, mine_from=src.original)
    by_kind = rep["detection"]["by_kind"]
    fr, sp = rep["fire_rate"], rep["spurious"]
    return {
        "kinds": {k: (v["numerator"], v["denominator"]) for k, v in by_kind.items()},
        "fired": fr["numerator"],
        "organic": fr["denominator"],
        "by_code": {c: v["numerator"] for c, v in fr.get("by_code", {}).items() if v["numerator"]},
        "explained": fr.get("cross_call_explained", 0),
        "spurious": (sp["numerator"], sp["denominator"]),
    }


def add(total: dict[str, Any], one: dict[str, Any]) -> None:
    for k, (n, d) in one["kinds"].items():
        a, b = total["kinds"].get(k, (0, 0))
        total["kinds"][k] = (a + n, b + d)
    for key in ("fired", "organic", "explained"):
        total[key] += one[key]
    total["spurious"] = tuple(a + b for a, b in zip(total["spurious"], one["spurious"], strict=True))
    for c, n in one["by_code"].items():
        total["by_code"][c] = total["by_code"].get(c, 0) + n


def run(
    worlds: list[str], seeds: list[int], work: Path, data: Path, tasks: int, trials: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for world in worlds:
        total: dict[str, Any] = {
            "kinds": {},
            "fired": 0,
            "organic": 0,
            "explained": 0,
            "spurious": (0, 0),
            "by_code": {},
        }
        for s in seeds:
            cdir = corpus_for(world, s, work, data, tasks, trials)
            one = run_one(cdir, s, work, f"{world}-{s}")
            print(f"{world} seed {s}: {_line(one)}", file=sys.stderr)
            add(total, one)
        out[world] = total
    return out


def _pct(n: int, d: int) -> str:
    return "–" if d == 0 else f"{100 * n / d:.0f}% ({n}/{d})"


def _line(t: dict[str, Any]) -> str:
    n = sum(a for a, _ in t["kinds"].values())
    d = sum(b for _, b in t["kinds"].values())
    return (
        f"detected {_pct(n, d)}; clean fire {100 * t['fired'] / max(t['organic'], 1):.3f}% "
        f"({t['fired']}/{t['organic']}) {t['by_code']}; explained {t['explained']}; "
        f"spurious {t['spurious'][0]}/{t['spurious'][1]}"
    )


def markdown(res: dict[str, Any]) -> str:
    worlds = list(res)
    kinds = sorted({k for t in res.values() for k in t["kinds"]})
    lines = ["| kind | " + " | ".join(worlds) + " |", "|---|" + "---:|" * len(worlds)]
    for k in kinds:
        cells = [_pct(*res[w]["kinds"].get(k, (0, 0))) for w in worlds]
        lines.append(f"| `{k}` | " + " | ".join(cells) + " |")
    tot = []
    for w in worlds:
        ks = res[w]["kinds"].values()
        tot.append("**" + _pct(sum(a for a, _ in ks), sum(b for _, b in ks)) + "**")
    lines.append("| **all incident kinds** | " + " | ".join(tot) + " |")
    fire = [
        f"{100 * res[w]['fired'] / max(res[w]['organic'], 1):.3f}% ({res[w]['fired']}/{res[w]['organic']})"
        for w in worlds
    ]
    lines.append("| clean fire rate (organic calls) | " + " | ".join(fire) + " |")
    sp = [f"{res[w]['spurious'][0]}/{res[w]['spurious'][1]}" for w in worlds]
    lines.append("| spurious receipts / clean episodes | " + " | ".join(sp) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, help="where corpora are generated and kept (default: a temp folder)")
    ap.add_argument("--worlds", default=",".join(WORLDS))
    ap.add_argument("--seeds", default="1,2", help="injection seeds (and τ-bench corpus seeds)")
    ap.add_argument("--tasks", type=int, default=600)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv)
    worlds = [w for w in a.worlds.split(",") if w]
    if any(w not in WORLDS for w in worlds):
        ap.error(f"--worlds: choose from {', '.join(WORLDS)}")
    seeds = [int(s) for s in a.seeds.split(",") if s]
    work = a.work or Path(tempfile.mkdtemp(prefix="incident-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    res = run(worlds, seeds, work, a.data, a.tasks, a.trials)
    md = markdown(res)
    print(md)
    if a.json:
        a.json.write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    if a.markdown:
        a.markdown.write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
