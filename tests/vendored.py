"""Validators for the third-party JSON Schemas vendored in `tests/data/schemas/` (README there: sources,
commits, licences): SARIF 2.1.0 (OASIS), GitHub Action metadata and workflows (SchemaStore). Each is
checked with the validator its `$schema` names and with format checks on, as code scanning would."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import orjson

SCHEMAS = Path(__file__).resolve().parent / "data" / "schemas"


@functools.cache
def validator(name: str) -> Any:
    """A validator of the vendored schema `name` (`sarif-schema-2.1.0.json`, ...), format checks on."""
    schema = orjson.loads((SCHEMAS / name).read_bytes())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def errors(name: str, instance: Any) -> list[str]:
    """Every error of `instance` against the vendored schema `name`, as `path: message` lines."""
    return [
        f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in sorted(validator(name).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    ]


def sarif_errors(log: Any) -> list[str]:
    """Errors of a SARIF log against the official OASIS SARIF 2.1.0 schema."""
    return errors("sarif-schema-2.1.0.json", log)
