"""The JSON Schemas of every artifact, shipped in `contracts/schemas/`, and one way to validate.

Validation collects every problem (like bagit's validator) and reports the first few in one error, naming
the file and the JSON Pointer of the offending field.
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any

import jsonschema
import orjson

from contracts.errors import SchemaError


def schema_names() -> list[str]:
    """Names (without `.schema.json`) of every shipped schema."""
    root = importlib.resources.files("contracts") / "schemas"
    return sorted(
        p.name.removesuffix(".schema.json") for p in root.iterdir() if p.name.endswith(".schema.json")
    )


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Load `contracts/schemas/<name>.schema.json`."""
    ref = importlib.resources.files("contracts") / "schemas" / f"{name}.schema.json"
    data: dict[str, Any] = orjson.loads(ref.read_bytes())
    return data


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_errors(instance: Any, name: str) -> list[str]:
    """Every validation problem of `instance` against schema `name`, as `pointer: message` lines, sorted."""
    errs = []
    for e in _validator(name).iter_errors(instance):
        pointer = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in e.absolute_path)
        errs.append(f"{pointer if pointer != '/' else '(root)'}: {e.message}")
    return sorted(errs)


def validate(instance: Any, name: str, *, source: str | None = None) -> None:
    """Raise `SchemaError` naming `source` and the first failing field if `instance` is invalid."""
    errs = schema_errors(instance, name)
    if errs:
        more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
        field = errs[0].split(":", 1)[0]
        raise SchemaError(f"not a valid {name}: {errs[0]}{more}", source=source, field=field)
