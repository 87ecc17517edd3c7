"""What fault injection learns before it plants (`fault_targets.learn`) and the walks its finders share.

`learn` fills only the parts of its context that the kinds asked for read (`parts_needed`), counts a
relation candidate as seen once per object *shape* rather than once per object, and keeps node
statistics per place. These tests hold it to a plain reference (every candidate of every object
listed and counted, the way injection learnt before), and hold injection with the parts it needs
and one walk per call to injection with everything learnt and every finder walking on its own.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.audit import fault_targets as ft
from output_contracts.audit import inject as inj
from output_contracts.audit.inject import ALL_KINDS, KINDS, find_targets, inject_records, read_flat
from output_contracts.codes.dates import classify
from output_contracts.traces.pointers import escape_token
from tests.audit.test_inject import world
from tests.conftest import SAMPLE


def reference_learn(records: Sequence[Mapping[str, Any]]) -> ft.Context:
    """Every statistic of every eligible record, each relation candidate listed per object."""
    ctx = ft.Context()
    for rec in records:
        if not ft.is_eligible(rec):
            continue
        tool, result = rec["tool"], rec["result"]
        ctx.tool_calls[tool] += 1
        arg_vals = [
            (p, v)
            for p, pat, v in ft.walk(rec.get("arguments") or {})
            if p and "*" not in pat and isinstance(v, str | int) and not isinstance(v, bool)
        ]
        for path, pattern, v in ft.walk(result):
            key = (tool, pattern)
            ctx.present[key] += 1
            ctx.kinds[key].add(ft._kind(v))
            if ft.is_num(v):
                ctx.nums[key] += 1
                if v < 0:
                    ctx.negative.add(key)
            elif isinstance(v, str):
                ctx.strings[key][v] += 1
            pool = ctx.scalars[key]
            if isinstance(v, str | int) and not isinstance(v, bool) and len(pool) < 64 and v not in pool:
                pool.append(v)
            if isinstance(v, dict):
                ctx.parents[key] += 1
                dated = [(k, x, classify(x)) for k, x in v.items() if classify(x) is not None]
                for i, (ka, va, pa) in enumerate(dated):
                    for kb, vb, pb in dated[i + 1 :]:
                        if pa[0] == pb[0]:  # type: ignore[index]
                            for k1, k2, v1, v2 in ((ka, kb, va, vb), (kb, ka, vb, va)):
                                sig = (tool, f"{pattern}/{escape_token(k1)}", f"{pattern}/{escape_token(k2)}")
                                ctx.order_seen[sig] += 1
                                ctx.order_ok[sig] += v1 <= v2
                for keys, holds in _candidates(v):
                    rsig = ft._relation_key(tool, pattern, keys)
                    ctx.rel_seen[rsig] += 1
                    ctx.rel_ok[rsig] += holds
            if "*" not in pattern and path and isinstance(v, str | int) and not isinstance(v, bool):
                for ap, av in arg_vals:
                    ctx.echo_seen[(tool, pattern, ap)] += 1
                    ctx.echo_ok[(tool, pattern, ap)] += av == v and type(av) is type(v)
    for counter in (ctx.order_ok, ctx.rel_ok, ctx.echo_ok):
        for k in [k for k, n in counter.items() if n == 0]:
            del counter[k]
    return ctx


def _candidates(obj: Mapping[str, Any]) -> list[tuple[tuple[str, ...], bool]]:
    """A = B + C over the first 12 numeric members (B before C), and A = Σ arr/*/x; exact on ints."""
    nums = [(k, v) for k, v in obj.items() if ft.is_num(v)][:12]
    out = []
    for ka, a in nums:
        for j, (kb, b) in enumerate(nums):
            for kc, c in nums[j + 1 :]:
                if len({ka, kb, kc}) == 3:
                    exact = all(isinstance(x, int) for x in (a, b, c))
                    out.append(((ka, kb, kc), a == b + c if exact else abs(a - (b + c)) <= 0.005 + 1e-9))
        for kl, lst in obj.items():
            if isinstance(lst, list) and lst and all(isinstance(x, dict) for x in lst):
                for kx in sorted(set.intersection(*(set(x) for x in lst))):
                    vals = [x[kx] for x in lst]
                    if all(ft.is_num(x) for x in vals):
                        exact = isinstance(a, int) and all(isinstance(x, int) for x in vals)
                        s = sum(vals)
                        term = f"{escape_token(kl)}/*/{escape_token(kx)}"
                        out.append(((ka, term), a == s if exact else abs(a - s) <= 0.005 + 1e-9))
    return out


