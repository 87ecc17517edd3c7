"""`contracts audit`: cross-fitted replay of a corpus through its own fold checkers, frozen, then scored.

Two phases, in this order, and the order is the point:

1. **Blind replay** (`replay`). Every call with status ok is checked by the checker of its task's fold
   (`check_corpus(..., fold="cross")`), a checker mined without that task's traces. Each call with at
   least one violation becomes a *fire event* (call id, fold, tool, rule ids, codes, paths, the witness
   values, the rule supports, the receipt's size and its recovery-tool count). Fire events are written to
   a ledger together with what is needed to score them later (the population digest, the rule catalog)
   and the ledger is **frozen**. Nothing in this phase reads `labels`, `fault` or `reward`.
2. **Scoring** (`score`). Only now are labels and rewards joined, to the frozen events, giving the fire
   rate (organic calls), spurious receipts (clean episodes), detection (labelled calls), recovery
   retention and receipt cost, each with a task-clustered bootstrap interval (`contracts.audit.stats`).
   `audit-score` runs this phase alone from a frozen ledger and a corpus, optionally with other labels,
   and gets the same report when nothing changed.

Definitions (where the issue is silent, decided here):

* *calls checked*: calls with status `ok` (a failed call has no result to hold to a result contract).
  Calls of a tool that has no rule are checked and simply cannot fire: they stay in the denominator,
  as in the paper's "fire rate on organic responses"; the per-tool table shows them apart.
* *organic*: no `fault` label. *labelled*: a `fault` label (from the traces or from `--inject`).
* *clean episode*: no call of it labelled, no episode-level `fault` label, and reward null (no rewards
  in the format) or reward >= 1 (full reward). *Spurious receipts* are fired calls in clean episodes,
  counted per 100 clean episodes.
* *detected*: a labelled call with >= 1 violation. *path matched*: a violation path equals a faulted
  path (`fault_path`, `fault_paths`, or `swapped_with`), or one contains the other (dropping `/a` may
  surface as REQUIRED at `/a`; swapping an object for a list may surface at a child).
* *recovery retention*: share of fire events whose receipt offers >= 2 recovery tools.
* *receipt cost*: bytes of the receipts' `outcome_contract` (canonical JSON, encoder v2 by default) and
  `approx_tokens`, per 1,000 calls checked.
* *support* of a violation: `support.calls` of the rule in the checker that judged the call. The rule
  table shows the largest support a rule has in any fold checker.
* *in-sample fire rate* (k > 1): the full checker (mined on all traces) replayed over the same calls;
  it is the optimistic figure cross-fitting corrects, and the report prints both.
* *abstention curve*: for a support threshold s (0 and the 10/25/50/75/90% quantiles of the rules'
  supports), only violations whose rule support >= s count; the curve shows coverage (fired calls kept / fired calls at s = 0), risk (share of kept fired calls with
  no fault label) and the fire rate, spurious receipts and detection at s.

Fire events are stored in `audit.fire` entries of up to 1,000 events each (one `append_many` batch, one
fsync): at a 1% fire rate on a million calls that is 10 entries instead of 10,000 fsyncs.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import polars as pl

import contracts.audit.stats as stats
from contracts.audit.report import REPORT_VERSION, evaluate_gates
from contracts.checks.receipts import Receipt, Violation, encode, recovery_tools
from contracts.defaults import DEFAULT_SEED
from contracts.errors import CheckError, TraceError
from contracts.jsonutil import canonical_str, json_sha256, sha256_hex
from contracts.mining.params import MineParams
from contracts.progress import NULL_PROGRESS, Progress
from contracts.rules.folds import fold_table
from contracts.rules.model import ContractSet
from contracts.traces.corpus import Corpus
from contracts.traces.sources import is_corpus, open_corpus

LEDGER_FORMAT = "contracts-audit/1"
EVENTS_PER_ENTRY = 1000
IDS_PER_ENTRY = 5000
DIGEST_CHUNK = 100_000
MAX_SPURIOUS_LISTED = 200
_TRUNC = 200

KIND_START = "audit.start"
KIND_FIRE = "audit.fire"
KIND_IN_SAMPLE = "audit.in_sample"
KIND_END = "audit.end"


# ------------------------------------------------------------------------------------------------------
# Sources


@dataclass(frozen=True)
class Source:
    """The corpus an audit runs on, and what was done to get it (ingest, injection)."""

    corpus: Corpus
    name: str
    inject: Mapping[str, Any] | None = None
    original: Corpus | None = None


def open_source(
    src: str | Path,
    work: str | Path,
    *,
    inject_kinds: Sequence[str] | None = None,
    inject_rate: float = 0.1,
    inject_seed: int = DEFAULT_SEED,
    contracts: ContractSet | None = None,
    registry: str | Path | None = None,
    progress: Progress = NULL_PROGRESS,
) -> Source:
    """A corpus folder as is, or trace files ingested into `work/corpus`; with `inject_kinds`, faults are
    planted (see `contracts.audit.inject`) and the result ingested into `work/injected`.

    `registry` (tools.json) is copied into the ingested corpus, so mining sees substitutes and receipts
    offer recovery tools; when SRC is a trace folder with a `tools.json` at its top, that one is used.
    """
    from contracts.traces.ingest import ingest

    p = Path(src)
    if not p.exists():
        raise TraceError("no such corpus or trace file", source=str(p))
    if registry is None and p.is_dir() and not is_corpus(p) and (p / "tools.json").is_file():
        registry = p / "tools.json"
    reg = Path(registry) if registry is not None else None
    with open_corpus([p], registry=reg, progress=progress, keep=Path(work) / "corpus") as corpus:
        pass  # kept in `work/corpus` (audit-score reads it later); a corpus folder is used as it is
    if not inject_kinds:
        return Source(corpus, p.name or str(p))
    from contracts.audit.inject import inject_records, records_from_corpus, write_flat

    records, rep = inject_records(
        records_from_corpus(corpus),
        kinds=inject_kinds,
        rate=inject_rate,
        seed=inject_seed,
        contracts=contracts,
    )
    flat = Path(work) / "injected.jsonl"
    write_flat(records, flat)
    ingest([flat], Path(work) / "injected", format="flat", registry=reg, progress=progress)
    info = {"kinds": list(inject_kinds), "rate": inject_rate, "seed": inject_seed, **rep.to_json()}
    return Source(Corpus.open(Path(work) / "injected"), f"{p.name or p} (+inject)", info, corpus)


# ------------------------------------------------------------------------------------------------------
# Phase 1: blind replay -> frozen ledger


@dataclass(frozen=True)
class Replay:
    """What the blind phase produced: the ledger anchor and the numbers needed to score."""

    ledger: Path
    head: str
    root: str
    entries: int
    start: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...]
    in_sample: frozenset[str] | None


def population(corpus: Corpus) -> pl.LazyFrame:
    """The checked calls (status ok), lazily: `call_id, trace_id, task_id, tool` (task and tool as the
    corpus stores them, Categorical). No labels. Scoring runs its per-call work as polars queries over
    this scan (group_bys, semi-joins) instead of holding a frame, or Python objects, per call."""
    return (
        corpus.scan_calls()
        .filter(pl.col("status") == "ok")
        .select(
            "call_id", "trace_id", pl.col("task_id").cast(pl.Categorical), pl.col("tool").cast(pl.Categorical)
        )
    )


def checked_call_ids(corpus: Corpus) -> pl.Series:
    """The ids of the checked calls (status ok), in corpus order."""
    return population(corpus).select("call_id").collect().to_series()


def population_digest(call_ids: pl.Series | Iterable[str]) -> str:
    """sha256 over the sorted checked call ids joined by newlines (UTF-8): audit-score refuses a corpus
    whose calls differ.

    A polars Series is sorted by polars (String order is byte order, which for UTF-8 is code point order,
    the order of Python's `sorted`) and hashed in chunks of `DIGEST_CHUNK` ids, so no Python string is
    made per call; any other iterable is sorted and joined in Python. Both give the same digest."""
    if not isinstance(call_ids, pl.Series):
        return sha256_hex("\n".join(sorted(call_ids)))
    ids = call_ids.cast(pl.String)
    if ids.null_count():
        raise CheckError("a checked call has no call_id", code="E_LEDGER", field="call_id")
    ids = ids.sort()
    h = hashlib.sha256()
    for off in range(0, ids.len(), DIGEST_CHUNK):
        if off:
            h.update(b"\n")
        h.update(ids.slice(off, DIGEST_CHUNK).str.join("\n").cast(pl.Binary).item())
    return h.hexdigest()


def _short(text: str) -> Any:
    """A witness value for the ledger: the JSON value itself, or its text cut to 200 characters."""
    if len(text) <= _TRUNC:
        return orjson.loads(text)
    return text[: _TRUNC - 1] + "…"


def _support_maps(cs: ContractSet, k: int) -> dict[int, dict[str, int]]:
    if k <= 1:
        return {0: {r.id: r.support.calls for r in cs.rules_for(None)}}
    return {f: {r.id: r.support.calls for r in cs.rules_for(f)} for f in range(k)}


def fire_events(
    cs: ContractSet, corpus: Corpus, violations: pl.DataFrame, k: int, *, encoder: str = "v2"
) -> list[dict[str, Any]]:
    """One fire event per call with >= 1 violation (schema `fire-event`), sorted by call id."""
    if violations.is_empty():
        return []
    supports = _support_maps(cs, k)
    # the visible tools of the episodes that have a violation only (not of every episode)
    fired_traces = violations.get_column("trace_id").unique().implode()
    visible = {
        t: (None if js is None else tuple(orjson.loads(js)))
        for t, js in corpus.scan_episodes()
        .filter(pl.col("trace_id").is_in(fired_traces))
        .select("trace_id", "tools")
        .collect()
        .iter_rows()
    }
    by_call: dict[str, list[dict[str, Any]]] = defaultdict(list)
    meta: dict[str, tuple[str, str, int]] = {}
    for row in violations.sort("call_id", "rule", "path").iter_rows(named=True):
        cid = row["call_id"]
        fold = int(row["fold"]) if k > 1 else 0
        meta[cid] = (row["tool"], row["trace_id"], fold)
        by_call[cid].append(row)
    events = []
    for cid in sorted(by_call):
        tool, trace_id, fold = meta[cid]
        rows = by_call[cid]
        sup = supports.get(fold, {})
        vio = [
            Violation(
                r["code"],
                r["rule"],
                r["path"],
                orjson.loads(r["expected"]),
                orjson.loads(r["observed"]),
                r["present"],
                r["detail"],
            )
            for r in rows
        ]
        rec = recovery_tools(cs, tool, visible.get(trace_id))
        enc = encode(Receipt(tool, None, tuple(vio), tuple(rec), encoder=encoder), encoder)
        events.append(
            {
                "call_id": cid,
                "fold": fold,
                "tool": tool,
                "rules": sorted({r["rule"] for r in rows}),
                "codes": sorted({r["code"] for r in rows}),
                "paths": sorted({r["path"] for r in rows}),
                "violations": [
                    {
                        "rule": r["rule"],
                        "code": r["code"],
                        "path": r["path"],
                        "support": int(sup.get(r["rule"], 0)),
                        "present": bool(r["present"]),
                        "expected": _short(r["expected"]),
                        "observed": _short(r["observed"]),
                    }
                    for r in rows
                ],
                "bytes": int(enc["bytes"]),
                "approx_tokens": int(enc["approx_tokens"]),
                "recovery_tools": len(rec),
            }
        )
    return events


def rule_catalog(cs: ContractSet, k: int) -> list[dict[str, Any]]:
    """Every rule used by the audit's checkers, with the largest support it has in any of them."""
    best: dict[str, int] = {}
    for sup in _support_maps(cs, k).values():
        for rid, n in sup.items():
            best[rid] = max(best.get(rid, 0), n)
    by_id = {r.id: r for r in cs.all_rules()}
    return [
        {
            "rule": rid,
            "tool": by_id[rid].tool,
            "code": by_id[rid].code,
            "paths": list(by_id[rid].paths),
            "support": best[rid],
        }
        for rid in sorted(best)
        if rid in by_id
    ]


def contracts_sha256(cs: ContractSet) -> str:
    """Digest of the contract set's canonical JSON (recorded in the ledger and the report)."""
    return json_sha256(cs.to_json())


def replay(
    cs: ContractSet,
    corpus: Corpus,
    ledger_dir: str | Path,
    *,
    k: int,
    seed: int,
    encoder: str = "v2",
    in_sample: bool = True,
    corpus_name: str = "",
    origin: str = "mined",
    inject: Mapping[str, Any] | None = None,
    progress: Progress = NULL_PROGRESS,
    verify: bool = False,
) -> Replay:
    """Phase 1: check every call with its own fold's checker, write the fire events, freeze the ledger.

    `verify`: `cs` was mined from this very corpus with `mine(..., verify=False)`; check here, before
    anything is written, that no checker fires on its own clean mining data (raising the AssertionError
    `mine` would), with one flat checker pass that also gives the in-sample replay (`_verified_in_sample`)
    instead of a second full-checker pass.
    """
    from contracts.checks.checker import check_corpus
    from contracts.ledger import Ledger

    if cs.k != k or cs.seed != seed:
        raise CheckError(
            f"contract set was mined with k = {cs.k}, seed = {cs.seed}, but the audit asks for "
            f"k = {k}, seed = {seed}: re-mine with `contracts mine --folds {k} --seed {seed}` or audit with "
            f"--fold {cs.k} --seed {cs.seed}",
            code="E_FOLD",
            field="params.k" if cs.k != k else "params.seed",
        )
    checked = checked_call_ids(corpus)
    n_checked, pop_digest = checked.len(), population_digest(checked)
    del checked
    ins: list[str] | None = None
    if verify:
        progress.start("verification and in-sample replay (one flat pass)", None)
        verified_ins = _verified_in_sample(cs, corpus)
        progress.finish()
        if in_sample and k > 1:
            ins = verified_ins
    progress.start("cross-fitted replay", None)
    viol = check_corpus(cs, corpus, fold="cross" if k > 1 else None)
    events = fire_events(cs, corpus, viol, k, encoder=encoder)
    progress.finish()
    if ins is None and in_sample and k > 1:
        progress.start("in-sample replay (full checker)", None)
        full = check_corpus(cs, corpus, fold=None)
        ins = sorted(set(full.get_column("call_id").to_list()))
        progress.finish()
    start = {
        "format": LEDGER_FORMAT,
        "k": k,
        "seed": seed,
        "encoder": encoder,
        "corpus": {
            "name": corpus_name,
            "sha256": corpus.sha256(),
            "calls": int(corpus.scan_calls().select(pl.len()).collect().item()),
            "checked": n_checked,
        },
        "population_sha256": pop_digest,
        "contracts": {"sha256": contracts_sha256(cs), "origin": origin, "rules": len(cs.all_rules())},
        "rules": rule_catalog(cs, k),
        "inject": dict(inject) if inject else None,
        "in_sample": ins is not None,
    }
    items: list[tuple[str, dict[str, Any]]] = [(KIND_START, start)]
    for i in range(0, len(events), EVENTS_PER_ENTRY):
        items.append((KIND_FIRE, {"events": events[i : i + EVENTS_PER_ENTRY]}))
    if ins is not None:
        for i in range(0, max(len(ins), 1), IDS_PER_ENTRY):
            items.append((KIND_IN_SAMPLE, {"call_ids": ins[i : i + IDS_PER_ENTRY]}))
    items.append(
        (KIND_END, {"fire_events": len(events), "in_sample_fired": None if ins is None else len(ins)})
    )
    config = {
        "command": "audit",
        "k": k,
        "seed": seed,
        "encoder": encoder,
        "contracts_sha256": contracts_sha256(cs),
    }
    led = Ledger.create(ledger_dir, config=config, seed=seed)
    try:
        led.append_many(items)
        info = led.freeze()
    finally:
        led.close()
    return Replay(
        Path(ledger_dir),
        info.head,
        info.root,
        info.entries,
        start,
        tuple(events),
        None if ins is None else frozenset(ins),
    )


def _verified_in_sample(cs: ContractSet, corpus: Corpus) -> list[str]:
    """Mine's verification and the in-sample replay from one checker pass; the sorted call ids on which
    the full checker fires (what `check_corpus(cs, corpus, fold=None)` gives).

    The pass is `contracts.mining.verify`'s: every rule of every checker (`flat_rules`) over every checked
    call. Its violations on the clean mining calls (recomputed from the corpus with the contract set's own
    `clean`, `tools`, k and seed, exactly as `mine` selects them) must not come from a checker that
    covers the call's fold (AssertionError, as in `mine`); its violations of the full checker's rules on
    any call are the in-sample fire events (a rule's violations do not depend on the other rules checked
    beside it). Calls of tools without rules cannot fire, so checking only `cs.tools` loses nothing.
    """
    from contracts.checks.checker import find_violations
    from contracts.mining.data import call_ids, clean_calls
    from contracts.mining.verify import flat_rules, misfires_from, raise_misfires

    found, entries, _ = find_violations(flat_rules(cs), corpus, fold=None, tools=sorted(cs.tools))
    tools = cs.params.get("tools")
    clean, _ = clean_calls(corpus, str(cs.params.get("clean", "ok")), None if tools is None else list(tools))
    if cs.k > 1:
        clean = clean.join(fold_table(clean.get_column("task_id"), cs.seed, cs.k), on="task_id", how="left")
    else:
        clean = clean.with_columns(pl.lit(0, pl.Int32).alias("fold"))
    raise_misfires(misfires_from(cs, found, entries, clean.select("cid", "fold"), corpus))
    full = {r.id for r in cs.rules_for(None)}
    in_full = [e.ridx for e in entries if e.rule.id in full]
    cids = found.filter(pl.col("ridx").is_in(in_full)).get_column("cid").unique()
    if cids.len() == 0:
        return []
    return sorted(call_ids(corpus, cids).get_column("call_id").to_list())


def load_replay(ledger_dir: str | Path) -> Replay:
    """Read a frozen audit ledger back (refusing one that does not verify or is not frozen)."""
    from contracts.ledger import read_entries, verify

    rep = verify(ledger_dir, require_frozen=True)
    if not rep.ok:
        first = rep.first
        what = first.render() if first is not None else "does not verify"
        raise CheckError(f"audit ledger does not verify: {what}", source=str(ledger_dir), code="E_LEDGER")
    entries = read_entries(ledger_dir)
    if not entries or entries[0].kind != KIND_START or entries[0].body.get("format") != LEDGER_FORMAT:
        raise CheckError(
            f"not an audit ledger (first entry is not {KIND_START} of format {LEDGER_FORMAT})",
            source=str(ledger_dir),
            code="E_LEDGER",
        )
    events: list[Mapping[str, Any]] = []
    ins: set[str] | None = set() if entries[0].body.get("in_sample") else None
    for e in entries[1:]:
        if e.kind == KIND_FIRE:
            events.extend(e.body["events"])
        elif e.kind == KIND_IN_SAMPLE and ins is not None:
            ins.update(e.body["call_ids"])
    assert rep.head is not None and rep.root is not None
    return Replay(
        Path(ledger_dir),
        rep.head,
        rep.root,
        rep.entries,
        entries[0].body,
        tuple(events),
        None if ins is None else frozenset(ins),
    )


# ------------------------------------------------------------------------------------------------------
# Phase 2: join labels and rewards, score


@dataclass(frozen=True)
class Truth:
    """Labels and rewards joined after the freeze: per labelled call (fault kind, faulted paths); per
    episode, as a frame (`EPISODE_SCHEMA`: one row per trace, its task, reward and whether it carries an
    episode-level `fault` label); and reward overrides (`rewards`, from a labels file) that replace an
    episode's reward, null included."""

    faults: Mapping[str, tuple[str, tuple[str, ...]]]
    episodes: pl.DataFrame
    rewards: Mapping[str, float | None] = field(default_factory=dict)


EPISODE_SCHEMA = pl.Schema(
    {"trace_id": pl.String(), "task_id": pl.String(), "reward": pl.Float64(), "ep_fault": pl.Boolean()}
)


def _fault_of(labels: Any) -> tuple[str, tuple[str, ...]] | None:
    if not isinstance(labels, dict) or not labels.get("fault"):
        return None
    paths = labels.get("fault_paths")
    if not isinstance(paths, list):
        paths = [p for p in (labels.get("fault_path"), labels.get("swapped_with")) if isinstance(p, str)]
    return str(labels["fault"]), tuple(str(p) for p in paths)


def truth_from_corpus(corpus: Corpus) -> Truth:
    """Labels and rewards as the corpus records them."""
    calls = corpus.scan_calls().filter(pl.col("fault").is_not_null()).select("call_id", "labels").collect()
    faults = {}
    for cid, lab in calls.iter_rows():
        f = _fault_of(orjson.loads(lab) if lab else {})
        if f is not None:
            faults[cid] = f
    eps = (
        corpus.scan_episodes()
        .select("trace_id", pl.col("task_id").cast(pl.String), pl.col("reward").cast(pl.Float64), "labels")
        .collect()
    )
    # an episode label is parsed only when it can name a fault (`{}` and "" cannot)
    maybe = eps.filter(pl.col("labels").is_not_null() & ~pl.col("labels").is_in(["", "{}"]))
    ep_faults = [
        t
        for t, lab in maybe.select("trace_id", "labels").iter_rows()
        if _fault_of(orjson.loads(lab)) is not None
    ]
    # one row per trace: its last row's task and reward (as a dict built over the rows would keep)
    episodes = (
        eps.with_columns(
            pl.col("trace_id").is_in(pl.Series(ep_faults, dtype=pl.String).implode()).alias("ep_fault")
        )
        .unique(subset="trace_id", keep="last")
        .select(list(EPISODE_SCHEMA))
        .cast(EPISODE_SCHEMA)
    )
    return Truth(faults, episodes)


def apply_labels_file(truth: Truth, path: str | Path) -> Truth:
    """Override labels/rewards from a JSONL file: `{"call_id", "labels": {...}}` replaces a call's labels
    (`{}` clears them); `{"trace_id", "reward": x}` replaces an episode's reward. Unlisted ones keep the
    corpus's values."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError as e:
        raise TraceError("labels file not found", source=str(p)) from e
    faults = dict(truth.faults)
    rewards = dict(truth.rewards)  # overrides only (small), never one entry per episode
    for i, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise TraceError(f"invalid JSON: {e}", source=str(p), line=i) from e
        if not isinstance(rec, dict):
            raise TraceError("each line must be a JSON object", source=str(p), line=i)
        if "call_id" in rec:
            if not isinstance(rec.get("labels"), dict):
                raise TraceError(
                    "a call line needs 'labels' (an object)", source=str(p), line=i, field="labels"
                )
            f = _fault_of(rec["labels"])
            if f is None:
                faults.pop(str(rec["call_id"]), None)
            else:
                faults[str(rec["call_id"])] = f
        elif "trace_id" in rec:
            r = rec.get("reward")
            if r is not None and (not isinstance(r, int | float) or isinstance(r, bool)):
                raise TraceError("'reward' must be a number or null", source=str(p), line=i, field="reward")
            rewards[str(rec["trace_id"])] = None if r is None else float(r)
        else:
            raise TraceError(
                "each line needs 'call_id' (labels) or 'trace_id' (reward)", source=str(p), line=i
            )
    return Truth(faults, truth.episodes, rewards)


def support_grid(supports: Sequence[int]) -> list[int]:
    """Thresholds for the abstention curve: 0 and the 10/25/50/75/90% quantiles of the rules' supports
    (nearest rank), so the curve has resolution wherever the rules actually are."""
    if not supports:
        return [0]
    xs = sorted(supports)
    qs = {xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))] for q in (0.1, 0.25, 0.5, 0.75, 0.9)}
    return sorted({0} | qs)


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or a == "" or b == ""


def score(
    replay_: Replay,
    pop: pl.LazyFrame,
    truth: Truth,
    *,
    bootstrap: int,
    seed: int,
    gates: Mapping[str, float | None] | None = None,
) -> dict[str, Any]:
    """Phase 2: the audit report (schema `audit-report`) from frozen events, the population (`population`,
    a lazy scan of the checked calls) and the truth.

    Memory: nothing here is per call in Python, and no frame is one row per call. The per-call work is
    one group_by over the scan by (task, tool) with conditional counts (organic, fired, in-sample,
    labelled), plus semi-joins that pick the fired calls and the labelled calls (both few); tasks are
    integer indexes into the sorted task names in the per-task count tables."""
    start = replay_.start
    k = int(start["k"])
    if population_digest(pop.select("call_id").collect().to_series()) != start["population_sha256"]:
        raise CheckError(
            "the corpus's checked calls differ from the ones the ledger froze (population digest mismatch): "
            "score with the corpus the audit ran on",
            code="E_LEDGER",
        )
    ev = {e["call_id"]: e for e in replay_.events}
    cat = {r["rule"]: r for r in start["rules"]}
    fault_rows = [(c, f[0]) for c, f in truth.faults.items()]
    faults = pl.DataFrame(fault_rows, schema={"call_id": pl.String, "fault": pl.String}, orient="row")
    fired = pl.DataFrame(
        {
            "call_id": list(ev),
            "max_support": [max(v["support"] for v in e["violations"]) for e in ev.values()],
            "bytes": [e["bytes"] for e in ev.values()],
            "tokens": [e["approx_tokens"] for e in ev.values()],
            "recov": [e["recovery_tools"] for e in ev.values()],
        },
        schema={
            "call_id": pl.String,
            "max_support": pl.Int64,
            "bytes": pl.Int64,
            "tokens": pl.Int64,
            "recov": pl.Int64,
        },
    )
    ins_ids = replay_.in_sample
    is_fired = pl.col("call_id").is_in(fired.get_column("call_id").implode())
    is_org = ~pl.col("call_id").is_in(faults.get_column("call_id").implode())
    is_ins = pl.col("call_id").is_in(pl.Series(sorted(ins_ids or []), dtype=pl.String).implode())

    # ---- the per-call pass: counts per (task, tool); the fired calls and the labelled calls apart
    per_tt = (
        pop.group_by("task_id", "tool")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            is_org.sum().cast(pl.Int64).alias("org"),
            (is_org & is_fired).sum().cast(pl.Int64).alias("org_fired"),
            (is_org & is_ins).sum().cast(pl.Int64).alias("org_ins"),
            (~is_org & is_fired).sum().cast(pl.Int64).alias("lab_fired"),
        )
        .with_columns(pl.col("task_id").cast(pl.String), pl.col("tool").cast(pl.String))
        .collect()
    )
    lab = (
        pop.join(faults.lazy(), on="call_id", how="inner")
        .with_columns(pl.col("task_id").cast(pl.String), is_fired.alias("fired"))
        .collect()
    )
    fsub = (
        pop.join(fired.lazy(), on="call_id", how="inner")
        .join(faults.lazy(), on="call_id", how="left")
        .with_columns(
            pl.col("task_id").cast(pl.String),
            pl.col("tool").cast(pl.String),
            pl.col("fault").is_null().alias("organic"),
        )
        .collect()
    )

    # ---- episodes: every episode of the corpus, and any trace only its calls name; clean = no labelled
    # call, no episode fault label, reward null or >= 1 (a labels file's reward replaces the corpus's)
    only_calls = (
        pop.select("trace_id", "task_id")
        .join(truth.episodes.lazy().select("trace_id"), on="trace_id", how="anti")
        .group_by("trace_id")
        .agg(pl.col("task_id").cast(pl.String).min())
        .with_columns(pl.lit(None, pl.Float64).alias("reward"), pl.lit(False).alias("ep_fault"))
        .collect()
    )
    eps = pl.concat([truth.episodes, only_calls.select(list(EPISODE_SCHEMA)).cast(EPISODE_SCHEMA)])
    if truth.rewards:
        over = pl.DataFrame(
            {"trace_id": list(truth.rewards), "o_reward": list(truth.rewards.values())},
            schema={"trace_id": pl.String, "o_reward": pl.Float64},
        ).with_columns(pl.lit(True).alias("o"))
        eps = (
            eps.join(over, on="trace_id", how="left")
            .with_columns(
                pl.when(pl.col("o")).then(pl.col("o_reward")).otherwise(pl.col("reward")).alias("reward")
            )
            .drop("o_reward", "o")
        )
    faulty = pl.col("ep_fault") | pl.col("trace_id").is_in(lab.get_column("trace_id").unique().implode())
    full_or_none = pl.col("reward").is_null() | ((pl.col("reward") >= 1.0) & ~pl.col("reward").is_nan())
    eps = eps.with_columns((~faulty & full_or_none).alias("clean")).drop("ep_fault")
    fsub = fsub.join(
        eps.select("trace_id", "clean", pl.col("reward").alias("ep_reward")), on="trace_id", how="left"
    )

    # ---- tasks: integer indexes into the sorted task names (polars String order = Python's sorted)
    task_names = (
        pl.concat([per_tt.get_column("task_id"), eps.get_column("task_id")]).unique().drop_nulls().sort()
    )
    tasks = task_names.to_list()
    tindex = pl.DataFrame({"task_id": task_names, "task": pl.Series(range(len(tasks)), dtype=pl.UInt32)})

    def with_task(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(tindex, on="task_id", how="left")

    per_tt = with_task(per_tt)
    per_task = per_tt.group_by("task").agg(pl.col("n", "org", "org_fired", "org_ins").sum())
    lab, fsub = with_task(lab), with_task(fsub)
    eps = with_task(eps)

    # ---- per-task count tables for every rate, bootstrapped together
    parts: list[pl.DataFrame] = []

    def part(key: pl.Expr, frame: pl.DataFrame, num: str, den: str) -> None:
        parts.append(
            frame.select(
                key.alias("key"),
                "task",
                pl.col(num).cast(pl.Float64).alias("num"),
                pl.col(den).cast(pl.Float64).alias("den"),
            )
        )

    def add(key: pl.Expr, frame: pl.DataFrame, num: pl.Expr, den: pl.Expr) -> None:
        parts.append(
            frame.group_by(key.alias("key"), "task")
            .agg(num.cast(pl.Float64).alias("num"), den.cast(pl.Float64).alias("den"))
            .select("key", "task", "num", "den")
        )

    # organic rates have a row for each task (and tool) with >= 1 organic call
    org_task = per_task.filter(pl.col("org") > 0)
    part(pl.lit("fire"), org_task, "org_fired", "org")
    part(pl.lit("tool:") + pl.col("tool"), per_tt.filter(pl.col("org") > 0), "org_fired", "org")
    if ins_ids is not None:
        part(pl.lit("ins"), org_task, "org_ins", "org")
    # per code: organic calls with >= 1 violation of that code / organic calls
    code_rows = [(cid, c) for cid, e in ev.items() for c in e["codes"]]
    codes_df = pl.DataFrame(code_rows, schema={"call_id": pl.String, "code": pl.String}, orient="row")
    all_codes = sorted(set(codes_df.get_column("code").to_list()))
    org_den = org_task.select("task", pl.col("org").cast(pl.Float64).alias("den"))
    code_num = (
        fsub.filter(pl.col("organic"))
        .select("call_id", "task")
        .join(codes_df, on="call_id")
        .group_by("task", "code")
        .agg(pl.len().cast(pl.Float64).alias("num"))
    )
    for code in all_codes:
        parts.append(
            org_den.join(code_num.filter(pl.col("code") == code).drop("code"), on="task", how="left")
            .with_columns(pl.lit("code:" + code).alias("key"), pl.col("num").fill_null(0.0))
            .select("key", "task", "num", "den")
        )
    clean_eps = eps.filter(pl.col("clean"))
    parts.append(
        clean_eps.group_by("task")
        .agg(pl.len().cast(pl.Float64).alias("den"))
        .join(
            fsub.filter(pl.col("clean")).group_by("task").agg(pl.len().cast(pl.Float64).alias("num")),
            on="task",
            how="left",
        )
        .with_columns(pl.lit("spurious").alias("key"), pl.col("num").fill_null(0.0))
        .select("key", "task", "num", "den")
    )
    # detection and path match
    pm_ids = set()
    for cid, (_kind, paths) in truth.faults.items():
        e = ev.get(cid)
        if e is not None and any(_related(vp, fp) for vp in e["paths"] for fp in paths):
            pm_ids.add(cid)
    lab = lab.with_columns(
        pl.col("call_id").is_in(pl.Series(sorted(pm_ids), dtype=pl.String).implode()).alias("pm")
    )
    add(pl.lit("det"), lab, pl.col("fired").sum(), pl.len())
    add(pl.lit("det:") + pl.col("fault"), lab, pl.col("fired").sum(), pl.len())
    add(pl.lit("pm"), lab, pl.col("pm").sum(), pl.len())
    add(pl.lit("pm:") + pl.col("fault"), lab, pl.col("pm").sum(), pl.len())
    add(pl.lit("recov"), fsub, (pl.col("recov") >= 2).sum(), pl.len())
    # receipt cost over every checked call: a task's calls that did not fire add 0 bytes
    fsums = fsub.group_by("task").agg(pl.col("bytes", "tokens").sum())
    cost_rows = per_task.select("task", "n").join(fsums, on="task", how="left").fill_null(0)
    part(pl.lit("bytes"), cost_rows, "bytes", "n")
    part(pl.lit("tokens"), cost_rows, "tokens", "n")
    schema = pl.Schema({"key": pl.String(), "task": pl.UInt32(), "num": pl.Float64(), "den": pl.Float64()})
    nonempty = [p.cast(schema) for p in parts if not p.is_empty()]
    table = pl.concat(nonempty) if nonempty else pl.DataFrame(schema=schema)
    not_prop = {"spurious": False, "bytes": False, "tokens": False}
    R = stats.rates(table, tasks, n_boot=bootstrap, seed=seed, proportion=not_prop)
    none = stats.Rate(None, None, None, 0, 0, "none")

    def rate(key: str, den: int = 0) -> stats.Rate:
        r = R.get(key)
        if r is not None:
            return r
        return stats.make_rate(0, den, None) if den else none

    n_checked = int(per_task.get_column("n").sum())
    n_org = int(per_task.get_column("org").sum())
    n_lab = lab.height
    fire = rate("fire", n_org).to_json()
    per_tool_all = per_tt.group_by("tool").agg(
        pl.col("n").sum().alias("checked"),
        pl.col("org").sum().alias("organic"),
        pl.col("org_fired").sum().alias("fires"),
        (pl.col("n") - pl.col("org")).sum().alias("labelled"),
        pl.col("lab_fired").sum().alias("detected"),
    )
    fire["by_tool"] = {
        t: rate("tool:" + t, n).to_json()
        for t, n in sorted(per_tool_all.filter(pl.col("organic") > 0).select("tool", "organic").iter_rows())
    }
    fire["by_code"] = {c: rate("code:" + c, n_org).to_json() for c in all_codes}
    n_clean = clean_eps.height
    sp = rate("spurious", n_clean)
    spurious = sp.to_json()
    spurious["per_100_episodes"] = sp.scaled(100)
    kinds = sorted(set(lab.get_column("fault").to_list()))
    detection = {
        "overall": rate("det", n_lab).to_json(),
        "by_kind": {kd: rate("det:" + kd).to_json() for kd in kinds},
        "path_match": {
            "overall": rate("pm", n_lab).to_json(),
            "by_kind": {kd: rate("pm:" + kd).to_json() for kd in kinds},
        },
    }
    fired_all = fsub.height
    recov = rate("recov", fired_all).to_json()
    br, tr = rate("bytes", n_checked), rate("tokens", n_checked)
    total_bytes = int(fsub.get_column("bytes").sum()) if fired_all else 0
    total_tokens = int(fsub.get_column("tokens").sum()) if fired_all else 0
    cost = {
        "encoder": start.get("encoder", "v2"),
        "receipts": fired_all,
        "bytes": total_bytes,
        "approx_tokens": total_tokens,
        "mean_bytes_per_receipt": stats._round(total_bytes / fired_all) if fired_all else None,
        "bytes_per_1000_calls": br.scaled(1000),
        "tokens_per_1000_calls": tr.scaled(1000),
    }
    in_sample = None
    if ins_ids is not None:
        in_sample = {"fire_rate": rate("ins", n_org).to_json(), "fired_calls": len(ins_ids)}

    # ---- tables
    tools_tbl = [
        {
            "tool": t,
            "checked": int(c),
            "organic": int(o),
            "fires": int(f),
            "fire_rate": fire["by_tool"].get(t, none.to_json()),
            "labelled": int(la),
            "detected": int(d),
        }
        for t, c, o, f, la, d in per_tool_all.iter_rows()
    ]
    tools_tbl.sort(key=lambda r: (-r["fires"], r["tool"]))
    # a fire event of a call outside the population counts as neither organic nor clean
    flags = {cid: (bool(o), bool(c)) for cid, o, c in fsub.select("call_id", "organic", "clean").iter_rows()}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for cid, e in ev.items():
        is_organic, is_clean = flags.get(cid, (False, False))
        for rid in e["rules"]:
            c = counts[rid]
            c[0] += 1
            c[1] += is_organic
            c[2] += is_clean
            c[3] += not is_organic
    rules_tbl = [
        {
            "rule": r["rule"],
            "tool": r["tool"],
            "code": r["code"],
            "paths": list(r["paths"]),
            "support": int(r["support"]),
            "fires": counts[r["rule"]][0],
            "organic_fires": counts[r["rule"]][1],
            "clean_fires": counts[r["rule"]][2],
            "labelled_fires": counts[r["rule"]][3],
        }
        for r in cat.values()
    ]
    rules_tbl.sort(key=lambda r: (-r["fires"], r["rule"]))

    # ---- abstention curve (point estimates)
    grid = support_grid([int(r["support"]) for r in cat.values()])
    abst = []
    for s in grid:
        kept = fsub.filter(pl.col("max_support") >= s)
        n_kept = kept.height
        n_kept_org = int(kept.get_column("organic").sum()) if n_kept else 0
        n_kept_clean = int(kept.get_column("clean").sum()) if n_kept else 0
        abst.append(
            {
                "min_support": s,
                "rules": sum(1 for r in cat.values() if r["support"] >= s),
                "fired_calls": n_kept,
                "coverage": stats._round(n_kept / fired_all) if fired_all else None,
                "risk": stats._round(n_kept_org / n_kept) if n_kept else None,
                "fire_rate": stats._round(n_kept_org / n_org) if n_org else None,
                "spurious_per_100": stats._round(100 * n_kept_clean / n_clean) if n_clean else None,
                "detection": stats._round((n_kept - n_kept_org) / n_lab) if n_lab else None,
            }
        )

    # ---- receipts on clean episodes, listed for review
    spur_rows = fsub.filter(pl.col("clean")).sort("trace_id", "call_id")
    spurious_list = [
        {
            "call_id": cid,
            "trace_id": t,
            "task_id": task,
            "tool": tool,
            "fold": int(ev[cid]["fold"]),
            "reward": reward,
            "violations": [
                {kk: v[kk] for kk in ("code", "rule", "path", "expected", "observed", "support")}
                for v in ev[cid]["violations"]
            ],
        }
        for cid, t, task, tool, reward in spur_rows.select(
            "call_id", "trace_id", "task_id", "tool", "ep_reward"
        )
        .head(MAX_SPURIOUS_LISTED)
        .iter_rows()
    ]
    n_all_calls = int(start["corpus"].get("calls", start["corpus"]["checked"]))
    report: dict[str, Any] = {
        "version": REPORT_VERSION,
        "corpus": {
            "name": start["corpus"]["name"],
            "sha256": start["corpus"]["sha256"],
            "calls": n_all_calls,
        },
        "contracts": {
            "sha256": start["contracts"]["sha256"],
            "k": k,
            "seed": int(start["seed"]),
            "rules": int(start["contracts"]["rules"]),
            "origin": start["contracts"]["origin"],
        },
        "params": {
            "k": k,
            "seed": int(start["seed"]),
            "bootstrap": bootstrap,
            "encoder": start.get("encoder", "v2"),
            "level": 0.95,
            "inject": start.get("inject"),
        },
        "cross_fitted": k > 1,
        "population": {
            "calls": n_all_calls,
            "checked": n_checked,
            "organic": n_org,
            "labelled": n_lab,
            "episodes": eps.height,
            "clean_episodes": n_clean,
            "tasks": len(tasks),
            "fired_calls": fired_all,
        },
        "fire_rate": fire,
        "in_sample": in_sample,
        "spurious": spurious,
        "detection": detection,
        "recovery_retention": recov,
        "receipt_cost": cost,
        "tools": tools_tbl,
        "rules": rules_tbl,
        "abstention": abst,
        "spurious_receipts": spurious_list,
        "ledger": {
            "path": str(replay_.ledger),
            "head": replay_.head,
            "root": replay_.root,
            "entries": replay_.entries,
        },
        "gates": [],
    }
    g = gates or {}
    report["gates"] = [
        x.to_json()
        for x in evaluate_gates(
            report,
            max_fire_rate=g.get("max_fire_rate"),
            max_spurious_per_100=g.get("max_spurious_per_100"),
            min_detection=g.get("min_detection"),
        )
    ]
    return report


# ------------------------------------------------------------------------------------------------------
# The whole audit, and re-scoring


def audit(
    corpus: Corpus,
    ledger_dir: str | Path,
    *,
    k: int = 5,
    seed: int = DEFAULT_SEED,
    contracts: ContractSet | None = None,
    origin: str = "mined",
    bootstrap: int = 1000,
    encoder: str = "v2",
    in_sample: bool = True,
    corpus_name: str = "",
    inject: Mapping[str, Any] | None = None,
    mine_params: MineParams | None = None,
    part_rows: int | None = None,
    gates: Mapping[str, float | None] | None = None,
    labels_file: str | Path | None = None,
    mine_from: Corpus | None = None,
    progress: Progress = NULL_PROGRESS,
) -> tuple[dict[str, Any], ContractSet]:
    """Mine (unless `contracts` is given), replay blind into a frozen ledger, then score. Returns the
    report and the contract set used.

    `mine_from`: mine on this corpus instead (with `--inject`, the corpus before injection: the same
    tasks, so the same folds, but the checkers do not depend on which calls happened to be faulted, and
    faulted episodes do not shrink the clean set the rules are mined from). `mine_params`: the mining
    settings (`k` and `seed` are the audit's own, whatever these say); `part_rows` bounds mining's
    memory (`mine`)."""
    if k < 1:
        raise CheckError(f"k must be >= 1, got {k}", code="E_USAGE", field="k")
    reuse = False
    if contracts is None:
        from contracts.mining import mine
        from contracts.mining.data import PART_ROWS

        params = replace(mine_params or MineParams(), k=k, seed=seed)
        # Mined on the corpus it replays: mine's verification pass is the in-sample replay's pass, so
        # the replay runs it once for both (`replay(verify=True)`) instead of mine running it again.
        reuse = mine_from is None and in_sample and k > 1
        base = mine_from if mine_from is not None else corpus
        rows = part_rows if part_rows is not None else PART_ROWS
        contracts = mine(base, params, progress=progress, verify=not reuse, part_rows=rows)
        origin = "mined" if mine_from is None else "mined before injection"
    rep = replay(
        contracts,
        corpus,
        ledger_dir,
        k=k,
        seed=seed,
        encoder=encoder,
        in_sample=in_sample,
        corpus_name=corpus_name,
        origin=origin,
        inject=inject,
        progress=progress,
        verify=reuse,
    )
    return rescore(rep, corpus, bootstrap=bootstrap, gates=gates, labels_file=labels_file), contracts


def rescore(
    rep: Replay,
    corpus: Corpus,
    *,
    bootstrap: int = 1000,
    seed: int | None = None,
    gates: Mapping[str, float | None] | None = None,
    labels_file: str | Path | None = None,
) -> dict[str, Any]:
    """Phase 2 on a replay (fresh or loaded from a ledger) with the corpus's labels, or a labels file's."""
    s = int(rep.start["seed"])
    truth = truth_from_corpus(corpus)
    if labels_file is not None:
        truth = apply_labels_file(truth, labels_file)
    return score(
        rep, population(corpus), truth, bootstrap=bootstrap, seed=s if seed is None else seed, gates=gates
    )


def audit_score(
    ledger_dir: str | Path,
    corpus: Corpus,
    *,
    bootstrap: int = 1000,
    gates: Mapping[str, float | None] | None = None,
    labels_file: str | Path | None = None,
) -> dict[str, Any]:
    """`contracts audit-score`: verify the frozen ledger, then score its fire events against the truth."""
    return rescore(load_replay(ledger_dir), corpus, bootstrap=bootstrap, gates=gates, labels_file=labels_file)


def canonical_report(report: Mapping[str, Any]) -> str:
    """The report's canonical JSON text (for comparisons in tests and digests)."""
    return canonical_str(dict(report))
