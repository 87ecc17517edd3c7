"""The faulty set: every change is labelled, every label names a real change, and every fault (except
`plausible_string`, invisible by design) breaks a planted invariant at or beside its path."""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

import pytest

from tests.sample_traces.invariants import broken_rules

KINDS = {
    "sign_flip",
    "drop_field",
    "null_field",
    "type_swap",
    "stale_echo",
    "date_swap",
    "relation_break",
    "domain_drift",
    "plausible_string",
    "truncated_list",
}


@pytest.fixture(scope="module")
def originals(gen: ModuleType) -> list[dict[str, Any]]:
    """The faulty episodes as generated before injection (the generator's own clean originals)."""
    world = gen.build_world(gen.DEFAULT_SEED)
    _faulty, orig = gen.faulty_episodes(world, gen.planted_rules())
    return [r for ep in orig for r in ep]


def get(doc: Any, ptr: str) -> tuple[bool, Any]:
    v = doc
    for tok in ptr.split("/")[1:] if ptr else []:
        if isinstance(v, list) and tok.isdigit() and int(tok) < len(v):
            v = v[int(tok)]
        elif isinstance(v, dict) and tok in v:
            v = v[tok]
        else:
            return False, None
    return True, v


def diff_paths(a: Any, b: Any, ptr: str = "") -> list[str]:
    """Pointers where two JSON documents differ (a differing list length counts at the list)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{ptr}/{k}")
            else:
                out += diff_paths(a[k], b[k], f"{ptr}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in diff_paths(x, y, f"{ptr}/{i}")]
    same = a == b and type(a) is type(b)
    return [] if same else [ptr]


def test_faulty_set_is_separate_and_unrewarded(
    faulty: list[dict[str, Any]], clean: list[dict[str, Any]]
) -> None:
    assert {r["task_id"] for r in faulty}.isdisjoint({r["task_id"] for r in clean})
    assert {r["trace_id"] for r in faulty}.isdisjoint({r["trace_id"] for r in clean})
    assert {r["reward"] for r in faulty} == {0.0}
    assert {r["reward"] for r in clean} == {1.0}
    assert all(r["labels"] == {} for r in clean)
    assert len({r["trace_id"] for r in faulty}) >= 900


def test_every_change_is_labelled_and_every_label_is_a_change(
    faulty: list[dict[str, Any]], originals: list[dict[str, Any]]
) -> None:
    assert len(faulty) == len(originals)
    for f, o in zip(faulty, originals, strict=True):
        assert (f["trace_id"], f["step"], f["tool"], f["arguments"]) == (
            o["trace_id"],
            o["step"],
            o["tool"],
            o["arguments"],
        )
        changed = diff_paths(f["result"], o["result"])
        lab = f["labels"]
        if not lab:
            assert changed == [], f"{f['trace_id']}#{f['step']}: unlabelled change at {changed}"
            continue
        assert set(lab) <= {"fault", "fault_path", "original", "swapped_with"}
        assert lab["fault"] in KINDS and f["status"] == "ok"
        ptr = lab["fault_path"]
        expected = {ptr} | ({lab["swapped_with"]} if "swapped_with" in lab else set())
        assert set(changed) == expected, f"{f['trace_id']}#{f['step']}: {changed} vs {expected}"
        present_before, before = get(o["result"], ptr)
        assert present_before and before == lab["original"]
        present_now, now = get(f["result"], ptr)
        if lab["fault"] == "drop_field":
            assert not present_now
        else:
            assert present_now and (now != before or type(now) is not type(before))


def test_fault_rate_and_kinds(faulty: list[dict[str, Any]], planted: dict[str, Any]) -> None:
    ok = [r for r in faulty if r["status"] == "ok"]
    faulted = [r for r in ok if r["labels"]]
    assert 0.15 <= len(faulted) / len(ok) <= 0.3
    kinds = Counter(r["labels"]["fault"] for r in faulted)
    assert set(kinds) == KINDS and min(kinds.values()) >= 50, kinds
    assert dict(sorted(kinds.items())) == planted["counts"]["faulty"]["faults_by_kind"]
    per_episode = Counter(r["trace_id"] for r in faulted)
    assert len(per_episode) == len({r["trace_id"] for r in faulty}), "every faulty episode has a fault"


def test_each_fault_kind_does_what_it_says(faulty: list[dict[str, Any]]) -> None:
    for r in faulty:
        lab = r["labels"]
        if not lab:
            continue
        k, ptr, orig = lab["fault"], lab["fault_path"], lab["original"]
        _p, now = get(r["result"], ptr)
        if k == "sign_flip":
            assert orig > 0 and now == -orig
        elif k == "null_field":
            assert now is None and orig is not None
        elif k == "type_swap":
            assert isinstance(now, str) and float(now) == orig
        elif k == "stale_echo":
            assert isinstance(now, str) and now != orig and now[:3] == orig[:3]
        elif k == "date_swap":
            _q, other = get(r["result"], lab["swapped_with"])
            assert now > orig and other == orig  # the earlier date now holds the later one
        elif k == "relation_break":
            assert 0 < abs(now - orig) <= 3 and (isinstance(orig, int) or abs(now - orig) < 0.1)
            assert type(now) is type(orig) and now >= 0  # only the relation breaks, not the sign or type
        elif k == "truncated_list":
            assert isinstance(now, list) and 1 <= len(now) < len(orig) and now == orig[: len(now)]
        elif k in ("domain_drift", "plausible_string"):
            assert isinstance(now, str) and now != orig


def test_faults_break_planted_invariants(faulty: list[dict[str, Any]], planted: dict[str, Any]) -> None:
    """A structural fault always breaks a planted invariant on the clean data; a plausible string never
    does (that is the kind contracts cannot see, by design)."""
    rules = planted["planted"]
    missed: Counter[str] = Counter()
    for r in faulty:
        lab = r["labels"]
        if not lab:
            assert broken_rules(rules, r) == [] or r["status"] == "error"
            continue
        broken = broken_rules(rules, r)
        if lab["fault"] == "plausible_string":
            assert broken == [], (lab, broken)
        elif not broken:
            missed[lab["fault"]] += 1
    assert not missed, missed
