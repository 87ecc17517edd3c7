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
   retention and receipt cost, each with a task-clustered bootstrap interval (`output_contracts.audit.stats`).
   `audit-score` runs this phase alone from a frozen ledger and a corpus, optionally with other labels,
   and gets the same report when nothing changed. The truth is read by `output_contracts.audit.truth`, the
   sections are computed by `output_contracts.audit.scoring`, and the report is an `AuditReport`
   (`output_contracts.audit.report_model`): `audit_report`, `rescore_report` and `audit_score_report` return it;
   `audit`, `rescore` and `audit_score` return its JSON (`AuditReport.to_json()`, a dict).

Definitions (where the issue is silent, decided here):

* *calls checked*: calls with status `ok` (a failed call has no result to hold to a result contract).
  Calls of a tool that has no rule are checked and simply cannot fire: they stay in the denominator,
  as in the paper's "fire rate on organic responses"; the per-tool table shows them apart.
* *organic*: no `fault` label. *labelled*: a `fault` label (from the traces or from `--inject`). An
  organic call whose every violation is a cross-call disagreement (CONSISTENT) naming a labelled earlier
  call is no false alarm: it is left out of the fire rate's numerator and counted apart
  (`output_contracts.audit.scoring.explained`).
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
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from output_contracts.audit.propagation import propagation_episodes
from output_contracts.audit.report import evaluate_gates
from output_contracts.audit.report_model import AuditReport, LedgerAnchor
from output_contracts.audit.scoring import assemble
from output_contracts.audit.truth import Truth, apply_labels_file, truth_from_corpus
from output_contracts.checks.receipts import Receipt, Violation, encode, recovery_plan
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_table
from output_contracts.codes.mine_params import MineParams
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import CheckError, TraceError
from output_contracts.jsonutil import canonical_str, json_sha256, sha256_hex
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.call_texts import CallTexts
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.sources import is_corpus, open_corpus

LEDGER_FORMAT = "contracts-audit/1"
EVENTS_PER_ENTRY = 1000
IDS_PER_ENTRY = 5000
DIGEST_CHUNK = 100_000
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
    src: str | Path | Sequence[str | Path],
    work: str | Path,
    *,
    inject_kinds: Sequence[str] | None = None,
    inject_rate: float = 0.1,
    inject_seed: int = DEFAULT_SEED,
    contracts: ContractSet | None = None,
    registry: str | Path | None = None,
    progress: Progress = NULL_PROGRESS,
    allow_empty: bool = False,
) -> Source:
    """A corpus folder as is, or trace files (one or several, ingested together) into `work/corpus`; with
    `inject_kinds`, faults are planted (see `output_contracts.audit.inject`) and the result ingested into `work/injected`.

    `registry` (tools.json) is copied into the ingested corpus, so mining sees substitutes and receipts
    offer recovery tools; when SRC is a trace folder with a `tools.json` at its top, that one is used.
    """
    work_dir = Path(work)
    created = not work_dir.exists()
    try:
        return _open_source(
            src, work_dir, inject_kinds, inject_rate, inject_seed, contracts, registry, progress, allow_empty
        )
    except BaseException:
        if created:  # nothing half-written: a work folder this call made goes with its failure
            shutil.rmtree(work_dir, ignore_errors=True)
        raise


AUDITS_FOLDER = "audits"
_WORK_PARTS = frozenset({"corpus", "injected", "injected.jsonl"})


def audited_corpus(src: str | Path | Sequence[str | Path]) -> Path | None:
    """The corpus folder an audit reads in place: SRC when it is one ingested corpus folder, else None
    (trace files, or several sources, are ingested into the audit's work folder)."""
    paths = [src] if isinstance(src, str | Path) else list(src)
    if len(paths) == 1 and is_corpus(Path(paths[0])):
        return Path(paths[0])
    return None


def default_ledger_dir(src: str | Path | Sequence[str | Path], params: Mapping[str, Any]) -> Path:
    """Where an audit given no ledger folder writes: never the working directory, which nobody asked for.

    For an ingested corpus folder, `<corpus>/audits/k<K>-seed<S>-<digest>` (`params` must hold `k` and
    `seed`; the digest covers every parameter, so the name is stable: the same audit again names the same
    folder, which is then refused like any existing ledger, and a different audit gets its own). For trace
    files (or several sources), `ledger` in a new temporary folder (the ingested corpus goes beside it).
    """
    p = audited_corpus(src)
    if p is not None:
        return p / AUDITS_FOLDER / f"k{params['k']}-seed{params['seed']}-{json_sha256(dict(params))[:8]}"
    return Path(tempfile.mkdtemp(prefix="contracts-audit-")) / "ledger"


