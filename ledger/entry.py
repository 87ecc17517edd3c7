"""One ledger entry: its canonical line, its hash, and the strict parser `verify` and `open` share.

An entry is the JSON object `{"body", "hash", "kind", "prev", "seq"}` written as one line of canonical
JSON (`output_contracts.jsonutil.canonical_json`: sorted keys, no whitespace, UTF-8, shortest round-trip floats)
followed by LF. `hash` is the SHA-256 of the canonical JSON of the same object without `hash`; `prev` is
the previous entry's hash, or 64 zeros (`GENESIS`) for entry 0. Because canonical JSON escapes control
characters inside strings, an LF byte can only end a line, so a line is exactly one entry.

The parser insists that a line is byte-for-byte the canonical form of the entry it decodes to: an edit
that keeps the JSON value (an added space, a reordered key, `1.0` written `1.00`) is still an edit.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from output_contracts.errors import LedgerError
from output_contracts.jsonutil import canonical_json

GENESIS = "0" * 64
"""`prev` of entry 0, and the head of a ledger with no entries."""

RESERVED_PREFIX = "ledger."
"""Entry kinds the ledger writes itself (`ledger.repair`); callers may not append them."""

KIND_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:/-]{0,127}$")
_HEX64 = re.compile(rb"^[0-9a-f]{64}$")


def is_hash(value: object) -> TypeGuard[str]:
    """A lowercase hex SHA-256, the form of every hash and genesis in a ledger."""
    return isinstance(value, str) and _HEX64.match(value.encode()) is not None


_KEYS = frozenset(("body", "hash", "kind", "prev", "seq"))


@dataclass(frozen=True)
class Entry:
    """A ledger entry as read back or just appended. `hash` and `prev` are lowercase hex SHA-256."""

    seq: int
    prev: str
    hash: str
    kind: str
    body: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The entry as the JSON object stored on its line."""
        return {"body": self.body, "hash": self.hash, "kind": self.kind, "prev": self.prev, "seq": self.seq}

    def line(self) -> bytes:
        """The exact bytes of this entry's line in `ledger.jsonl`, LF included."""
        return encode_entry(self.seq, self.prev, self.kind, canonical_json(self.body))[1]


_GOOD_KINDS: set[str] = set()


def check_kind(kind: object, *, allow_reserved: bool = False) -> str:
    """Refuse kinds that are not short identifiers (`audit.fire`, `repair/step`); `ledger.*` is reserved."""
    if isinstance(kind, str) and kind in _GOOD_KINDS:
        return kind
    if not isinstance(kind, str) or not KIND_RE.match(kind):
        raise LedgerError(
            f"entry kind {kind!r} is not a short identifier (letters, digits and _ . : / -, "
            "starting with a letter, at most 128 characters)",
            field="kind",
        )
    if kind.startswith(RESERVED_PREFIX) and not allow_reserved:
        raise LedgerError(f"entry kind {kind!r} is reserved for the ledger's own events", field="kind")
    if not kind.startswith(RESERVED_PREFIX) and len(_GOOD_KINDS) < 4096:
        _GOOD_KINDS.add(kind)
    return kind


def encode_body(body: object) -> bytes:
    """Canonical bytes of an entry body, which must be a JSON object with finite numbers."""
    if not isinstance(body, dict):
        raise LedgerError(f"entry body must be a JSON object, not {type(body).__name__}", field="body")
    try:
        return canonical_json(body)
    except (TypeError, ValueError, orjson.JSONEncodeError) as e:
        raise LedgerError(f"entry body is not JSON: {e}", field="body") from None


def encode_entry(seq: int, prev: str, kind: str, body_json: bytes) -> tuple[str, bytes]:
    """`(hash, line)` for an entry, assembled from canonical pieces in sorted-key order.

    Equal to hashing `canonical_json({"body", "kind", "prev", "seq"})` and writing
    `canonical_json({... , "hash"}) + b"\\n"` (a test checks this), without encoding the body twice.
    """
    kind_json = orjson.dumps(kind)  # a str: orjson's form is the canonical one
    tail = b',"kind":' + kind_json + b',"prev":"' + prev.encode() + b'","seq":' + str(seq).encode() + b"}"
    digest = hashlib.sha256(b'{"body":' + body_json + tail).hexdigest()
    line = b'{"body":' + body_json + b',"hash":"' + digest.encode() + b'"' + tail + b"\n"
    return digest, line


_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def loads_exact(data: bytes) -> Any:
    """Parse JSON keeping integers exact: orjson turns integers beyond 64 bits into floats, json does not.

    orjson is used unless the text holds a run of 19+ digits (the only way to spell such an integer).
    """
    if _LONG_DIGITS.search(data) is None:
        return orjson.loads(data)
    return json.loads(data, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_line(line: bytes) -> tuple[Entry | None, str]:
    """Decode one line (without its LF) into a self-consistent Entry, or `(None, why not)`.

    Self-consistent means: a JSON object with exactly the five keys, the right types, byte-for-byte
    canonical, and a `hash` equal to the SHA-256 of the entry without `hash`. Chain links (`seq`, `prev`)
    are the caller's business.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        return None, f"not valid JSON ({e.msg if hasattr(e, 'msg') else e})"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    if obj.keys() != _KEYS:
        missing = sorted(_KEYS - obj.keys())
        extra = sorted(obj.keys() - _KEYS)
        return None, f"wrong fields (missing {missing}, unexpected {extra})"
    seq, prev, digest, kind, body = obj["seq"], obj["prev"], obj["hash"], obj["kind"], obj["body"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        return None, "field 'seq' is not a non-negative integer"
    if not is_hash(prev):
        return None, "field 'prev' is not 64 lowercase hex digits"
    if not is_hash(digest):
        return None, "field 'hash' is not 64 lowercase hex digits"
    if not isinstance(kind, str) or not KIND_RE.match(kind):
        return None, "field 'kind' is not a valid kind"
    if not isinstance(body, dict):
        return None, "field 'body' is not a JSON object"
    if orjson.dumps(obj, option=orjson.OPT_SORT_KEYS) == line:
        # Fast path: the line is canonical, so the hashed bytes are the line minus its top-level
        # `,"hash":"<64 hex>"` (74 bytes). The last match is the top-level one: `kind`, `prev` and `seq`
        # follow it, and inside JSON strings a quote is always escaped, so no string can hold the pattern.
        cut = line.rfind(b',"hash":"')
        expected_hash = hashlib.sha256(line[:cut] + line[cut + 74 :]).hexdigest()
    else:
        # orjson reads integers beyond 64 bits as floats; re-read exactly before calling it an edit.
        try:
            body = loads_exact(line)["body"]
            body_json = canonical_json(body)
        except ValueError:
            return None, "not valid JSON"
        expected_hash, expected_line = encode_entry(seq, prev, kind, body_json)
        if expected_line[:-1] != line:
            return None, "not in canonical form (bytes differ from the canonical JSON of its value)"
    if expected_hash != digest:
        return (
            None,
            f"content does not match its hash (recomputed {expected_hash[:12]}…, stored {digest[:12]}…)",
        )
    return Entry(seq, prev, digest, kind, body), ""
