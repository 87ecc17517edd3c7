"""RELATION: linear (1-3 terms), product, sum_over; tolerances; trivial and implied relations."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.relation.mine import _first_path
from tests.helpers import call, find, mine_records, rules


def _recs(n: int, res, args=lambda i, r: {}, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        state = {"i": i, "rnd": rnd}
        out.append(call(f"t{i % 6}", "quote", res(i, state), args(i, state)))
    return out


def _cents(rnd: random.Random, lo: float, hi: float) -> float:
    return round(rnd.uniform(lo, hi), 2)


def test_three_term_sum_cent(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        fare, taxes, fees = _cents(r, 50, 500), _cents(r, 1, 60), _cents(r, 0, 20)
        return {
            "fare": fare,
            "taxes": taxes,
            "fees": fees,
            "total": round(fare + taxes + fees, 2),
            "noise": r.random(),
        }

    cs = mine_records(tmp_path, _recs(40, res))
    r = find(cs, "RELATION", "/total", "/fare", "/fees", "/taxes")
    assert r is not None
    assert r.params == {"form": "linear", "coef": [1, 1, 1], "tol": "cent"}
    assert not any("/noise" in x.paths for x in rules(cs, "RELATION"))


def test_difference_is_stated_without_minus_and_int_is_exact(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        on_hand, reserved = r.randint(0, 90), r.randint(0, 9)
        return {"on_hand": on_hand + reserved, "reserved": reserved, "available": on_hand}

    rel = rules(mine_records(tmp_path, _recs(40, res)), "RELATION")
    assert [(x.paths, dict(x.params)) for x in rel] == [
        (("/on_hand", "/available", "/reserved"), {"form": "linear", "coef": [1, 1], "tol": "exact"})
    ]


def test_product_with_arguments_and_in_arrays(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        s["q"], s["u"] = r.randint(1, 9), _cents(r, 1, 80)
        items = []
        for _ in range(1 + i % 3):
            qty, price = r.randint(1, 5), _cents(r, 1, 40)
            items.append({"qty": qty, "price": price, "line": round(qty * price, 2)})
        return {
            "freight": round(s["q"] * s["u"], 2),
            "items": items,
            "items_total": round(sum(x["line"] for x in items), 2),
        }

    cs = mine_records(tmp_path, _recs(40, res, args=lambda i, s: {"quantity": s["q"], "unit": s["u"]}))
    prod = find(cs, "RELATION", "/freight", "$args/quantity", "$args/unit")
    assert prod is not None and prod.params == {"form": "product", "tol": "cent"}
    line = find(cs, "RELATION", "/items/*/line", "/items/*/price", "/items/*/qty")
    assert line is not None and line.params == {"form": "product", "tol": "cent"}
    total = find(cs, "RELATION", "/items_total", "/items/*/line")
    assert total is not None and total.params == {"form": "sum_over", "tol": "cent"}


def test_one_counterexample_kills_and_threshold(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        a, b = r.randint(0, 1000), r.randint(0, 1000)
        return {"a": a, "b": b, "c": a + b + (1 if i == 17 else 0)}

    assert not rules(mine_records(tmp_path, _recs(40, res)), "RELATION")

    def ok(i: int, s: dict) -> dict:
        r = s["rnd"]
        a, b = r.randint(0, 1000), r.randint(0, 1000)
        return {"a": a, "b": b, "c": a + b}

    assert find(mine_records(tmp_path, _recs(29, ok)), "RELATION", "/c", "/a", "/b") is None
    assert find(mine_records(tmp_path, _recs(30, ok)), "RELATION", "/c", "/a", "/b") is not None


def test_trivial_relations_excluded(tmp_path: Path) -> None:
    """A side that is constant or always zero, or too few distinct tuples: no rule."""

    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        a = r.randint(1, 500)
        return {"a": a, "zero": 0, "same": a + 0, "k": 7, "a7": a + 7, "few": i % 2, "few2": i % 2}

    rel = rules(mine_records(tmp_path, _recs(40, res)), "RELATION")
    stated = {x.paths for x in rel}
    assert ("/same", "/a") in stated or ("/a", "/same") in stated  # a real equality
    assert all("/zero" not in p and "/k" not in p and "/few" not in p for p in stated)
    assert not any(set(p) == {"/a7", "/a", "/k"} for p in stated)  # a7 = a + k with k constant


def test_implied_relations_dropped(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        v = s["rnd"].randint(0, 10_000)
        return {"x": v, "y": v, "z": v}

    rel = rules(mine_records(tmp_path, _recs(40, res)), "RELATION")
    assert len(rel) == 2  # x = y, x = z; y = z follows
    assert {x.paths for x in rel} == {("/x", "/y"), ("/x", "/z")}


def test_float_relation_uses_relative_tolerance(tmp_path: Path) -> None:
    def res(i: int, s: dict) -> dict:
        r = s["rnd"]
        a, b = r.uniform(0, 1), r.uniform(0, 1)
        return {"a": a, "b": b, "s": a + b}

    r = find(mine_records(tmp_path, _recs(40, res)), "RELATION", "/s", "/a", "/b")
    assert r is not None and r.params["tol"] == "rel"


def _counted(n_tasks: int, length, count=lambda i, n: n, seed: int = 3) -> list[dict]:
    """One call per task: `/count` and `/shipments` (length from `length(i, rnd)`)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n_tasks):
        n = length(i, rnd)
        ships = [{"id": f"S{i}-{j}", "kg": round(rnd.uniform(1, 9), 2)} for j in range(n)]
        out.append(call(f"task{i}", "list_shipments", {"count": count(i, n), "shipments": ships}))
    return out


