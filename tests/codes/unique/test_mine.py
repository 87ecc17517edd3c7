"""UNIQUE mining: no repeat within a list, 300 tasks.

The order world shared with RANGE's tests (tests/codes/range_unique_world.py) mined with the default
parameters first, then the thresholds on small hand-made corpora, then UNIQUE's choice of one rule per
list, then the merge properties (folds). Library bugs that were fixed are pinned as regression tests.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_of
from output_contracts.codes.mine_params import default_min_tasks
from output_contracts.codes.table import checks
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.range_unique_world import assert_world_set_is_valid, order_world
from tests.helpers import codes_of, few_tasks, find, mine_records, rules, sig, task_record


def test_world_unique_rules(world_cs: ContractSet) -> None:
    got = {r.paths: r.params for r in rules(world_cs, "UNIQUE")}
    assert got == {
        # the first string field in pattern order ("sku" < "slot"; `/items/*/slot` never repeats either)
        ("/items/*/sku",): {},
        ("/tags/*",): {},  # scalar items
        ("/shipments/*/parcels/*",): {},  # each shipment's parcels apart: P0 in every shipment
    }
    for r in rules(world_cs, "UNIQUE"):
        assert (r.support.calls, r.support.tasks) == (320, 320), r.paths
    r = find(world_cs, "UNIQUE", "/items/*/sku")
    assert r is not None and checks()["UNIQUE"].describe(r) == "/items/*/sku unique within its list"
    # a small value set repeats by chance and refutes the rule
    for p in ("/items/*/color", "/items/*/qty", "/items/*/slot"):
        assert find(world_cs, "UNIQUE", p) is None, p


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    assert_world_set_is_valid(world_cs, "UNIQUE", 300)


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker has the k = 1 UNIQUE rules, support included. Its fold checkers see ~256
    tasks: too few for UNIQUE (300; enough for RANGE, 200: tests/codes/range/)."""
    k5 = mine(world_corpus, folds=5)
    assert sig(k5, codes=("UNIQUE",)) == sig(world_cs, codes=("UNIQUE",))
    assert "UNIQUE" in codes_of(k5.rules_for(None))
    for f in range(5):
        assert "UNIQUE" not in codes_of(k5.rules_for(f)), f


# ---- thresholds and the choice of one rule per list ----------------------------------------------------


def _lists(n_tasks: int, calls_per_task: int = 1, repeat_in: int | None = None) -> list[dict[str, Any]]:
    """`/xs/*/id` unique ids (repeated once in task `repeat_in`), `/xs/*/n` from a set of 3."""
    out = []
    for t in range(n_tasks):
        for c in range(calls_per_task):
            ids = [f"I{t}-{c}-{j}" for j in range(3)]
            if t == repeat_in:
                ids[2] = ids[0]
            out.append(task_record(f"t{t:03d}", {"xs": [{"id": v, "n": j % 3} for j, v in enumerate(ids)]}))
    return out


def test_unique_needs_300_tasks(tmp_path: Path) -> None:
    assert default_min_tasks()["UNIQUE"] == 300
    assert rules(mine_records(tmp_path, _lists(299)), "UNIQUE") == []
    assert rules(mine_records(tmp_path, _lists(299, calls_per_task=2)), "UNIQUE") == []
    r = find(mine_records(tmp_path, _lists(300)), "UNIQUE", "/xs/*/id")
    assert r is not None and r.params == {} and (r.support.calls, r.support.tasks) == (300, 300)
    lowered = mine_records(tmp_path, _lists(299), params=few_tasks("UNIQUE", n=299))
    assert [r.paths for r in rules(lowered, "UNIQUE")] == [("/xs/*/id",)]


def test_short_lists_do_not_count(tmp_path: Path) -> None:
    """A list with fewer than two judged items cannot repeat: it is no example. Among 300 tasks, one
    with a single-item list (and one whose items hold only nulls) leaves 298 tasks: too few."""
    recs = _lists(300)
    recs[5] = task_record("t005", {"xs": [{"id": "solo", "n": 0}]})
    recs[6] = task_record("t006", {"xs": [{"id": None, "n": None}, {"id": None, "n": None}]})
    assert find(mine_records(tmp_path, recs), "UNIQUE", "/xs/*/id") is None
    assert find(mine_records(tmp_path, recs, params=few_tasks("UNIQUE", n=298)), "UNIQUE", "/xs/*/id")


def test_unique_needs_30_lists(tmp_path: Path) -> None:
    """With the task threshold lowered: 30 lists are needed, and they are lists, not calls (15 calls of two
    inner lists each are 30 examples)."""
    few = few_tasks("UNIQUE")
    flat = [task_record(f"t{i:03d}", {"xs": [f"a{i}", f"b{i}"]}) for i in range(30)]
    assert find(mine_records(tmp_path, flat[:29], params=few), "UNIQUE", "/xs/*") is None
    assert find(mine_records(tmp_path, flat, params=few), "UNIQUE", "/xs/*") is not None
    nested = [task_record(f"t{i:03d}", {"g": [["a", "b"], ["a", "b", "c"]]}) for i in range(15)]
    r = find(mine_records(tmp_path, nested, params=few), "UNIQUE", "/g/*/*")
    assert r is not None and (r.support.calls, r.support.tasks) == (15, 15)
    assert find(mine_records(tmp_path, nested[:14], params=few), "UNIQUE", "/g/*/*") is None