def work_dir(ledger_dir: str | Path) -> Path:
    """The audit's work folder beside its ledger (`<ledger>.corpus`): the ingested or injected corpus
    that `audit-score` reads later."""
    d = Path(ledger_dir)
    return d.with_name(d.name + ".corpus")


def claim_audit_dirs(ledger_dir: str | Path, *, overwrite: bool = False) -> None:
    """Refuse (or, with `overwrite`, empty) an audit's existing outputs before the run, as every ledger
    writer does (`output_contracts.ledger.claim_folder`); the work folder beside the ledger too, since an
    ingest into an old one would mix two runs' traces. `overwrite` removes a work folder only when it
    holds nothing but what an audit writes there."""
    from output_contracts.errors import UsageError
    from output_contracts.ledger import claim_folder
    from output_contracts.ledger.writer import OVERWRITE_FLAG

    work = work_dir(ledger_dir)
    if work.exists() and (not work.is_dir() or any(work.iterdir())):
        names = {c.name for c in work.iterdir()} if work.is_dir() else set()
        if not overwrite or not names or not names <= _WORK_PARTS:
            hint = f"pass {OVERWRITE_FLAG} to replace it, or " if not overwrite and names else ""
            raise UsageError(
                f"the audit's work folder beside the ledger is not empty: {hint}give a new folder with --ledger",
                source=str(work),
            )
    claim_folder(ledger_dir, overwrite=overwrite)
    if work.exists():
        shutil.rmtree(work)


def _open_source(
    src: str | Path | Sequence[str | Path],
    work: Path,
    inject_kinds: Sequence[str] | None,
    inject_rate: float,
    inject_seed: int,
    contracts: ContractSet | None,
    registry: str | Path | None,
    progress: Progress,
    allow_empty: bool = False,
) -> Source:
    from output_contracts.traces.ingest import ingest

    paths = [Path(src)] if isinstance(src, (str, Path)) else [Path(s) for s in src]
    if not paths:
        raise TraceError("no corpus or trace file given")
    for p in paths:
        if not p.exists():
            raise TraceError("no such corpus or trace file", source=str(p))
    p = paths[0]
    if registry is None and p.is_dir() and not is_corpus(p) and (p / "tools.json").is_file():
        registry = p / "tools.json"
    reg = Path(registry) if registry is not None else None
    with open_corpus(
        paths, registry=reg, progress=progress, keep=Path(work) / "corpus", allow_empty=allow_empty
    ) as corpus:
        pass  # kept in `work/corpus` (audit-score reads it later); a corpus folder is used as it is
    name = (p.name or str(p)) + (f" (+{len(paths) - 1} more)" if len(paths) > 1 else "")
    if not inject_kinds:
        return Source(corpus, name)
    from output_contracts.audit.inject import Planting, iter_corpus_records, write_flat

    planting = Planting(
        lambda: iter_corpus_records(corpus),
        kinds=inject_kinds,
        rate=inject_rate,
        seed=inject_seed,
        contracts=contracts,
    )
    flat = Path(work) / "injected.jsonl"
    write_flat(planting, flat)
    rep = planting.report
    assert rep is not None
    ingest(
        [flat],
        Path(work) / "injected",
        format="flat",
        registry=reg,
        progress=progress,
        allow_empty=allow_empty,
    )
    info = {"kinds": list(inject_kinds), "rate": inject_rate, "seed": inject_seed, **rep.to_json()}
    return Source(Corpus.open(Path(work) / "injected"), f"{name} (+inject)", info, corpus)


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
    #: the full checker's fired calls -> the earlier calls they refer to when all their violations are
    #: cross-call (CONSISTENT), else () (`output_contracts.audit.scoring.InSampleIds`)
    in_sample: Mapping[str, tuple[str, ...]] | None


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
    """Per checker, rule id -> its support (calls) there: `rules_for(f)`'s supports, read from the fold
    checkers without building each fold's rules."""
    if k <= 1:
        return {0: {r.id: r.support.calls for r in cs.rules_for(None)}}
    full = {r.id: r.support for r in cs.all_rules()}
    folds = {fc.fold: fc for fc in cs.folds}
    out: dict[int, dict[str, int]] = {}
    for f in range(k):
        fc = folds.get(f)
        if fc is None:
            cs.rules_for(f)  # raises the missing fold's CheckError
            continue
        out[f] = {i: fc.support.get(i, full[i]).calls for i in fc.rules}
    return out


