"""The fail-closed verifier: typed, pointer-aware codes; cross-field checks; every failure mode is a failure."""

from __future__ import annotations

from typing import Any

import pytest

from output_contracts.repair.validator import CODES, cross_field_errors, verify
from tests.repair.conftest import GOOD, SCHEMA


def _codes(instance: Any, schema: Any = SCHEMA, cross: Any = ()) -> list[tuple[str, str]]:
    return [(e.code, e.pointer) for e in verify(instance, schema, cross)]


def test_pointer_aware_codes() -> None:
    assert _codes({**GOOD, "qty": "3"}) == [("E_TYPE", "/qty")]
    assert _codes({k: v for k, v in GOOD.items() if k != "unit"}) == [("E_REQUIRED", "/unit")]
    assert _codes({**GOOD, "units": "box"}) == [("E_EXTRA", "/units")]
    assert _codes({**GOOD, "unit": "crate"}) == [("E_ENUM", "/unit")]
    assert _codes({**GOOD, "qty": 0}) == [("E_RANGE", "/qty")]
    assert _codes({**GOOD, "tags": ["x", 5]}) == [("E_TYPE", "/tags/1")]
    assert _codes(
        {**GOOD, "note": "a"},
        {**SCHEMA, "properties": {**SCHEMA["properties"], "note": {"type": "string", "minLength": 2}}},
    ) == [("E_LENGTH", "/note")]
    assert _codes({"d": "2024-13-01"}, {"properties": {"d": {"type": "string", "format": "date"}}}) == [
        ("E_FORMAT", "/d")
    ]
    assert _codes({"p": "ab"}, {"properties": {"p": {"pattern": "^a$"}}}) == [("E_PATTERN", "/p")]
    assert _codes({"p": 1}, {"properties": {"p": {"not": {"type": "integer"}}}}) == [("E_SCHEMA", "/p")]


def test_report_is_sorted_and_deduplicated() -> None:
    errs = verify({"qty": "3", "zz": 1}, SCHEMA)
    assert list(errs) == sorted(errs)
    assert [(e.code, e.pointer) for e in errs] == [
        ("E_TYPE", "/qty"),
        ("E_REQUIRED", "/sku"),
        ("E_REQUIRED", "/unit"),
        ("E_EXTRA", "/zz"),
    ]


@pytest.mark.parametrize(
    ("instance", "schema", "cross"),
    [
        (GOOD, {"type": "object", "pattern": "(unclosed"}, ()),  # invalid schema
        (GOOD, {"type": "nonsense"}, ()),  # invalid schema
        (GOOD, {"$ref": "#/$defs/missing"}, ()),  # unresolvable $ref raises inside iter_errors
        (GOOD, SCHEMA, [{"kind": "sometimes"}]),  # unknown cross-field kind
        (GOOD, SCHEMA, [{"kind": "equal", "paths": ["/sku"]}]),  # malformed check raises
        (GOOD, SCHEMA, [{"kind": "requires", "if": "no-slash", "then": []}]),  # bad pointer raises
        ({"x": float("nan")}, {}, ()),  # not JSON
        ({"x": {1, 2}}, {}, ()),  # not JSON
    ],
)
def test_fail_closed(instance: Any, schema: Any, cross: Any) -> None:
    errs = verify(instance, schema, cross)
    assert errs, "a broken check must never pass"
    assert "E_VALIDATOR" in {e.code for e in errs}


def test_cross_field_kinds() -> None:
    doc = {"a": 1, "b": 2, "lo": "2024-01-02", "hi": "2024-01-01"}
    assert cross_field_errors(doc, [{"kind": "requires", "if": "/a", "then": ["/c"]}])[0].pointer == "/c"
    assert cross_field_errors(doc, [{"kind": "requires", "if": "/z", "then": ["/c"]}]) == []
    assert cross_field_errors(doc, [{"kind": "exclusive", "paths": ["/a", "/b"]}])[0].pointer == "/b"
    assert cross_field_errors(doc, [{"kind": "equal", "paths": ["/a", "/b"]}])[0].code == "E_CROSS"
    assert cross_field_errors({"a": 1, "b": 1.0}, [{"kind": "equal", "paths": ["/a", "/b"]}]) == []
    # less_equal reports at the later field, near but not at a fault in the earlier one
    errs = cross_field_errors(doc, [{"kind": "less_equal", "paths": ["/lo", "/hi"]}])
    assert [(e.code, e.pointer) for e in errs] == [("E_CROSS", "/hi")]
    assert cross_field_errors(doc, [{"kind": "less_equal", "paths": ["/a", "/b"]}]) == []
    assert cross_field_errors(doc, [{"kind": "less_equal", "paths": ["/a", "/lo"]}])[0].code == "E_CROSS"


def test_every_code_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "repair.md").read_text(encoding="utf-8")
    assert [c for c in CODES if f"`{c}`" not in doc] == []
    from output_contracts.repair.mask import REASONS
    from output_contracts.repair.policies import POLICY_ERRORS

    assert [r for r in (*REASONS, *POLICY_ERRORS) if f"`{r}`" not in doc] == []
