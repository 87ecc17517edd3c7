"""split-audit: a planted overlap of every fingerprint kind is found; disjoint case sets share nothing."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from output_contracts.repair import cases
from output_contracts.repair import split_audit as audit
from tests.repair.conftest import SCHEMA

OTHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
    "additionalProperties": False,
}


def _sets() -> tuple[cases.BuildReport, cases.BuildReport]:
    a = [
        cases.SourceCall(f"a{i}", "order", SCHEMA, {"sku": f"S{i}", "qty": i + 1, "unit": "box"})
        for i in range(4)
    ]
    b = [
        cases.SourceCall(f"b{i}", "weather", OTHER_SCHEMA, {"city": f"C{i}", "days": i + 1}) for i in range(4)
    ]
    return (
        cases.build_cases(a, kinds=["wrong_type"], per_kind=2, seed=13),
        cases.build_cases(b, kinds=["missing_required"], per_kind=2, seed=13),
    )


def _tmap(rep: cases.BuildReport) -> dict[str, cases.Target]:
    return {t.case_id: t for t in rep.targets}


def test_disjoint_sets_are_clean() -> None:
    a, b = _sets()
    r = audit.split_audit(a.cases, b.cases, _tmap(a), _tmap(b))
    assert r.clean and r.checked == audit.KINDS and r.skipped == ()
    r = audit.split_audit(a.cases, b.cases)
    assert r.clean and set(r.skipped) == set(audit.TARGET_KINDS)


def _plant(
    kind: str, a: cases.BuildReport, b: cases.BuildReport
) -> tuple[list[cases.Case], dict[str, cases.Target]]:
    """Change one test case so that exactly the fingerprint `kind` (at least) collides with train."""
    src, dst = a.cases[0], b.cases[0]
    st, dt = a.targets[0], b.targets[0]
    test_cases, targets = list(b.cases), _tmap(b)
    if kind == "case_id":
        new = dataclasses.replace(dst, case_id=src.case_id)
        targets[src.case_id] = dataclasses.replace(dt, case_id=src.case_id)
        test_cases[0] = new
        return test_cases, targets
    if kind == "candidate":
        test_cases[0] = dataclasses.replace(dst, candidate=src.candidate)
    elif kind == "target":
        targets[dst.case_id] = dataclasses.replace(dt, target=st.target)
    elif kind == "schema":
        test_cases[0] = dataclasses.replace(dst, schema=src.schema)
    elif kind == "schema_shape":
        reworded = {**src.schema, "description": "same shape, other words"}
        test_cases[0] = dataclasses.replace(dst, schema=reworded)
    elif kind in ("target_paths", "op_sequence"):
        targets[dst.case_id] = dataclasses.replace(dt, canonical_patch=st.canonical_patch)
    elif kind == "error_template":
        test_cases[0] = dataclasses.replace(
            dst, schema=src.schema, candidate={**src.candidate, "sku": "other"}
        )
    elif kind == "tool":
        test_cases[0] = dataclasses.replace(dst, tool=src.tool)
    elif kind in ("normalized_shape", "semantic_cluster"):
        # the train schema with every parameter renamed: same structure, no shared name
        renamed = _renamed(src.schema)
        test_cases[0] = dataclasses.replace(dst, schema=renamed)
        if kind == "semantic_cluster":  # and the same call said differently: 3 -> 3.0, "box" -> " BOX"
            said = {
                f"p_{k}": (float(v) if isinstance(v, int) else f" {v.upper()}") for k, v in st.target.items()
            }
            targets[dst.case_id] = dataclasses.replace(dt, target=said)
    elif kind == "candidate_pool":
        pool = {"type": "string", "enum": ["box", "each"], "default": "each"}  # the same values, reordered
        props = {**OTHER_SCHEMA["properties"], "size": pool}
        test_cases[0] = dataclasses.replace(dst, schema={**OTHER_SCHEMA, "properties": props})
    return test_cases, targets


def _renamed(schema: dict[str, Any]) -> dict[str, Any]:
    props = {f"p_{k}": v for k, v in reversed(list(schema["properties"].items()))}
    return {**schema, "properties": props, "required": [f"p_{k}" for k in schema["required"]]}


def test_new_units_by_hand() -> None:
    a = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
        "required": ["x"],
    }
    b = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["n"],
    }
    c = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
        "required": ["y"],
    }
    assert audit.normalized_shape(a) == audit.normalized_shape(b) != audit.normalized_shape(c)
    assert audit.candidate_pool(a) == []
    assert len(audit.candidate_pool({"properties": {"u": {"enum": [1, 2], "default": 1}}})) == 2
    assert audit._semantic({"a": "Hello  World", "b": [3, 1.0]}) == sorted(
        ["hello world", [1.0, 3.0]], key=repr
    )


@pytest.mark.parametrize("kind", audit.KINDS)
def test_planted_overlap_of_each_kind_is_found(kind: str) -> None:
    a, b = _sets()
    test_cases, targets = _plant(kind, a, b)
    r = audit.split_audit(a.cases, test_cases, _tmap(a), targets)
    assert not r.clean
    assert r.counts()[kind] >= 1, r.counts()
    hit = next(o for o in r.overlaps if o.kind == kind)
    assert a.cases[0].case_id in hit.train and test_cases[0].case_id in hit.test


def test_disjoint_from_builds_a_clean_second_set(shared_data: Any) -> None:
    """Two seeds' BFCL case sets overlap by chance; --disjoint-from removes every shared fingerprint."""
    bfcl = shared_data / "bfcl"
    sources, _ = cases.load_bfcl(
        bfcl / "BFCL_v3_simple.json", bfcl / "possible_answer" / "BFCL_v3_simple.json"
    )
    a = cases.build_cases(sources, per_kind=16, seed=13)
    naive = cases.build_cases(sources, per_kind=16, seed=14)
    assert not audit.split_audit(a.cases, naive.cases, _tmap(a), _tmap(naive)).clean
    b = cases.build_cases(sources, per_kind=16, seed=14, exclude=audit.excluder(a.cases, _tmap(a)))
    assert b.per_family == {"missing_required": 16, "wrong_type": 16}
    r = audit.split_audit(a.cases, b.cases, _tmap(a), _tmap(b))
    assert r.clean, r.counts()