def fire_events(
    cs: ContractSet,
    corpus: Corpus,
    violations: pl.DataFrame,
    k: int,
    *,
    encoder: str = "v2",
    supports: Mapping[int, Mapping[str, int]] | None = None,
) -> list[dict[str, Any]]:
    """One fire event per call with >= 1 violation (schema `fire-event`), sorted by call id.
    `supports`: `_support_maps(cs, k)` when the caller has it."""
    if violations.is_empty():
        return []
    if supports is None:
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
                r.get("refers"),
            )
            for r in rows
        ]
        rec, inferred = recovery_plan(cs, tool, visible.get(trace_id))
        enc = encode(
            Receipt(tool, None, tuple(vio), tuple(rec), encoder=encoder, recovery_inferred=inferred), encoder
        )
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
                        **({"refers": r["refers"]} if r.get("refers") else {}),
                    }
                    for r in rows
                ],
                "bytes": int(enc["bytes"]),
                "approx_tokens": int(enc["approx_tokens"]),
                # what the receipt offers: none under encoders without a list (v2-no-recovery, generic)
                "recovery_tools": len(enc["outcome_contract"].get("recovery_tools", ())),
                # only when inferred substitutes were offered, so ledgers without them keep their bytes
                **(
                    {"recovery_inferred": True}
                    if enc["outcome_contract"].get("recovery_tools_inferred")
                    else {}
                ),
            }
        )
    return events