def test_one_repeat_refutes_the_field(tmp_path: Path) -> None:
    """One repeated id in 320 tasks kills the rule on `id`; `/xs/*/n` (0, 1, 2 in every list) never
    repeats inside a list, so the list's rule falls back to that numeric field."""
    cs = mine_records(tmp_path, _lists(320, repeat_in=17))
    assert find(cs, "UNIQUE", "/xs/*/id") is None
    assert [r.paths for r in rules(cs, "UNIQUE")] == [("/xs/*/n",)]
    clean = mine_records(tmp_path, _lists(320))
    assert [r.paths for r in rules(clean, "UNIQUE")] == [("/xs/*/id",)]


def choice_world(n_tasks: int = 300) -> list[dict[str, Any]]:
    r = random.Random(5)
    out = []
    for i in range(n_tasks):
        res = {
            # scalar items and object items in one list: the items themselves are the rule
            "mixed": [f"m{i}", f"n{i}", {"id": f"x{i}"}, {"id": f"y{i}"}],
            # strings before numbers, however distinct the numbers
            "rows": [{"num": 1000 * i + j, "label": f"L{j}"} for j in range(3)],
            # numbers only: the first field in pattern order
            "pts": [{"b": 2 * j + i, "a": 100 * i + j} for j in range(3)],
            # nested: each order's lines apart (L0 is in every order)
            "orders": [{"lines": [{"lid": f"L{j}"} for j in range(r.randint(2, 3))]} for _ in range(2)],
            # nested scalars
            "grid": [[j, j + 1] for j in range(3)],
            # repeats across lists of one call are fine, inside one are not
            "pairs": [{"v": [1, 2]}, {"v": [1, 1] if i == 9 else [2, 1]}],
        }
        out.append(task_record(f"t{i:03d}", res))
    return out


def test_one_rule_per_list(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, choice_world())
    got = {r.paths for r in rules(cs, "UNIQUE")}
    assert got == {
        ("/mixed/*",),
        ("/rows/*/label",),
        ("/pts/*/a",),
        ("/orders/*/lines/*/lid",),
        ("/grid/*/*",),
    }


def test_first_string_field_in_pattern_order(tmp_path: Path) -> None:
    """The sku renamed `uid`: `slot` (4 values) now comes before it in pattern order ("slot" < "uid") and
    is the list's rule, however more distinct `uid` is; both are held, as the order world without `slot`
    shows."""
    recs = order_world(300)
    for rec in recs:
        for item in rec["result"]["items"]:
            item["uid"] = item.pop("sku")
    cs = mine_records(tmp_path, recs)
    assert {r.paths for r in rules(cs, "UNIQUE")} == {
        ("/items/*/slot",),
        ("/tags/*",),
        ("/shipments/*/parcels/*",),
    }
    for rec in recs:
        for item in rec["result"]["items"]:
            del item["slot"]
    assert {r.paths for r in rules(mine_records(tmp_path, recs), "UNIQUE")} == {
        ("/items/*/uid",),
        ("/tags/*",),
        ("/shipments/*/parcels/*",),
    }


# ---- regressions: library bugs since fixed ------------------------------------------------------------


def _two_fields_world(block_of: Any, n_tasks: int = 320) -> list[dict[str, Any]]:
    """`/xs/*/a` from 40 values seen everywhere; `/xs/*/b` from a block of 20 values per group of tasks
    (`block_of(i, task)` names the group): 20 * groups values in all, more than a's with 3 groups or
    more, fewer within one group. Neither repeats inside a list. (A choice by distinct count took b over
    the whole corpus and a within a fold or a part.)"""
    r = random.Random(5)
    out = []
    for i in range(n_tasks):
        t = f"t{i:03d}"
        g = block_of(i, t)
        a, b = r.sample(range(40), 3), r.sample(range(20), 3)
        out.append(
            task_record(
                t, {"xs": [{"a": f"a{x:02d}", "b": f"b{g}-{y:02d}"} for x, y in zip(a, b, strict=True)]}
            )
        )
    return out


