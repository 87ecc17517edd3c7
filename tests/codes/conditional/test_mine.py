"""CONDITIONAL mining: facts that hold given a discriminator's value, their chance argument, and merging.

A generated order world first (every consequent form, each planted or refuted on purpose), then the
thresholds one at a time on small corpora, then the merge properties (task parts, folds)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.conditional.mine import CHANCE, DISC_MAX
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.mine_params import default_min_support, default_min_tasks
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.helpers import mine_records, rules

TOOL = "get_order"
STATUSES = ("pending", "shipped", "delivered", "cancelled")
COUNTRIES = {"FR": "EUR", "DE": "EUR", "US": "USD", "GB": "GBP"}


def order(r: random.Random, t: int) -> dict[str, Any]:
    """Task t's order. Planted: `/delivered_at` exactly when delivered, `/fulfillments` empty exactly
    when pending, `/currency` determined by `/country`, `/results` non-empty exactly when `/hits` > 0.
    Noise: `/gift_note` present at random (half the calls), `/coupon` absent in 1 of 20 calls whatever the
    status."""
    status = STATUSES[t % 4]
    country = list(COUNTRIES)[(t // 4) % 4]
    hits = 0 if t % 5 == 0 else r.randint(1, 50)
    out: dict[str, Any] = {
        "order_id": f"ORD-{t:05d}",
        "status": status,
        "country": country,
        "currency": COUNTRIES[country],
        "fulfillments": [] if status == "pending" else [{"id": f"F{t}"}],
        "hits": hits,
        "results": [f"p{i}" for i in range(min(hits, 3))],
    }
    if status == "delivered":
        out["delivered_at"] = f"2025-01-{1 + t % 28:02d}T10:00:00Z"
    if r.random() < 0.5:
        out["gift_note"] = "for you"
    if r.random() >= 0.05:
        out["coupon"] = "SAVE10"
    return out


def world(n_tasks: int, seed: int = 5, calls: int = 2) -> list[dict[str, Any]]:
    r = random.Random(seed)
    return [
        {
            "trace_id": f"ep-{t}-{c}",
            "task_id": f"task-{t:04d}",
            "tool": TOOL,
            "arguments": {},
            "result": order(r, t),
        }
        for t in range(n_tasks)
        for c in range(calls)
    ]


def conditional(cs: ContractSet, fold: int | None = None) -> dict[tuple[str, str, str], Any]:
    """(D, P, then as JSON) -> when, of every CONDITIONAL rule of one checker."""
    return {
        (r.paths[1], r.paths[0], canonical_str(r.params["then"])): r.params["when"]
        for r in rules(cs, "CONDITIONAL", TOOL, fold)
    }


@pytest.fixture(scope="module")
def world_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(world(400), tmp_path_factory.mktemp("cond") / "c")


@pytest.fixture(scope="module")
def world_cs(world_corpus: Corpus) -> ContractSet:
    return mine(world_corpus)  # mine's own verification: no rule fires on its mining data


def test_world_rules(world_cs: ContractSet) -> None:
    got = conditional(world_cs)
    assert got == {
        ("/status", "/delivered_at", '"present"'): {"in": ["delivered"]},
        ("/status", "/delivered_at", '"absent"'): {"in": ["cancelled", "pending", "shipped"]},
        ("/status", "/fulfillments", '"empty"'): {"in": ["pending"]},
        ("/status", "/fulfillments", '"nonempty"'): {"in": ["cancelled", "delivered", "shipped"]},
        ("/country", "/currency", '{"equals":"EUR"}'): {"in": ["DE", "FR"]},
        ("/country", "/currency", '{"equals":"GBP"}'): {"in": ["GB"]},
        ("/country", "/currency", '{"equals":"USD"}'): {"in": ["US"]},
        # and back where the dependency is one to one (EUR is two countries' currency)
        ("/currency", "/country", '{"equals":"GB"}'): {"in": ["GBP"]},
        ("/currency", "/country", '{"equals":"US"}'): {"in": ["USD"]},
        ("/hits", "/results", '"empty"'): {"sign": ["zero"]},
        ("/hits", "/results", '"nonempty"'): {"sign": ["positive"]},
    }
    # noise: a field present at random and one absent in 1 of 20 calls get no rule under any condition
    assert not any(p in ("/gift_note", "/coupon") for _d, p, _t in got)
    assert schema_errors(world_cs.to_json(), "contract-set") == []
    r = next(
        r
        for r in rules(world_cs, "CONDITIONAL", TOOL)
        if r.paths[0] == "/delivered_at" and r.params["then"] == "present"
    )
    assert (r.support.calls, r.support.tasks) == (200, 100)  # 100 delivered tasks of 2 calls each


def test_each_fold_checker_finds_the_planted_rules(world_corpus: Corpus) -> None:
    cs = mine(world_corpus, folds=5)
    for f in range(5):
        got = conditional(cs, f)
        assert got[("/status", "/delivered_at", '"present"')] == {"in": ["delivered"]}
        assert got[("/hits", "/results", '"nonempty"')] == {"sign": ["positive"]}


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    cs = mine(world_corpus, folds=5)
    assert conditional(cs) == conditional(world_cs)


def test_parts_give_the_same_bytes(world_corpus: Corpus) -> None:
    rows = leaf_rows(world_corpus)
    for k in (1, 5):
        one = canonical_str(mine(world_corpus, folds=k).to_json())
        for n_parts in (3, 7):
            assert canonical_str(mine(world_corpus, folds=k, part_rows=rows // n_parts + 1).to_json()) == one


# ---- the thresholds, one at a time ---------------------------------------------------------------------


def _recs(groups: dict[str, int], present: dict[str, float], seed: int = 1) -> list[dict[str, Any]]:
    """One call per task; `groups[v]` tasks with `/kind = v`; `/x` present in a share `present[v]` of
    them (deterministically spread)."""
    r = random.Random(seed)
    out = []
    t = 0
    for v, n in groups.items():
        for i in range(n):
            res: dict[str, Any] = {"kind": v}
            if (i * 7919 % 1000) / 1000 < present[v]:
                res["x"] = r.randint(1, 9)
            out.append(
                {"trace_id": f"ep{t}", "task_id": f"t{t:04d}", "tool": "t", "arguments": {}, "result": res}
            )
            t += 1
    return out


def _xs(cs: ContractSet) -> set[tuple[str, str]]:
    return {
        (canonical_str(r.params["then"]), canonical_str(r.params["when"]))
        for r in rules(cs, "CONDITIONAL", "t")
    }


def test_group_support_counts_tasks(tmp_path: Path) -> None:
    need = default_min_tasks()["CONDITIONAL"]
    assert need == default_min_support()["CONDITIONAL"] == 30
    ok = mine_records(tmp_path, _recs({"a": need, "b": 200}, {"a": 1.0, "b": 0.0}))
    assert ('"present"', '{"in":["a"]}') in _xs(ok)
    thin = mine_records(tmp_path, _recs({"a": need - 1, "b": 200}, {"a": 1.0, "b": 0.0}))
    assert ('"present"', '{"in":["a"]}') not in _xs(thin)
    assert ('"absent"', '{"in":["b"]}') in _xs(thin)  # the other group has its own support


def test_chance_argument_against_the_base_rate(tmp_path: Path) -> None:
    """`/x` present in every one of 40 tasks of group a. Where it is present in 90% of b's 200 tasks too,
    the tool's base rate is q = 0.92, and 0.92^40 = 0.036 is no evidence; where b has it in 20%, q = 0.35
    and 0.35^40 is far below CHANCE/m."""
    common = mine_records(tmp_path, _recs({"a": 40, "b": 200}, {"a": 1.0, "b": 0.9}))
    assert ('"present"', '{"in":["a"]}') not in _xs(common)
    rare = mine_records(tmp_path, _recs({"a": 40, "b": 200}, {"a": 1.0, "b": 0.2}))
    assert ('"present"', '{"in":["a"]}') in _xs(rare)
    q = (40 + 0.9 * 200) / 240
    m = 4  # groups a and b, present and absent each (x is optional, holds numbers, no arrays)
    assert 40 * math.log(q) > math.log(CHANCE / m)  # the refuted case, by the inequality itself


def test_one_counterexample_refutes(tmp_path: Path) -> None:
    recs = _recs({"a": 60, "b": 200}, {"a": 1.0, "b": 0.0})
    del recs[3]["result"]["x"]  # one task of group a without x
    assert ('"present"', '{"in":["a"]}') not in _xs(mine_records(tmp_path, recs))


def test_discriminator_with_too_many_values_is_none(tmp_path: Path) -> None:
    groups = {f"v{i:02d}": 40 for i in range(DISC_MAX + 1)}
    pres = {v: (1.0 if i % 2 else 0.0) for i, v in enumerate(groups)}
    assert _xs(mine_records(tmp_path, _recs(groups, pres))) == set()
    groups = {f"v{i:02d}": 40 for i in range(DISC_MAX)}
    pres = {v: (1.0 if i % 2 else 0.0) for i, v in enumerate(groups)}
    assert _xs(mine_records(tmp_path, _recs(groups, pres)))  # 16 values: a discriminator


def test_a_fact_of_every_call_is_no_conditional_rule(tmp_path: Path) -> None:
    """x in every call of both groups: REQUIRED's fact, not a conditional one."""
    cs = mine_records(tmp_path, _recs({"a": 60, "b": 60}, {"a": 1.0, "b": 1.0}))
    assert _xs(cs) == set()
    assert any(r.code == "REQUIRED" and r.paths == ("/x",) for r in rules(cs, tool="t"))


