"""`split-audit`: prove that two case sets (train, test) share nothing a policy could memorise.

Fingerprint kinds (`KINDS`), each a set of strings per case set; any string in both sets is an overlap:

- `case_id` — the case id itself.
- `candidate` — sha256 of the candidate's canonical JSON.
- `target` — sha256 of the target object's canonical JSON (needs the targets files).
- `schema` — sha256 of the full parameter schema.
- `schema_shape` — sha256 of the schema with annotations (`description`, `title`, `examples`, `default`,
  `$comment`) removed: two tools that differ only in wording have the same shape.
- `target_paths` — the sequence of pointers the canonical patch touches, e.g. `["/unit"]` (targets).
- `op_sequence` — the sequence of (op, from, path) of the canonical patch, values left out (targets).
- `error_template` — the verifier report of the candidate as (code, pointer) pairs with array indexes
  replaced by `*`: pointer-aware, value-free.
- `tool` — the tool name.
- `normalized_shape` — sha256 of the schema's structure with every name left out: per object, the sorted
  multiset of (required?, normalized shape of the property); per array, the shape of its items; per
  scalar, its type, format and number of enum members. Two tools that differ only by their parameters'
  names (or order, or descriptions) share it.
- `semantic_cluster` — sha256 of (normalized shape, semantically normalized target): numbers by value
  (`1` = `1.0`), strings case-folded with whitespace collapsed, object keys dropped for the same sorted
  order as the shape, arrays of scalars sorted. Two calls that say the same thing to tools of the same
  structure fall in one cluster (targets).
- `candidate_pool` — sha256 of the sorted pool of values the schema itself offers for filling a value
  (every `enum` member and `default`, at any depth); schemas offering none have no pool.

Kinds that need targets are reported as skipped when a targets file is not given. The same functions
serve `repair-cases --disjoint-from`, so a second case set can be drawn to share nothing with a first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.jsonutil import json_sha256
from output_contracts.repair.cases import Case, Target
from output_contracts.repair.validator import verify

KINDS = (
    "case_id",
    "candidate",
    "target",
    "schema",
    "schema_shape",
    "target_paths",
    "op_sequence",
    "error_template",
    "tool",
    "normalized_shape",
    "semantic_cluster",
    "candidate_pool",
)
TARGET_KINDS = ("target", "target_paths", "op_sequence", "semantic_cluster")
_ANNOTATIONS = frozenset(("description", "title", "examples", "default", "$comment"))
_INDEX = re.compile(r"/(0|[1-9][0-9]*)(?=/|$)")


def schema_shape(schema: Any) -> Any:
    """The schema without annotation keywords (recursively): what validation depends on."""
    if isinstance(schema, Mapping):
        out = {}
        for k, v in schema.items():
            if k in _ANNOTATIONS:
                continue
            if k in (
                "properties",
                "patternProperties",
                "$defs",
                "definitions",
                "dependentSchemas",
            ) and isinstance(v, Mapping):
                out[k] = {name: schema_shape(sub) for name, sub in v.items()}
            else:
                out[k] = schema_shape(v)
        return out
    if isinstance(schema, list):
        return [schema_shape(v) for v in schema]
    return schema


def _types(node: Mapping[str, Any]) -> list[str]:
    t = node.get("type")
    return sorted(
        [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []
    )


def normalized_shape(schema: Any) -> Any:
    """The schema's structure without names (see `normalized_shape` in the module docstring)."""
    if not isinstance(schema, Mapping):
        return schema if isinstance(schema, bool) else None
    props = schema.get("properties")
    req_raw = schema.get("required")
    req: list[Any] = req_raw if isinstance(req_raw, list) else []
    out: dict[str, Any] = {"type": _types(schema)}
    if isinstance(props, Mapping):
        out["properties"] = sorted(
            ([name in req, normalized_shape(sub)] for name, sub in props.items()), key=lambda x: repr(x)
        )
        out["closed"] = schema.get("additionalProperties") is False
    if isinstance(schema.get("items"), Mapping):
        out["items"] = normalized_shape(schema["items"])
    if "format" in schema:
        out["format"] = schema["format"]
    if isinstance(schema.get("enum"), list):
        out["enum"] = len(schema["enum"])
    for k in ("not", "anyOf", "oneOf", "allOf"):
        if k in schema:
            out[k] = True
    return out


