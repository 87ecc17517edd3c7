"""Every shipped artifact schema is itself a valid JSON Schema, and loading is by name."""

from __future__ import annotations

import jsonschema
import pytest

from output_contracts.errors import SchemaError
from output_contracts.schemas import load_schema, schema_names, validate

EXPECTED = {
    "contract-set",
    "corpus-manifest",
    "receipt-v1",
    "receipt-v2",
    "receipt-v2-no-recovery",
    "receipt-generic",
    "audit-report",
    "fire-event",
    "ledger-entry",
    "ledger-header",
    "ledger-proof",
    "ledger-verify-report",
    "tool-registry",
    "plan",
    "plan-report",
    "registry-check",
    "mine-summary",
    "contract-diff",
    "ledger-head",
}


def test_every_artifact_has_a_schema() -> None:
    assert set(schema_names()) >= EXPECTED


@pytest.mark.parametrize("name", schema_names())
def test_schema_is_valid_draft(name: str) -> None:
    schema = load_schema(name)
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_validate_names_source_and_field() -> None:
    with pytest.raises(SchemaError) as e:
        validate({"version": 1}, "contract-set", source="c.json")
    assert e.value.render().startswith("error[E_SCHEMA_INVALID]: c.json: not a valid contract-set")
