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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contracts.ledger.entry import GENESIS, Entry, parse_line
from contracts.ledger.header import ENTRIES_NAME
from contracts.progress import NULL_PROGRESS, Progress


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
    hashes: list[bytes] = field(default_factory=list)
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


def scan_entries(
    path: Path,
    *,
    keep: bool = False,
    progress: Progress = NULL_PROGRESS,
    stop_at_first: bool = False,
) -> Scan:
    """Parse and check every line of `path` (which must exist). `keep` retains the Entry values."""
    scan = Scan()
    records: list[tuple[int, str, str] | None] = []
    problems: list[tuple[int, Problem]] = []  # (line index, problem) so the report sorts in file order
    blank_from: int | None = None
    progress.start("verify ledger entries", None)
    with path.open("rb") as fh:
        offset = 0
        for p, raw in enumerate(fh):
            if not raw.endswith(b"\n"):
                scan.tail = raw
                break
            offset += len(raw)
            scan.good_size = offset
            scan.lines += 1
            line = raw[:-1]
            if not line:
                records.append(None)
                if blank_from is None:
                    blank_from = p
                continue
            if blank_from is not None:  # blank lines followed by more content: each blank is an edit
                for b in range(blank_from, p):
                    problems.append((b, Problem("EDITED", b, ENTRIES_NAME, f"line {b + 1} is empty")))
                blank_from = None
            entry, why = parse_line(line)
            if entry is None:
                records.append(None)
                problems.append((p, Problem("EDITED", p, ENTRIES_NAME, f"line {p + 1} {why}")))
                if stop_at_first:
                    break
                continue
            records.append((entry.seq, entry.prev, entry.hash))
            scan.hashes.append(bytes.fromhex(entry.hash))
            if keep:
                scan.entries.append(entry)
            if p % 65536 == 65535:
                progress.advance(65536)
    progress.finish()
    if blank_from is not None:
        n = scan.lines - blank_from
        problems.append(
            (
                blank_from,
                Problem("EXTRA_BYTES", None, ENTRIES_NAME, f"{n} blank line(s) after the last entry"),
            )
        )
        records = records[:blank_from]
    problems.extend(_chain_problems(records))
    if scan.tail:
        problems.append((scan.lines, _tail_problem(scan.tail, scan.good_size, _next_seq(records))))
    problems.sort(key=lambda t: t[0])
    scan.problems = [p for _, p in problems]
    if records and records[-1] is not None:
        scan.head = records[-1][2]
    return scan


def _next_seq(records: list[tuple[int, str, str] | None]) -> int:
    for back, rec in enumerate(reversed(records)):
        if rec is not None:
            return rec[0] + 1 + back
    return len(records)


def _chain_problems(records: list[tuple[int, str, str] | None]) -> list[tuple[int, Problem]]:
    """`seq` must count 0, 1, 2… and each `prev` must be the hash before it (genesis first)."""
    out: list[tuple[int, Problem]] = []
    expected: int | None = 0
    prev: str | None = GENESIS
    seen: dict[int, str] = {}
    for p, rec in enumerate(records):
        if rec is None:  # reported already; resynchronise on the next good entry
            expected, prev = None, None
            continue
        seq, link, digest = rec
        if expected is not None and not out:  # report the first ordering problem only: the rest echo it
            if seq != expected:
                out.append((p, _order_problem(records, p, seq, expected, digest, seen)))
            elif prev is not None and link != prev:
                what = "the genesis value" if seq == 0 else f"entry {seq - 1}'s hash"
                out.append(
                    (
                        p,
                        Problem(
                            "EDITED",
                            seq,
                            ENTRIES_NAME,
                            f"line {p + 1}: prev does not equal {what}: this entry or the one before it "
                            "was rewritten with a recomputed hash",
                        ),
                    )
                )
        seen.setdefault(seq, digest)
        expected, prev = seq + 1, digest
    return out


def _order_problem(
    records: list[tuple[int, str, str] | None],
    p: int,
    seq: int,
    expected: int,
    digest: str,
    seen: dict[int, str],
) -> Problem:
    if seq < expected:
        if seen.get(seq) == digest:
            return Problem("DUPLICATED", seq, ENTRIES_NAME, f"line {p + 1} repeats entry {seq}")
        return Problem(
            "REORDERED", seq, ENTRIES_NAME, f"line {p + 1} holds entry {seq} where entry {expected} belongs"
        )
    later = {r[0] for r in records[p + 1 :] if r is not None}
    if expected in later:
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
