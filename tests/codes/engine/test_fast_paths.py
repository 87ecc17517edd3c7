"""The checker's fast paths find exactly what the plain rule semantics find.

Covers the branches the speed work added: per-node classes filtered inside the leaves-operand join
(TYPE allowed-kinds mask, POSITIVE/NONNEG sign tests, DOMAIN strings), flat REQUIRED children joined
apart, nested REQUIRED expanded only for calls whose child count falls short, keys skipped for
operands without wildcards, and REQUIRED grouped per parent object in `call_violations`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl

from output_contracts.checks.checker import call_violations, check_corpus
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.traces.ingest import corpus_from_records

T = "get_order"


def rule(code: str, paths: list[str], params: dict[str, Any] | None = None) -> Rule:
    params = params or {}
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(100, 9))


RULES = (
    rule("REQUIRED", ["/id"]),
    rule("REQUIRED", ["/total"]),
    rule("REQUIRED", ["/a~1b"]),  # the key "a/b"
    rule("REQUIRED", ["/items/*/price"]),
    rule("REQUIRED", ["/items/*/qty"]),
    rule("TYPE", ["/total"], {"kind": "number"}),
    rule("TYPE", ["/id"], {"kind": "string"}),
    rule("TYPE", ["/note"], {"kind": "null"}),
    rule("POSITIVE", ["/items/*/qty"]),
    rule("NONNEG", ["/total"]),
    rule("DOMAIN", ["/state"], {"values": ["open", "closed"]}),
    rule("DATE_ORDER", ["/created", "/shipped"], {"tz": "date"}),
    rule("DATE_ORDER", ["/legs/*/dep", "/legs/*/arr"], {"tz": "date"}),
    rule("RELATION", ["/total", "/sub", "/tax"], {"form": "linear", "coef": [1, 1], "tol": "cent"}),
    rule("RELATION", ["/items/*/line", "/items/*/price", "/items/*/qty"], {"form": "product", "tol": "rel"}),
)

GOOD = {
    "id": "o-1",
    "total": 11.0,
    "a/b": 1,
    "sub": 10.0,
    "tax": 1.0,
    "note": None,
    "state": "open",
    "created": "2026-03-01",
    "shipped": "2026-03-02",
    "items": [{"price": 2.0, "qty": 3, "line": 6.0}, {"price": 1.0, "qty": 4, "line": 4.0}],
    "legs": [{"dep": "2026-03-01", "arr": "2026-03-02"}],
}

# (result, the violations as (code, path)), each a variation of GOOD.
CASES: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    (GOOD, []),
    # nested REQUIRED: one item complete, one short of both keys, one not an object
    (
        {**GOOD, "items": [{"price": 2.0, "qty": 3, "line": 6.0}, {"line": 1.0}, 7]},
        [("REQUIRED", "/items/1/price"), ("REQUIRED", "/items/1/qty")],
    ),
    # flat REQUIRED: two keys missing, one of them escaped
    (
        {k: v for k, v in GOOD.items() if k not in ("id", "a/b")},
        [("REQUIRED", "/a~1b"), ("REQUIRED", "/id")],
    ),
    # TYPE number takes int and float; a string and a bool break it (and NONNEG ignores both)
    ({**GOOD, "total": 11, "sub": 10, "tax": 1}, []),
    ({**GOOD, "total": "11"}, [("TYPE", "/total")]),
    ({**GOOD, "total": True}, [("TYPE", "/total")]),
    ({**GOOD, "note": 0, "id": 5}, [("TYPE", "/id"), ("TYPE", "/note")]),
    # sign tests: 0 and negatives, non-numbers never
    (
        {**GOOD, "items": [{"price": 2.0, "qty": 0, "line": 0.0}, {"price": 1.0, "qty": -1, "line": -1.0}]},
        [("POSITIVE", "/items/0/qty"), ("POSITIVE", "/items/1/qty")],
    ),
    ({**GOOD, "items": [{"price": 2.0, "qty": "3", "line": 6.0}]}, []),  # a string qty: no sign test
    (
        {**GOOD, "total": -1.0, "sub": -2.0},
        [("NONNEG", "/total")],
    ),
    ({**GOOD, "total": -0.0, "sub": -1.0}, []),
    # DOMAIN: an unknown string breaks it, a non-string does not
    ({**GOOD, "state": "lost"}, [("DOMAIN", "/state")]),
    ({**GOOD, "state": 3}, []),
    # DATE_ORDER at a flat pair and under a wildcard, in the same set
    (
        {
            **GOOD,
            "shipped": "2026-02-28",
            "legs": [{"dep": "2026-03-01", "arr": "2026-03-02"}, {"dep": "2026-03-05", "arr": "2026-03-04"}],
        },
        [("DATE_ORDER", "/legs/1/arr"), ("DATE_ORDER", "/shipped")],
    ),
    # RELATION: flat linear and a product under a wildcard
    ({**GOOD, "total": 12.0}, [("RELATION", "/total")]),
    (
        {**GOOD, "items": [{"price": 2.0, "qty": 3, "line": 6.5}, {"price": 1.0, "qty": 4, "line": 4.0}]},
        [("RELATION", "/items/0/line")],
    ),
]


def contract_set(rules: tuple[Rule, ...] = RULES) -> ContractSet:
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={T: ToolContracts(rules=rules, substitutes=())},
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


def test_corpus_and_call_paths_find_the_expected_violations(tmp_path: Path) -> None:
    cs = contract_set()
    recs = [
        {"trace_id": f"ep-{i}", "tool": T, "arguments": {}, "result": r} for i, (r, _) in enumerate(CASES)
    ]
    corpus = corpus_from_records(recs, tmp_path / "corpus")
    df = check_corpus(cs, corpus)
    assert check_corpus(cs, corpus, batch_calls=2).equals(df)
    by_line: dict[int, list[tuple[str, str]]] = {}
    for line, code, path in df.select("line", "code", "path").iter_rows():
        by_line.setdefault(line, []).append((code, path))
    for i, (result, want) in enumerate(CASES):
        per_call = call_violations(cs, T, {}, orjson.loads(orjson.dumps(result)))
        assert sorted((v.code, v.path) for v in per_call) == sorted(want), (i, result)
        assert sorted(by_line.get(i + 1, [])) == sorted(want), (i, result)
    rows = df.filter((pl.col("code") == "REQUIRED") & (pl.col("path") == "/items/1/qty")).to_dicts()
    assert [(r["present"], r["expected"], r["observed"]) for r in rows] == [(False, '"present"', "null")]
    assert df.height == sum(len(w) for _, w in CASES)


def test_codes_filter_applies_to_grouped_required() -> None:
    cs = contract_set()
    result = {k: v for k, v in GOOD.items() if k != "id"} | {"state": "lost"}
    vs = call_violations(cs, T, {}, result)
    assert sorted((v.code, v.path) for v in vs) == [("DOMAIN", "/state"), ("REQUIRED", "/id")]
    assert [(v.rule, v.path) for v in vs] == sorted((v.rule, v.path) for v in vs)
    assert [v.path for v in call_violations(cs, T, {}, result, codes=["DOMAIN"])] == ["/state"]
    assert [v.path for v in call_violations(cs, T, {}, result, codes=["REQUIRED"])] == ["/id"]


def test_required_per_call_keeps_the_index_semantics_for_odd_keys() -> None:
    """A child is present when `_index_nodes` would index it: non-string keys by their text, and a
    rule token that is not a canonical escaping matches no key."""
    odd = rule("REQUIRED", ["/1"])
    non_canonical = rule("REQUIRED", ["/a~2"])
    cs = contract_set((odd, non_canonical))
    got = call_violations(cs, T, {}, {1: "x", "a~2": 0})
    assert [(v.rule, v.path, v.present) for v in got] == [(non_canonical.id, "/a~2", False)]
    got = call_violations(cs, T, {}, {"2": "x"})
    assert sorted(v.path for v in got) == ["/1", "/a~2"]
    assert call_violations(cs, T, {}, [1, 2]) == []  # no object parent, nothing required
