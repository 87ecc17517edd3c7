"""`verify`: recompute every hash, the chain, the header's bindings and the manifest, and report.

A report is data (`VerifyReport`), not an exception: problems are collected, then ordered so the first
one is the most specific cause — missing files, then entry problems in file order, then header problems,
then manifest problems, then `UNFROZEN` (with `require_frozen`), then anchor mismatches (`HEAD_MISMATCH`,
`ROOT_MISMATCH`). Only "this is not a ledger folder at all" raises (LedgerError, exit 2 in the CLI).

When the header's frozen count/head/root disagree with `ledger.jsonl`, the manifest tells which file
changed: if `ledger.jsonl` still matches it, the header was edited (`HEADER`); otherwise entries were
removed (`REMOVED`) or added after the freeze (`EXTRA_BYTES`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from output_contracts.errors import LedgerError
from output_contracts.jsonutil import file_sha256, json_sha256, loads
from output_contracts.ledger.entry import GENESIS, Entry
from output_contracts.ledger.header import ENTRIES_NAME, HEADER_NAME, binding
from output_contracts.ledger.lock import LOCK_NAME
from output_contracts.ledger.manifest import MANIFEST_NAME, ledger_files, parse_manifest
from output_contracts.ledger.merkle import merkle_root_bytes
from output_contracts.ledger.scan import UNKNOWN_GENESIS, Problem, scan_entries
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.schemas import load_schema, schema_errors

_RANK = {
    "MISSING_FILE": 0,
    "EDITED": 1,
    "REORDERED": 1,
    "REMOVED": 1,
    "DUPLICATED": 1,
    "TRUNCATED_TAIL": 1,
    "EXTRA_BYTES": 1,
    "HEADER": 2,
    "MANIFEST_MISMATCH": 3,
    "EXTRA_FILE": 3,
    "UNFROZEN": 4,
    "HEAD_MISMATCH": 5,
    "ROOT_MISMATCH": 5,
}
CODES = tuple(_RANK)

REPORT_SCHEMA: dict[str, Any] = load_schema(
    "ledger-verify-report"
)  # output_contracts/schemas/ledger-verify-report.schema.json
"""JSON Schema of `VerifyReport.to_dict()` (kept here until it moves to output_contracts/schemas/)."""


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of `verify`. `head`/`root` are recomputed from the entries (None if the chain is broken);
    `problems` come in the order described in the module docstring, so `problems[0]` is the one to name."""

    ok: bool
    entries: int
    head: str | None
    root: str | None
    frozen: bool
    problems: tuple[Problem, ...]

    @property
    def first(self) -> Problem | None:
        """The problem to name, or None when the ledger verifies."""
        return self.problems[0] if self.problems else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what `contracts ledger verify --json` prints)."""
        return {
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "root": self.root,
            "frozen": self.frozen,
            "problems": [p.to_dict() for p in self.problems],
        }


def verify(
    dir: str | os.PathLike[str],
    require_frozen: bool = False,
    head: str | None = None,
    root: str | None = None,
    *,
    progress: Progress = NULL_PROGRESS,
) -> VerifyReport:
    """Check the ledger in `dir` (see module docstring). `head`/`root` are anchors recorded elsewhere."""
    directory = Path(dir)
    if not directory.is_dir():
        raise LedgerError("no such ledger folder", source=str(directory))
    present = {n: (directory / n).is_file() for n in (HEADER_NAME, ENTRIES_NAME, MANIFEST_NAME)}
    if not any(present.values()):
        raise LedgerError(
            "not a ledger folder: none of ledger.json, ledger.jsonl, manifest-sha256.txt is there",
            source=str(directory),
        )
    problems: list[tuple[int, int, Problem]] = []  # (rank, order within rank, problem)

    def add(p: Problem, order: int = 0) -> None:
        problems.append((_RANK[p.code], order, p))

    header: dict[str, Any] | None = None
    if present[HEADER_NAME]:
        header = _load_header(directory, add)
    else:
        add(Problem("MISSING_FILE", None, HEADER_NAME, "the header ledger.json is missing"))
    frozen = bool(header.get("frozen")) if header is not None else present[MANIFEST_NAME]

    # entries
    n_entries, comp_head, comp_root = 0, None, None
    entries_ok = False
    if present[ENTRIES_NAME]:
        # Entry 0 must link to the header's genesis; a header whose genesis is not what its fields hash
        # to is reported on its own (HEADER), and then which of the two entry 0 should link to is moot.
        known = header is not None and _consistent(header)
        scan = scan_entries(
            directory / ENTRIES_NAME,
            progress=progress,
            genesis=str(header["genesis"]) if header is not None and known else UNKNOWN_GENESIS,
        )
        for i, p in enumerate(scan.problems):
            add(p, i)
        n_entries = len(scan.hashes) if scan.intact else scan.lines + (1 if scan.tail else 0)
        if scan.intact:
            entries_ok = True
            comp_head = scan.head
            comp_root = merkle_root_bytes(scan.hashes).hex()
    else:
        add(Problem("MISSING_FILE", None, ENTRIES_NAME, "the entries file ledger.jsonl is missing"))

    # manifest
    changed: set[str] = set()
    if frozen or present[MANIFEST_NAME]:
        changed = _check_manifest(directory, present[MANIFEST_NAME], frozen, add)

    # header bindings to the entries
    if header is not None and frozen and entries_ok:
        _check_bindings(header, n_entries, comp_head, comp_root, changed, add)
    elif header is not None and not frozen and present[MANIFEST_NAME]:
        add(Problem("HEADER", None, HEADER_NAME, "header says not frozen, yet a manifest exists"))

    if require_frozen and not frozen:
        add(Problem("UNFROZEN", None, HEADER_NAME, "ledger is not frozen (--require-frozen)"))
    if head is not None and head.lower() != comp_head:
        add(Problem("HEAD_MISMATCH", None, ENTRIES_NAME, f"head is {comp_head}, anchor says {head.lower()}"))
    if root is not None and root.lower() != comp_root:
        add(
            Problem(
                "ROOT_MISMATCH", None, ENTRIES_NAME, f"Merkle root is {comp_root}, anchor says {root.lower()}"
            )
        )

    problems.sort(key=lambda t: (t[0], t[1]))
    ordered = tuple(p for _, _, p in problems)
    return VerifyReport(
        ok=not ordered, entries=n_entries, head=comp_head, root=comp_root, frozen=frozen, problems=ordered
    )


def _load_header(directory: Path, add: Any) -> dict[str, Any] | None:
    try:
        header = loads((directory / HEADER_NAME).read_bytes())
    except ValueError as e:
        add(Problem("HEADER", None, HEADER_NAME, f"ledger.json is not JSON ({e})"))
        return None
    if not isinstance(header, dict):
        add(Problem("HEADER", None, HEADER_NAME, "ledger.json is not a JSON object"))
        return None
    errs = schema_errors(header, "ledger-header")
    for i, msg in enumerate(errs):
        add(Problem("HEADER", None, HEADER_NAME, f"does not match the ledger-header schema: {msg}"), i)
    if "config" in header and header.get("config_sha256") != _safe_json_sha256(header["config"]):
        add(
            Problem(
                "HEADER", None, HEADER_NAME, "config does not match config_sha256 (the config was edited)"
            ),
            100,
        )
    if not _consistent(header):
        why = (
            "a version-1 header's genesis must be 64 zeros"
            if header.get("version") == 1
            else "the header's bound fields (seed, inputs, config, ...) no longer hash to its genesis "
            "(the header was edited)"
        )
        add(Problem("HEADER", None, HEADER_NAME, why), 101)
    return header


def _consistent(header: dict[str, Any]) -> bool:
    """The header's genesis is the one its version prescribes (so a hex SHA-256)."""
    if header.get("version") == 1:
        return header.get("genesis") == GENESIS
    return header.get("genesis") == _safe_binding(header)


