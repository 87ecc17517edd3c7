"""Every emitted rule must hold on the data it was mined from — checked with the shipped checker.

Deequ's and Great Expectations' users most often complain of suggested constraints that fail on the very
data they were suggested from. Here that is impossible by construction, and `mine` proves it on every
run: the contract set is handed to `contracts.checks.checker.find_violations` (the same code `contracts
check` and `contracts audit` run), and every checker must fire zero times on its own clean mining data
— the full checker on every clean call, fold checker f on the clean calls of every fold but f.

One checker pass does it: all rules are checked as one flat rule list over every clean call, and a
violation of rule r on a call of fold g is a failure when some checker holding r covers fold g (the full
checker covers every fold; fold checker f covers every fold but f).

`mining` imports `checks` only here, inside the function: the checker depends on the contract-set model
of `mining`, and this is the one place where mining needs the checker in return.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from contracts.mining.data import FULL, MiningData
from contracts.mining.model import ContractSet, ToolContracts


@dataclass(frozen=True)
class Misfire:
    """A rule that fired on its own mining data: which rule, which checker, which call, where."""

    rule: str
    checker: int | None
    call_id: str
    path: str


def misfires(cs: ContractSet, data: MiningData, limit: int = 20) -> list[Misfire]:
    """Violations of each checker's rules on that checker's clean mining data (empty when all hold)."""
    from contracts.checks.checker import find_violations  # see module docstring: the one upward import

    flat = ContractSet(
        params=cs.params,
        corpus=cs.corpus,
        tools={
            name: ToolContracts(
                rules=tuple(replace(r, in_full=True) for r in tc.rules),
                substitutes=tc.substitutes,
                immutable=tc.immutable,
            )
            for name, tc in cs.tools.items()
        },
        folds=(),
    )
    if not flat.all_rules():
        return []
    found, entries, _ = find_violations(flat, data.corpus, fold=None, tools=sorted(cs.tools))
    if found.height == 0:
        return []
    rule_of = pl.DataFrame(
        {"ridx": [e.ridx for e in entries], "rule": [e.rule.id for e in entries]},
        schema={"ridx": found.schema["ridx"], "rule": pl.String},
    )
    hits = (
        found.join(rule_of, on="ridx")
        .join(data.calls.select("cid", "call_id", "fold"), on="cid", how="inner")
        .sort("rule", "call_id", "path")
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


def assert_holds(cs: ContractSet, data: MiningData) -> None:
    """Raise AssertionError naming the first rules that fire on their own mining data."""
    bad = misfires(cs, data)
    if bad:
        shown = "; ".join(
            f"{m.rule} ({'full' if m.checker is None else f'fold {m.checker}'}) on call {m.call_id} at {m.path!r}"
            for m in bad[:5]
        )
        raise AssertionError(f"mined rules fire on their own mining data: {shown}")
