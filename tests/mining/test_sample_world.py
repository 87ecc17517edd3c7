"""Acceptance on the sample world: every planted invariant found, no planted noise becomes a rule."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

import orjson
import pytest

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.schemas import schema_errors
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def planted() -> dict[str, Any]:
    return orjson.loads((SAMPLE / "planted.json").read_bytes())


def _vector(paths: list[str], coef: list[int]) -> dict[str, Fraction]:
    v = {paths[0]: Fraction(1)}
    for c, p in zip(coef, paths[1:], strict=True):
        v[p] = v.get(p, Fraction(0)) - c
    return v


def _same_linear(a: dict[str, Fraction], b: dict[str, Fraction]) -> bool:
    """Equal up to a non-zero factor: the same relation, possibly rearranged."""
    if set(a) != set(b):
        return False
    k = next(iter(a))
    f = b[k] / a[k]
    return all(b[x] == f * a[x] for x in a)


def _found(p: dict[str, Any], rules: list[Rule]) -> bool:
    mine = [r for r in rules if r.tool == p["tool"] and r.code == p["code"]]
    want = p.get("params") or {}
    if p["code"] == "RELATION" and want.get("form") == "linear":
        target = _vector(p["paths"], want["coef"])
        return any(
            r.params.get("form") == "linear"
            and _same_linear(target, _vector(list(r.paths), list(r.params["coef"])))
            for r in mine
        )
    if p["code"] == "CONDITIONAL":  # the miner states the values with support in its checker's data
        form = next(iter(want["when"]))
        return any(
            list(r.paths) == p["paths"]
            and r.params["then"] == want["then"]
            and set(r.params["when"]) == {form}
            and set(r.params["when"][form]) <= set(want["when"][form])
            for r in mine
        )
    return any(
        list(r.paths) == p["paths"] and all(r.params.get(k) == v for k, v in want.items()) for r in mine
    )


def test_lists_are_non_trivial(planted: dict[str, Any]) -> None:
    by = Counter(p["code"] for p in planted["planted"])
    # the seven classes of DESIGN §3 (POSITIVE and NONNEG both) and CONDITIONAL
    assert len(planted["planted"]) >= 25 and len(by) == 9
    assert len(planted["noise"]) >= 10


def test_every_planted_invariant_found(planted: dict[str, Any], sample_contracts: ContractSet) -> None:
    full = sample_contracts.rules_for(None)
    missing = [p for p in planted["planted"] if not _found(p, full)]
    assert missing == []
    for f in range(sample_contracts.k):  # "at least once over in every 5-fold checker": found there too
        fold_rules = sample_contracts.rules_for(f)
        assert [p for p in planted["planted"] if not _found(p, fold_rules)] == []


def _noise_rules(n: dict[str, Any], rules: list[Rule]) -> list[Rule]:
    out = []
    for r in rules:
        if r.tool != n["tool"] or r.code not in n["codes"]:
            continue
        if "with" in n:
            if {n["path"], n["with"]} <= set(r.paths):
                out.append(r)
        elif r.paths[0] == n["path"]:
            out.append(r)
    return out


def test_no_noise_becomes_a_rule(planted: dict[str, Any], sample_contracts: ContractSet) -> None:
    full = sample_contracts.rules_for(None)
    assert {n["path"]: _noise_rules(n, full) for n in planted["noise"] if _noise_rules(n, full)} == {}


def test_crossfit_exceptions_are_learnt_by_exactly_one_fold_checker(
    planted: dict[str, Any], sample_contracts: ContractSet
) -> None:
    cross = [n for n in planted["noise"] if n.get("crossfit")]
    assert cross
    for n in cross:
        holders = [f for f in range(sample_contracts.k) if _noise_rules(n, sample_contracts.rules_for(f))]
        assert len(holders) == 1, n


def test_sample_contract_set_is_schema_valid(sample_contracts: ContractSet) -> None:
    data = sample_contracts.to_json()
    assert schema_errors(data, "contract-set") == []
    sources = Counter(s for t in data["tools"].values() for r in t["rules"] for s in r["source"])
    assert sources["schema"] > 0 and sources["mined"] > 0
    assert data["tools"]["lookup_inventory"]["substitutes"] == ["query_warehouse", "get_stock_by_sku"]
