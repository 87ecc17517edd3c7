"""Instance keys cut from the path (`output_contracts.codes.keys.with_instance_key`) against `with_key`'s
split tokens (`output_contracts.codes.hits`): the hits of a rule's operands pair up alike under both."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import Rule
from tests.equivalence import hand_rule

T = "lookup"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return hand_rule(T, code, paths, params)


# Operands draw their wildcards (array index, map key) and fixed indexes at random places, so rules with
# and without a common head are mixed.
TOKENS = st.sampled_from(["a", "b", "lines", "x~1y", "é", "*", "~*", "*0", "*12"])


def _concrete(pattern: str, draw: Any) -> str:
    out = []
    for t in pattern.split("/"):
        if t == "*":
            t = draw(st.sampled_from(["0", "1", "10", "2"]))
        elif t == "~*":
            t = draw(st.sampled_from(["k", "kk", "", "~0", "1"]))
        elif t.startswith("*"):
            t = t[1:]
        out.append(t)
    return "/".join(out)


@st.composite
def keyed_hits(draw: Any) -> tuple[list[Any], pl.DataFrame]:
    from output_contracts.codes.hits import RuleEntry
    from output_contracts.codes.nodes import Operand

    entries, rows = [], []
    for ridx in range(draw(st.integers(1, 4))):
        head = draw(st.lists(TOKENS, min_size=1, max_size=3))
        pats = []
        for _ in range(draw(st.integers(1, 3))):
            tail = draw(st.lists(TOKENS, max_size=2)) if draw(st.booleans()) else []
            own = head if draw(st.integers(0, 4)) else draw(st.lists(TOKENS, min_size=1, max_size=3))
            pats.append("/" + "/".join(own + tail))
        r = rule("RELATION", pats, {"form": "linear", "coef": [1] * (len(pats) - 1), "tol": "exact"})
        ops = tuple(Operand.of(p) for p in pats)
        entries.append(RuleEntry(ridx, 0, None, r, ops))
        for i, op in enumerate(ops):
            for _ in range(draw(st.integers(0, 6))):
                rows.append((ridx, i, _concrete(op.pattern, draw)))
    frame = pl.DataFrame(rows, schema={"ridx": pl.UInt32, "op": pl.UInt8, "path": pl.String}, orient="row")
    return entries, frame.with_row_index("row")


def _partition(frame: pl.DataFrame) -> set[frozenset[int]]:
    return {frozenset(g) for g in frame.group_by("ridx", "key").agg("row").get_column("row").to_list()}


@settings(max_examples=60, deadline=None)
@given(case=keyed_hits())
def test_instance_keys_pair_the_hits_with_key_pairs(case: tuple[list[Any], pl.DataFrame]) -> None:
    from output_contracts.codes.hits import with_key
    from output_contracts.codes.keys import with_instance_key

    entries, frame = case
    width = max(len(e.ops) for e in entries)
    for i in range(width):
        hits = frame.filter(pl.col("op") == i).lazy()
        old = with_key(hits, entries, i).collect()
        new = with_instance_key(hits, entries, i).collect()
        assert sorted(old.get_column("row").to_list()) == sorted(new.get_column("row").to_list())
        # pairing across operands: the keys of two operands of one rule meet where with_key's do
        for j in range(i + 1):
            other_old = with_key(frame.filter(pl.col("op") == j).lazy(), entries, j).collect()
            other_new = with_instance_key(frame.filter(pl.col("op") == j).lazy(), entries, j).collect()
            pairs = [
                sorted(a.join(b, on=["ridx", "key"]).select("row", "row_right").iter_rows())
                for a, b in ((old, other_old), (new, other_new))
            ]
            assert pairs[0] == pairs[1]
        assert _partition(old) == _partition(new)
