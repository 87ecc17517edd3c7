"""RELATION's wide frames (`relation._wide_all`): every spec of a batch pivoted, summed, joined to its
calls and counted at once, with the spec as a key. A spec's frame must not depend on which specs share
its batch (`WIDE_BATCH_ROWS`), and must hold what a plain reading of its call's leaves gives: per call
(or array instance), the first number at each field's pattern, the length of a counted array, the sum
of a summed pattern (0 when the call has none), and the member at index 0 of a first-member field.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.mining_frames import CLS_ARR, CLS_NUM, Leaves
from output_contracts.codes.relation import mine as relation
from output_contracts.codes.relation.mine import (
    Field,
    GroupSpec,
    _by_spec,
    _first_path,
    _sample_all,
    _wide_frames,
)
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.relation import reference as old
from tests.noisy_worlds import World, low_params, records


def _captured(corpus: Corpus, monkeypatch: pytest.MonkeyPatch, k: int = 3) -> tuple[list[GroupSpec], Leaves]:
    """The specs of a mine of `corpus` and its (only) task part, as `Relation.scan` sees them."""
    box: dict[str, Any] = {}
    scan = relation.RelationMiner.scan

    def spy(self: relation.RelationMiner, ctx: Any, part: Leaves, plan: Any) -> Any:
        box["part"] = part
        box["specs"] = relation._specs(ctx, ctx.num_pids)
        return scan(self, ctx, part, plan)

    monkeypatch.setattr(relation.RelationMiner, "scan", spy)
    mine(corpus, low_params(k, 2, "ok", 1), verify=False)
    monkeypatch.undo()
    return box["specs"], box["part"]


def _frames(specs: list[GroupSpec], part: Leaves) -> dict[int, tuple[pl.DataFrame, pl.DataFrame]]:
    return {i: (w, s) for i, w, s in _wide_frames(list(enumerate(specs)), part) if s is not None}


def _reference(spec: GroupSpec, part: Leaves) -> dict[tuple[Any, ...], dict[str, float | None]]:
    """(cid[, inst]) -> field -> value of one spec, read leaf by leaf in Python."""
    name_of = dict((n, p) for p, n in spec.name_of)
    firsts = dict((n, p) for p, n in spec.firsts)
    pattern = dict(
        zip(*part.patterns.select("pid", "pattern").to_dict(as_series=False).values(), strict=True)
    )
    leaves = part.leaves.select("cid", "pid", "cls", "num", "len", "path").to_dicts()
    calls = set(part.calls["cid"].to_list())
    rows: dict[tuple[Any, ...], dict[str, float | None]] = {}
    if spec.group:
        for f in spec.fields:
            cut = len(pattern[name_of[f.name]]) - len(spec.group)
            for r in leaves:
                if r["pid"] == name_of[f.name] and r["cls"] == CLS_NUM and r["cid"] in calls:
                    row = rows.setdefault((r["cid"], r["path"][: len(r["path"]) - cut]), {})
                    row.setdefault(f.name, r["num"])
        return rows
    for f in spec.fields:
        if f.is_sum:
            continue
        if f.first:
            pid, want = firsts[f.name], _first_path(pattern[firsts[f.name]])
            hits = [r for r in leaves if r["pid"] == pid and r["cls"] == CLS_NUM and r["path"] == want]
        elif f.is_len:
            hits = [
                r | {"num": float(r["len"])}
                for r in leaves
                if r["pid"] == name_of[f.name] and r["cls"] == CLS_ARR
            ]
        else:
            hits = [r for r in leaves if r["pid"] == name_of[f.name] and r["cls"] == CLS_NUM]
        for r in hits:
            if r["cid"] in calls:
                rows.setdefault((r["cid"],), {}).setdefault(f.name, r["num"])
    for f in spec.fields:
        if f.is_sum:
            for key, row in rows.items():
                row[f.name] = math.fsum(
                    r["num"]
                    for r in leaves
                    if r["cid"] == key[0] and r["pid"] == name_of[f.name] and r["cls"] == CLS_NUM
                )
    return rows


def _world(seed: int) -> World:
    return World(seed, 10, 3, 4, 3, 2, noise=0.05, faulty=0.1, errors=0.05, rewards=True)


def _records(seed: int) -> list[dict[str, Any]]:
    """The world's records, with the item list of every third call that has one emptied or dropped
    (a call whose summed array has no member sums to 0)."""
    out = records(_world(seed))
    with_items = [r for r in out if isinstance(r.get("result"), dict) and "items" in r["result"]]
    for j, r in enumerate(with_items[::3]):
        if j % 2:
            r["result"]["items"] = []
        else:
            del r["result"]["items"]
    return out


@pytest.fixture(scope="module")
def world_parts() -> Iterator[list[tuple[list[GroupSpec], Leaves]]]:
    """Specs and part of a few random worlds (sums, counts, products, item lists: the by-construction
    test's kind)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (1, 2, 3):
            corpus = corpus_from_records(_records(seed), Path(tmp) / f"c{seed}")
            with pytest.MonkeyPatch.context() as mp:
                out.append(_captured(corpus, mp))
        yield out


def test_a_spec_frame_is_what_its_leaves_say(world_parts: list[tuple[list[GroupSpec], Leaves]]) -> None:
    checked = {"plain": 0, "group": 0, "sum": 0, "len": 0, "empty": 0}
    for specs, part in world_parts:
        frames = _frames(specs, part)
        for i, spec in enumerate(specs):
            want = _reference(spec, part)
            if i not in frames:
                assert not want, spec
                continue
            wide, _ = frames[i]
            key = ["cid", "inst"] if spec.group else ["cid"]
            assert wide.columns == [*key, *(f.name for f in spec.fields), "fold", "task"]
            rows = wide.to_dicts()
            got = {tuple(r[k] for k in key): r for r in rows}
            assert set(got) == set(want), spec
            # one row per call (instance), in call key order: the sample takes a fold's first rows
            assert list(got) == sorted(want) and len(rows) == len(got), spec
            checked["empty"] += sum(
                1 for row in want.values() for f in spec.fields if f.is_sum and not row[f.name]
            )
            for k, row in want.items():
                for f in spec.fields:
                    v = got[k][f.name]
                    if f.is_sum:
                        assert v is not None and math.isclose(
                            v, row[f.name] or 0.0, rel_tol=1e-12, abs_tol=1e-12
                        )
                        checked["sum"] += 1
                    else:
                        assert v == row.get(f.name), (spec.tool, f, k)
                        checked["len"] += f.is_len
            checked["group" if spec.group else "plain"] += 1
    assert all(checked.values()), checked


@settings(max_examples=12, deadline=None)
@given(limit=st.sampled_from([1, 40, 300, 2_000, 10**9]), which=st.integers(0, 2))
def test_a_spec_frame_does_not_depend_on_its_batch(
    world_parts: list[tuple[list[GroupSpec], Leaves]], limit: int, which: int
) -> None:
    """From every spec alone to all at once: the same frames and the same field stats."""
    specs, part = world_parts[which]
    base = _frames(specs, part)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(relation, "WIDE_BATCH_ROWS", limit)
        got = _frames(specs, part)
    assert got.keys() == base.keys()
    for i, (wide, stats) in got.items():
        assert wide.equals(base[i][0]), specs[i]
        cols = ["name", "fold", "n", "n_int", "n_cent"]
        assert stats.select(cols).sort("name", "fold").equals(base[i][1].select(cols).sort("name", "fold"))


def test_the_contract_set_does_not_depend_on_the_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mined with every spec in a batch of its own and with all specs in one: equal bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_from_records(_records(4), Path(tmp) / "c")
        one = mine(corpus, low_params(3, 2, "ok", 1), verify=False)
        monkeypatch.setattr(relation, "WIDE_BATCH_ROWS", 1)
        alone = mine(corpus, low_params(3, 2, "ok", 1), verify=False)
    assert sum(r.code == "RELATION" for r in one.all_rules()) >= 3
    assert orjson.dumps(one.to_json()) == orjson.dumps(alone.to_json())


@st.composite
def _spec_frames(draw: st.DrawFn) -> list[tuple[list[Field], pl.DataFrame]]:
    """A few specs' wide frames: their own field names (`c0`, `c1`, ... shared between specs, as
    `_wide_all` names them), rows by call key, folds, present and absent values, zeros."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        m = draw(st.integers(1, 5))
        fields = [Field(f"c{j}", f"/f{j}", True, False) for j in range(m)]
        n = draw(st.integers(1, 60))
        cols: dict[str, list[Any]] = {
            "cid": sorted(draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n, unique=True))),
            "fold": draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        }
        for f in fields:
            cols[f.name] = draw(
                st.lists(st.sampled_from([None, None, 0.0, 1.0, 2.5]), min_size=n, max_size=n)
            )
        schema = {"cid": pl.UInt64, "fold": pl.Int32, **{f.name: pl.Float64 for f in fields}}
        out.append((fields, pl.DataFrame(cols, schema=schema)))
    return out


@settings(max_examples=60, deadline=None)
@given(specs=_spec_frames())
def test_sampling_every_spec_at_once_picks_each_spec_s_own_rows(
    specs: list[tuple[list[Field], pl.DataFrame]],
) -> None:
    """`_sample_all` over the specs' frames together picks, for each spec, the rows the one-spec
    sampling before the batch (`reference.sample_rows`, tests/codes/relation/reference.py) picks from its
    frame alone."""
    both = pl.concat(
        [w.with_columns(pl.lit(i, pl.Int64).alias("spec")) for i, (_, w) in enumerate(specs)], how="diagonal"
    )
    names = sorted({f.name for fields, _ in specs for f in fields})
    gen, ref = _sample_all(both, names)
    gens, refs = _by_spec(gen), _by_spec(ref)
    for i, (fields, wide) in enumerate(specs):
        want_gen, want_ref = old.sample_rows(wide, fields)
        cols = ["_r", "cid", "fold", *(f.name for f in fields)]
        assert gens[i].select(cols).equals(want_gen.select(cols)), i
        assert refs[i].select(cols).equals(want_ref.select(cols)), i
