"""LENGTH mining: "never empty", 300 tasks.

The order world shared with FORMAT's tests (tests/codes/format_length_world.py) mined with the default
parameters first, then the thresholds on small hand-made corpora, then the fold checkers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_of
from output_contracts.codes.mine_params import default_min_tasks
from output_contracts.mining import MineParams, mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.format_length_world import order_world, root_places
from tests.helpers import codes_of, few_tasks, find, mine_records, rules, sig, task_record


def test_world_length_rules(world_cs: ContractSet) -> None:
    got = {r.paths: (r.params, r.support.tasks) for r in rules(world_cs, "LENGTH")}
    assert got == {("/items",): ({"min": 1}, 320), ("/items/*/lines",): ({"min": 1}, 320)}
    items = find(world_cs, "LENGTH", "/items")
    assert items is not None and items.support.calls == 320  # one array a call
    lines = find(world_cs, "LENGTH", "/items/*/lines")
    assert lines is not None and lines.support.calls == 320  # the support records calls, not arrays
    assert find(world_cs, "LENGTH", "/tags") is None  # empty in every 7th task


def test_too_few_tasks_for_length(tmp_path: Path) -> None:
    recs = order_world(299)
    corpus = corpus_from_records(recs, tmp_path / "c")
    cs = mine(corpus)
    assert rules(cs, "LENGTH") == []
    assert find(cs, "FORMAT", "/order_id") is not None  # the rest of the world is mined as before
    # the threshold counts tasks, not calls: 299 tasks of 2 calls each are still too few
    assert rules(mine_records(tmp_path, order_world(299, calls_per_task=2)), "LENGTH") == []
    params = MineParams.of()
    lowered = dataclasses.replace(params, min_tasks={**params.min_tasks, "LENGTH": 299})
    got = {r.paths: r.params for r in rules(mine(corpus, lowered), "LENGTH")}
    assert got == {("/items",): {"min": 1}, ("/items/*/lines",): {"min": 1}}
    # and exactly 300 tasks are enough with the defaults
    at300 = {r.paths for r in rules(mine_records(tmp_path, order_world(300)), "LENGTH")}
    assert at300 == {("/items",), ("/items/*/lines",)}


def test_length_support_and_emptiness(tmp_path: Path) -> None:
    """With the task threshold lowered: 30 arrays are needed; one empty array anywhere kills the rule;
    a list that always holds two items still gets `min 1`; arrays of other kinds at P do not count."""
    lists = [task_record(f"t{i:03d}", {"xs": [1, 2], "ys": [i]}) for i in range(29)]
    cs = mine_records(tmp_path, lists, params=few_tasks("LENGTH"))
    assert rules(cs, "LENGTH") == []  # 29 arrays < min_support 30
    lists.append(task_record("t029", {"xs": [1, 2], "ys": []}))
    cs = mine_records(tmp_path, lists, params=few_tasks("LENGTH"))
    assert [(r.paths, r.params) for r in rules(cs, "LENGTH")] == [(("/xs",), {"min": 1})]
    mixed = [*lists, task_record("t030", {"xs": "none", "ys": [3]})]  # a string at /xs is TYPE's business
    r = find(mine_records(tmp_path, mixed, params=few_tasks("LENGTH")), "LENGTH", "/xs")
    assert r is not None and r.support.calls == 30
    # the examples are arrays: 15 calls holding two arrays each at `/xs/*/v` are 30 examples
    nested = [task_record(f"t{i:03d}", {"xs": [{"v": [1]}, {"v": [2, 3]}]}) for i in range(15)]
    r = find(mine_records(tmp_path, nested, params=few_tasks("LENGTH")), "LENGTH", "/xs/*/v")
    assert r is not None and r.params == {"min": 1} and (r.support.calls, r.support.tasks) == (15, 15)
    assert find(mine_records(tmp_path, nested[:14], params=few_tasks("LENGTH")), "LENGTH", "/xs/*/v") is None


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    data = world_cs.to_json()
    assert schema_errors(data, "contract-set") == []
    assert data["params"]["min_tasks"]["LENGTH"] == default_min_tasks()["LENGTH"] == 300
    assert ContractSet.from_json(data).to_json() == data


def test_root_places(tmp_path: Path) -> None:
    """A result that is itself a list: LENGTH at the root pointer `""` (FORMAT there and at `/*`:
    tests/codes/format/test_mine.py)."""
    cs = mine_records(tmp_path, root_places(), params=few_tasks("LENGTH"))
    got = {(r.tool, r.code, r.paths): r.params for r in cs.rules_for(None) if r.code == "LENGTH"}
    assert got == {("skus", "LENGTH", ("",)): {"min": 1}}


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker has the k = 1 LENGTH rules; its fold checkers see ~256 tasks, too few for
    LENGTH (300), as mining without each fold shows."""
    k5 = mine(world_corpus, folds=5)
    assert sig(k5, codes=("LENGTH",)) == sig(world_cs, codes=("LENGTH",))
    assert "LENGTH" in codes_of(k5.rules_for(None))
    records = order_world(320)
    for f in range(5):
        assert "LENGTH" not in codes_of(k5.rules_for(f))
        rest = [r for r in records if fold_of(r["task_id"], k5.seed, 5) != f]
        alone = mine(corpus_from_records(rest, world_corpus.path.parent / f"without-{f}"))
        assert sig(alone, None, ("LENGTH",)) == set(), f
