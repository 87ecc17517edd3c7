"""The fail-closed verifier of repair candidates: JSON Schema 2020-12 with formats, plus cross-field checks.

It returns typed errors `{code, pointer, detail}` (DESIGN §6), sorted, so a report is a value that can be
hashed into the ledger. Fail-closed means no path through this module can turn a problem into a pass:
an invalid schema, an unknown cross-field kind, a format checker or `$ref` that raises — every one of them
becomes an error in the report (`E_VALIDATOR`), never an empty report.

Pointers are *pointer-aware*: a missing required property is reported at the property's own pointer
(`/unit`), not at its parent object as jsonschema does, so a policy can act on it directly; an unexpected
property is reported at its own pointer too.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from output_contracts.jsonutil import canonical_str
from output_contracts.repair.patch import PatchFault, format_pointer, json_equal, parse_pointer, resolve
from output_contracts.schemas import jsonschema_module

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

#: jsonschema keyword -> stable error code.
KEYWORD_CODES: dict[str, str] = {
    "required": "E_REQUIRED",
    "type": "E_TYPE",
    "enum": "E_ENUM",
    "const": "E_ENUM",
    "format": "E_FORMAT",
    "additionalProperties": "E_EXTRA",
    "unevaluatedProperties": "E_EXTRA",
    "minimum": "E_RANGE",
    "maximum": "E_RANGE",
    "exclusiveMinimum": "E_RANGE",
    "exclusiveMaximum": "E_RANGE",
    "multipleOf": "E_RANGE",
    "minLength": "E_LENGTH",
    "maxLength": "E_LENGTH",
    "minItems": "E_LENGTH",
    "maxItems": "E_LENGTH",
    "minProperties": "E_LENGTH",
    "maxProperties": "E_LENGTH",
    "pattern": "E_PATTERN",
}
#: Every code the verifier can emit (documented in docs/repair.md).
CODES = (
    *sorted(set(KEYWORD_CODES.values())),
    "E_SCHEMA",
    "E_CROSS",
    "E_VALIDATOR",
)


@dataclass(frozen=True, order=True)
class VerifierError:
    """One typed verifier error. Ordered by (pointer, code, detail) so reports sort stably."""

    pointer: str
    code: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "pointer": self.pointer, "detail": self.detail}


@functools.lru_cache(maxsize=512)
def _compiled(schema_text: str) -> Draft202012Validator:
    Draft202012Validator = jsonschema_module().Draft202012Validator  # imported on first use

    schema = orjson.loads(schema_text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _schema_errors(instance: Any, schema: Mapping[str, Any]) -> list[VerifierError]:
    validator = _compiled(canonical_str(schema))
    out: list[VerifierError] = []
    for e in validator.iter_errors(instance):
        base = list(e.absolute_path)
        code = KEYWORD_CODES.get(str(e.validator), "E_SCHEMA")
        if e.validator == "required" and isinstance(e.instance, dict):
            missing = [r for r in e.validator_value if r not in e.instance]
            for name in missing:
                out.append(
                    VerifierError(
                        format_pointer([*base, name]), code, f"required property {name!r} is missing"
                    )
                )
            continue
        if e.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(e.instance, dict):
            props = e.schema.get("properties", {}) if isinstance(e.schema, dict) else {}
            patterns = e.schema.get("patternProperties", {}) if isinstance(e.schema, dict) else {}
            extra = [k for k in e.instance if k not in props and not any(re.search(p, k) for p in patterns)]
            for name in extra or [""]:
                ptr = format_pointer([*base, name]) if name else format_pointer(base)
                out.append(VerifierError(ptr, code, f"unexpected property {name!r}" if name else e.message))
            continue
        out.append(VerifierError(format_pointer(base), code, e.message))
    return out


def _get(instance: Any, pointer: str) -> tuple[bool, Any]:
    tokens = parse_pointer(pointer)  # a malformed pointer raises: the check is broken, not "absent"
    try:
        return True, resolve(instance, tokens)
    except PatchFault:
        return False, None


def _comparable(a: Any, b: Any) -> bool:
    nums = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    return nums or (isinstance(a, str) and isinstance(b, str))


def cross_field_errors(instance: Any, checks: Sequence[Mapping[str, Any]]) -> list[VerifierError]:
    """Errors of the cross-field checks (see docs/repair.md for each kind).

    - `requires`: `{"kind": "requires", "if": P, "then": [Q...]}` — when P exists, every Q exists.
    - `exclusive`: `{"kind": "exclusive", "paths": [P...]}` — at most one of them exists.
    - `equal`: `{"kind": "equal", "paths": [P, Q]}` — both exist and are equal JSON.
    - `less_equal`: `{"kind": "less_equal", "paths": [P, Q]}` — when both exist, P <= Q (numbers, or
      strings such as ISO dates compared as text). The error is reported at Q, the later field.
    An unknown kind or a malformed check is an error, not a pass.
    """
    out: list[VerifierError] = []
    for i, c in enumerate(checks):
        kind = c.get("kind") if isinstance(c, Mapping) else None
        try:
            if kind == "requires":
                has, _ = _get(instance, c["if"])
                if has:
                    for q in c["then"]:
                        if not _get(instance, q)[0]:
                            out.append(
                                VerifierError(q, "E_CROSS", f"{q} is required when {c['if']} is present")
                            )
            elif kind == "exclusive":
                present = [p for p in c["paths"] if _get(instance, p)[0]]
                if len(present) > 1:
                    out.append(
                        VerifierError(
                            present[1], "E_CROSS", f"at most one of {', '.join(c['paths'])} may be set"
                        )
                    )
            elif kind == "equal":
                p, q = c["paths"]
                (hp, vp), (hq, vq) = _get(instance, p), _get(instance, q)
                if not (hp and hq and json_equal(vp, vq)):
                    out.append(VerifierError(q, "E_CROSS", f"{q} must equal {p}"))
            elif kind == "less_equal":
                p, q = c["paths"]
                (hp, vp), (hq, vq) = _get(instance, p), _get(instance, q)
                if hp and hq and (not _comparable(vp, vq) or not vp <= vq):
                    out.append(VerifierError(q, "E_CROSS", f"{q} must be >= {p}"))
            else:
                out.append(VerifierError("", "E_VALIDATOR", f"cross_field[{i}]: unknown kind {kind!r}"))
        except Exception as e:  # fail closed: a broken check is a failure, never a pass
            out.append(VerifierError("", "E_VALIDATOR", f"cross_field[{i}]: {type(e).__name__}: {e}"))
    return out


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _finite(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return value is None or isinstance(value, bool | int | str)


def verify(
    instance: Any, schema: Mapping[str, Any], cross_field: Sequence[Mapping[str, Any]] = ()
) -> tuple[VerifierError, ...]:
    """Every error of `instance`; an empty tuple is the only "valid". Never raises."""
    jsonschema = jsonschema_module()  # imported on first use (see output_contracts/schemas.py)

    try:
        if not _finite(instance):
            return (
                VerifierError("", "E_VALIDATOR", "instance is not JSON (non-finite number or foreign type)"),
            )
        errs = _schema_errors(instance, schema) + cross_field_errors(instance, cross_field)
    except jsonschema.SchemaError as e:
        return (VerifierError("", "E_VALIDATOR", f"invalid schema: {e.message}"),)
    except Exception as e:  # fail closed
        return (VerifierError("", "E_VALIDATOR", f"{type(e).__name__}: {e}"),)
    return tuple(sorted(set(errs)))


def report_json(errors: Sequence[VerifierError]) -> list[dict[str, str]]:
    """A report as JSON values (the form stored in the ledger and shown to policies)."""
    return [e.as_json() for e in errors]
