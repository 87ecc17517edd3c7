"""Every mined rule holds on its own mining data by construction: `mine()` without its verification pass.

`mine(verify=False)` (the library default, and the CLI's without `--verify`) ships a contract set
without replaying it. That is sound only if every rule class admits a rule on the same exact counts the
checker would make on the same rows (docs/design.md, "Verification"). These property tests are that
proof, on random small corpora that reach every rule class: random tools (ids echoed from arguments,
counts and amounts, states and state-dependent fields, ordered dates, sums and products, item lists,
id maps, optional, null and mixed-kind fields, list and scalar results), random tasks, episodes and
folds, random noise that breaks each invariant on some calls, error calls, faulty (labelled) episodes
and rewards (tests/noisy_worlds.py). Thresholds are low, so that many rules are admitted on little data. Each corpus is mined
with the pass off and then checked by the shipped checker over the mining data — the vectorised engine
(`misfires`: every rule of every checker, the full checker on every clean call, fold checker f on the
clean calls outside fold f) and the per-call path an agent loop runs (`check_call`, with episode
memory) — and no rule of any checker may fire."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import check_call
from output_contracts.codes.consistent import mine as consistent
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.engine.evaluate import episode_memory
from output_contracts.mining import mine
from output_contracts.mining.data import load
from output_contracts.mining.verify import misfires, raise_misfires
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.noisy_worlds import CODES, World, low_params, records, registry


def per_call_fires(cs: ContractSet, corpus: Corpus, clean: pl.DataFrame) -> list[tuple[str, int | None]]:
    """(call id, checker) of every fire of the per-call checker (`check_call`, with episode memory) on
    the clean mining calls: the full checker on all, fold checker f on those outside fold f."""
    calls = (
        corpus.scan_calls()
        .select("cid", "call_id", "trace_id", "step", pl.col("tool").cast(pl.String), "arguments", "result")
        .collect()
        .join(clean.select(pl.col("cid").cast(pl.UInt64), "fold"), on="cid", how="left")
        .sort("trace_id", "step")
    )
    fires: list[tuple[str, int | None]] = []
    for checker in [None, *range(cs.k if cs.k > 1 else 0)]:
        # each episode starts from an empty memory of the checker's places (`blank`, as `check -` does:
        # the places are the checker's, so they are worked out once, not once per episode)
        empty = episode_memory(cs, checker)
        memory: Any = None
        trace = None
        for row in calls.iter_rows(named=True):
            if row["trace_id"] != trace:
                trace, memory = row["trace_id"], empty.blank()
            if row["result"] is None:
                continue
            got = check_call(
                cs,
                row["tool"],
                orjson.loads(row["arguments"]),
                orjson.loads(row["result"]),
                fold=checker,
                memory=memory,
                call_id=row["call_id"],
            )
            mining = row["fold"] is not None and (checker is None or row["fold"] != checker)
            if got is not None and mining:
                fires.append((row["call_id"], checker))
    return fires


def mine_and_check(
    w: World,
    k: int,
    mine_seed: int,
    clean: str,
    min_tasks: int,
    few_keys: bool = False,
    declare: bool = False,
) -> ContractSet:
    """Mine `w` without the verification pass; assert that no rule of any checker fires on its data.

    `few_keys`: CONSISTENT's fixed identity thresholds lowered too (a key with 3 distinct values is an
    identity, no key place is a category), so that small worlds admit its rules. `declare`: the corpus
    folder holds a registry (`registry`) whose output schemas give schema rules, some contradicted."""
    params = low_params(k, mine_seed, clean, min_tasks)
    if few_keys:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(consistent, "ID_MIN_KEYS", 3)
            mp.setattr(consistent, "SAMPLE_CATEGORY", 0)
            return mine_and_check(w, k, mine_seed, clean, min_tasks, declare=declare)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_from_records(records(w), Path(tmp) / "c")
        if declare:
            (corpus.path / "tools.json").write_bytes(orjson.dumps(registry(w)))
        if not load(corpus, clean=clean, k=k, seed=mine_seed, tools=None).calls.height:
            return ContractSet(params.to_json(), {}, {})
        cs = mine(corpus, params, verify=False)
        data = load(corpus, clean=clean, k=k, seed=mine_seed, tools=None)
        raise_misfires(misfires(cs, data, limit=50))
        assert per_call_fires(cs, corpus, data.calls) == []
        data.close()
    return cs


#: Examples per property test; CONTRACTS_VERIFY_EXAMPLES=500 for a long hunt for counterexamples.
EXAMPLES = int(os.environ.get("CONTRACTS_VERIFY_EXAMPLES", "8"))

worlds = st.builds(
    World,
    seed=st.integers(0, 2**32 - 1),
    tasks=st.integers(3, 30),
    episodes=st.integers(1, 3),
    calls=st.integers(1, 5),
    tools=st.integers(1, 3),
    ids=st.integers(1, 4),
    noise=st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.2]),
    faulty=st.sampled_from([0.0, 0.1, 0.3]),
    errors=st.sampled_from([0.0, 0.05]),
    rewards=st.booleans(),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    w=worlds,
    k=st.sampled_from([1, 2, 3, 5]),
    mine_seed=st.integers(0, 99),
    min_tasks=st.sampled_from([1, 2]),
    few_keys=st.booleans(),
    declare=st.booleans(),
)
def test_no_rule_fires_on_its_own_mining_data(
    w: World, k: int, mine_seed: int, min_tasks: int, few_keys: bool, declare: bool
) -> None:
    mine_and_check(w, k, mine_seed, "ok", min_tasks, few_keys, declare)


@settings(max_examples=max(2, EXAMPLES // 4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=worlds, k=st.sampled_from([1, 3]), mine_seed=st.integers(0, 99))
def test_no_rule_fires_on_its_own_mining_data_with_reward_clean(w: World, k: int, mine_seed: int) -> None:
    mine_and_check(w, k, mine_seed, "reward", 1)


def test_the_worlds_reach_every_rule_class() -> None:
    """The property is not vacuous: two worlds of this generator (three tools with a registry declaring
    some of their outputs; one tool called again and again for one entity per episode, where
    CONSISTENT has its repeats) admit rules of every class the miner has, and declared rules, at the
    library's own CONSISTENT thresholds, under noise, errors and faulty episodes."""
    seen: Counter[str] = Counter()
    declared = 0
    for seed, tools in ((1, 3), (3, 1)):
        w = World(seed, 60, 3, 5, tools, ids=1, noise=0.01, faulty=0.1, errors=0.05, rewards=True)
        cs = mine_and_check(w, 3, seed, "ok", 1, declare=tools > 1)
        seen.update(r.code for r in cs.all_rules())
        declared += sum("schema" in r.source for r in cs.all_rules())
    assert set(seen) == set(CODES), sorted(set(CODES) - set(seen))
    assert declared > 0
