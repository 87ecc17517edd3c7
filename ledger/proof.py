"""Inclusion proofs: show that one entry belongs to a ledger with a published Merkle root.

`prove(dir, seq)` returns a self-contained JSON document: the entry itself, its leaf index, the tree size,
the RFC 6962 audit path and the root it leads to. `check_proof(doc, root)` recomputes the entry's hash
from its content (so the entry, not only a hash, is proven), walks the audit path (RFC 9162 §2.1.3.2) and
compares the result with `root` — the anchor the checker trusts, taken from somewhere other than the
proof (a commit, a report, a CI artifact). Without an anchor a proof only shows it is self-consistent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from output_contracts.errors import LedgerError
from output_contracts.jsonutil import canonical_json
from output_contracts.ledger.entry import Entry, parse_line
from output_contracts.ledger.header import ENTRIES_NAME, HEADER_NAME, read_header
from output_contracts.ledger.merkle import inclusion_proof, merkle_root, root_from_inclusion
from output_contracts.ledger.scan import scan_entries
from output_contracts.schemas import jsonschema_module, load_schema

PROOF_FORMAT = "contracts.ledger.proof"

PROOF_SCHEMA: dict[str, Any] = load_schema(
    "ledger-proof"
)  # output_contracts/schemas/ledger-proof.schema.json
"""JSON Schema of a proof document (kept here until it moves to output_contracts/schemas/)."""


def prove(dir: str | os.PathLike[str], seq: int) -> dict[str, Any]:
    """The inclusion proof of entry `seq` in the ledger in `dir` (its whole chain must read intact).

    For a frozen ledger the root is the one its header records (checked equal to the recomputed one);
    for an unfrozen ledger it is the root of the entries so far, and says so (`frozen: false`).
    """
    directory = Path(dir)
    if not directory.is_dir():
        raise LedgerError("no such ledger folder", source=str(directory))
    path = directory / ENTRIES_NAME
    if not path.is_file():
        raise LedgerError("not a ledger: ledger.jsonl is missing", source=str(directory))
    scan = scan_entries(path)  # hashes only: a proof of one entry must not hold every entry in memory
    if scan.problems:
        first = scan.problems[0]
        raise LedgerError(f"{first.code}: {first.detail}", source=str(path))
    n = len(scan.hashes)
    if not 0 <= seq < n:
        raise LedgerError(f"no entry {seq}: the ledger has {n} entries", source=str(directory), field="seq")
    entry = _entry_at(path, seq)
    root = merkle_root(scan.hashes)
    header = read_header(directory)
    frozen = header.get("frozen") is True
    if frozen and (header.get("root") != root or header.get("entries") != n):
        raise LedgerError(
            "the header's frozen root or count does not match the entries; run `contracts ledger verify`",
            source=str(directory / HEADER_NAME),
            field="root",
        )
    return {
        "format": PROOF_FORMAT,
        "version": 1,
        "seq": seq,
        "tree_size": n,
        "entry": entry.to_dict(),
        "audit_path": inclusion_proof(scan.hashes, seq),
        "root": root,
        "head": scan.head,
        "frozen": frozen,
    }


def _entry_at(path: Path, seq: int) -> Entry:
    """Line `seq` of an intact ledger (checked by the caller), parsed."""
    with path.open("rb") as fh:
        for i, raw in enumerate(fh):
            if i == seq:
                entry, why = parse_line(raw[:-1])
                if entry is None:  # the file changed under us
                    raise LedgerError(f"entry {seq} {why}", source=str(path), line=seq + 1)
                return entry
    raise LedgerError(f"no entry {seq}", source=str(path))


@dataclass(frozen=True)
class ProofCheck:
    """Outcome of `check_proof`: `ok`, the root the path leads to, whether an anchor was given, and why not."""

    ok: bool
    computed_root: str | None
    anchored: bool
    problems: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "computed_root": self.computed_root,
            "anchored": self.anchored,
            "problems": list(self.problems),
        }


def check_proof(
    doc: Any, root: str | None = None, *, size: int | None = None, source: str | None = None
) -> ProofCheck:
    """Check a proof document against `root` (or, without an anchor, against the root it states).

    An audit path does not by itself fix the tree size (a path for leaf 0 of 3 leaves also fits a claimed
    size of 4), so an anchor is best the pair (root, entries) a frozen header records: pass `size` to
    check the proof's `tree_size` too. The entry's own `seq` must equal the leaf index, which ties the
    claimed position to the hashed content.

    Raises LedgerError when `doc` is not a proof document at all; a proof that does not hold is a
    `ProofCheck` with `ok=False` and the reasons.
    """
    jsonschema = jsonschema_module()  # imported on first use (see output_contracts/schemas.py)

    errors = sorted(
        jsonschema.Draft202012Validator(PROOF_SCHEMA).iter_errors(doc), key=lambda e: list(e.absolute_path)
    )
    if errors:
        e = errors[0]
        pointer = "/" + "/".join(str(p) for p in e.absolute_path)
        raise LedgerError(f"not a ledger proof: {pointer}: {e.message}", source=source, field=pointer)
    problems: list[str] = []
    entry = doc["entry"]
    parsed, why = parse_line(canonical_json(entry))
    if parsed is None:
        problems.append(f"the entry does not match its hash: {why}")
    if entry["seq"] != doc["seq"]:
        problems.append(f"the entry is seq {entry['seq']}, the proof is for leaf {doc['seq']}")
    computed = root_from_inclusion(entry["hash"], doc["seq"], doc["tree_size"], doc["audit_path"])
    if computed is None:
        problems.append(
            f"the audit path ({len(doc['audit_path'])} hashes) does not fit leaf {doc['seq']} of a "
            f"tree of {doc['tree_size']}"
        )
    anchor = (root if root is not None else doc["root"]).lower()
    if computed is not None and computed != anchor:
        which = "the anchor root" if root is not None else "the root the proof states"
        problems.append(f"the path leads to root {computed}, not {which} {anchor}")
    if root is not None and doc["root"] != root.lower() and computed == root.lower():
        problems.append(f"the proof states root {doc['root']}, not the anchor")
    if size is not None and doc["tree_size"] != size:
        problems.append(f"the proof is for a tree of {doc['tree_size']} entries, the anchor says {size}")
    return ProofCheck(
        ok=not problems, computed_root=computed, anchored=root is not None, problems=tuple(problems)
    )