def rule_catalog(
    cs: ContractSet, k: int, supports: Mapping[int, Mapping[str, int]] | None = None
) -> list[dict[str, Any]]:
    """Every rule used by the audit's checkers, with the largest support it has in any of them.
    `supports`: `_support_maps(cs, k)` when the caller has it."""
    best: dict[str, int] = {}
    for sup in (_support_maps(cs, k) if supports is None else supports).values():
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
    `mine` would). With `verify`, or an in-sample replay (k > 1), one flat pass of every rule of every
    checker over every call (`_verified_in_sample`) gives the verification, the in-sample replay and the
    cross-fitted replay (`_cross_from_flat`), instead of up to three passes.
    """
    from output_contracts.checks.checker import check_corpus
    from output_contracts.ledger import Ledger

    if cs.k != k or cs.seed != seed:
        raise CheckError(
            f"contract set was mined with k = {cs.k}, seed = {cs.seed}, but the audit asks for "
            f"k = {k}, seed = {seed}: re-mine with `contracts mine --folds {k} --seed {seed}` or audit with "
            f"--folds {cs.k} --seed {cs.seed}",
            code="E_FOLD",
            field="params.k" if cs.k != k else "params.seed",
        )
    checked = checked_call_ids(corpus)
    n_checked, pop_digest = checked.len(), population_digest(checked)
    del checked
    ins: dict[str, tuple[str, ...]] | None = None
    viol: pl.DataFrame | None = None
    if verify or (in_sample and k > 1):
        what = "verification, in-sample" if verify else "in-sample"
        progress.start(f"{what} and cross-fitted replay (one flat pass)", None)
        flat_ins, flat = _verified_in_sample(cs, corpus, keep=k > 1, verify=verify)
        progress.finish()
        if in_sample and k > 1:
            ins = flat_ins
        if flat is not None:
            viol = _cross_from_flat(cs, corpus, flat)
    progress.start("cross-fitted replay", None)
    if viol is None:
        viol = check_corpus(cs, corpus, fold="cross" if k > 1 else None)
    supports = _support_maps(cs, k)
    events = fire_events(cs, corpus, viol, k, encoder=encoder, supports=supports)
    progress.finish()
    cs_sha256 = contracts_sha256(cs)
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
        "contracts": {"sha256": cs_sha256, "origin": origin, "rules": len(cs.all_rules())},
        "rules": rule_catalog(cs, k, supports),
        "inject": dict(inject) if inject else None,
        "in_sample": ins is not None,
    }
    items: list[tuple[str, dict[str, Any]]] = [(KIND_START, start)]
    for i in range(0, len(events), EVENTS_PER_ENTRY):
        items.append((KIND_FIRE, {"events": events[i : i + EVENTS_PER_ENTRY]}))
    if ins is not None:
        ids = sorted(ins)
        for i in range(0, max(len(ids), 1), IDS_PER_ENTRY):
            chunk = ids[i : i + IDS_PER_ENTRY]
            body: dict[str, Any] = {"call_ids": chunk}
            cross = {c: list(ins[c]) for c in chunk if ins[c]}
            if cross:  # fired only by cross-call rules: the earlier calls they name (scoring reads them)
                body["cross_call"] = cross
            items.append((KIND_IN_SAMPLE, body))
    items.append(
        (KIND_END, {"fire_events": len(events), "in_sample_fired": None if ins is None else len(ins)})
    )
    config = {
        "command": "audit",
        "k": k,
        "seed": seed,
        "encoder": encoder,
        "contracts_sha256": cs_sha256,
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
        None if ins is None else dict(ins),
    )


def _in_sample_refers(
    cids: pl.Series, found: pl.DataFrame, entries: Sequence[Any], corpus: Corpus, texts: CallTexts | None
) -> dict[str, tuple[str, ...]]:
    """Fired call id -> the earlier calls its violations refer to when every one is CONSISTENT, else ()."""
    from output_contracts.codes.engine.evaluate import episode_witnesses
    from output_contracts.mining.data import call_ids

    hits = found.filter(pl.col("cid").is_in(cids.implode()))
    witnessed = episode_witnesses(entries, corpus, hits, texts)
    refs: dict[int, list[str] | None] = {}
    for cid, ridx in hits.select("cid", "ridx").iter_rows():
        v = witnessed.get((cid, ridx))
        have = refs.setdefault(cid, [])
        if v is None or v.refers is None or have is None:
            refs[cid] = None
        else:
            have.append(v.refers)
    ids = dict(call_ids(corpus, cids).select("cid", "call_id").iter_rows())
    return {ids[c]: tuple(sorted(set(r))) if r else () for c, r in refs.items()}


def _cross_from_flat(cs: ContractSet, corpus: Corpus, flat: FlatPass) -> pl.DataFrame:
    """The cross-fitted replay's violation frame (what `check_corpus(cs, corpus, fold="cross")` gives)
    from the flat pass: fold checker f's violations on the calls of fold f are the flat pass's
    violations of f's rules on those calls (a rule's violations do not depend on the other rules
    checked beside it, nor on which checker holds it), renumbered as the cross pass numbers its rules.
    This saves a second pass over every call; `tests/audit/test_reuse.py` compares the two."""
    from output_contracts.checks.checker import violation_frame
    from output_contracts.codes.engine.evaluate import checked_calls, rule_entries

    found, entries, texts = flat
    cross = rule_entries(cs, "cross", None, None)
    calls = checked_calls(cs, corpus, "cross", None, False)
    if found.height == 0 or not cross:
        return violation_frame(corpus, found.clear(), cross, calls)
    ridx = found.schema["ridx"]
    flat_rule = pl.DataFrame(
        {"ridx": [e.ridx for e in entries], "rule": [e.rule.id for e in entries]},
        schema={"ridx": ridx, "rule": pl.String},
    )
    cross_rule = pl.DataFrame(
        {
            "fold": [e.fold for e in cross],
            "rule": [e.rule.id for e in cross],
            "xridx": [e.ridx for e in cross],
        },
        schema={"fold": pl.Int32, "rule": pl.String, "xridx": ridx},
    )
    hit_calls = found.select("cid").unique()
    folds = calls.select("cid", "fold").join(hit_calls.lazy(), on="cid", how="semi").collect()
    x = (
        found.join(flat_rule, on="ridx")
        .join(folds, on="cid")
        .join(cross_rule, on=["fold", "rule"])
        .select("cid", pl.col("xridx").alias("ridx"), "path", "present")
    )
    return violation_frame(corpus, x, cross, calls, texts)


#: What the flat pass found (`find_violations`' violations and rule entries), and the stored texts of
#: the calls its witnesses read (`CallTexts`, None when nothing fired), for `_cross_from_flat`.
FlatPass = tuple[pl.DataFrame, list[Any], CallTexts | None]


def _verified_in_sample(
    cs: ContractSet, corpus: Corpus, *, keep: bool = False, verify: bool = True
) -> tuple[dict[str, tuple[str, ...]], FlatPass | None]:
    """Mine's verification and the in-sample replay from one checker pass; the sorted call ids on which
    the full checker fires (what `check_corpus(cs, corpus, fold=None)` gives), and with `keep` the pass
    itself (for `_cross_from_flat`), else None.

    The pass is `output_contracts.mining.verify`'s: every rule of every checker (`flat_rules`) over every checked
    call. Its violations on the clean mining calls (recomputed from the corpus with the contract set's own
    `clean`, `tools`, k and seed, exactly as `mine` selects them) must not come from a checker that
    covers the call's fold (AssertionError, as in `mine`; only with `verify`: a contract set not mined
    from this corpus has no mining data here); its violations of the full checker's rules on
    any call are the in-sample fire events (a rule's violations do not depend on the other rules checked
    beside it). Calls of tools without rules cannot fire, so checking only `cs.tools` loses nothing.
    """
    from output_contracts.checks.checker import find_violations
    from output_contracts.codes.table import episode_codes
    from output_contracts.mining.clean import clean_calls
    from output_contracts.mining.verify import flat_rules, misfires_from, raise_misfires

    found, entries, _ = find_violations(flat_rules(cs), corpus, fold=None, tools=sorted(cs.tools))
    if verify:
        tools = cs.params.get("tools")
        clean, _ = clean_calls(
            corpus, str(cs.params.get("clean", "ok")), None if tools is None else list(tools)
        )
        if cs.k > 1:
            clean = clean.join(
                fold_table(clean.get_column("task_id"), cs.seed, cs.k), on="task_id", how="left"
            )
        else:
            clean = clean.with_columns(pl.lit(0, pl.Int32).alias("fold"))
        raise_misfires(misfires_from(cs, found, entries, clean.select("cid", "fold"), corpus))
    full = {r.id for r in cs.rules_for(None)}
    in_full = [e.ridx for e in entries if e.rule.id in full]
    in_sample = found.filter(pl.col("ridx").is_in(in_full))
    cids = in_sample.get_column("cid").unique()
    # The stored texts of every call that fired and of every episode holding a CONSISTENT hit, read
    # once for the in-sample and the cross-fitted witnesses (both are subsets of this pass's hits),
    # and only when one of them will render
    texts = None
    if found.height and (keep or cids.len()):
        cons = [e.ridx for e in entries if e.rule.code in episode_codes()]
        texts = CallTexts.read(
            corpus,
            found.get_column("cid").unique(),
            found.filter(pl.col("ridx").is_in(cons)).get_column("cid").unique(),
        )
    flat = (found, entries, texts) if keep else None
    if cids.len() == 0:
        return {}, flat
    return _in_sample_refers(cids, in_sample, entries, corpus, texts), flat


def load_replay(ledger_dir: str | Path) -> Replay:
    """Read a frozen audit ledger back (refusing one that does not verify or is not frozen)."""
    from output_contracts.ledger import read_entries, verify

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
    ins: dict[str, tuple[str, ...]] | None = {} if entries[0].body.get("in_sample") else None
    for e in entries[1:]:
        if e.kind == KIND_FIRE:
            events.extend(e.body["events"])
        elif e.kind == KIND_IN_SAMPLE and ins is not None:
            cross = e.body.get("cross_call", {})
            ins.update((c, tuple(cross.get(c, ()))) for c in e.body["call_ids"])
    assert rep.head is not None and rep.root is not None
    return Replay(
        Path(ledger_dir),
        rep.head,
        rep.root,
        rep.entries,
        entries[0].body,
        tuple(events),
        None if ins is None else dict(ins),
    )


# ------------------------------------------------------------------------------------------------------
# Phase 2: join labels and rewards, score (`output_contracts.audit.scoring`, section by section)


def _verify_population(start: Mapping[str, Any], pop: pl.LazyFrame) -> None:
    """Refuse a corpus whose checked calls are not the ones the ledger froze: scores over other calls
    would pass for the frozen audit's."""
    if population_digest(pop.select("call_id").collect().to_series()) != start["population_sha256"]:
        raise CheckError(
            "the corpus's checked calls differ from the ones the ledger froze (population digest mismatch): "
            "score with the corpus the audit ran on",
            code="E_LEDGER",
        )


