"""RELATION on both checker paths: `check_call` and the corpus pass agree on relations of many terms.
(One example of each form with its witness: tests/checks/test_checker.py and the cases of
tests/codes/relation/.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import Rule, Support, rule_id
from tests.equivalence import agree_on

T = "lookup_inventory"


def rule(paths: list[str], params: dict[str, Any]) -> Rule:
    return Rule(rule_id(T, "RELATION", paths, params), T, "RELATION", tuple(paths), params, Support(412, 9))


def test_relation_of_many_terms_agrees_between_paths(tmp_path: Path) -> None:
    """A linear RELATION of 70 terms (past the 63 operand bits the corpus pass counts complete term
    groups with, so it counts distinct operands instead) beside one of two, in one group: both paths
    agree on holding, broken and incomplete results."""
    terms = [f"/x{i}" for i in range(70)]
    rules = (
        rule(["/total", *terms], {"form": "linear", "coef": [1] * 70, "tol": "exact"}),
        rule(["/net", "/x0", "/x1"], {"form": "linear", "coef": [1, -1], "tol": "exact"}),
    )
    whole = {f"x{i}": i for i in range(70)}
    batch: list[tuple[dict[str, Any], Any]] = [
        ({}, {**whole, "total": sum(range(70)), "net": -1}),  # both hold
        ({}, {**whole, "total": 7, "net": 0}),  # both broken
        ({}, {**{k: v for k, v in whole.items() if k != "x5"}, "total": 7, "net": -1}),  # a term missing
    ]
    found = agree_on(rules, batch, tmp_path)
    assert sorted(found.select("line", "path").iter_rows()) == [(2, "/net"), (2, "/total")]