def _safe_binding(header: dict[str, Any]) -> str | None:
    try:
        return binding(header)
    except (TypeError, ValueError):
        return None


def _safe_json_sha256(value: Any) -> str | None:
    try:
        return json_sha256(value)
    except (TypeError, ValueError):
        return None


def _check_manifest(directory: Path, present: bool, frozen: bool, add: Any) -> set[str]:
    """Compare the manifest with the folder; return the paths whose bytes changed or vanished."""
    if not present:
        add(Problem("MISSING_FILE", None, MANIFEST_NAME, "frozen ledger has no manifest-sha256.txt"))
        return {HEADER_NAME, ENTRIES_NAME}
    listed, errors = parse_manifest((directory / MANIFEST_NAME).read_bytes())
    for line, why in errors:
        add(Problem("MANIFEST_MISMATCH", None, MANIFEST_NAME, f"line {line}: {why}"), -1)
    changed: set[str] = set()
    by_path = {m.path: m for m in listed}
    for name in (HEADER_NAME, ENTRIES_NAME):
        if name not in by_path:
            add(Problem("MANIFEST_MISMATCH", None, MANIFEST_NAME, f"manifest does not cover {name}"), -1)
            changed.add(name)
    for m in listed:
        target = directory / m.path
        if not target.is_file():
            if m.path not in (HEADER_NAME, ENTRIES_NAME):  # those two are reported already
                add(
                    Problem(
                        "MISSING_FILE", None, m.path, f"listed in the manifest (line {m.line}) but missing"
                    ),
                    m.line,
                )
            changed.add(m.path)
            continue
        actual = file_sha256(target)
        if actual != m.sha256:
            add(
                Problem(
                    "MANIFEST_MISMATCH",
                    None,
                    m.path,
                    f"sha256 is {actual}, manifest line {m.line} says {m.sha256}",
                ),
                m.line,
            )
            changed.add(m.path)
    for i, rel in enumerate(ledger_files(directory)):
        if rel not in by_path:
            what = "a writer's lock file" if rel == LOCK_NAME else "a file"
            add(Problem("EXTRA_FILE", None, rel, f"{what} not covered by the manifest"), 10_000 + i)
    return changed


