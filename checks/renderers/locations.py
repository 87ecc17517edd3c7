"""Where a finding is, as SARIF and GitHub annotations need it: a relative path and a file line.

Two rules, shared by `check`, `audit` and `plan-check` output:

- **Relative paths.** A location names its file relative to a base folder (`--base`, default the
  working directory), with `/` separators, never as an absolute path of the machine that ran the check:
  GitHub resolves an annotation's `file=` and a SARIF `uri` against the repository root, and an absolute
  path leaks the runner's layout. A path outside the base keeps its `../` steps. SARIF results carry
  `uriBaseId: %SRCROOT%` and the run declares no absolute value for it: the consumer (code scanning: the
  checkout) supplies the root.
- **File lines.** A call of a JSON Lines source is at its line. A call of a whole-file document (a
  τ-bench result file: one JSON array) carries its record number, which is no line of the file: the
  record's start line is found by scanning the file (`output_contracts.traces.locate.record_lines`). When the
  file cannot be read or its records cannot be found, the location names the record instead (a SARIF
  logical location `record N`; an annotation without `line=`).
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from output_contracts.traces.locate import record_lines

#: The SARIF `uriBaseId` every relative `uri` is resolved against (GitHub code scanning: the checkout).
SRCROOT = "%SRCROOT%"
_STDIN = ("-", "<stdin>", "stdin")
_DOCUMENT_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class Location:
    """A finding's place: `path` relative to the base (None for stdin), its 1-based file `line` when
    known, and `record` (the record number) when the line is not known but the record is."""

    path: str | None
    line: int | None
    record: int | None = None

    def sarif(self) -> dict[str, Any]:
        """The SARIF `location` object (physical when there is a file, logical for a record)."""
        loc: dict[str, Any] = {}
        if self.path is not None:
            phys: dict[str, Any] = {"artifactLocation": {"uri": uri(self.path), "uriBaseId": SRCROOT}}
            if self.line is not None:
                phys["region"] = {"startLine": self.line}
            loc["physicalLocation"] = phys
        if self.record is not None:
            name = f"record {self.record}"
            loc["logicalLocations"] = [
                {"name": name, "fullyQualifiedName": f"{self.path or 'stdin'}#{name}", "kind": "element"}
            ]
        return loc

    def text(self) -> str:
        """`path:line`, `path#record N` or `path` (stdin: `-`), for plain-text lists."""
        where = self.path or "-"
        if self.line is not None:
            return f"{where}:{self.line}"
        if self.record is not None:
            return f"{where}#record {self.record}"
        return where


def uri(path: str) -> str:
    """A relative path as a SARIF `uri` (a relative URI reference: POSIX separators, %-escaped)."""
    return urllib.parse.quote(path.replace("\\", "/"), safe="/@-._~!$&'()*+,;=")


class Locator:
    """Turns a finding's `(source, line)` as stored (the source as given at ingest, the line or record
    number) into a `Location`; each source file is scanned at most once."""

    def __init__(self, base: str | Path | None = None) -> None:
        self.base = os.path.abspath(base if base is not None else os.getcwd())
        self._records: dict[str, tuple[int, ...] | None] = {}

    def relative(self, source: Any) -> str | None:
        """`source` relative to the base, `/`-separated; None for stdin or no source."""
        if source is None or str(source) in _STDIN or not str(source):
            return None
        full = os.path.abspath(str(source))
        try:
            rel = os.path.relpath(full, self.base)
        except ValueError:  # another drive (Windows): the name is all that can be said without leaking
            rel = os.path.basename(full)
        return rel.replace(os.sep, "/")

    def _record_lines(self, source: str) -> tuple[int, ...] | None:
        if source not in self._records:
            full = os.path.abspath(source)
            if os.path.isfile(full):
                self._records[source] = record_lines(full)
            elif source.endswith(_DOCUMENT_SUFFIXES):
                self._records[source] = ()  # a document we cannot read: name the record
            else:
                self._records[source] = None  # JSON Lines by its name: the line is the file line
        return self._records[source]

    def locate(self, source: Any, line: Any) -> Location:
        """The location of a call stored with `source` and `line` (a line, or a record number)."""
        path = self.relative(source)
        n = line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None
        if path is None or n is None:
            return Location(path, None, n if path is None else None)
        starts = self._record_lines(str(source))
        if starts is None:
            return Location(path, n)
        if n <= len(starts):
            return Location(path, starts[n - 1])
        return Location(path, None, n)