def test_unique_choice_does_not_depend_on_folds_or_parts(tmp_path: Path) -> None:
    # by fold: each of the 5 folds sees 20 b-values (100 in all) but all 40 a-values
    by_fold = corpus_from_records(
        _two_fields_world(lambda _i, t: fold_of(t, DEFAULT_SEED, 5)), tmp_path / "folds"
    )
    k1 = [r.paths for r in rules(mine(by_fold), "UNIQUE")]
    k5 = [r.paths for r in rules(mine(by_fold, folds=5), "UNIQUE")]
    # by part: tasks are dealt round-robin into parts in task-id order
    by_part = corpus_from_records(_two_fields_world(lambda i, _t: i % 3), tmp_path / "parts")
    one = [r.paths for r in rules(mine(by_part), "UNIQUE")]
    three = [r.paths for r in rules(mine(by_part, part_rows=leaf_rows(by_part) // 3 + 1), "UNIQUE")]
    # the first string field in pattern order, though b has more values than a in all (100 or 60 to 40)
    assert (k1, one) == ([("/xs/*/a",)], [("/xs/*/a",)])
    assert (k5, three) == (k1, one)


def test_unique_does_not_judge_numbers_beyond_2_53(tmp_path: Path) -> None:
    """Two ids of magnitude 2**53 or more are no evidence either way (float64 cannot tell 2**53 from
    2**53 + 1): the repeated big ids do not refute `/xs/*`, whose small items never repeat; a list whose
    only judged item is small is no example."""
    few = few_tasks("UNIQUE")
    big = [
        task_record(f"t{i:03d}", {"xs": [i + 1, i + 2, 2**53, 2**53 + 1, -(2**60), -(2**60)]})
        for i in range(40)
    ]
    r = find(mine_records(tmp_path, big, params=few), "UNIQUE", "/xs/*")
    assert r is not None and (r.support.calls, r.support.tasks) == (40, 40)
    # distinct even as float64 (2**54 + 8i): judged, these would be 40 examples with no repeat
    lone = [task_record(f"t{i:03d}", {"xs": [i + 1, 2**54 + 8 * i]}) for i in range(40)]
    assert rules(mine_records(tmp_path, lone, params=few), "UNIQUE") == []


def test_unique_negative_zero_repeats_zero(tmp_path: Path) -> None:
    """0 and -0.0 in one list are a repeat (as in check_call): no rule on lists that always hold both,
    where lists holding 0 and 0.5 instead get one."""
    few = few_tasks("UNIQUE")
    zeros = [task_record(f"t{i:03d}", {"xs": [i + 1, 0, -0.0]}) for i in range(40)]
    assert rules(mine_records(tmp_path, zeros, params=few), "UNIQUE") == []
    halves = [task_record(f"t{i:03d}", {"xs": [i + 1, 0, 0.5]}) for i in range(40)]
    assert [r.paths for r in rules(mine_records(tmp_path, halves, params=few), "UNIQUE")] == [("/xs/*",)]


# ---- composite identities and pools -------------------------------------------------------------------


def _flights(n_tasks: int, *, dup_in: int | None = None, tool: str = "tool") -> list[dict[str, Any]]:
    """Round trips: two flights whose numbers and dates each repeat across lists and sometimes within
    one (the same flight number out and back), never the whole flight."""
    out = []
    for t in range(n_tasks):
        a = {"number": f"HAT{t % 40:03d}", "date": f"2024-05-{1 + t % 20:02d}", "price": 100 + t % 7}
        b = {
            "number": a["number"] if t % 3 == 0 else f"HAT{(t + 1) % 40:03d}",
            "date": a["date"] if t % 3 else f"2024-06-{1 + t % 20:02d}",
            "price": a["price"] if t % 4 == 0 else 90 + t % 5,
        }
        fl = [a, b, dict(a)] if t == dup_in else [a, b]
        res = {"booking_id": f"B{t:04d}", "cabin": ("economy", "business")[t % 2], "flights": fl}
        out.append(task_record(f"t{t:03d}", res, tool=tool))
    return out


def test_composite_identity_where_no_field_is_unique(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _flights(320))
    got = [r.paths for r in rules(cs, "UNIQUE")]
    assert got == [("/flights/*/date", "/flights/*/number", "/flights/*/price")]
    r = rules(cs, "UNIQUE")[0]
    assert (r.support.calls, r.support.tasks) == (320, 320)
    assert schema_errors(cs.to_json(), "contract-set") == []
    # one duplicated flight in 320 tasks refutes it; 299 tasks are too few (the rule of three)
    assert rules(mine_records(tmp_path, _flights(320, dup_in=44)), "UNIQUE") == []
    assert rules(mine_records(tmp_path, _flights(299)), "UNIQUE") == []


def test_unique_is_judged_per_pool(tmp_path: Path) -> None:
    """The reservation reader holds 320 tasks of round trips; a write tool returning the same shape (the
    same keys: one pool, `output_contracts.mining.pools`) has 40. Pooled, the write tool gets the reader's rule;
    a duplicate in the write tool's data refutes both."""
    reader = _flights(320, tool="get_booking")
    writer = [
        {**r, "task_id": f"w{i:03d}", "trace_id": f"w{i:03d}"}
        for i, r in enumerate(_flights(40, tool="update_booking"))
    ]
    cs = mine_records(tmp_path, [*reader, *writer])
    assert {r.tool for r in rules(cs, "UNIQUE")} == {"get_booking", "update_booking"}
    bad_writer = [
        {**r, "task_id": f"w{i:03d}", "trace_id": f"w{i:03d}"}
        for i, r in enumerate(_flights(40, dup_in=3, tool="update_booking"))
    ]
    assert rules(mine_records(tmp_path, [*reader, *bad_writer]), "UNIQUE") == []
