"""The inputs of `contracts report`: each artifact file recognised by its shape, then held to its schema.

The report draws what other commands already wrote; it recomputes nothing. A file is read once, its
kind told from the keys its JSON has (the schemas' required keys, checked in `KINDS` order, so no two
kinds can be confused), then validated against that kind's JSON Schema, so the renderer can trust
every field it reads. A receipts file (`contracts check -o`) is JSON Lines: each line a v2 receipt.
Anything else is one `ReportError` naming the file (and, for JSON that does not parse, the line).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from output_contracts.errors import ReportError, reading
from output_contracts.schemas import validate


class Kind(StrEnum):
    """An artifact kind `contracts report` draws; the value is its schema's name."""

    AUDIT = "audit-report"
    CONTRACTS = "contract-set"
    MINE = "mine-summary"
    REPAIR = "repair-score"
    DIFF = "contract-diff"
    LEDGER = "ledger-head"
    RECEIPTS = "receipt-v2"


#: How each kind is told from the others: keys its JSON object must all have. Checked in this order.
KINDS: tuple[tuple[Kind, frozenset[str]], ...] = (
    (Kind.AUDIT, frozenset({"fire_rate", "detection", "population", "gates"})),
    (Kind.REPAIR, frozenset({"by_family", "m_object", "abstention", "structural_validity"})),
    (Kind.CONTRACTS, frozenset({"tools", "folds", "params", "version"})),
    (Kind.MINE, frozenset({"uncovered", "by_tool", "by_code", "output"})),
    (Kind.DIFF, frozenset({"added", "removed", "changed", "unchanged"})),
    (Kind.LEDGER, frozenset({"entries", "head", "root"})),
    (Kind.RECEIPTS, frozenset({"call_id", "outcome_contract", "tool_result"})),
)

WHAT = (
    "an audit report (audit --json), a contract set (mine -o), a mine summary (mine --json), a repair "
    "score (repair-score --json), a diff (diff --json), a ledger head (ledger head --json) or receipts "
    "(check -o, encoder v2)"
)


@dataclass(frozen=True)
class Artifact:
    """One input file: its kind, the name it was given as, its bytes' SHA-256 and its parsed JSON (for
    receipts, the list of lines' objects)."""

    kind: Kind
    name: str
    sha256: str
    data: Any


def kind_of(value: Any) -> Kind | None:
    """The kind whose keys `value` (a parsed JSON object) has, or None."""
    if not isinstance(value, Mapping):
        return None
    keys = set(value)
    for kind, needed in KINDS:
        if needed <= keys:
            return kind
    return None


def _json_lines(raw: bytes, name: str) -> list[Any]:
    """The objects of a JSON Lines file (blank lines skipped); a line that does not parse is named."""
    out: list[Any] = []
    for i, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError as e:
            raise ReportError(f"not JSON: {e}", source=name, line=i) from e
    return out


def parse_artifact(raw: bytes, name: str) -> Artifact:
    """Tell the kind of one file's bytes and validate them against its schema."""
    digest = hashlib.sha256(raw).hexdigest()
    if not raw.strip():
        raise ReportError(f"empty file: expected {WHAT}", source=name)
    try:
        value: Any = orjson.loads(raw)
        lines: list[Any] | None = None
    except orjson.JSONDecodeError:
        lines = _json_lines(raw, name)  # a receipts file is one JSON object a line
        value = lines[0]
    kind = kind_of(value)
    if kind is None:
        shape = (
            type(value).__name__
            if not isinstance(value, Mapping)
            else "object with keys " + ", ".join(sorted(value)[:6])
        )
        raise ReportError(f"not an artifact the report knows ({shape}): expected {WHAT}", source=name)
    if kind is Kind.RECEIPTS:
        rows = lines if lines is not None else [value]
        for i, row in enumerate(rows, start=1):
            if kind_of(row) is not Kind.RECEIPTS:
                raise ReportError("not a receipt: every line of a receipts file is one", source=name, line=i)
            validate(row, kind.value, source=f"{name}:{i}")
        return Artifact(kind, name, digest, rows)
    if lines is not None:
        raise ReportError("not JSON: a report input holds one JSON object", source=name, line=1)
    validate(value, kind.value, source=name)
    return Artifact(kind, name, digest, value)


def load_artifact(path: str | os.PathLike[str]) -> Artifact:
    """Read and recognise one artifact file (errors name the file)."""
    name = os.fspath(path)
    with reading(name):
        raw = Path(name).read_bytes()
    return parse_artifact(raw, name)


def load_artifacts(paths: Sequence[str | os.PathLike[str]]) -> list[Artifact]:
    """Every input, in the order given (the order sections appear in)."""
    if not paths:
        raise ReportError(f"no input: pass one or more artifact files, each {WHAT}")
    return [load_artifact(p) for p in paths]


def artifact_of(kind: Kind, name: str, raw: bytes, value: Any) -> Artifact:
    """An artifact made in this process (`audit --html`: the report its `--json` would hold), named as given."""
    return Artifact(kind, name, hashlib.sha256(raw).hexdigest(), value)