def score(
    replay_: Replay,
    pop: pl.LazyFrame,
    truth: Truth,
    *,
    bootstrap: int,
    seed: int,
    gates: Mapping[str, float | None] | None = None,
    prop: pl.DataFrame | None = None,
    population_verified: bool = False,
) -> AuditReport:
    """Phase 2: the audit report from frozen events, the population (`population`, a lazy scan of the
    checked calls) and the truth, with the verdict of each gate given (`max_fire_rate`,
    `max_spurious_per_100`, `min_detection`, `min_coverage`; None or absent = not set). `prop`: the
    trackable episodes of `output_contracts.audit.propagation.propagation_episodes` (None: not measured).
    `population_verified`: the replay's population digest was computed from this very population
    (`audit_report`, in one run), so it is not computed again (a sort of every call id)."""
    if not population_verified:
        _verify_population(replay_.start, pop)
    anchor = LedgerAnchor(str(replay_.ledger), replay_.head, replay_.root, replay_.entries)
    report = assemble(
        replay_.start,
        replay_.events,
        replay_.in_sample,
        anchor,
        pop,
        truth,
        bootstrap=bootstrap,
        seed=seed,
        prop=prop,
    )
    g = gates or {}
    verdicts = evaluate_gates(
        report,
        max_fire_rate=g.get("max_fire_rate"),
        max_spurious_per_100=g.get("max_spurious_per_100"),
        min_detection=g.get("min_detection"),
        min_coverage=g.get("min_coverage"),
    )
    return replace(report, gates=tuple(verdicts))


