"""The JSON Schemas of every artifact, shipped in `output_contracts/schemas/`, and one way to validate.

Validation collects every problem (like bagit's validator) and reports the first few in one error, naming
the file and the JSON Pointer of the offending field. A document is first put to the schema's fast exact
test (`output_contracts.schema_fast`): one it accepts is valid without jsonschema being imported (a
corpus manifest, checked by every command that opens a corpus), and only one it refuses goes to
jsonschema, which finds and words the problems.

`jsonschema` is imported lazily, on the first validation, through `jsonschema_module()`: importing it
pulls in its format checkers, and one of them (`rfc3987_syntax`, for `iri` / `iri-reference`) compiles a
grammar at import, about a second of start-up that commands which validate nothing (`--help`, `rules`)
should not pay. Modules that validate call `jsonschema_module()` inside the function that does and name
jsonschema's types only under `TYPE_CHECKING`; `tests/cli/test_import_cost.py` holds the CLI to that.
`jsonschema_module()` also defers that one grammar until an `iri` format is actually checked, so the
commands that do validate (a contract set, a registry, a manifest) pay ~0.1 s, not ~1 s; every format
checker, `iri` included, behaves exactly as before.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

import orjson

from output_contracts.errors import SchemaError
from output_contracts.schema_fast import Check, compile_schema

if TYPE_CHECKING:
    import jsonschema


def schema_names() -> list[str]:
    """Names (without `.schema.json`) of every shipped schema."""
    root = importlib.resources.files("output_contracts") / "schemas"
    return sorted(
        p.name.removesuffix(".schema.json") for p in root.iterdir() if p.name.endswith(".schema.json")
    )


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Load `output_contracts/schemas/<name>.schema.json`."""
    ref = importlib.resources.files("output_contracts") / "schemas" / f"{name}.schema.json"
    data: dict[str, Any] = orjson.loads(ref.read_bytes())
    return data


def _iri_syntax(rule: str, value: str) -> bool:
    """`rfc3987_syntax.is_valid_syntax`, imported on the first call (its import compiles a grammar)."""
    from rfc3987_syntax import is_valid_syntax

    ok: bool = is_valid_syntax(rule, value)
    return ok


@functools.cache
def jsonschema_module() -> types.ModuleType:
    """The `jsonschema` module, imported on first use, with its `iri` checker's grammar deferred.

    jsonschema registers its `iri` / `iri-reference` format checkers at import when `rfc3987_syntax` is
    installed, and that import compiles a lark grammar (~0.8 s). While jsonschema is imported here, the
    name resolves to a stand-in whose `is_valid_syntax` imports the real package on its first call; the
    stand-in is then removed, so any other import of `rfc3987_syntax` gets the real one. Nothing changes
    when jsonschema was already imported, when `rfc3987_syntax` is not installed, or when jsonschema
    prefers the `rfc3987` package (then it never imports `rfc3987_syntax`).
    """
    if (
        "jsonschema" not in sys.modules
        and "rfc3987_syntax" not in sys.modules
        and importlib.util.find_spec("rfc3987_syntax") is not None
    ):
        stand_in = types.ModuleType("rfc3987_syntax")
        stand_in.is_valid_syntax = _iri_syntax  # type: ignore[attr-defined]
        sys.modules["rfc3987_syntax"] = stand_in
        try:
            import jsonschema
        finally:
            if sys.modules.get("rfc3987_syntax") is stand_in:
                del sys.modules["rfc3987_syntax"]
    import jsonschema

    return jsonschema


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    """The validator of a packaged schema. The schema itself is not checked against its metaschema
    here: the packaged schemas are fixed files, checked once in the tests (`tests/output_contracts/test_schemas.py`),
    and checking one in every process cost about 0.05 CPU-s (a tenth of a `contracts mine` of a
    3,000-call corpus, where the corpus manifest is the only document validated)."""
    jsonschema = jsonschema_module()
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@functools.cache
def fast_check(name: str) -> Check | None:
    """The fast exact test of a packaged schema (`output_contracts.schema_fast`), or None."""
    return compile_schema(load_schema(name))


def validation_errors(instance: Any, name: str) -> list[jsonschema.ValidationError]:
    """jsonschema's errors of `instance` against schema `name`. A document the fast test accepts has
    none (jsonschema is not even imported); any other goes to jsonschema, which finds and words its
    problems."""
    fast = fast_check(name)
    if fast is not None and fast(instance):
        return []
    return list(_validator(name).iter_errors(instance))


def schema_errors(instance: Any, name: str) -> list[str]:
    """Every validation problem of `instance` against schema `name`, as `pointer: message` lines, sorted
    (`validation_errors`)."""
    errs = []
    for e in validation_errors(instance, name):
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
