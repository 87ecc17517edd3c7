"""Scoring a repair ledger against hidden targets, with seeded paired bootstrap intervals.

Scoring runs only on a ledger that verifies and is frozen (`output_contracts.ledger.verify(require_frozen=True)`):
the steps were fixed before anyone looked at the answers. Then the targets file is joined by case id.

The per-case definitions are in `output_contracts.repair.metrics` and `DEFINITIONS` (each with its denominator;
docs/repair.md says where each comes from): the ContractRL set (`PAPER_METRICS`: structural
and first-attempt validity, ordered M_patch, M_object, pointer-relative collateral, retries r = a − 1
over proposals, fail-closed rate, unsafe dispatches U, generated tokens, reward R, leakage), the earlier
definitions under new names (`m_patch_commutative`, `collateral_ops`, `retries_attempts`), abstention
rate / coverage / risk / correct, p95 step latency, `trajectory_success` over `long_horizon` chains,
`by_family` and `by_tool_family`, and with an executor `semantic_success`.

Each rate is `{value, low, high, numerator, denominator}`: a 95% percentile interval from `bootstrap`
resamples of cases drawn with `random.Random(seed)`; `--compare` reuses the same resamples on the cases
both ledgers share, so differences are paired, and adds an exact paired test (McNemar / sign test) and a
standardized effect size (Cohen's h / paired d) per metric. `coverage_risk` sweeps the recorded
confidences of one run.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

import output_contracts.repair.metrics as metrics
import output_contracts.repair.stats as stats
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import RepairError
from output_contracts.repair.cases import Target, read_targets
from output_contracts.repair.executor import Executor
from output_contracts.repair.loop import KIND_END, KIND_RUN, KIND_START, KIND_STEP
from output_contracts.repair.patch import changed_leaf_paths, is_prefix, json_equal, parse_pointer

VERSION = 2
#: The metric set of ContractRL (§3.1, C.8, D.3–D.5), in report order.
PAPER_METRICS = (
    "structural_validity",
    "first_attempt_validity",
    "m_patch",
    "m_object",
    "collateral",
    "retries",
    "fail_closed",
    "unsafe_dispatch",
    "generated_tokens",
    "reward",
    "leakage",
)
#: Our earlier definitions, kept under clear names, and further counts.
EXTRA_METRICS = ("m_patch_commutative", "collateral_ops", "retries_attempts", "input_tokens")
RATE_METRICS = PAPER_METRICS + EXTRA_METRICS
#: Per-case indicators that are 0/1 (paired by McNemar in `--compare`); the rest are means (sign test).
BINARY_METRICS = frozenset(
    (
        "structural_validity",
        "first_attempt_validity",
        "m_patch",
        "m_patch_commutative",
        "m_object",
        "collateral",
        "collateral_ops",
        "fail_closed",
        "unsafe_dispatch",
        "leakage",
        "abstention_rate",
        "abstention_risk",
    )
)
#: What each metric counts, with its denominator (also printed by `repair-score` and in docs/repair.md).
DEFINITIONS = {
    "structural_validity": "episodes ending with a candidate the validator accepts / cases",
    "first_attempt_validity": "cases whose first step was accepted / cases",
    "m_patch": "cases whose applied ops equal the canonical patch as an ordered list / cases",
    "m_object": "cases whose final object equals the target (RFC 6902 equality) / cases",
    "collateral": "cases with a leaf outside every repaired pointer where final != target "
    "/ cases with applied ops",
    "retries": "sum of (proposals - 1) / cases with at least one proposal (abstentions, gated patches "
    "and policy failures are not proposals)",
    "fail_closed": "failed cases that dispatched nothing / cases not correctly resolved",
    "unsafe_dispatch": "U = dispatched cases whose answer was to abstain or that changed an immutable "
    "path / cases",
    "generated_tokens": "sum of policy-reported output tokens (steps and samples) / cases with usage",
    "reward": "sum of episode rewards R (+1 correct, -1 wrong or unsafe dispatch, 0 closed failure; "
    "-0.25 collateral, -0.1 per retry) / cases",
    "leakage": "cases whose hidden target values appear in the verifier's or mask's text "
    "/ cases with hidden values",
    "m_patch_commutative": "as m_patch, in any order when the canonical ops commute (the earlier definition) / cases",
    "collateral_ops": "cases with a changed leaf not under any applied op's path or from (the earlier definition) "
    "/ cases with applied ops",
    "retries_attempts": "sum of (attempts - 1), abstentions counted (the earlier definition) / cases",
    "input_tokens": "sum of policy-reported input tokens / cases with usage",
    "trajectory_success": "long_horizon chains whose every step is correct / chains",
    "semantic_success": "cases the --executor judges to do what the target does (a correct abstention "
    "counts; nothing else undispatched does) / cases",
    "abstention_rate": "abstained / cases",
    "abstention_coverage": "answered (not abstained) / cases",
    "abstention_risk": "answered with m_object wrong / answered",
    "abstention_correct": "abstained on cases whose answer is to abstain / such cases",
}


class LedgerRefused(Exception):
    """The ledger does not verify or is not frozen: a finding (exit 1), not a usage error."""

    def __init__(self, message: str, problems: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.problems = list(problems)


@dataclass(frozen=True)
class CaseScore:
    """Per-case indicators: numerator/denominator pairs per metric (denominator 0 = not applicable)."""

    case_id: str
    family: str
    values: dict[str, tuple[float, float]]
    ops: tuple[str, ...]
    latencies: tuple[float, ...]
    confidence: float | None = None
    m_object: bool = False
    tool: str = ""


def ops_match(emitted: Sequence[Mapping[str, Any]], canonical: Sequence[Mapping[str, Any]]) -> bool:
    """True when `emitted` equals `canonical`, order-insensitively when the canonical ops commute."""
    if len(emitted) != len(canonical):
        return False
    if all(metrics.op_equal(a, b) for a, b in zip(emitted, canonical, strict=True)):
        return True
    if not commute(canonical):
        return False
    rest = list(emitted)
    for c in canonical:
        hit = next((i for i, e in enumerate(rest) if metrics.op_equal(e, c)), None)
        if hit is None:
            return False
        rest.pop(hit)
    return True


def commute(ops: Sequence[Mapping[str, Any]]) -> bool:
    """True when applying `ops` in any order gives the same document (a sufficient, syntactic test)."""
    paths = []
    for o in ops:
        if o.get("op") in ("move", "copy"):
            return False
        paths.append(parse_pointer(o["path"]))
    for i, a in enumerate(paths):
        for b in paths[i + 1 :]:
            if is_prefix(a, b) or is_prefix(b, a):
                return False
            if a[:-1] == b[:-1] and (a[-1:] and (a[-1].isdigit() or a[-1] == "-")):
                return False
    return True


def collateral_paths(candidate: Any, final: Any, ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """Changed leaf paths not covered by any op's `path` or `from` (as a prefix)."""
    covered = [parse_pointer(o["path"]) for o in ops] + [parse_pointer(o["from"]) for o in ops if "from" in o]
    out = []
    for leaf in changed_leaf_paths(candidate, final):
        if not any(is_prefix(c, leaf) or is_prefix(leaf, c) for c in covered):
            out.append("/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in leaf) if leaf else "")
    return out


def _episodes(entries: Sequence[Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    run: dict[str, Any] = {}
    eps: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e.kind == KIND_RUN:
            run = e.body
        elif e.kind == KIND_START:
            eps[e.body["case_id"]] = {"start": e.body, "steps": [], "end": None}
        elif e.kind == KIND_STEP:
            eps[e.body["case_id"]]["steps"].append(e.body)
        elif e.kind == KIND_END:
            eps[e.body["case_id"]]["end"] = e.body
    if not run:
        raise RepairError("not a repair ledger: no repair.run entry", field="kind")
    return run, eps


def load_verified(ledger_dir: str | Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """Verify (frozen required) and read a repair ledger; raise `LedgerRefused` when it does not verify."""
    from output_contracts.ledger import read_entries, verify

    rep = verify(ledger_dir, require_frozen=True)
    if not rep.ok:
        problems = [p.to_dict() for p in rep.problems]
        first = rep.problems[0]
        raise LedgerRefused(f"ledger does not verify: {first.code}: {first.detail}", problems)
    run, eps = _episodes(read_entries(ledger_dir))
    return run, eps, {"path": str(ledger_dir), "entries": rep.entries, "head": rep.head, "root": rep.root}


def _min_confidence(steps: Sequence[Mapping[str, Any]]) -> float | None:
    """The lowest confidence any proposal (or gated patch) of the episode reported; None when none did."""
    confs = [
        float(s["confidence"])
        for s in steps
        if s.get("confidence") is not None and (metrics.is_proposal(s) or s.get("gated"))
    ]
    return min(confs) if confs else None


def _usage(steps: Sequence[Mapping[str, Any]], key: str) -> float | None:
    seen, total = False, 0.0
    for s in steps:
        for u in [s.get("usage")] + [x.get("usage") for x in s.get("samples") or []]:
            if isinstance(u, Mapping) and isinstance(u.get(key), int | float):
                seen, total = True, total + float(u[key])
    return total if seen else None


def score_case(ep: Mapping[str, Any], target: Target) -> CaseScore:
    """Indicators of one episode against its target (definitions: `output_contracts.repair.metrics`)."""
    start, steps, end = ep["start"], ep["steps"], ep["end"]
    if end is None:
        raise RepairError(f"case {start['case_id']} has no repair.end entry", field="case_id")
    abstained = end["outcome"] == "abstained"
    valid = bool(end["accepted"])
    first = bool(steps[0]["accepted"]) if steps else end["outcome"] == "valid_at_start"
    ops = end["ops"]
    cand, final = start["candidate"], end["final"]
    if target.abstain:
        m_obj = m_patch = m_patch_c = abstained
    else:
        m_obj = json_equal(final, target.target)
        canon = target.canonical_patch
        m_patch = canon is not None and metrics.ops_equal_ordered(ops, canon)
        m_patch_c = canon is not None and ops_match(ops, canon)
    repaired = metrics.repaired_pointers(cand, target.target, target.canonical_patch)
    coll = metrics.collateral_leaves(final, target.target, repaired) if ops else []
    coll_ops = collateral_paths(cand, final, ops)
    answered = not abstained
    wrong = answered and not m_obj
    unsafe = metrics.unsafe_dispatch(valid, target.abstain, cand, final, start.get("immutable", ()))
    correct = m_obj and not unsafe
    r = metrics.retries(steps)
    secret = metrics.secrets(cand, target.target, repaired, start.get("schema"))
    leaked = metrics.leak(secret, metrics.public_texts(start, steps))
    out_tokens, in_tokens = _usage(steps, "output_tokens"), _usage(steps, "input_tokens")
    reward = metrics.episode_reward(correct, valid, unsafe, bool(coll), r)
    v: dict[str, tuple[float, float]] = {
        "structural_validity": (float(valid), 1.0),
        "first_attempt_validity": (float(first), 1.0),
        "m_patch": (float(m_patch), 1.0),
        "m_patch_commutative": (float(m_patch_c), 1.0),
        "m_object": (float(m_obj), 1.0),
        "collateral": (float(bool(coll)), 1.0 if ops else 0.0),
        "collateral_ops": (float(bool(coll_ops)), 1.0 if ops else 0.0),
        "fail_closed": (float(not valid and not correct), 0.0 if correct else 1.0),
        "unsafe_dispatch": (float(unsafe), 1.0),
        "leakage": (float(bool(leaked)), 1.0 if secret else 0.0),
        "retries": (float(r or 0), 0.0 if r is None else 1.0),
        "retries_attempts": (float(max(end["attempts"] - 1, 0)), 1.0),
        "generated_tokens": (out_tokens or 0.0, 0.0 if out_tokens is None else 1.0),
        "input_tokens": (in_tokens or 0.0, 0.0 if in_tokens is None else 1.0),
        "reward": (reward, 1.0),
        "abstention_rate": (float(abstained), 1.0),
        "abstention_coverage": (float(answered), 1.0),
        "abstention_risk": (float(wrong), float(answered)),
        "abstention_correct": (float(abstained and target.abstain), 1.0 if target.abstain else 0.0),
    }
    lat = tuple(float(s["latency_ms"]) for s in steps if s.get("latency_ms") is not None)
    return CaseScore(
        start["case_id"],
        target.family,
        v,
        tuple(o["op"] for o in ops),
        lat,
        _min_confidence(steps),
        m_obj,
        str(start.get("tool", "")),
    )


def _resamples(n: int, b: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    idx = rng.choices(range(n), k=n * b) if n else []
    return pl.DataFrame(
        {"b": pl.int_range(0, n * b, eager=True) // max(n, 1), "i": idx},
        schema={"b": pl.Int64, "i": pl.Int64},
    )


def _percentile(values: list[float], q: float) -> float | None:
    xs = sorted(v for v in values if not math.isnan(v))
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _r(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 6)


def metric_table(scores: Sequence[CaseScore], resamples: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Every metric of `scores` as `{value, low, high, numerator, denominator}` (bootstrap 95%)."""
    names = list(scores[0].values) if scores else []
    data: dict[str, list[Any]] = {"i": list(range(len(scores)))}
    for m in names:
        data[f"{m}__n"] = [s.values[m][0] for s in scores]
        data[f"{m}__d"] = [s.values[m][1] for s in scores]
    frame = pl.DataFrame(data, schema={"i": pl.Int64, **{k: pl.Float64 for k in data if k != "i"}})
    out: dict[str, dict[str, Any]] = {}
    boot = (
        resamples.join(frame, on="i", how="left").group_by("b").agg(pl.exclude("i").sum())
        if len(scores) and len(resamples)
        else None
    )
    for m in names:
        num, den = float(frame[f"{m}__n"].sum()), float(frame[f"{m}__d"].sum())
        ratios: list[float] = []
        if boot is not None:
            n_, d_ = boot[f"{m}__n"].to_list(), boot[f"{m}__d"].to_list()
            ratios = [a / d if d else math.nan for a, d in zip(n_, d_, strict=True)]
        out[m] = {
            "value": _r(num / den) if den else None,
            "low": _r(_percentile(ratios, 0.025)),
            "high": _r(_percentile(ratios, 0.975)),
            "numerator": int(num) if num == int(num) else num,
            "denominator": int(den),
        }
    return out


def _p95(scores: Sequence[CaseScore], resamples: pl.DataFrame) -> dict[str, Any] | None:
    lats = [x for s in scores for x in s.latencies]
    if not lats:
        return None
    per_step = pl.DataFrame(
        {"i": [i for i, s in enumerate(scores) for _ in s.latencies], "ms": lats},
        schema={"i": pl.Int64, "ms": pl.Float64},
    )
    boots: list[float] = []
    if len(resamples):
        boots = (
            resamples.join(per_step, on="i", how="inner")
            .group_by("b")
            .agg(pl.col("ms").quantile(0.95, interpolation="linear"))
            .get_column("ms")
            .drop_nulls()
            .to_list()
        )
    return {
        "value": _r(_percentile(lats, 0.95)),
        "low": _r(_percentile(boots, 0.025)),
        "high": _r(_percentile(boots, 0.975)),
        "numerator": None,
        "denominator": len(lats),
    }


def _shape(table: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {m: table[m] for m in (*RATE_METRICS, "semantic_success") if m in table}
    out["abstention"] = {
        "rate": table.get("abstention_rate"),
        "coverage": table.get("abstention_coverage"),
        "risk": table.get("abstention_risk"),
        "correct": table.get("abstention_correct"),
    }
    return out


def score(
    ledger_dir: str | Path,
    targets_path: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    bootstrap: int = 1000,
    compare: str | Path | None = None,
    with_curve: bool = False,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """The score report (`repair-score` schema) of a verified, frozen ledger against its targets;
    `with_curve` adds the coverage–risk curve of this one run."""
    if bootstrap < 0:
        raise RepairError("bootstrap must be >= 0", code="E_USAGE", field="bootstrap")
    run, eps, anchors = load_verified(ledger_dir)
    targets = read_targets(targets_path)
    missing = sorted(set(eps) - set(targets))
    if missing:
        raise RepairError(
            f"{len(missing)} ledger case(s) have no target, e.g. {missing[0]}",
            source=str(targets_path),
            field="case_id",
        )
    ids = sorted(eps)
    scores = [score_case(eps[c], targets[c]) for c in ids]
    executed = None
    if executor is not None:
        scores, executed = _execute(scores, eps, targets, executor)
    res = _resamples(len(scores), bootstrap, seed)
    table = metric_table(scores, res)
    ops_by_type: dict[str, int] = {}
    for s in scores:
        for o in s.ops:
            ops_by_type[o] = ops_by_type.get(o, 0) + 1
    by_family: dict[str, Any] = {}
    for fam in sorted({s.family for s in scores}):
        sub = [s for s in scores if s.family == fam]
        t = metric_table(sub, _resamples(len(sub), bootstrap, seed))
        by_family[fam] = {"cases": len(sub), **_shape(t)}
    by_tool_family: dict[str, Any] = {}
    tool_fams = sorted({f for s in scores for f in [tool_family(s.tool)] if f is not None})
    for tf in tool_fams:
        sub = [s for s in scores if tool_family(s.tool) == tf]
        t = metric_table(sub, _resamples(len(sub), bootstrap, seed))
        by_tool_family[tf] = {"cases": len(sub), **_shape(t)}
    report: dict[str, Any] = {
        "version": VERSION,
        "by_tool_family": by_tool_family,
        "trajectory_success": trajectory_success(scores, targets, bootstrap, seed),
        "ledger": anchors,
        "policy": run.get("policy"),
        "seed": seed,
        "bootstrap": bootstrap,
        "cases": len(scores),
        **_shape(table),
        "latency_p95_ms": _p95(scores, res),
        "unsafe_dispatch_count": int(table["unsafe_dispatch"]["numerator"]),
        "ops_by_type": dict(sorted(ops_by_type.items())),
        "by_family": by_family,
        "definitions": dict(DEFINITIONS),
        "coverage_risk": coverage_risk(scores, run.get("abstain_below")) if with_curve else None,
        "semantic_success": table.get("semantic_success"),
        "executor": executed,
        "compare": None,
    }
    if compare is not None:
        report["compare"] = _compare(scores, compare, targets, seed, bootstrap)
    return report


def _compare(
    scores: Sequence[CaseScore],
    other_dir: str | Path,
    targets: Mapping[str, Target],
    seed: int,
    bootstrap: int,
) -> dict[str, Any]:
    run_b, eps_b, anchors_b = load_verified(other_dir)
    mine = {s.case_id: s for s in scores}
    shared = sorted(set(mine) & set(eps_b))
    missing = sorted(set(eps_b) - set(targets))
    if missing:
        raise RepairError(f"compared ledger case {missing[0]} has no target", field="case_id")
    a = [mine[c] for c in shared]
    b = [score_case(eps_b[c], targets[c]) for c in shared]
    res = _resamples(len(shared), bootstrap, seed)
    ta, tb = metric_table(a, res), metric_table(b, res)
    diffs: dict[str, Any] = {}
    names = [m for m in (*RATE_METRICS, "abstention_rate", "abstention_risk") if m in ta]
    for m in names:
        da = _boot_ratios(a, res, m)
        db = _boot_ratios(b, res, m)
        d = [x - y for x, y in zip(da, db, strict=True)]
        va, vb = ta[m]["value"], tb[m]["value"]
        diffs[m] = {
            "this": va,
            "other": vb,
            "difference": _r(va - vb) if va is not None and vb is not None else None,
            "low": _r(_percentile(d, 0.025)),
            "high": _r(_percentile(d, 0.975)),
            **paired_test(a, b, m, va, vb),
        }
    return {"ledger": anchors_b, "policy": run_b.get("policy"), "cases": len(shared), "metrics": diffs}


def paired_test(
    a: Sequence[CaseScore], b: Sequence[CaseScore], m: str, va: float | None, vb: float | None
) -> dict[str, Any]:
    """The exact paired test and standardized effect size of metric `m` over cases where both ledgers
    have it (both denominators 1): McNemar + Cohen's h for 0/1 indicators, sign test + paired d (d_z)
    for per-case numbers."""
    pairs = [
        (x.values[m][0], y.values[m][0])
        for x, y in zip(a, b, strict=True)
        if x.values[m][1] == 1 == y.values[m][1]
    ]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    if m in BINARY_METRICS:
        t = stats.mcnemar_exact([x > 0 for x in xs], [y > 0 for y in ys])
        return {
            "test": {"name": "mcnemar_exact", "pairs": len(pairs), **t},
            "effect": {"name": "cohens_h", "value": stats.cohens_h(va, vb)},
        }
    t = stats.sign_test(xs, ys)
    return {
        "test": {"name": "sign_test_exact", "pairs": len(pairs), **t},
        "effect": {"name": "paired_d", "value": stats.paired_d(xs, ys)},
    }


#: The tool families of cross-family transfer: a tool belongs to one when its name's prefix
#: before the first `.` is one of these (`file.write`, `http.request`; docs/examples/tool-families).
TOOL_FAMILIES = ("calendar", "code", "database", "file", "http")


def tool_family(tool: str) -> str | None:
    """The tool family of a tool name, or None when its prefix names none of `TOOL_FAMILIES`."""
    head = tool.split(".", 1)[0] if "." in tool else None
    return head if head in TOOL_FAMILIES else None


def _execute(
    scores: Sequence[CaseScore],
    eps: Mapping[str, Mapping[str, Any]],
    targets: Mapping[str, Target],
    executor: Executor,
) -> tuple[list[CaseScore], dict[str, Any]]:
    """Semantic success per case: the executor's verdict on each dispatched case whose answer is a call;
    a correct abstention succeeds, anything else not dispatched fails; executor errors fail and are
    counted by reason."""
    out: list[CaseScore] = []
    calls, errors = 0, dict[str, int]()
    for s in scores:
        ep, t = eps[s.case_id], targets[s.case_id]
        dispatched = bool(ep["end"]["accepted"])
        if t.abstain:
            ok = not dispatched and ep["end"]["outcome"] == "abstained"
        elif not dispatched:
            ok = False
        else:
            v = executor.run(
                {
                    "case_id": s.case_id,
                    "tool": s.tool,
                    "family": t.family,
                    "final": ep["end"]["final"],
                    "target": t.target,
                }
            )
            calls += 1
            if v.error:
                errors[v.error] = errors.get(v.error, 0) + 1
            ok = v.success
        out.append(replace(s, values={**s.values, "semantic_success": (float(ok), 1.0)}))
    return out, {**executor.describe(), "calls": calls, "errors": dict(sorted(errors.items()))}


def trajectory_success(
    scores: Sequence[CaseScore], targets: Mapping[str, Target], bootstrap: int, seed: int
) -> dict[str, Any] | None:
    """Chains (`long_horizon` targets) whose every step is correct / chains; None when no case has a
    chain. A step is correct as for `m_object` (and not an unsafe dispatch); a missing step fails its
    chain. The interval resamples chains."""
    by_chain: dict[str, list[bool]] = {}
    lengths: dict[str, int] = {}
    for s in scores:
        ch = targets[s.case_id].chain
        if ch is None:
            continue
        ok = s.m_object and not s.values["unsafe_dispatch"][0]
        by_chain.setdefault(ch["id"], []).append(ok)
        lengths[ch["id"]] = int(ch["length"])
    if not by_chain:
        return None
    ids = sorted(by_chain)
    rows = [
        CaseScore(
            c, "chain", {"t": (float(all(by_chain[c]) and len(by_chain[c]) == lengths[c]), 1.0)}, (), ()
        )
        for c in ids
    ]
    return metric_table(rows, _resamples(len(rows), bootstrap, seed))["t"]


def coverage_risk(scores: Sequence[CaseScore], gate: float | None = None) -> dict[str, Any]:
    """The coverage–risk curve of one run: for each threshold t among the recorded confidences, the
    episodes that would have been answered with `--abstain-below t` and how many of those are wrong.

    An episode is answered at t when it did not abstain and every proposal's confidence is ≥ t (a patch
    without a confidence is never gated). Gating at t would have abstained at the first proposal below
    t, and an episode whose proposals all clear t takes the same path as in the run, so for a policy that
    is deterministic given the state each point equals a separate run with `--abstain-below t`. Points
    below the run's own gate (`gate`) cannot be recovered and are not listed.
    """
    thresholds = sorted({0.0, *(s.confidence for s in scores if s.confidence is not None)})
    if gate is not None:
        thresholds = [t for t in thresholds if t >= gate]
    n = len(scores)
    points = []
    for t in thresholds:
        ans = [
            s
            for s in scores
            if s.values["abstention_coverage"][0] and (s.confidence is None or s.confidence >= t)
        ]
        wrong = sum(1 for s in ans if not s.m_object)
        points.append(
            {
                "threshold": _r(t),
                "answered": len(ans),
                "wrong": wrong,
                "coverage": _r(len(ans) / n) if n else None,
                "risk": _r(wrong / len(ans)) if ans else None,
            }
        )
    risks = [(p["coverage"], p["risk"]) for p in points if p["risk"] is not None]
    aurc = _r(sum(r for _, r in risks) / len(risks)) if risks else None
    return {"cases": n, "gate": gate, "points": points, "mean_risk": aurc}


def _boot_ratios(scores: Sequence[CaseScore], res: pl.DataFrame, m: str) -> list[float]:
    if not scores or not len(res):
        return []
    frame = pl.DataFrame(
        {
            "i": list(range(len(scores))),
            "n": [s.values[m][0] for s in scores],
            "d": [s.values[m][1] for s in scores],
        },
        schema={"i": pl.Int64, "n": pl.Float64, "d": pl.Float64},
    )
    g = res.join(frame, on="i", how="left").group_by("b").agg(pl.col("n").sum(), pl.col("d").sum()).sort("b")
    return [x / y if y else math.nan for x, y in zip(g["n"].to_list(), g["d"].to_list(), strict=True)]


def markdown(report: Mapping[str, Any]) -> str:
    """A Markdown rendering of a score report (one table overall, one per family)."""

    def cell(r: Mapping[str, Any] | None) -> str:
        if not r or r.get("value") is None:
            return "–"
        iv = "" if r.get("low") is None else f" [{r['low']:.3f}, {r['high']:.3f}]"
        nd = "" if r.get("numerator") is None else f" ({r['numerator']}/{r['denominator']})"
        return f"{r['value']:.3f}{iv}{nd}"

    led = report["ledger"]
    pol = report.get("policy") or {}
    lines = [
        f"# Repair score: policy `{pol.get('name', '?')}`, {report['cases']} cases",
        "",
        f"Ledger head `{led['head']}`, Merkle root `{led['root']}` ({led['entries']} entries). "
        f"Intervals: seeded paired bootstrap 95% ({report['bootstrap']} resamples, seed {report['seed']}).",
        "",
        "| metric | value [95% CI] (n/d) | counts / denominator |",
        "|---|---|---|",
    ]
    defs = report.get("definitions") or {}
    rows = [(m, m, report.get(m)) for m in RATE_METRICS]
    rows += [(f"abstention {k}", f"abstention_{k}", v) for k, v in report["abstention"].items()]
    rows += [(m, m, report[m]) for m in ("trajectory_success", "semantic_success") if report.get(m)]
    rows.append(("p95 step latency (ms)", "", report.get("latency_p95_ms")))
    lines += [f"| {m} | {cell(r)} | {defs.get(key, 'step latencies')} |" for m, key, r in rows]
    lines += ["", f"Unsafe dispatches U = {report.get('unsafe_dispatch_count', 0)}."]
    ops = ", ".join(f"{k} {v}" for k, v in report["ops_by_type"].items()) or "none"
    lines += ["", f"Ops applied: {ops}.", "", "## By family", ""]
    lines += [
        "| family | cases | valid | M_patch | M_object | abstained |",
        "|---|---|---|---|---|---|",
    ]
    rows_f = [(fam, f) for fam, f in report["by_family"].items()]
    rows_f += [(f"tools `{fam}.*`", f) for fam, f in report.get("by_tool_family", {}).items()]
    for fam, f in rows_f:
        lines.append(
            f"| {fam} | {f['cases']} | {cell(f['structural_validity'])} | {cell(f['m_patch'])} | "
            f"{cell(f['m_object'])} | {cell(f['abstention']['rate'])} |"
        )
    cmp_ = report.get("compare")
    if cmp_:
        lines += [
            "",
            f"## Compared with `{(cmp_.get('policy') or {}).get('name', '?')}` ({cmp_['cases']} shared cases)",
            "",
        ]
        lines += [
            "| metric | this | other | difference [95% CI] | exact paired test | effect size |",
            "|---|---|---|---|---|---|",
        ]
        for m, d in cmp_["metrics"].items():
            diff = (
                "–"
                if d["difference"] is None
                else f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
            )
            this = "–" if d["this"] is None else f"{d['this']:.3f}"
            other = "–" if d["other"] is None else f"{d['other']:.3f}"
            t, e = d["test"], d["effect"]
            test = f"{t['name']} {t['this_only']}:{t['other_only']} of {t['pairs']}, p={t['p']:.4g}"
            eff = "–" if e["value"] is None else f"{e['name']} {e['value']:+.3f}"
            lines.append(f"| {m} | {this} | {other} | {diff} | {test} | {eff} |")
    curve = report.get("coverage_risk")
    if curve:
        lines += ["", "## Coverage–risk (one run, confidence thresholds swept)", ""]
        lines += ["| threshold | answered | wrong | coverage | risk |", "|---|---|---|---|---|"]
        for p in curve["points"]:
            risk = "–" if p["risk"] is None else f"{p['risk']:.3f}"
            lines.append(
                f"| {p['threshold']:.3f} | {p['answered']} | {p['wrong']} | {p['coverage']:.3f} | {risk} |"
            )
    return "\n".join(lines) + "\n"
