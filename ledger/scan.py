"""Read `ledger.jsonl` once and say what is wrong with it, entry by entry.

Shared by `verify`, `Ledger.open` and `read_entries`. Findings are `Problem` values, never exceptions; the
codes are stable (docs/ledger.md lists them):

- `EDITED` (entry n): line n is not a self-consistent entry (bad JSON, non-canonical bytes, content that
  does not match its hash), or it does not link to the entry before it (a rewrite with a recomputed hash).
- `REORDERED`: an entry appears before one with a smaller `seq`.
- `REMOVED` (entry n): entry n is missing from an otherwise ordered chain.
- `DUPLICATED` (entry n): a copy of an earlier entry.
- `TRUNCATED_TAIL` (entry n): the file ends with a partial line (a crash mid-append, or a cut).
- `EXTRA_BYTES`: bytes after the last entry that are not an entry (blank lines, junk after a complete one).

After an unreadable line the chain check resynchronises on the next good entry, so one edit is reported
once rather than as a cascade; only the first ordering problem is reported, for the same reason.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from output_contracts.ledger.entry import GENESIS, Entry, parse_line
from output_contracts.ledger.header import ENTRIES_NAME, genesis_of
from output_contracts.ledger.merkle import Digests
from output_contracts.progress import NULL_PROGRESS, Progress


@dataclass(frozen=True)
class Problem:
    """One finding of `verify`: a stable `code`, the entry `seq` and `file` it concerns, and a sentence."""

    code: str
    seq: int | None
    file: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"code": self.code, "seq": self.seq, "file": self.file, "detail": self.detail}

    def render(self) -> str:
        """`FILE: entry N: CODE: detail` (parts that do not apply are left out)."""
        parts = [p for p in (self.file, None if self.seq is None else f"entry {self.seq}") if p]
        return ": ".join([*parts, self.code, self.detail])


@dataclass
class Scan:
    """What one pass over `ledger.jsonl` found.

    `hashes` are the raw digests of the entries in file order (only meaningful when `intact`); `good_size`
    is the byte length up to the last LF; `tail` the bytes after it.
    """

    lines: int = 0
    hashes: Digests = field(default_factory=Digests)
    entries: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    good_size: int = 0
    tail: bytes = b""
    head: str = GENESIS

    @property
    def intact(self) -> bool:
        """No problem at all: the file is a complete, ordered, linked chain."""
        return not self.problems

    @property
    def only_tail(self) -> bool:
        """The one problem is a partial last line (what `repair_tail` fixes)."""
        return (
            len(self.problems) == 1
            and self.problems[0].code in ("TRUNCATED_TAIL", "EXTRA_BYTES")
            and (bool(self.tail))
        )


#: `scan_entries(genesis=UNKNOWN_GENESIS)`: do not check entry 0's `prev`.
UNKNOWN_GENESIS = ""


def scan_entries(
    path: Path,
    *,
    keep: bool = False,
    progress: Progress = NULL_PROGRESS,
    genesis: str | None = None,
) -> Scan:
    """Parse and check every line of `path` (which must exist). `keep` retains the Entry values.
    Entry 0's `prev` must be `genesis` (default: the `genesis` of the header beside `path`, which binds
    the header to the chain; `output_contracts.ledger.header`); `UNKNOWN_GENESIS` skips that one check (a
    header too damaged to name it is reported on its own).

    Streams the file; memory is the entry hashes (for the Merkle root) plus one integer per entry.
    """
    scan = Scan()
    seqs = array("q")  # seq of each good entry, parallel to scan.hashes
    problems: list[tuple[int, Problem]] = []  # (line index, problem) so the report sorts in file order
    blank_from: int | None = None
    expected: int | None = 0  # the seq the next entry must have; None after an unreadable line
    first = genesis if genesis is not None else genesis_of(path.parent)
    prev: str | None = first or None
    anomaly: tuple[int, int, int, int, str] | None = None  # first (line, index, seq, expected, hash)
    last_good: tuple[int, int] | None = None  # (line, seq) of the last good entry
    progress.start("checking ledger.jsonl", path.stat().st_size)  # advanced in bytes
    reported = 0
    with path.open("rb") as fh:
        for p, raw in enumerate(fh):
            if not raw.endswith(b"\n"):
                scan.tail = raw
                break
            scan.good_size += len(raw)
            scan.lines += 1
            line = raw[:-1]
            if not line:
                if blank_from is None:
                    blank_from = p
                expected, prev = None, None
                continue
            if blank_from is not None:  # blank lines followed by more content: each blank is an edit
                for b in range(blank_from, p):
                    problems.append((b, Problem("EDITED", b, ENTRIES_NAME, f"line {b + 1} is empty")))
                blank_from = None
            entry, why = parse_line(line)
            if entry is None:
                problems.append((p, Problem("EDITED", p, ENTRIES_NAME, f"line {p + 1} {why}")))
                expected, prev = None, None  # resynchronise on the next good entry
                continue
            if expected is not None and anomaly is None:  # only the first ordering problem: the rest echo it
                if entry.seq != expected:
                    anomaly = (p, len(seqs), entry.seq, expected, entry.hash)
                elif prev is not None and entry.prev != prev:
                    what = "the genesis value" if entry.seq == 0 else f"entry {entry.seq - 1}'s hash"
                    detail = (
                        f"line {p + 1}: prev does not equal {what}: this entry or the one before it "
                        "was rewritten with a recomputed hash"
                    )
                    problems.append((p, Problem("EDITED", entry.seq, ENTRIES_NAME, detail)))
                    anomaly = (p, -1, entry.seq, expected, entry.hash)
            expected, prev = entry.seq + 1, entry.hash
            seqs.append(entry.seq)
            scan.hashes.append(bytes.fromhex(entry.hash))
            if keep:
                scan.entries.append(entry)
            last_good = (p, entry.seq)
            if p % 16384 == 16383:
                progress.advance(scan.good_size - reported)
                reported = scan.good_size
    progress.advance(scan.good_size + len(scan.tail) - reported)
    progress.finish()
    if blank_from is not None:
        n = scan.lines - blank_from
        detail = f"{n} blank line(s) after the last entry"
        problems.append((blank_from, Problem("EXTRA_BYTES", None, ENTRIES_NAME, detail)))
    if anomaly is not None and anomaly[1] >= 0:
        problems.append((anomaly[0], _order_problem(seqs, scan.hashes, *anomaly)))
    if scan.tail:
        next_seq = scan.lines if last_good is None else last_good[1] + scan.lines - last_good[0]
        problems.append((scan.lines, _tail_problem(scan.tail, scan.good_size, next_seq)))
    problems.sort(key=lambda t: t[0])
    scan.problems = [p for _, p in problems]
    scan.head = scan.hashes[-1].hex() if scan.hashes else (first or GENESIS)  # meaningful only when intact
    return scan


def _order_problem(
    seqs: array[int], hashes: Digests, p: int, index: int, seq: int, expected: int, digest: str
) -> Problem:
    """Classify the first out-of-order entry (line p, good-entry index `index`)."""
    if seq < expected:
        raw = bytes.fromhex(digest)
        if any(seqs[i] == seq and hashes[i] == raw for i in range(index)):
            return Problem("DUPLICATED", seq, ENTRIES_NAME, f"line {p + 1} repeats entry {seq}")
        return Problem(
            "REORDERED", seq, ENTRIES_NAME, f"line {p + 1} holds entry {seq} where entry {expected} belongs"
        )
    if expected in seqs[index + 1 :]:
        return Problem(
            "REORDERED",
            expected,
            ENTRIES_NAME,
            f"line {p + 1} holds entry {seq} where entry {expected} belongs",
        )
    gap = f"entry {expected}" if seq == expected + 1 else f"entries {expected}..{seq - 1}"
    return Problem("REMOVED", expected, ENTRIES_NAME, f"{gap} missing before line {p + 1} (entry {seq})")


def _tail_problem(tail: bytes, offset: int, seq: int) -> Problem:
    entry, _ = parse_line(tail)
    if entry is not None:
        return Problem(
            "TRUNCATED_TAIL",
            seq,
            ENTRIES_NAME,
            f"the last line (entry {entry.seq}, at byte {offset}) lacks its final LF: the write was cut short",
        )
    text = tail.decode("utf-8", "surrogateescape")  # classify only: junk need not be UTF-8
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        value, end = None, 0
    if isinstance(value, dict) and end < len(text):
        junk = len(tail) - len(text[:end].encode("utf-8", "surrogateescape"))
        return Problem(
            "EXTRA_BYTES",
            seq,
            ENTRIES_NAME,
            f"{junk} byte(s) of junk after the last line's entry, at byte {offset + len(tail) - junk}",
        )
    return Problem(
        "TRUNCATED_TAIL",
        seq,
        ENTRIES_NAME,
        f"partial line of {len(tail)} byte(s) at byte {offset} (entry {seq} was cut short: crash or truncation)",
    )
