"""Fixed-index operands (`*0`, the first member of an array) on both checker paths, for any code.

`/payment_history/*0/amount = Σ /items/*/price` is the conservation relation of τ-bench retail orders
(conservation at a fixed member): the first payment pays for the items. The engine gives every code the same reading
of a fixed index: the per-call index (`index_nodes` aliases) and the corpus join (`with_fixed`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import check_call
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.nodes import Operand
from output_contracts.codes.table import describe
from output_contracts.schemas import schema_errors
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.pointers import fixed_index, unfix
from tests.equivalence import assert_paths_agree

T = "get_order_details"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(500, 200))


CONSERVE = rule(
    "RELATION", ["/payment_history/*0/amount", "/items/*/price"], {"form": "sum_over", "tol": "cent"}
)
FIRST_KIND = rule("TYPE", ["/payment_history/*0/transaction_type"], {"kind": "string"})
FIRST_IS = rule("DOMAIN", ["/payment_history/*0/transaction_type"], {"values": ["payment"]})
SECOND_POS = rule("POSITIVE", ["/payment_history/*1/amount"], {})
NESTED = rule(
    "RELATION", ["/orders/*0/total", "/orders/*0/items/*/price"], {"form": "sum_over", "tol": "cent"}
)
RULES = (CONSERVE, FIRST_KIND, FIRST_IS, SECOND_POS, NESTED)
CS = ContractSet(
    params={"k": 1, "seed": 13},
    corpus={},
    tools={T: ToolContracts(rules=RULES)},
    folds=(FoldChecker(0, tuple(r.id for r in RULES)),),
)


def order(items: list[float], payments: list[tuple[str, float]], **more: Any) -> dict[str, Any]:
    return {
        "items": [{"price": p} for p in items],
        "payment_history": [{"transaction_type": t, "amount": a} for t, a in payments],
        **more,
    }


CASES: list[tuple[Any, list[tuple[str, str]]]] = [
    (order([10.5, 4.25], [("payment", 14.75)]), []),
    (order([10.5, 4.25], [("payment", 14.75), ("refund", 14.75)]), []),  # only the first payment counts
    (
        order([10.5, 10.5], [("payment", 14.75)]),
        [(CONSERVE.id, "/payment_history/0/amount")],
    ),  # duplicated item
    (order([10.5, 4.25], [("payment", 1475)]), [(CONSERVE.id, "/payment_history/0/amount")]),  # cents
    (order([10.5, 4.25], [("refund", 14.75)]), [(FIRST_IS.id, "/payment_history/0/transaction_type")]),
    (order([], [("payment", 0)]), []),  # an empty sum is 0
    (order([3.0], []), []),  # no first payment: nothing to compare
    (order([3.0], [("payment", 3.0), ("refund", -3.0)]), [(SECOND_POS.id, "/payment_history/1/amount")]),
    (order([3.0], [("payment", 3.0), ("refund", 3.0)]), []),
    (
        order(
            [1.0],
            [("payment", 1.0)],
            orders=[{"total": 5, "items": [{"price": 2}, {"price": 3}]}, {"total": 1}],
        ),
        [],
    ),  # the second order's total is not the first member
    (
        order([1.0], [("payment", 1.0)], orders=[{"total": 6, "items": [{"price": 2}, {"price": 3}]}]),
        [(NESTED.id, "/orders/0/total")],
    ),
    (order([1.0], [(7, 1.0)]), [(FIRST_KIND.id, "/payment_history/0/transaction_type")]),
]


def got(result: Any) -> list[tuple[str, str]]:
    rc = check_call(CS, T, {}, result)
    return sorted((v.rule, v.path) for v in rc.violations) if rc is not None else []


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call(result: Any, expected: list[tuple[str, str]]) -> None:
    assert got(result) == sorted(expected)


def test_witness_and_description() -> None:
    rc = check_call(CS, T, {}, order([10.5, 10.5], [("payment", 14.75)]))
    assert rc is not None
    (v,) = rc.violations
    assert (v.path, v.expected, v.observed) == ("/payment_history/0/amount", 21.0, 14.75)
    assert "sum of items/*/price = 21.0" in v.detail
    assert describe(CONSERVE) == "/payment_history/*0/amount = Σ /items/*/price (cent)"
    assert schema_errors(CS.to_json(), "contract-set") == []


def test_both_paths_agree_on_the_cases(tmp_path: Path) -> None:
    recs = [{"trace_id": f"ep{i}", "tool": T, "arguments": {}, "result": r} for i, (r, _) in enumerate(CASES)]
    df = assert_paths_agree(CS, corpus_from_records(recs, tmp_path / "c"))
    assert df.height == sum(len(e) for _, e in CASES)


def test_tokens() -> None:
    assert [fixed_index(t) for t in ("*0", "*12", "*", "~*", "*01", "0", "*-1", "x")] == [
        "0",
        "12",
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    assert unfix("/a/*0/b/*/c/*3") == "/a/*/b/*/c/*"
    op = Operand.of("/a/*0/b/*/c")
    assert (op.wpos, op.fixed, op.concrete(("4",))) == ((4,), ((2, "0"),), "/a/0/b/4/c")
    assert op.key_of("/a/0/b/4/c") == ("4",)


amounts = st.sampled_from([0, 1, 2.5, 3, 4.25, -1, 1475])
results = st.builds(
    order,
    st.lists(st.sampled_from([1.0, 2.5, 3.0, 4.25]), max_size=3),
    st.lists(st.tuples(st.sampled_from(["payment", "refund", 7]), amounts), max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results, min_size=1, max_size=10))
def test_paths_agree_on_arbitrary_orders(tmp_path: Path, batch: list[dict[str, Any]]) -> None:
    recs = [{"trace_id": f"ep{i}", "tool": T, "arguments": {}, "result": r} for i, r in enumerate(batch)]
    assert_paths_agree(CS, corpus_from_records(recs, tmp_path / f"h{abs(hash(repr(batch))) % 10**9}"))
