"""CONSISTENT mining: what holds across repeats of one entity in an episode, and what the data refutes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from output_contracts.codes.consistent.mine import ID_MIN_KEYS
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.mine_params import default_min_tasks
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.ingest import corpus_from_records
from tests.helpers import find, rules

GET, CANCEL = "get_booking", "cancel_booking"


def episode(
    t: int, *, created: tuple[str, str] | None = None, region_key: bool = False
) -> list[dict[str, Any]]:
    """Task t's episode: read booking B<t>, cancel it (a write returning the whole booking), read it
    again. `created_at` and `user_id` never change, `status` does, `currency` is constant, `note` is
    not keyed by anything the arguments name."""
    bid = f"B{t:04d}"
    c1, c2 = created or (f"2024-05-{1 + t % 28:02d}T10:00:00", f"2024-05-{1 + t % 28:02d}T10:00:00")

    def booking(status: str, when: str) -> dict[str, Any]:
        out = {
            "booking_id": bid,
            "created_at": when,
            "user_id": f"user_{t % 97}",
            "status": status,
            "currency": "USD",
            "ref": f"R{t}",
            "region": f"r{t % 10}",
            "note": f"n{t % 5}",
        }
        return out

    args = {"region": f"r{t % 10}"} if region_key else {"booking_id": bid}
    trace, task = f"ep-{t}", f"task-{t:03d}"
    return [
        {"trace_id": trace, "task_id": task, "tool": GET, "arguments": args, "result": booking("active", c1)},
        {
            "trace_id": trace,
            "task_id": task,
            "tool": CANCEL,
            "arguments": args,
            "result": booking("cancelled", c1),
        },
        {
            "trace_id": trace,
            "task_id": task,
            "tool": GET,
            "arguments": args,
            "result": booking("cancelled", c2),
        },
    ]


def mined(tmp_path: Path, recs: list[dict[str, Any]], name: str = "c", **kw: Any) -> ContractSet:
    return mine(corpus_from_records(recs, tmp_path / name), **kw)


def places(cs: ContractSet, tool: str = GET) -> set[tuple[str, ...]]:
    return {tuple(r.paths) for r in rules(cs, "CONSISTENT", tool)}


def test_immutable_fields_of_an_entity_hold_and_mutable_ones_are_refuted(tmp_path: Path) -> None:
    n = default_min_tasks()["CONSISTENT"]
    cs = mined(tmp_path, [r for t in range(n) for r in episode(t)])
    assert places(cs) == {
        ("/created_at", "/booking_id"),
        ("/user_id", "/booking_id"),
        ("/ref", "/booking_id"),
        ("/region", "/booking_id"),
        ("/note", "/booking_id"),
    }
    # not /status: the second read agrees with the cancel's result (the latest sighting), so the reader's
    # repeats all say "cancelled" and a value that never varies is no rule; the cancel's own repeat changed
    # it (refuted there). Not /currency (never varies). Nothing keyed by /ref or /user_id: no argument
    # names them.
    assert schema_errors(cs.to_json(), "contract-set") == []
    r = find(cs, "CONSISTENT", "/created_at", "/booking_id", tool=GET)
    assert r is not None and (r.support.calls, r.support.tasks) == (n, n)  # one repeat per task
    # the cancel tool sees the entity once before it (the first read): same places, same support
    assert ("/created_at", "/booking_id") in places(cs, CANCEL)
    assert ("/status", "/booking_id") not in places(cs, CANCEL)


def test_support_one_change_and_identity(tmp_path: Path) -> None:
    n = default_min_tasks()["CONSISTENT"]
    thin = mined(tmp_path, [r for t in range(n - 1) for r in episode(t)], name="thin")
    assert places(thin) == set()
    changed = [r for t in range(n) for r in episode(t, created=("a", "b") if t == 7 else None)]
    cs = mined(tmp_path, changed, name="changed")
    assert ("/created_at", "/booking_id") not in places(cs)
    assert ("/user_id", "/booking_id") in places(cs)
    # called by region: /booking_id is named by no argument of the tools (no key), and /region is a
    # category (10 values < ID_MIN_KEYS): nothing, whatever holds
    assert ID_MIN_KEYS > 10
    cat = mined(tmp_path, [r for t in range(n) for r in episode(t, region_key=True)], name="cat")
    assert places(cat) == set() and places(cat, CANCEL) == set()


def test_fold_checkers_and_parts_give_the_same_rules(tmp_path: Path) -> None:
    recs = [r for t in range(300) for r in episode(t)]
    corpus = corpus_from_records(recs, tmp_path / "c")
    one = mine(corpus, folds=5, seed=13).to_json()
    assert mine(corpus, folds=5, seed=13, part_rows=2000).to_json() == one
    cs = mine(corpus, folds=5, seed=13)
    full = find(cs, "CONSISTENT", "/created_at", "/booking_id", tool=GET)
    assert full is not None and full.support.tasks == 300
    per_fold = [find(cs, "CONSISTENT", "/created_at", "/booking_id", tool=GET, fold=f) for f in range(5)]
    # fold checker f counts every task but fold f's: the five supports add up to 4 x 300
    assert sum(r.support.tasks for r in per_fold if r is not None) == 4 * 300


@pytest.mark.parametrize("folds", [1, 5])
def test_mined_rules_never_fire_on_their_own_data(tmp_path: Path, folds: int) -> None:
    from output_contracts.checks.checker import check_corpus

    recs = [r for t in range(250) for r in episode(t)]
    corpus = corpus_from_records(recs, tmp_path / "c")
    cs = mine(corpus, folds=folds, seed=13)
    assert places(cs)
    assert check_corpus(cs, corpus, fold="cross" if folds > 1 else None, codes=["CONSISTENT"]).height == 0


def test_a_write_that_names_the_entity_voids_the_pair(tmp_path: Path) -> None:
    """Between the two reads, every third task calls a write that names the booking and answers only an
    acknowledgement (or fails): the status it changed is no counterexample, and the pair is not counted."""
    recs = []
    for t in range(420):
        bid, trace, task = f"B{t:04d}", f"ep-{t}", f"task-{t:03d}"
        first = "active" if t % 2 else "pending"

        day = f"2024-01-{1 + t % 28:02d}"

        def read(
            status: str, trace: str = trace, task: str = task, bid: str = bid, day: str = day
        ) -> dict[str, Any]:
            res = {"booking_id": bid, "status": status, "created_at": day}
            return {
                "trace_id": trace,
                "task_id": task,
                "tool": GET,
                "arguments": {"booking_id": bid},
                "result": res,
            }

        recs.append(read(first))
        if t % 3 == 0:
            write = {"trace_id": trace, "task_id": task, "tool": CANCEL, "arguments": {"ids": [bid]}}
            if t % 2:
                recs.append({**write, "status": "error", "error": "timeout"})
            else:
                recs.append({**write, "result": {"acknowledged": True}})
            recs.append(read("cancelled"))
        else:
            recs.append(read(first))
    cs = mined(tmp_path, recs)
    status = find(cs, "CONSISTENT", "/status", "/booking_id", tool=GET)
    assert status is not None and status.support.calls == 280  # the 140 touched pairs are not counted
    assert find(cs, "CONSISTENT", "/created_at", "/booking_id", tool=GET) is not None