# ------------------------------------------------------------------------------------------------------
# The whole audit, and re-scoring


def audit_report(
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
) -> tuple[AuditReport, ContractSet]:
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
        from output_contracts.mining import mine
        from output_contracts.mining.data import PART_ROWS

        params = replace(mine_params or MineParams(), k=k, seed=seed)
        # Mined on the corpus it replays: mine's verification pass is the replay's own flat pass (the
        # in-sample and the cross-fitted replay, k > 1), so the replay runs it once for all
        # (`replay(verify=True)`) instead of mine running it again.
        reuse = mine_from is None and k > 1
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
    report = rescore_report(
        rep, corpus, bootstrap=bootstrap, gates=gates, labels_file=labels_file, population_verified=True
    )
    return report, contracts


def rescore_report(
    rep: Replay,
    corpus: Corpus,
    *,
    bootstrap: int = 1000,
    seed: int | None = None,
    gates: Mapping[str, float | None] | None = None,
    labels_file: str | Path | None = None,
    population_verified: bool = False,
) -> AuditReport:
    """Phase 2 on a replay (fresh or loaded from a ledger) with the corpus's labels, or a labels file's.
    `population_verified`: as in `score` (only for a replay just made from `corpus`)."""
    s = int(rep.start["seed"])
    truth = truth_from_corpus(corpus)
    if labels_file is not None:
        truth = apply_labels_file(truth, labels_file)
    prop = propagation_episodes(corpus, rep.events, truth.faults)
    return score(
        rep,
        population(corpus),
        truth,
        bootstrap=bootstrap,
        seed=s if seed is None else seed,
        gates=gates,
        prop=prop,
        population_verified=population_verified,
    )


def audit_score_report(
    ledger_dir: str | Path,
    corpus: Corpus,
    *,
    bootstrap: int = 1000,
    gates: Mapping[str, float | None] | None = None,
    labels_file: str | Path | None = None,
) -> AuditReport:
    """`contracts audit-score`: verify the frozen ledger, then score its fire events against the truth."""
    rep = load_replay(ledger_dir)
    return rescore_report(rep, corpus, bootstrap=bootstrap, gates=gates, labels_file=labels_file)


# The same three as the JSON report (a dict, schema `audit-report`), for callers that read it by key
# (benchmarks, tests); the options are those of the `*_report` function.


def audit(corpus: Corpus, ledger_dir: str | Path, **options: Any) -> tuple[dict[str, Any], ContractSet]:
    """`audit_report`, the report as its JSON dict."""
    report, cs = audit_report(corpus, ledger_dir, **options)
    return report.to_json(), cs


def rescore(rep: Replay, corpus: Corpus, **options: Any) -> dict[str, Any]:
    """`rescore_report`, the report as its JSON dict."""
    return rescore_report(rep, corpus, **options).to_json()


def audit_score(ledger_dir: str | Path, corpus: Corpus, **options: Any) -> dict[str, Any]:
    """`audit_score_report`, the report as its JSON dict."""
    return audit_score_report(ledger_dir, corpus, **options).to_json()


def canonical_report(report: AuditReport | Mapping[str, Any]) -> str:
    """The report's canonical JSON text (for comparisons in tests and digests)."""
    return canonical_str(report.to_json() if isinstance(report, AuditReport) else dict(report))
