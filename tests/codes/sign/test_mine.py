"""POSITIVE / NONNEG: sign of every number at a pattern; threshold 30 values; only the stronger claim."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import call, find, mine_records


def _recs(values: list) -> list[dict]:
    return [call(f"t{i % 4}", "tool", {"v": v}) for i, v in enumerate(values)]


def test_threshold_boundary(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs([i + 1.5 for i in range(29)])), "POSITIVE", "/v") is None
    r = find(mine_records(tmp_path, _recs([i + 1.5 for i in range(30)])), "POSITIVE", "/v")
    assert r is not None and r.support.calls == 30


def _tasks(values: list, per_task: int = 1) -> list[dict]:
    """Value i in task i // per_task (distinct tasks: the sign test on counts counts tasks)."""
    return [call(f"t{i // per_task:04d}", "tool", {"v": v}) for i, v in enumerate(values)]


def test_counts_near_zero_get_nonneg(tmp_path: Path) -> None:
    """Seats left in a cabin, 1..20, one value a task: had 0 been as common as 1, 3 tasks with a 0
    were due among 60 (E0 = 3: not significant, and 5% of tasks): NONNEG, not POSITIVE."""
    seats = [1 + i % 20 for i in range(60)]
    cs = mine_records(tmp_path, _tasks(seats))
    assert find(cs, "POSITIVE", "/v") is None and find(cs, "NONNEG", "/v") is not None


def test_repeated_reads_count_once(tmp_path: Path) -> None:
    """Four tasks reading the same low seat counts 20 times each: 80 rows, still four tasks (E0 = 2)."""
    seats = [2 + i % 6 for i in range(80)]
    cs = mine_records(tmp_path, _tasks(seats, per_task=20))
    assert find(cs, "POSITIVE", "/v") is None and find(cs, "NONNEG", "/v") is not None


def test_counts_that_never_reach_zero_keep_positive(tmp_path: Path) -> None:
    # quantities: 1 to 3 in 60 tasks and never a 0: (3/4)^60, the empty stretch is significant
    qty = [1 + i % 3 for i in range(60)]
    assert find(mine_records(tmp_path, _tasks(qty)), "POSITIVE", "/v") is not None
    # 17 tasks in the lowest two octaves is the least that counts ((3/4)^17 < 1%), 16 is not
    # (values from 12: octaves [8, 16) and [16, 32); the rest far above, in 40 tasks in all)
    for low, want in ((17, True), (16, False)):
        vals = [12 + i % 19 for i in range(low)] + [5000 + i for i in range(40 - low)]
        got = find(mine_records(tmp_path, _tasks(vals)), "POSITIVE", "/v") is not None
        assert got is want, low
    # cents totals far from zero: a legal 0 would show in fewer than 1 task in 200 (E0 = 3/1024 of 40)
    cents = [1702 + 37 * i for i in range(40)]
    assert find(mine_records(tmp_path, _tasks(cents)), "POSITIVE", "/v") is not None


def test_zero_gives_nonneg_not_positive(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _recs([i % 5 for i in range(40)]))
    assert find(cs, "NONNEG", "/v") is not None
    assert find(cs, "POSITIVE", "/v") is None
    pos = mine_records(tmp_path, _recs([1.5 + i % 5 for i in range(40)]))
    assert find(pos, "POSITIVE", "/v") is not None
    assert find(pos, "NONNEG", "/v") is None  # never both


def test_one_negative_kills_both(tmp_path: Path) -> None:
    vals = [1 + i % 5 for i in range(40)]
    vals[20] = -0.01
    cs = mine_records(tmp_path, _recs(vals))
    assert find(cs, "NONNEG", "/v") is None and find(cs, "POSITIVE", "/v") is None


def test_counts_values_in_nested_arrays(tmp_path: Path) -> None:
    """10 calls × 3 items = 30 values: enough for `/items/*/price`."""
    recs = [
        call(f"t{i % 3}", "tool", {"items": [{"price": 1.25 + i + j} for j in range(3)]}) for i in range(10)
    ]
    r = find(mine_records(tmp_path, recs), "POSITIVE", "/items/*/price")
    assert r is not None and r.support.calls == 10


def test_constant_and_non_numbers_ignored(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _recs([3] * 40)), "POSITIVE", "/v") is None
    mixed = mine_records(tmp_path, _recs([None if i % 4 == 0 else 1.5 + i for i in range(44)]))
    assert find(mixed, "POSITIVE", "/v") is not None  # nulls are TYPE's business


# ---- the first member of a list -------------------------------------------------------------------------


def _payments(n_tasks: int, *, refund_every: int = 3, bad_first: int | None = None) -> list[dict]:
    """A booking's payments: the first is the original payment (a positive amount in cents, 1,200 and
    up), later ones refunds (negative); in task `bad_first` the first payment is a 0."""
    out = []
    for t in range(n_tasks):
        first = 0 if t == bad_first else 1200 + 37 * t
        pays = [{"amount": first}] + (
            [{"amount": -(100 + t)}] if refund_every and t % refund_every == 0 else []
        )
        out.append(call(f"t{t:04d}", "tool", {"payment_history": pays}))
    return out


def test_first_member_gets_the_sign_the_list_does_not_have(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _payments(100))
    assert find(cs, "POSITIVE", "/payment_history/*/amount") is None  # refunds are negative
    assert find(cs, "NONNEG", "/payment_history/*/amount") is None
    r = find(cs, "POSITIVE", "/payment_history/*0/amount")
    assert r is not None and (r.support.calls, r.support.tasks) == (100, 100)
    # a 0 as a first payment in one task: NONNEG at most, and here not even that (whole cents from 1,200:
    # a 0 is no stretch of the data), so only POSITIVE is refuted
    assert (
        find(mine_records(tmp_path, _payments(100, bad_first=5)), "POSITIVE", "/payment_history/*0/amount")
        is None
    )


def test_no_first_member_rule_where_the_list_has_one(tmp_path: Path) -> None:
    """Without refunds every payment is positive: the list's own rule says it of every member."""
    cs = mine_records(tmp_path, _payments(100, refund_every=0))
    assert find(cs, "POSITIVE", "/payment_history/*/amount") is not None
    assert find(cs, "POSITIVE", "/payment_history/*0/amount") is None


def test_first_member_rules_merge_over_parts(tmp_path: Path) -> None:
    from output_contracts.jsonutil import canonical_str
    from output_contracts.mining import mine
    from output_contracts.mining.clean import leaf_rows
    from output_contracts.traces.ingest import corpus_from_records

    corpus = corpus_from_records(_payments(120), tmp_path / "p")
    for k in (1, 3):
        one = canonical_str(mine(corpus, folds=k).to_json())
        assert canonical_str(mine(corpus, folds=k, part_rows=leaf_rows(corpus) // 3 + 1).to_json()) == one