def _plain(ctx: ft.Context, part: str) -> dict[str, Any]:
    """The fields of `part`, as plain dicts (a defaultdict compares as its items)."""
    fields = {
        "nodes": ("present", "parents", "kinds", "negative", "nums", "strings", "scalars"),
        "echo": ("echo_seen", "echo_ok"),
        "order": ("order_seen", "order_ok"),
        "relations": ("rel_seen", "rel_ok"),
    }[part]
    out = {f: dict(getattr(ctx, f)) if isinstance(getattr(ctx, f), dict) else getattr(ctx, f) for f in fields}
    if "strings" in out:  # a place with more than 8 distinct strings is only "many" (`STRINGS_KEPT`)
        out["strings"] = {k: c if len(c) <= 8 else "many" for k, c in out["strings"].items()}
    return out


_scalar = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([0.5, 1.25, 2.75, 3.3, 0.01, -1.5, 10.0]),
    st.sampled_from(["2024-05-01", "2024-05-03T10:00:00", "2024-05-02T09:00:00Z", "A-1", "x", ""]),
    st.booleans(),
    st.none(),
)
_keys = st.sampled_from(["a", "b", "c", "d", "e/f", "tot~al"])
_items = st.lists(
    st.dictionaries(st.sampled_from(["q", "p", "r"]), st.integers(0, 5) | _scalar, max_size=3), max_size=3
)
_result = st.dictionaries(_keys, _scalar | _items | st.dictionaries(_keys, _scalar, max_size=4), max_size=6)
_record = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["t1", "t2"]),
        "status": st.sampled_from(["ok", "ok", "ok", "error"]),
        "arguments": st.dictionaries(_keys, _scalar, max_size=3),
        "result": _result,
    }
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.lists(_record, max_size=12))
def test_learn_equals_the_plain_reference(records: list[dict[str, Any]]) -> None:
    want = reference_learn(records)
    every = ft.learn(records)
    for part in ft.PARTS:
        assert _plain(every, part) == _plain(want, part), part
        alone = ft.learn(records, [part])
        assert _plain(alone, part) == _plain(want, part), part
        for other in set(ft.PARTS) - {part}:  # a part not asked for stays empty
            assert not any(_plain(alone, other).values()), (part, other)


@pytest.fixture(scope="module")
def sample_records() -> list[dict[str, Any]]:
    return read_flat([SAMPLE / "clean"])


def test_learn_equals_the_plain_reference_on_the_sample_world(sample_records: list[dict[str, Any]]) -> None:
    records = sample_records[:4000]
    want, got = reference_learn(records), ft.learn(records)
    for part in ft.PARTS:
        assert _plain(got, part) == _plain(want, part), part
    assert sum(got.rel_ok.values()) > 100 and sum(got.order_ok.values()) > 100  # the world has both


def test_parts_needed() -> None:
    assert ft.parts_needed(inj.INCIDENT_KINDS, heuristic=True) == frozenset()
    assert ft.parts_needed(["sign_flip"], heuristic=True) == {"nodes"}
    assert ft.parts_needed(["relation_break", "other_entity"], heuristic=True) == {"nodes", "relations"}
    assert ft.parts_needed(KINDS, heuristic=True) == set(ft.PARTS)
    assert ft.parts_needed(KINDS, heuristic=False) == {"nodes"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_basic_kind_plants_the_same_with_only_its_parts(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = world(24, seed=7)
    got, rep = inject_records(records, kinds=[kind], rate=0.5, seed=3)
    monkeypatch.setattr(inj, "parts_needed", lambda kinds, heuristic: frozenset(ft.PARTS))
    want, want_rep = inject_records(records, kinds=[kind], rate=0.5, seed=3)
    assert got == want and rep == want_rep
    assert rep.injected[kind] > 0


def test_one_walk_per_call_finds_what_a_walk_per_kind_finds(sample_records: list[dict[str, Any]]) -> None:
    records = sample_records[:3000]
    finder = ft.Targets(ft.learn(records), None)
    rng = random.Random(5)
    earlier: dict[str, list[Any]] = defaultdict(list)
    found: Counter[str] = Counter()
    for rec in records:
        if not ft.is_eligible(rec):
            continue
        others = tuple(earlier[rec["tool"]][:8])
        earlier[rec["tool"]].append(rec["result"])
        if rng.random() > 0.1:
            continue
        walked = ft.Walked(rec["result"])
        for kind in rng.sample(ALL_KINDS, len(ALL_KINDS)):  # any order of asking
            shared = find_targets(finder, kind, rec, others, walked)
            assert shared == find_targets(finder, kind, rec, others), kind
            found[kind] += bool(shared)
    assert len(found) >= 25  # most kinds have targets in the world
