"""CONDITIONAL on both checker paths: a fact about P given the value (or sign) of a discriminator D."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import check_call
from output_contracts.checks.receipts import encode
from output_contracts.codes.conditional import cond_key
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.table import describe
from output_contracts.errors import CheckError
from output_contracts.schemas import schema_errors
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree

T = "get_order"


def rule(d: str, p: str, then: Any, when: dict[str, Any], tool: str = T) -> Rule:
    params = {"then": then, "when": when}
    return Rule(
        rule_id(tool, "CONDITIONAL", [p, d], params), tool, "CONDITIONAL", (p, d), params, Support(240, 90)
    )


def contract_set(*rules: Rule) -> ContractSet:
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={T: ToolContracts(rules=tuple(rules))},
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


DELIVERED = rule("/status", "/delivered_at", "present", {"in": ["delivered"]})
PENDING = rule("/status", "/delivered_at", "absent", {"in": ["pending", "processing"]})
HITS = rule("/total_hits", "/results", "nonempty", {"sign": ["positive"]})
NONE = rule("/total_hits", "/results", "empty", {"sign": ["zero"]})
EUR = rule("/country", "/currency", {"equals": "EUR"}, {"in": ["DE", "FR"]})
FLAG = rule("/express", "/carrier", {"equals": None}, {"in": [False]})
CS = contract_set(DELIVERED, PENDING, HITS, NONE, EUR, FLAG)


def order(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "status": "delivered",
        "delivered_at": "2025-01-02T10:00:00Z",
        "total_hits": 2,
        "results": [1, 2],
        "country": "FR",
        "currency": "EUR",
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not ...}


#: (result, the (rule, path, present) of each violation expected)
CASES: list[tuple[Any, list[tuple[str, str, bool]]]] = [
    (order(), []),
    (order(delivered_at=...), [(DELIVERED.id, "/delivered_at", False)]),
    (order(status="shipped", delivered_at=...), []),  # the condition does not hold: not judged
    (order(status="pending"), [(PENDING.id, "/delivered_at", True)]),
    (order(status="pending", delivered_at=...), []),
    (order(status=...), []),  # no discriminator: not judged
    (order(status=3, delivered_at=...), []),  # a number is no string value
    (order(results=[]), [(HITS.id, "/results", True)]),
    (order(total_hits=0), [(NONE.id, "/results", True)]),
    (order(total_hits=0, results=[]), []),
    (order(total_hits=0.0, results=[7]), [(NONE.id, "/results", True)]),  # zero as a float is zero
    (order(total_hits=-1, results=[]), []),  # negative: neither condition
    (order(results=...), []),  # absent: REQUIRED's business, not nonempty's
    (order(results="none"), []),  # another kind: TYPE's business
    (order(currency="USD"), [(EUR.id, "/currency", True)]),
    (order(country="DE", currency=None), [(EUR.id, "/currency", True)]),
    (order(country="US", currency="USD"), []),
    (order(currency=...), []),
    (order(currency=["EUR"]), []),  # a container is not judged
    (order(express=False, carrier="ups"), [(FLAG.id, "/carrier", True)]),
    (order(express=False, carrier=None), []),
    (order(express=True, carrier="ups"), []),
    (order(express=0, carrier="ups"), []),  # 0 is not false
]


def got(result: Any) -> list[tuple[str, str, bool]]:
    rc = check_call(CS, T, {}, result)
    return sorted((v.rule, v.path, v.present) for v in rc.violations) if rc is not None else []


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call(result: Any, expected: list[tuple[str, str, bool]]) -> None:
    assert got(result) == sorted(expected)
    rc = check_call(CS, T, {}, result)
    if rc is not None:
        assert rc.result == result  # the result is never changed
        assert schema_errors(encode(rc), "receipt-v2") == []
        assert schema_errors(encode(rc, "v1"), "receipt-v1") == []


def test_witnesses_and_descriptions() -> None:
    rc = check_call(CS, T, {}, order(delivered_at=...))
    assert rc is not None
    (v,) = rc.violations
    assert (v.code, v.expected, v.observed, v.present) == (
        "CONDITIONAL",
        "present when /status in {delivered}",
        None,
        False,
    )
    assert v.detail == (
        "get_order returned no delivered_at with /status in {delivered}; in every one of 240 clean results "
        "with /status in {delivered} it was present"
    )
    rc = check_call(CS, T, {}, order(currency="USD"))
    assert rc is not None and (rc.violations[0].expected, rc.violations[0].observed) == ("EUR", "USD")
    assert describe(DELIVERED) == "/delivered_at present when /status in {delivered}"
    assert describe(PENDING) == "/delivered_at absent when /status in {pending, processing}"
    assert describe(HITS) == "/results not empty when /total_hits is positive"
    assert describe(EUR) == '/currency = "EUR" when /country in {DE, FR}'
    assert describe(FLAG) == "/carrier = null when /express in {false}"
    assert schema_errors(CS.to_json(), "contract-set") == []


def test_both_paths_agree_on_the_cases(tmp_path: Path) -> None:
    recs = [{"trace_id": f"ep{i}", "tool": T, "arguments": {}, "result": r} for i, (r, _) in enumerate(CASES)]
    df = assert_paths_agree(CS, corpus_from_records(recs, tmp_path / "c"))
    assert df.height == sum(len(e) for _, e in CASES)


@pytest.mark.parametrize(
    "params,why",
    [
        ({"then": "present"}, "params.when"),
        ({"then": "present", "when": {"in": []}}, "params.when"),
        ({"then": "present", "when": {"in": [3]}}, "strings, booleans or null"),
        ({"then": "present", "when": {"sign": ["big"]}}, "signs"),
        ({"then": "sometimes", "when": {"in": ["a"]}}, "params.then"),
        ({"then": {"equals": [1]}, "when": {"in": ["a"]}}, "params.then"),
    ],
)
def test_bad_params_are_refused(params: dict[str, Any], why: str) -> None:
    bad = Rule("r-0", T, "CONDITIONAL", ("/x", "/status"), params, Support(1, 1))
    with pytest.raises(CheckError, match=why):
        check_call(contract_set(bad), T, {}, {"status": "a"})


@pytest.mark.parametrize(
    "paths", [("/status", "/status"), ("/a", "/a/b"), ("/x", "/items/*/s"), ("$args/x", "/s")]
)
def test_bad_paths_are_refused(paths: tuple[str, str]) -> None:
    bad = Rule("r-0", T, "CONDITIONAL", paths, {"then": "present", "when": {"in": ["a"]}}, Support(1, 1))
    with pytest.raises(CheckError):
        check_call(contract_set(bad), T, {}, {"status": "a"})


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 2.5, -1.5]),
    st.sampled_from(["delivered", "pending", "FR", "DE", "", "EUR"]),
)
values = st.one_of(scalars, st.lists(st.integers(0, 3), max_size=3), st.just(...))
results = st.fixed_dictionaries(
    {
        k: values
        for k in (
            "status",
            "delivered_at",
            "total_hits",
            "results",
            "country",
            "currency",
            "express",
            "carrier",
        )
    }
).map(lambda d: {k: v for k, v in d.items() if v is not ...})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results, min_size=1, max_size=12))
def test_paths_agree_on_arbitrary_results(tmp_path: Path, batch: list[dict[str, Any]]) -> None:
    recs = [{"trace_id": f"ep{i}", "tool": T, "arguments": {}, "result": r} for i, r in enumerate(batch)]
    folder = tmp_path / f"h{abs(hash(repr(batch))) % 10**9}"
    assert_paths_agree(CS, corpus_from_records(recs, folder))


def test_cond_key() -> None:
    assert [cond_key(v) for v in ("a", True, False, None, 0, -0.0, 3, -2.5, [1], {})] == [
        "s:a",
        "b:true",
        "b:false",
        "z",
        "n:zero",
        "n:zero",
        "n:positive",
        "n:negative",
        None,
        None,
    ]


# ---- a conditional conservation: P = Σ Q given D ----------------------------------------------------

_SUM_PARAMS = {"then": {"sum": "cent"}, "when": {"in": ["delivered", "pending"]}}
_SUM_PATHS = ("/payment_history/*0/amount", "/status", "/items/*/price")
PAID = Rule(
    rule_id(T, "CONDITIONAL", list(_SUM_PATHS), _SUM_PARAMS),
    T,
    "CONDITIONAL",
    _SUM_PATHS,
    _SUM_PARAMS,
    Support(240, 90),
)
CS_SUM = contract_set(PAID)


def paid(status: str, items: list[float], first: Any, *, more: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"status": status, "payment_history": [{"amount": first}]}
    if more:
        out["items"] = [{"price": p} for p in items]
    return out


SUM_CASES: list[tuple[Any, list[str]]] = [
    (paid("delivered", [10.5, 4.25], 14.75), []),
    (paid("delivered", [10.5, 10.5], 14.75), ["/payment_history/0/amount"]),  # a duplicated item
    (paid("pending", [10.5, 4.25], 1475), ["/payment_history/0/amount"]),  # cents
    (
        paid("pending (item modified)", [10.5, 10.5], 14.75),
        [],
    ),  # not the condition: a second payment settles it
    (paid("delivered", [], 0), []),  # an empty sum is 0
    (paid("delivered", [], 5), ["/payment_history/0/amount"]),
    (paid("delivered", [1.0], 1.0, more=False), []),  # no items array: not judged
    (paid("delivered", [1.0], "1.0"), []),  # P not a number: TYPE's business
    ({"status": "delivered", "items": [{"price": 2}], "payment_history": []}, []),  # no first payment
]


@pytest.mark.parametrize("result,expected", SUM_CASES)
def test_conditional_sum(result: Any, expected: list[str]) -> None:
    rc = check_call(CS_SUM, T, {}, result)
    assert (sorted(v.path for v in rc.violations) if rc else []) == expected
    if rc is not None:
        v = rc.violations[0]
        assert v.expected == sum(i["price"] for i in result.get("items", []))
        assert "but the sum of items/*/price is" in v.detail
        assert schema_errors(encode(rc), "receipt-v2") == []


def test_conditional_sum_both_paths(tmp_path: Path) -> None:
    recs = [
        {"trace_id": f"ep{i}", "tool": T, "arguments": {}, "result": r} for i, (r, _) in enumerate(SUM_CASES)
    ]
    df = assert_paths_agree(CS_SUM, corpus_from_records(recs, tmp_path / "c"))
    assert df.height == sum(len(e) for _, e in SUM_CASES)
    assert (
        describe(PAID)
        == "/payment_history/*0/amount = Σ /items/*/price (cent) when /status in {delivered, pending}"
    )
    assert schema_errors(CS_SUM.to_json(), "contract-set") == []