# ---- merging, on random corpora -----------------------------------------------------------------------


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), k=st.sampled_from([2, 3, 5]), parts=st.integers(2, 4))
def test_random_worlds_merge_over_parts_and_folds(tmp_path: Path, seed: int, k: int, parts: int) -> None:
    """Per-(part, fold) statistics merge to the whole: any task split gives the same bytes, and the full
    checker of k folds is the k = 1 checker."""
    recs = world(160, seed=seed, calls=1)
    corpus = corpus_from_records(recs, tmp_path / f"w{seed}-{k}-{parts}")
    one = mine(corpus, folds=k)
    split = mine(corpus, folds=k, part_rows=leaf_rows(corpus) // parts + 1)
    assert canonical_str(split.to_json()) == canonical_str(one.to_json())
    assert conditional(one) == conditional(mine(corpus, folds=1))


# ---- conservation across arrays: P = Σ Q, given D where it fails in some states -------------------------


def _orders(n_tasks: int, *, modified_every: int = 10, seed: int = 3) -> list[dict[str, Any]]:
    """τ-bench retail's shape: the first payment pays for the items, except in orders whose items were
    modified, where a second payment settles the difference; `/region` is noise unrelated to either."""
    r = random.Random(seed)
    out = []
    for t in range(n_tasks):
        prices = [round(r.uniform(5, 500), 2) for _ in range(r.randint(1, 4))]
        modified = modified_every > 0 and t % modified_every == 0
        status = "modified" if modified else ("pending", "delivered")[t % 2]
        first = round(sum(prices) + (r.uniform(-40, 40) if modified else 0), 2)
        payments = [{"amount": first}] + ([{"amount": round(sum(prices) - first, 2)}] if modified else [])
        res = {
            "status": status,
            "region": f"r{t % 7}",
            "items": [{"price": p} for p in prices],
            "payment_history": payments,
        }
        out.append(
            {
                "trace_id": f"ep-{t}",
                "task_id": f"task-{t:04d}",
                "tool": "get_order",
                "arguments": {},
                "result": res,
            }
        )
    return out


def _sums(cs: ContractSet) -> dict[tuple[str, ...], Any]:
    return {r.paths: r.params for r in rules(cs, "CONDITIONAL", "get_order") if len(r.paths) == 3}


def test_conservation_given_the_states_where_it_holds(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _orders(800))
    assert _sums(cs) == {
        ("/payment_history/*0/amount", "/status", "/items/*/price"): {
            "then": {"sum": "cent"},
            "when": {"in": ["delivered", "pending"]},
        }
    }
    # not unconditional: the modified orders refute it, so RELATION has no such rule
    assert not [r for r in rules(cs, "RELATION", "get_order") if r.paths[0] == "/payment_history/*0/amount"]
    # `/region`'s values are as good a condition on a small corpus, had failures been rare: they are not
    # (every region holds modified orders), and no region-conditioned rule is emitted
    assert not any(p[1] == "/region" for p in _sums(cs))


def test_conservation_needs_the_tasks_of_a_rare_event(tmp_path: Path) -> None:
    """The condition's largest group needs 300 tasks: "never fails in these states" is a rare-event claim."""
    assert _sums(mine_records(tmp_path, _orders(800))) != {}  # 400 delivered tasks
    assert _sums(mine_records(tmp_path, _orders(560))) == {}  # 280 delivered and 224 pending: too few


def test_unconditional_conservation_is_relation_s(tmp_path: Path) -> None:
    """Where the first payment always pays for the items, RELATION states it with a fixed index, and
    CONDITIONAL does not repeat it; relations among first members of one array are not stated (the
    array-instance group states them for every member)."""
    recs = _orders(200, modified_every=0)
    for rec in recs:
        for it in rec["result"]["items"]:
            it["qty"], it["unit"] = 2, it["price"] / 2
    cs = mine_records(tmp_path, recs)
    rel = {(r.paths, r.params["form"]) for r in rules(cs, "RELATION", "get_order")}
    assert (("/payment_history/*0/amount", "/items/*/price"), "sum_over") in rel
    assert not any(all("/items/*0/" in p for p in paths) for paths, _ in rel)
    assert _sums(cs) == {}
