"""Every emitted rule must hold on the data it was mined from — checked with the shipped checker.

Deequ's and Great Expectations' users most often complain of suggested constraints that fail on the very
data they were suggested from. Here that is impossible by construction, and `mine` proves it on every
run: the contract set is handed to `output_contracts.codes.engine.evaluate.find_violations` (the engine `contracts
check` and `contracts audit` run), and every checker must fire zero times on its own clean mining data
— the full checker on every clean call, fold checker f on the clean calls of every fold but f.

One checker pass does it: all rules are checked as one flat rule list (`flat_rules`) over the calls, and
a violation of rule r on a clean call of fold g is a failure when some checker holding r covers fold g
(the full checker covers every fold; fold checker f covers every fold but f): `misfires_from`. The pass
and the judgement are separate so that a caller that has run the flat pass for its own reasons (`audit`:
the full checker's in-sample replay is the same pass restricted to the full checker's rules) can verify
without a second pass; `assert_holds` runs both for `mine`.

The engine lives in `output_contracts.codes`, below mining and checking alike, so this needs no upward import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from output_contracts.codes.contract_set import ContractSet, ToolContracts
from output_contracts.codes.engine.evaluate import find_violations
from output_contracts.codes.hits import RuleEntry
from output_contracts.codes.mining_frames import FULL
from output_contracts.mining.data import MiningData, call_ids
from output_contracts.traces.corpus import Corpus

#: How many misfires `misfires` collects by default (the message shows the first 5).
LIMIT = 20


@dataclass(frozen=True)
class Misfire:
    """A rule that fired on its own mining data: which rule, which checker, which call, where."""

    rule: str
    checker: int | None
    call_id: str
    path: str


def flat_rules(cs: ContractSet) -> ContractSet:
    """Every rule of every checker (full and fold-only) as the full checker of one contract set, so
    one `find_violations(flat_rules(cs), corpus, fold=None)` pass checks all of them on every call."""
    return ContractSet(
        params=cs.params,
        corpus=cs.corpus,
        tools={
            name: ToolContracts(
                rules=tuple(replace(r, in_full=True) for r in tc.rules),
                substitutes=tc.substitutes,
                immutable=tc.immutable,
                maps=tc.maps,
                substitutes_inferred=tc.substitutes_inferred,
            )
            for name, tc in cs.tools.items()
        },
        folds=(),
    )


def misfires_from(
    cs: ContractSet,
    found: pl.DataFrame,
    entries: Sequence[RuleEntry],
    clean: pl.DataFrame,
    corpus: Corpus,
    limit: int = LIMIT,
) -> list[Misfire]:
    """Misfires in the result of a flat pass (`found, entries` of `find_violations(flat_rules(cs), ...,
    fold=None)`, over at least the clean calls), given the clean mining calls and their folds (`clean`:
    `cid`, `fold`). Sorted by (rule, call id, path), at most `limit`; empty when every checker holds."""
    if found.height == 0 or not entries:
        return []
    rule_of = pl.DataFrame(
        {"ridx": [e.ridx for e in entries], "rule": [e.rule.id for e in entries]},
        schema={"ridx": found.schema["ridx"], "rule": pl.String},
    )
    hits = found.join(rule_of, on="ridx").join(
        clean.select(pl.col("cid").cast(found.schema["cid"]), "fold"), on="cid", how="inner"
    )
    if hits.height == 0:
        return []
    hits = hits.join(call_ids(corpus, hits.get_column("cid")), on="cid", how="inner").sort(
        "rule", "call_id", "path"
    )
    holders: dict[str, list[int]] = {}
    for r in cs.all_rules():
        if r.in_full:
            holders.setdefault(r.id, []).append(FULL)
    for fc in cs.folds:
        for rid in fc.rules:
            holders.setdefault(rid, []).append(fc.fold)
    out: list[Misfire] = []
    for rid, call_id, fold, path in hits.select("rule", "call_id", "fold", "path").iter_rows():
        for ch in holders.get(rid, []):
            if ch == FULL or ch != fold:
                out.append(Misfire(rid, None if ch == FULL else ch, call_id, path))
                break
        if len(out) >= limit:
            break
    return out


def misfires(cs: ContractSet, data: MiningData, limit: int = LIMIT) -> list[Misfire]:
    """Violations of each checker's rules on that checker's clean mining data (empty when all hold)."""
    flat = flat_rules(cs)
    if not flat.all_rules():
        return []
    # clean_only: the checker's clean set (ok, no fault label, episode not faulty) holds every clean
    # mining call, whatever `clean` mode mined; the join in `misfires_from` keeps exactly those.
    found, entries, _ = find_violations(flat, data.corpus, fold=None, tools=sorted(cs.tools), clean_only=True)
    return misfires_from(cs, found, entries, data.calls.select("cid", "fold"), data.corpus, limit)


def raise_misfires(bad: Sequence[Misfire]) -> None:
    """Raise AssertionError naming the first misfires (nothing when there are none)."""
    if bad:
        shown = "; ".join(
            f"{m.rule} ({'full' if m.checker is None else f'fold {m.checker}'}) on call {m.call_id} at {m.path!r}"
            for m in bad[:5]
        )
        raise AssertionError(f"mined rules fire on their own mining data: {shown}")


def assert_holds(cs: ContractSet, data: MiningData) -> None:
    """Raise AssertionError naming the first rules that fire on their own mining data."""
    raise_misfires(misfires(cs, data))
