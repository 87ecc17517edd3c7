"""Where a record of a whole-file trace document starts in its file, for reports that point at lines.

Ingest numbers the records of a whole-file document (a τ-bench result file is one JSON array; a
τ²-bench file holds its runs under `simulations`) 1, 2, 3, ... and stores that number as the call's
`line`, since a record has no line of its own. A SARIF result or a GitHub annotation must name a line of
the file, so `record_lines` scans the file once for the byte offset where each record starts and turns
it into the 1-based file line. The scan is a tokenizer over strings and brackets (a regular expression,
so no per-byte Python loop), and its record count is checked against the parsed document: when they
disagree (a shape this module does not know) it answers None and the caller falls back to a logical
location ("record N").
"""

from __future__ import annotations

import re
from pathlib import Path

from output_contracts.traces.ingest.read import Document, open_source, whole_document, without_bom

# JSON strings (escapes included) and the structural characters; everything else (numbers, literals,
# blanks) lies between tokens and needs no attention.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]', re.DOTALL)
_NONBLANK = re.compile(rb"\S")
#: The key under which a whole-file document holds its records (τ²-bench), besides a top-level array.
_RECORD_KEYS = (b'"simulations"',)


def _element_starts(data: bytes, want_key: bool) -> list[int]:
    """Byte offsets where the elements of the record array start: the top-level array itself, or (when
    `want_key`) the array under a record key of the top-level object."""
    starts: list[int] = []
    depth = 0
    target = -1  # depth of the record array's elements once found
    last_key: bytes | None = None
    expect_value_of: bytes | None = None
    for m in _TOKEN.finditer(data):
        tok = m.group()
        c = tok[:1]
        if c == b'"':
            if depth == 1 and want_key:
                last_key = tok
            continue
        if c == b":":
            expect_value_of = last_key if depth == 1 else None
            continue
        if c in b"[{":
            if c == b"[":
                if depth == 0 and not want_key:
                    target = 1
                elif depth == 1 and want_key and expect_value_of in _RECORD_KEYS and target < 0:
                    target = 2
            expect_value_of = None
            depth += 1
            if depth == target:
                nxt = _NONBLANK.search(data, m.end())
                if nxt is not None and nxt.group() not in (b"]",):
                    starts.append(nxt.start())
            continue
        if c in b"]}":
            if depth == target:
                target = -2  # the record array closed: later arrays are not records
            depth -= 1
            continue
        if c == b"," and depth == target:
            nxt = _NONBLANK.search(data, m.end())
            if nxt is not None:
                starts.append(nxt.start())
    return starts


def _lines_of(data: bytes, offsets: list[int]) -> tuple[int, ...]:
    """1-based line numbers of increasing byte offsets (one pass over the newlines)."""
    out = []
    line, pos = 1, 0
    for off in offsets:
        line += data.count(b"\n", pos, off)
        pos = off
        out.append(line)
    return tuple(out)


def record_lines(path: str | Path) -> tuple[int, ...] | None:
    """The file line where each record (1-based index = position + 1) of a whole-file document starts.

    None when `path` is line-oriented (JSON Lines: its lines are already file lines) or unreadable; `()`
    when it is a document whose records cannot be found by position (the caller then names the record
    instead of a line)."""
    p = Path(path)
    try:
        doc = whole_document(p)
        if not isinstance(doc, Document):
            return None
        with open_source(p) as fh:
            data = fh.read()
    except (OSError, EOFError, ValueError):
        return None
    data = without_bom(data)
    value = doc.value
    if isinstance(value, list):
        starts = _element_starts(data, want_key=False)
        expected = len(value)
    elif isinstance(value, dict) and isinstance(value.get("simulations"), list):
        starts = _element_starts(data, want_key=True)
        expected = len(value["simulations"])
    else:  # one record: the document itself
        first = _NONBLANK.search(data)
        starts, expected = ([first.start()] if first is not None else []), 1
    if len(starts) != expected:
        return ()
    return _lines_of(data, starts)