def _check_bindings(
    header: dict[str, Any],
    n: int,
    comp_head: str | None,
    comp_root: str | None,
    changed: set[str],
    add: Any,
) -> None:
    """A frozen header's `entries`/`head`/`root` against the recomputed values; blame via the manifest."""
    h_entries, h_head, h_root = header.get("entries"), header.get("head"), header.get("root")
    header_edited = HEADER_NAME in changed and ENTRIES_NAME not in changed
    if isinstance(h_entries, int) and h_entries != n:
        if header_edited:
            add(
                Problem(
                    "HEADER", None, HEADER_NAME, f"header records {h_entries} entries, ledger.jsonl holds {n}"
                )
            )
        elif n < h_entries:
            gap = f"entry {n}" if h_entries == n + 1 else f"entries {n}..{h_entries - 1}"
            add(
                Problem(
                    "REMOVED", n, ENTRIES_NAME, f"{gap} removed from the end (header records {h_entries})"
                )
            )
        else:
            add(
                Problem(
                    "EXTRA_BYTES",
                    h_entries,
                    ENTRIES_NAME,
                    f"{n - h_entries} entr{'y' if n - h_entries == 1 else 'ies'} after the frozen head "
                    f"(header records {h_entries})",
                )
            )
        return
    if h_head != comp_head:
        add(
            Problem(
                "HEADER",
                None,
                HEADER_NAME,
                f"header head {h_head} differs from the entries' head {comp_head}",
            )
        )
    if h_root != comp_root:
        add(
            Problem(
                "HEADER",
                None,
                HEADER_NAME,
                f"header root {h_root} differs from the entries' root {comp_root}",
            )
        )


def read_entries(dir: str | os.PathLike[str]) -> list[Entry]:
    """Every entry of the ledger in `dir`, in order, each checked against its hash and the chain.

    Raises LedgerError (naming the file, line and problem) when `ledger.jsonl` does not read as an intact
    chain; it does not check the header or manifest — call `verify(dir, require_frozen=True)` for that.
    """
    directory = Path(dir)
    path = directory / ENTRIES_NAME
    if not path.is_file():
        raise LedgerError("not a ledger: ledger.jsonl is missing", source=str(directory))
    scan = scan_entries(path, keep=True)
    if scan.problems:
        first = scan.problems[0]
        line = first.seq + 1 if first.seq is not None and first.code in ("EDITED", "TRUNCATED_TAIL") else None
        raise LedgerError(f"{first.code}: {first.detail}", source=str(path), line=line)
    return scan.entries


def head_info(dir: str | os.PathLike[str]) -> tuple[int, str, str]:
    """`(entries, head, root)` recomputed from an intact `ledger.jsonl` (LedgerError otherwise).

    Unlike the header's recorded values these cannot be stale; for a full check use `verify`.
    """
    directory = Path(dir)
    path = directory / ENTRIES_NAME
    if not path.is_file():
        raise LedgerError("not a ledger: ledger.jsonl is missing", source=str(directory))
    scan = scan_entries(path)
    if scan.problems:
        raise LedgerError(
            f"ledger.jsonl does not verify ({scan.problems[0].render()}); run `contracts ledger verify`",
            source=str(path),
        )
    return len(scan.hashes), scan.head, merkle_root_bytes(scan.hashes).hex()


__all__ = ["CODES", "GENESIS", "Problem", "VerifyReport", "head_info", "read_entries", "verify"]