def _semantic(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return " ".join(value.casefold().split())
    if isinstance(value, list):
        items = [_semantic(v) for v in value]
        if all(not isinstance(v, dict | list) for v in items):
            return sorted(items, key=repr)
        return items
    if isinstance(value, Mapping):
        return sorted((_semantic(v) for v in value.values()), key=repr)
    return value


def semantic_key(case: Case, target: Target) -> Any:
    """The semantic-equivalence cluster of a case: normalized schema shape and normalized target."""
    return [normalized_shape(case.schema), _semantic(target.target)]


def candidate_pool(schema: Any) -> list[str]:
    """The sorted pool of fill values a schema offers (`enum` members and `default`s at any depth)."""
    pool: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if isinstance(node.get("enum"), list):
                pool.update(json_sha256(v) for v in node["enum"])
            if "default" in node:
                pool.add(json_sha256(node["default"]))
            for k, v in node.items():
                if k not in ("enum", "default", "const", "examples"):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return sorted(pool)


def error_template(case: Case) -> list[list[str]]:
    """The candidate's verifier errors as (code, pointer with `*` for indexes), sorted and deduplicated."""
    errs = verify(case.candidate, case.schema, case.cross_field)
    return [list(t) for t in sorted({(e.code, _INDEX.sub("/*", e.pointer)) for e in errs})]


def fingerprints(case: Case, target: Target | None) -> dict[str, str]:
    """Every fingerprint of one case (target kinds only when `target` is given)."""
    fp = {
        "case_id": case.case_id,
        "candidate": json_sha256(case.candidate),
        "schema": json_sha256(case.schema),
        "schema_shape": json_sha256(schema_shape(case.schema)),
        "error_template": json_sha256(error_template(case)),
        "tool": case.tool,
        "normalized_shape": json_sha256(normalized_shape(case.schema)),
    }
    pool = candidate_pool(case.schema)
    if pool:
        fp["candidate_pool"] = json_sha256(pool)
    if target is not None:
        fp["semantic_cluster"] = json_sha256(semantic_key(case, target))
        patch = target.canonical_patch or []
        fp["target"] = json_sha256(target.target)
        fp["target_paths"] = json_sha256([o.get("path") for o in patch])
        fp["op_sequence"] = json_sha256([[o.get("op"), o.get("from"), o.get("path")] for o in patch])
    return fp


@dataclass(frozen=True)
class Overlap:
    """One shared fingerprint: its kind, value, and the case ids on each side."""

    kind: str
    value: str
    train: tuple[str, ...]
    test: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "train": list(self.train), "test": list(self.test)}


@dataclass(frozen=True)
class AuditReport:
    """Overlaps per kind (sorted), the kinds checked and skipped, and the sizes of both sets."""

    overlaps: tuple[Overlap, ...]
    checked: tuple[str, ...]
    skipped: tuple[str, ...]
    train_cases: int
    test_cases: int

    @property
    def clean(self) -> bool:
        return not self.overlaps

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(self.checked, 0)
        for o in self.overlaps:
            out[o.kind] += 1
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "train_cases": self.train_cases,
            "test_cases": self.test_cases,
            "checked": list(self.checked),
            "skipped": list(self.skipped),
            "counts": self.counts(),
            "overlaps": [o.as_json() for o in self.overlaps],
        }


def index(cases: Iterable[Case], targets: Mapping[str, Target] | None) -> dict[str, dict[str, list[str]]]:
    """kind -> fingerprint -> case ids."""
    out: dict[str, dict[str, list[str]]] = {k: {} for k in KINDS}
    for c in cases:
        t = targets.get(c.case_id) if targets is not None else None
        for kind, value in fingerprints(c, t).items():
            out[kind].setdefault(value, []).append(c.case_id)
    return out


def split_audit(
    train: Sequence[Case],
    test: Sequence[Case],
    train_targets: Mapping[str, Target] | None = None,
    test_targets: Mapping[str, Target] | None = None,
) -> AuditReport:
    """Compare every fingerprint kind of `train` and `test`; target kinds need both targets maps."""
    with_targets = train_targets is not None and test_targets is not None
    a = index(train, train_targets if with_targets else None)
    b = index(test, test_targets if with_targets else None)
    checked = tuple(k for k in KINDS if with_targets or k not in TARGET_KINDS)
    skipped = tuple(k for k in KINDS if k not in checked)
    overlaps = []
    for kind in checked:
        for value in sorted(set(a[kind]) & set(b[kind])):
            overlaps.append(
                Overlap(kind, value, tuple(sorted(a[kind][value])), tuple(sorted(b[kind][value])))
            )
    return AuditReport(tuple(overlaps), checked, skipped, len(train), len(test))


def excluder(cases: Sequence[Case], targets: Mapping[str, Target] | None) -> Any:
    """A `build_cases(exclude=...)` callback dropping any case that shares a fingerprint with `cases`."""
    seen = index(cases, targets)
    use_targets = targets is not None

    def exclude(case: Case, target: Target) -> bool:
        fp = fingerprints(case, target if use_targets else None)
        return any(v in seen[k] for k, v in fp.items())

    return exclude