def test_count_of_array_length(tmp_path: Path) -> None:
    uniform = lambda i, rnd: rnd.randint(0, 3)  # noqa: E731
    cs = mine_records(tmp_path / "a", _counted(40, uniform))
    r = find(cs, "RELATION", "/count", "/shipments")
    assert r is not None and dict(r.params) == {"form": "count_of", "tol": "exact"}
    assert r.support.tasks == 40
    from output_contracts.checks.checker import check_call

    rc = check_call(cs, "list_shipments", {}, {"count": 2, "shipments": []})
    assert rc is not None
    (v,) = [v for v in rc.violations if v.code == "RELATION"]
    assert (v.path, v.expected, v.observed) == ("/count", 0, 2)
    assert "the number of shipments = 0" in v.detail
    assert check_call(cs, "list_shipments", {}, {"count": 0, "shipments": []}) is None
    # one counterexample, too few tasks, or one length in most calls: no rule (docs/rules.md)
    off = lambda i, n: n + (1 if i == 11 else 0)  # noqa: E731
    assert (
        find(mine_records(tmp_path / "b", _counted(40, uniform, off)), "RELATION", "/count", "/shipments")
        is None
    )
    assert (
        find(mine_records(tmp_path / "c", _counted(29, uniform)), "RELATION", "/count", "/shipments") is None
    )
    mostly_one = lambda i, rnd: 1 if i % 5 else 2  # noqa: E731  (80% of the calls have length 1)
    assert (
        find(mine_records(tmp_path / "d", _counted(60, mostly_one)), "RELATION", "/count", "/shipments")
        is None
    )
    three_quarters = lambda i, rnd: 1 if i % 4 else 2  # noqa: E731  (75%: the bound itself is allowed)
    assert find(
        mine_records(tmp_path / "e", _counted(60, three_quarters)), "RELATION", "/count", "/shipments"
    )


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from(["a", "b_c", "0", "~1x"]), max_size=3),
    after=st.lists(st.sampled_from(["a", "price", "1", "*0"]), max_size=3),
    index=st.integers(0, 12),
)
def test_first_member_path_is_the_index_zero_path(before: list[str], after: list[str], index: int) -> None:
    """`_first_path` (the wide frames' equality test) selects exactly the rows the per-row test selected
    before it: the path's token at the pattern's `*` is `0`."""
    pattern = "/".join(["", *before, "*", *after])
    path = "/".join(["", *before, str(index), *after])
    star = pattern.split("/").index("*")
    assert (path == _first_path(pattern)) == (path.split("/")[star] == "0")
