"""Case building: BFCL dialect conversion, ground truth, corpus + registry source, every family, determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.errors import RepairError
from output_contracts.repair import cases
from output_contracts.repair.mask import check
from output_contracts.repair.patch import apply_patch, json_equal, parse_op
from output_contracts.repair.validator import verify
from output_contracts.schemas import schema_errors
from tests.repair.conftest import SCHEMA


def test_bfcl_dialect_conversion() -> None:
    out = cases.bfcl_to_json_schema(
        {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "description": "d", "default": 1.5},
                "t": {"type": "tuple", "items": {"type": "integer"}},
                "any": {"type": "any"},
                "o": {
                    "type": "dict",
                    "properties": {"k": {"type": "string", "optional": True, "required": True}},
                },
                "free": {"type": "dict"},
                "e": {"type": "string", "enum": ["a", "b"]},
            },
            "required": ["x"],
            "optional": [],
        }
    )
    assert out == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "x": {"type": "number", "description": "d", "default": 1.5},
            "t": {"type": "array", "items": {"type": "integer"}},
            "any": {},
            "o": {"type": "object", "properties": {"k": {"type": "string"}}, "additionalProperties": False},
            "free": {"type": "object"},
            "e": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["x"],
        "additionalProperties": False,
    }
    with pytest.raises(RepairError, match="unknown BFCL type 'complex'") as e:
        cases.bfcl_to_json_schema({"type": "dict", "properties": {"z": {"type": "complex"}}})
    assert e.value.field == "parameters.properties.z.type"


def test_load_bfcl_first_accepted_value_and_optional(bfcl_files: tuple[Path, Path]) -> None:
    sources, skipped = cases.load_bfcl(*bfcl_files)
    assert skipped == {}
    by_id = {s.source_id: s for s in sources}
    # "" first means left out; nested dict answers are resolved recursively; tuples are arrays
    assert by_id["simple_0"].arguments == {
        "base": 10,
        "height": 5.5,
        "point": [1.0, 2.0],
        "opts": {"fast": True},
    }
    assert by_id["simple_1"].arguments == {"number": 5}
    assert by_id["simple_0"].tool == "calc.area"


def test_load_bfcl_errors_name_file_and_line(tmp_path: Path) -> None:
    q = tmp_path / "q.json"
    q.write_text('{"id": "a", "function": []}\nnot json\n')
    a = tmp_path / "a.json"
    a.write_text("")
    with pytest.raises(RepairError) as e:
        cases.load_bfcl(q, a)
    assert (e.value.source, e.value.line) == (str(q), 2)


def _sources() -> list[cases.SourceCall]:
    rows = [
        {"sku": f"S-{i}", "qty": i + 1, "unit": "box", "tags": ["a", "b"], **({"note": "n"} if i % 2 else {})}
        for i in range(12)
    ]
    return [cases.SourceCall(f"src-{i:02d}", "order", SCHEMA, r) for i, r in enumerate(rows)]


@pytest.mark.parametrize("family", cases.FAMILIES)
def test_every_family_is_a_real_fault_with_a_correct_answer(family: str) -> None:
    rep = cases.build_cases(_sources(), kinds=[family], per_kind=5, seed=13)
    assert rep.per_family[family] == 5
    for case, target in zip(rep.cases, rep.targets, strict=True):
        assert target.family == family and target.case_id == case.case_id
        assert verify(case.candidate, case.schema) != ()  # the candidate is broken
        assert verify(target.target, case.schema) == ()  # the answer is valid
        assert schema_errors(case.as_json(), "repair-case") == []
        assert schema_errors(target.as_json(), "repair-target") == []
        if family == "immutable":
            assert target.abstain and target.canonical_patch is None
            fault = verify(case.candidate, case.schema)[0].pointer
            assert fault in case.immutable
            # the obvious fix is refused by the mask
            fix = [{"op": "replace", "path": fault, "value": 1}]
            assert check(fix, case.candidate, immutable=case.immutable, ops_left=2).reason == "IMMUTABLE_PATH"
            continue
        assert target.canonical_patch is not None
        fixed = apply_patch(case.candidate, [parse_op(o) for o in target.canonical_patch])
        assert json_equal(fixed, target.target)
        assert len(target.canonical_patch) == (2 if family == "multi_field" else 1)
    if family == "rollback":
        assert all(c.history and c.history[0]["patch"][0]["op"] == "add" for c in rep.cases)
    if family == "wrong_pointer":
        # the first error points at the missing key, not at the misspelt key holding the value
        c, t = rep.cases[0], rep.targets[0]
        assert t.canonical_patch is not None
        first = next(e for e in verify(c.candidate, c.schema) if e.code == "E_REQUIRED")
        assert first.pointer == t.canonical_patch[0]["path"] != t.canonical_patch[0]["from"]


def test_build_is_deterministic_and_hides_the_family(tmp_path: Path) -> None:
    a = cases.build_cases(_sources(), kinds=cases.FAMILIES, per_kind=3, seed=13)
    b = cases.build_cases(_sources(), kinds=cases.FAMILIES, per_kind=3, seed=13)
    c = cases.build_cases(_sources(), kinds=cases.FAMILIES, per_kind=3, seed=14)
    cases.write_cases(tmp_path / "a.jsonl", a.cases)
    cases.write_cases(tmp_path / "b.jsonl", b.cases)
    cases.write_cases(tmp_path / "c.jsonl", c.cases)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()
    text = (tmp_path / "a.jsonl").read_text()
    assert not any(f in text for f in ("missing_required", "wrong_pointer", "rollback", "family"))
    ids = [orjson.loads(line)["case_id"] for line in text.splitlines()]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert cases.read_cases(tmp_path / "a.jsonl") == list(a.cases)


def test_targets_and_patches_files_round_trip(tmp_path: Path) -> None:
    rep = cases.build_cases(_sources(), kinds=["wrong_type", "immutable"], per_kind=2, seed=13)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    cases.write_patches(tmp_path / "p.jsonl", rep.targets)
    assert cases.read_targets(tmp_path / "t.jsonl") == {t.case_id: t for t in rep.targets}
    actions = cases.read_actions(tmp_path / "p.jsonl")
    assert sorted(a["action"] == "abstain" for a in actions.values()) == [False, False, True, True]


def test_read_cases_names_file_line_and_field(tmp_path: Path) -> None:
    good = {"case_id": "c1", "tool": "t", "schema": {}, "candidate": {}}
    p = tmp_path / "cases.jsonl"
    p.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps({**good, "case_id": 5}) + b"\n")
    with pytest.raises(RepairError) as e:
        cases.read_cases(p)
    assert (e.value.line, e.value.field) == (2, "/case_id")
    p.write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(good) + b"\n")
    with pytest.raises(RepairError, match="duplicate case_id"):
        cases.read_cases(p)


def test_unknown_kind_is_a_usage_error() -> None:
    with pytest.raises(RepairError, match="unknown case kind"):
        cases.build_cases(_sources(), kinds=["typo"])


def test_wrong_type_values_are_other_json_types() -> None:
    for v in (5, 2.5, True, None, "s", [1], {"a": 1}):
        w: Any = cases.wrong_type_value(v)
        assert cases._kind(w) != cases._kind(v)


def test_corpus_and_registry_source(tmp_path: Path) -> None:
    from output_contracts.traces.ingest import corpus_from_records

    records = [
        {"trace_id": f"t{i}", "tool": "order", "arguments": args, "result": {"ok": True}}
        for i, args in enumerate(
            [
                {"sku": "A", "qty": 1, "unit": "box"},
                {"sku": "B", "qty": 2, "unit": "each", "tags": ["x"]},
                {"sku": "B", "qty": 2, "unit": "each", "tags": ["x"]},  # duplicate: counted once
                {"sku": "C", "qty": "3", "unit": "box"},  # fails the registry schema: skipped
                {"sku": "D", "qty": 4, "unit": "box"},
            ]
        )
    ] + [{"trace_id": "u", "tool": "unregistered", "arguments": {}, "result": 1}]
    corpus_from_records(records, tmp_path / "corpus")
    reg = tmp_path / "tools.json"
    reg.write_bytes(orjson.dumps({"tools": [{"name": "order", "parameters": SCHEMA, "immutable": ["/sku"]}]}))
    sources, skipped = cases.load_corpus_calls(tmp_path / "corpus", reg)
    assert sorted(s.arguments["sku"] for s in sources) == ["A", "B", "D"]
    assert skipped == {"arguments fail the registry schema": 1}
    assert all(s.immutable == ("/sku",) for s in sources)
    rep = cases.build_cases(sources, kinds=["missing_required", "wrong_type"], per_kind=3, seed=13)
    # the registry's immutable path is never the one corrupted, and is carried into the case
    for c, t in zip(rep.cases, rep.targets, strict=True):
        assert c.immutable == ("/sku",)
        assert t.canonical_patch is not None and t.canonical_patch[0]["path"] != "/sku"


def test_cases_depend_on_call_content_not_on_file_bytes(tmp_path: Path) -> None:
    """Re-ingesting the same calls in another order (new call ids) draws the same cases."""
    from output_contracts.traces.ingest import corpus_from_records

    rows = [{"sku": f"S{i}", "qty": i + 1, "unit": "box", "tags": ["a"]} for i in range(8)]
    recs = [{"trace_id": f"t{i}", "tool": "order", "arguments": r, "result": {}} for i, r in enumerate(rows)]
    reg = tmp_path / "tools.json"
    reg.write_bytes(orjson.dumps({"tools": [{"name": "order", "parameters": SCHEMA}]}))
    corpus_from_records(recs, tmp_path / "c1")
    corpus_from_records(list(reversed(recs)), tmp_path / "c2")
    s1, _ = cases.load_corpus_calls(tmp_path / "c1", reg)
    s2, _ = cases.load_corpus_calls(tmp_path / "c2", reg)
    assert {s.source_id for s in s1} != {s.source_id for s in s2}
    b1 = cases.build_cases(s1, kinds=cases.FAMILIES, per_kind=2, seed=13)
    b2 = cases.build_cases(s2, kinds=cases.FAMILIES, per_kind=2, seed=13)
    assert b1.cases == b2.cases
    assert [t.target for t in b1.targets] == [t.target for t in b2.targets]


def test_corruptions_avoid_paths_near_immutable_ones() -> None:
    """Faults never sit at, above or below an immutable pointer outside the `immutable` family: the
    canonical patch always passes the mask (`/tags/0` may be fixed, `/tags` and `/tags/1` may not)."""
    rows = [{"sku": f"S{i}", "qty": i + 1, "unit": "box", "tags": ["a", "b"]} for i in range(10)]
    srcs = [cases.SourceCall(f"s{i}", "order", SCHEMA, r, ("/tags/1", "/sku")) for i, r in enumerate(rows)]
    rep = cases.build_cases(srcs, kinds=[f for f in cases.FAMILIES if f != "immutable"], per_kind=4, seed=13)
    assert rep.cases
    for c, t in zip(rep.cases, rep.targets, strict=True):
        assert t.canonical_patch is not None
        fixed = check(t.canonical_patch, c.candidate, immutable=c.immutable, ops_left=2)
        assert fixed.ok, (t.family, t.canonical_patch, fixed.reason)
        assert all(o["path"] not in ("/sku", "/tags", "/tags/1") for o in t.canonical_patch)


def test_every_family_says_what_it_needs() -> None:
    """`repair-cases` explains a short family with `NEEDS`: every family has its sentence."""
    assert sorted(cases.NEEDS) == sorted(cases.MAKERS) == sorted(cases.FAMILIES + cases.STRESS)


def test_a_family_no_call_can_take_is_explained(tmp_path: Path) -> None:
    """A call with flat scalar arguments offers no nested place: the warning names the family, its count
    and what it needs, on one line of its own."""
    from typer.testing import CliRunner

    from output_contracts.cli.app import app
    from output_contracts.traces.ingest import corpus_from_records

    tools = {"tools": [{"name": "t", "parameters": SCHEMA}]}
    (tmp_path / "tools.json").write_bytes(orjson.dumps(tools))
    flat = [{"sku": f"A-{i}", "qty": i + 1, "unit": "box"} for i in range(3)]  # no `tags`: nothing nested
    corpus_from_records(
        [{"trace_id": f"e{i}", "tool": "t", "arguments": a, "result": {}} for i, a in enumerate(flat)],
        tmp_path / "c",
    )
    r = CliRunner().invoke(
        app,
        [
            "repair-cases",
            str(tmp_path / "c"),
            "--registry",
            str(tmp_path / "tools.json"),
            "-o",
            str(tmp_path / "cases.jsonl"),
            "--targets",
            str(tmp_path / "t.jsonl"),
            "--kinds",
            "nested_array",
            "--per-kind",
            "2",
        ],
        env={"COLUMNS": "400"},
    )
    assert r.exit_code == 0, r.output
    assert f"warning: 0 of 2 cases of nested_array: it needs {cases.NEEDS['nested_array']}" in r.stderr
