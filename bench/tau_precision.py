#!/usr/bin/env python3
"""Contract precision on real tool output: `audit --folds 5` on τ-bench's own tools, several seeds.

    python bench/tau_precision.py --seeds 1,2,3 [--tasks 600] [--json out.json] [--markdown out.md]

For each seed and domain (retail, airline) it generates a corpus with `bench/tau_tools.py` (the
unmodified τ-bench tool code on its public databases), ingests it with the domain's `tools.json`, and
runs the cross-fitted audit twice: on the clean corpus (every episode is clean: each receipt is a false
alarm) and with `--inject all` at rate 0.1 (detection of planted faults, on the checkers mined before
injection). It also audits the recorded gpt-4o airline trajectories two ways: *clean = reward 1* (mine
and count spurious receipts on full-reward episodes only, `mine --clean reward`) and *clean = no
labelled fault* (every episode: the rewards are dropped from a copy of the file).

Reported per run, with the audit's 95% task-clustered bootstrap intervals: fire rate on clean calls,
spurious receipts per 100 clean episodes, detection; the rule count and how many rules have a record
identifier in a pattern (`record_id_rules`: a literal token that is the key of a database record —
a user, order, product, variant, payment method, reservation, flight, flight date, airport — or a
product name, the keys `list_all_product_types` returns).

Nothing here is timed: it is a measurement of precision, not speed (`make bench` times).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from output_contracts.audit.pipeline import audit, open_source
from output_contracts.codes.contract_set import ContractSet, split_side
from output_contracts.codes.mine_params import MineParams
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from output_contracts.traces.pointers import WILD_TOKENS, unescape_token

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
DOMAINS = ("retail", "airline")


def tau_tools() -> ModuleType:
    """bench/tau_tools.py as a module (bench/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("bench_tau_tools", REPO / "bench" / "tau_tools.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def record_ids(data: Path, domain: str) -> frozenset[str]:
    """Every key that names one database record of `domain`, and the product names (retail)."""
    root = data / "tau_bench" / domain
    ids: set[str] = set()

    def load(name: str) -> dict[str, Any]:
        out: dict[str, Any] = orjson.loads((root / f"{name}.json").read_bytes())
        return out

    if domain == "retail":
        users, orders, products = load("users"), load("orders"), load("products")
        ids |= set(users) | set(orders) | set(products)
        for u in users.values():
            ids |= set(u["payment_methods"])
        for p in products.values():
            ids |= set(p["variants"])
            ids.add(p["name"])
    else:
        users, reservations, flights = load("users"), load("reservations"), load("flights")
        ids |= set(users) | set(reservations) | set(flights)
        for u in users.values():
            ids |= set(u["payment_methods"])
        for f in flights.values():
            ids |= set(f["dates"])
            ids |= {f["origin"], f["destination"]}
    return frozenset(ids)


def id_rules(cs: ContractSet, ids: frozenset[str]) -> int:
    """Rules with a record identifier as a literal token of one of their paths."""
    n = 0
    for r in cs.all_rules():
        toks = {unescape_token(t) for p in r.paths for t in split_side(p)[1].split("/")[1:]}
        if any(t in ids for t in toks if t not in WILD_TOKENS):
            n += 1
    return n


def _interval(m: dict[str, Any], scale: float = 1.0) -> dict[str, Any]:
    return {
        "value": None if m.get("value") is None else m["value"] * scale,
        "low": None if m.get("low") is None else m["low"] * scale,
        "high": None if m.get("high") is None else m["high"] * scale,
        "numerator": m.get("numerator"),
        "denominator": m.get("denominator"),
    }


def summarize(report: dict[str, Any], cs: ContractSet, ids: frozenset[str]) -> dict[str, Any]:
    """The figures this benchmark reports, from one audit report and its contract set."""
    sp = report["spurious"]
    return {
        "fire_rate": _interval(report["fire_rate"]),
        "spurious_per_100": {
            **_interval(sp["per_100_episodes"]),
            "numerator": sp["numerator"],
            "denominator": sp["denominator"],
        },
        "detection": _interval(report["detection"]["overall"]),
        "rules": len(cs.all_rules()),
        "record_id_rules": id_rules(cs, ids),
        "fires_by_code": {
            c: v["numerator"]
            for c, v in sorted(report["fire_rate"].get("by_code", {}).items())
            if v["numerator"]
        },
    }


def run_domain(
    domain: str,
    seed: int,
    tasks: int,
    work: Path,
    data: Path,
    inject: bool = True,
    trials: int | None = None,
    kinds: str = "basic",
) -> dict[str, Any]:
    """Generate, ingest, audit clean (and injected) for one domain and seed."""
    tt = tau_tools()
    src = work / f"{domain}-{seed}.jsonl.gz"
    kw = {"trials": trials} if trials is not None else {}
    tt.write(tt.generate(domain, tasks=tasks, seed=seed, data=data, **kw), src)
    registry = data / "tau_bench" / domain / "tools.json"
    corpus_dir = work / f"{domain}-{seed}-corpus"
    ingest([src], corpus_dir, registry=registry)
    corpus = Corpus.open(corpus_dir)
    ids = record_ids(data, domain)
    rep, cs = audit(corpus, work / f"{domain}-{seed}-ledger", k=5, seed=13, bootstrap=1000)
    out = {"domain": domain, "seed": seed, "tasks": tasks, "trials": trials, "clean": summarize(rep, cs, ids)}
    out["calls"] = rep["fire_rate"]["denominator"]
    out["episodes"] = rep["spurious"]["denominator"]
    if inject:
        src_i = open_source(
            corpus_dir, work / f"{domain}-{seed}-inj", inject_kinds=[kinds], inject_rate=0.1, inject_seed=seed
        )
        rep_i, cs_i = audit(
            src_i.corpus,
            work / f"{domain}-{seed}-ledger-i",
            k=5,
            seed=13,
            bootstrap=1000,
            inject=src_i.inject,
            mine_from=src_i.original,
        )
        out["injected"] = summarize(rep_i, cs_i, ids)
    return out


def _strip_rewards(src: Path, dst: Path) -> None:
    runs = orjson.loads(src.read_bytes())
    for r in runs:
        r.pop("reward", None)
    dst.write_bytes(orjson.dumps(runs))


def run_trajectories(work: Path, data: Path) -> list[dict[str, Any]]:
    """The recorded gpt-4o airline runs, audited with clean = reward 1 and clean = no labelled fault."""
    src = data / "tau_bench" / "trajectories" / "gpt-4o-airline.json"
    registry = data / "tau_bench" / "airline" / "tools.json"
    ids = record_ids(data, "airline")
    out = []
    for mode in ("reward", "unlabelled"):
        f = src
        if mode == "unlabelled":
            f = work / "gpt-4o-airline-norewards.json"
            _strip_rewards(src, f)
        cdir = work / f"traj-{mode}"
        ingest([f], cdir, format="tau-bench", registry=registry)
        rep, cs = audit(
            Corpus.open(cdir),
            work / f"traj-{mode}-ledger",
            k=5,
            seed=13,
            bootstrap=1000,
            mine_params=MineParams.of(clean="reward" if mode == "reward" else "ok"),
        )
        s = summarize(rep, cs, ids)
        s["positive_available_seats"] = sum(
            1 for r in cs.all_rules() if r.code == "POSITIVE" and "/available_seats/" in r.paths[0]
        )
        out.append({"mode": mode, **s, "calls": rep["fire_rate"]["denominator"]})
    return out


def _pct(m: dict[str, Any]) -> str:
    if m["value"] is None:
        return "n/a"
    return f"{100 * m['value']:.2f}% [{100 * m['low']:.2f}, {100 * m['high']:.2f}] ({m['numerator']}/{m['denominator']})"


def _per100(m: dict[str, Any]) -> str:
    return f"{m['value']:.2f} [{m['low']:.2f}, {m['high']:.2f}] ({m['numerator']}/{m['denominator']})"


def markdown(results: dict[str, Any]) -> str:
    """The tables of docs/audit.md."""
    lines = [
        "| domain | seed | calls | rules | with a record id | fire rate on clean calls | spurious / 100 clean episodes | detection (injected) |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for r in results["domains"]:
        c = r["clean"]
        det = _pct(r["injected"]["detection"]) if "injected" in r else "n/a"
        lines.append(
            f"| {r['domain']} | {r['seed']} | {r['calls']:,} | {c['rules']:,} | {c['record_id_rules']} "
            f"({100 * c['record_id_rules'] / max(c['rules'], 1):.2f}%) | {_pct(c['fire_rate'])} | "
            f"{_per100(c['spurious_per_100'])} | {det} |"
        )
    if results.get("trajectories"):
        lines += [
            "",
            "| gpt-4o airline trajectories | calls | rules | POSITIVE on available_seats | fire rate | spurious / 100 clean episodes |",
            "|---|---:|---:|---:|---|---|",
        ]
        for t in results["trajectories"]:
            name = "clean = reward 1" if t["mode"] == "reward" else "clean = no labelled fault"
            lines.append(
                f"| {name} | {t['calls']:,} | {t['rules']:,} | {t['positive_available_seats']} | "
                f"{_pct(t['fire_rate'])} | {_per100(t['spurious_per_100'])} |"
            )
    return "\n".join(lines) + "\n"


def run(
    seeds: Sequence[int],
    tasks: int,
    data: Path,
    inject: bool = True,
    trials: int | None = None,
    kinds: str = "basic",
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tau-precision-"))
    try:
        domains = [run_domain(d, s, tasks, work, data, inject, trials, kinds) for s in seeds for d in DOMAINS]
        return {
            "seeds": list(seeds),
            "tasks": tasks,
            "domains": domains,
            "trajectories": run_trajectories(work, data),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3", help="comma-separated generator seeds")
    ap.add_argument("--tasks", type=int, default=600)
    ap.add_argument("--trials", type=int, help="episodes per task (default: bench/tau_tools.py's, 8)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--no-inject", action="store_true", help="skip the detection runs")
    ap.add_argument(
        "--kinds", default="basic", help="fault kinds or groups to inject: basic (default), incidents, all"
    )
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--markdown", type=Path, help="write the tables here")
    a = ap.parse_args(argv)
    if not (a.data / "tau_bench").is_dir():
        print(f"error: {a.data / 'tau_bench'}: τ-bench data folder not found", file=sys.stderr)
        return 2
    seeds = [int(s) for s in a.seeds.split(",") if s]
    res = run(seeds, a.tasks, a.data, inject=not a.no_inject, trials=a.trials, kinds=a.kinds)
    md = markdown(res)
    if a.json:
        a.json.write_bytes(orjson.dumps(res, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
    if a.markdown:
        a.markdown.write_text(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
