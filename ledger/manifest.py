"""`manifest-sha256.txt`: the SHA-256 of every file of a frozen ledger, checkable with coreutils alone.

Format (what `sha256sum -c`, `shasum -a 256 -c` and BagIt's `manifest-sha256.txt` accept): one line per
file, `<64 lowercase hex>  <relative POSIX path>` with two spaces and LF endings, sorted by path (code
point order). It covers every regular file below the ledger folder except itself; the writer's lock file
is gone by the time it is written. File names holding a newline or a backslash are refused, since
`sha256sum` would need its escaped form for them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from output_contracts.errors import LedgerError
from output_contracts.jsonutil import atomic_write_bytes, file_sha256

MANIFEST_NAME = "manifest-sha256.txt"
_LINE = re.compile(r"^([0-9a-f]{64})  (.+)$")


def ledger_files(directory: Path, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Relative POSIX paths of every regular file below `directory`, sorted, minus `exclude`."""
    out = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in files:
            rel = (Path(root) / name).relative_to(directory).as_posix()
            if rel != MANIFEST_NAME and rel not in exclude:
                out.append(rel)
    return sorted(out)


def render_manifest(directory: Path, exclude: frozenset[str] = frozenset()) -> bytes:
    """The manifest's bytes for the folder as it is now."""
    lines = []
    for rel in ledger_files(directory, exclude):
        if "\n" in rel or "\\" in rel or "\r" in rel:
            raise LedgerError(
                f"file name {rel!r} cannot be listed in a sha256sum manifest", source=str(directory)
            )
        lines.append(f"{file_sha256(directory / rel)}  {rel}\n")
    return "".join(lines).encode("utf-8")


def write_manifest(directory: Path, exclude: frozenset[str] = frozenset()) -> None:
    """Atomically write `manifest-sha256.txt` (temp file, fsync, rename)."""
    atomic_write_bytes(directory / MANIFEST_NAME, render_manifest(directory, exclude))


@dataclass(frozen=True)
class ManifestLine:
    """One parsed manifest line (`line` counts from 1)."""

    line: int
    sha256: str
    path: str


def parse_manifest(data: bytes) -> tuple[list[ManifestLine], list[tuple[int, str]]]:
    """`(entries, errors)`: well-formed lines, and `(line number, why)` for each malformed one."""
    entries: list[ManifestLine] = []
    errors: list[tuple[int, str]] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], [(1, "manifest is not UTF-8")]
    if text and not text.endswith("\n"):
        errors.append((text.count("\n") + 1, "last line has no LF ending"))
    seen: set[str] = set()
    for i, raw in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), start=1):
        m = _LINE.match(raw)
        if not m:
            errors.append((i, f"not '<sha256>  <path>': {raw[:80]!r}"))
            continue
        path = m.group(2)
        if path in seen:
            errors.append((i, f"{path} listed twice"))
            continue
        seen.add(path)
        entries.append(ManifestLine(i, m.group(1), path))
    if [e.path for e in entries] != sorted(e.path for e in entries):
        errors.append((1, "lines are not sorted by path"))
    return entries, errors
