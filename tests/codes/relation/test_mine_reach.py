"""RELATION's plan drops the candidates that cannot reach support (`_reachable`) before `scan` counts
them: the contract set is the one mined without the drop, and every dropped candidate's own counts
(`_verify_part` merged per checker) are below the support in every checker."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.relation import mine as relation
from output_contracts.codes.relation.mine import (
    Cand,
    Field,
    _presence,
    _reachable,
    _verify_merge,
    _verify_part,
)
from output_contracts.mining import mine
from output_contracts.traces.ingest import corpus_from_records
from tests.noisy_worlds import World, low_params, records


@st.composite
def _space(draw: st.DrawFn) -> tuple[list[Field], pl.DataFrame, list[Cand]]:
    """Fields (results and arguments), a wide frame with rare fields, and candidates over them."""
    m = draw(st.integers(2, 6))
    fields = [Field(f"c{j}", f"/f{j}", draw(st.booleans()) or j == 0, False) for j in range(m)]
    n = draw(st.integers(1, 40))
    inst = draw(st.booleans())  # array instances: several rows per call
    cids = draw(st.lists(st.integers(0, 12 if inst else 10_000), min_size=n, max_size=n, unique=not inst))
    cols: dict[str, list[object]] = {
        "cid": cids,
        "task": [c % 7 for c in cids],
        "fold": [c % 3 for c in cids],
    }
    for f in fields:
        rate = draw(st.sampled_from([0.05, 0.3, 0.9]))
        cols[f.name] = [1.0 if draw(st.floats(0, 1)) < rate else None for _ in range(n)]
    wide = pl.DataFrame(
        cols,
        schema={
            "cid": pl.UInt64,
            "task": pl.UInt32,
            "fold": pl.UInt8,
            **{f.name: pl.Float64 for f in fields},
        },
    )
    if inst:  # an instance group's frame names each row's array instance
        wide = wide.with_columns(pl.format("/items/{}", pl.int_range(pl.len())).alias("inst"))
    cands = []
    for _ in range(draw(st.integers(1, 12))):
        ops = draw(st.lists(st.integers(0, m - 1), min_size=2, max_size=min(4, m), unique=True))
        cands.append(Cand("linear", ops[0], tuple(ops[1:]), tuple(1 for _ in ops[1:])))
    return fields, wide, cands


@settings(max_examples=60, deadline=None)
@given(space=_space(), need=st.tuples(st.integers(1, 8), st.integers(1, 4)), k=st.sampled_from([1, 3]))
def test_a_dropped_candidate_reaches_support_in_no_checker(
    space: tuple[list[Field], pl.DataFrame, list[Cand]], need: tuple[int, int], k: int
) -> None:
    fields, wide, cands = space
    kept = _reachable(cands, fields, _presence(wide, fields), need)
    assert all(
        c in kept for c in cands if c.form == "linear" and len(c.terms) == 1 and not fields[c.terms[0]].result
    )
    counts = _verify_merge(_verify_part(wide, fields, cands), k)
    for j, c in enumerate(cands):
        if c in kept:
            continue
        mine_rows = counts.filter(pl.col("cand") == j)
        reach = mine_rows.filter((pl.col("calls") >= need[0]) & (pl.col("tasks") >= need[1]))
        assert reach.height == 0, (c, mine_rows)


def test_the_contract_set_is_the_one_without_the_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A random world with hundreds of candidates over rare fields (the by-construction test's kind),
    mined with the drop and without it (every candidate counted): equal bytes, and the drop is real."""
    w = World(2, 20, 2, 4, 3, 2, noise=0.05, faulty=0.1, errors=0.05, rewards=True)
    seen: list[tuple[int, int]] = []
    reachable = relation._reachable

    def spy(*args: object) -> list[Cand]:
        out = reachable(*args)  # type: ignore[arg-type]
        seen.append((len(args[0]), len(out)))  # type: ignore[arg-type]
        return out

    monkeypatch.setattr(relation, "_reachable", spy)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_from_records(records(w), Path(tmp) / "c")
        dropped = mine(corpus, low_params(3, 2, "ok", 1), verify=False)
        before, after = map(sum, zip(*seen, strict=True))
        assert after < before / 2, seen
        monkeypatch.setattr(relation, "MAX_REACH_PAIRS", -1)  # every candidate kept and counted
        counted = mine(corpus, low_params(3, 2, "ok", 1), verify=False)
    assert sum(r.code == "RELATION" for r in dropped.all_rules()) >= 3
    assert orjson.dumps(dropped.to_json()) == orjson.dumps(counted.to_json())


@settings(max_examples=40, deadline=None)
@given(space=_space())
def test_a_plain_frame_counts_its_calls_as_its_rows(
    space: tuple[list[Field], pl.DataFrame, list[Cand]],
) -> None:
    """A plain group's frame (one row per call) counts distinct qualifying calls and takes examples
    without hashing call keys: the same rows as the instance-group path, which hashes them."""
    fields, wide, cands = space
    wide = wide.drop("inst", strict=False).unique("cid", keep="first", maintain_order=True)
    plain = _verify_part(wide, fields, cands)
    hashed = _verify_part(wide.with_columns(pl.lit("").alias("inst")), fields, cands)
    assert plain.sort("cand", "fold").equals(hashed.sort("cand", "fold"))
