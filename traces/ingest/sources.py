"""Ingest step 1, sources: which files a run reads, their bytes' sha256, and which are already in.

A source is a file, a folder (walked recursively for `*.jsonl`, `*.jsonl.gz`, `*.json`, `*.json.gz`,
SWE-agent `*.traj` and Inspect AI `*.eval`, sorted by path so two runs read in the same order) or `-` (stdin, spooled to a file in the staging
folder so it can be hashed and read like any other). A source whose sha256 is already in `corpus.json`,
or that repeats an earlier source of the same run, is skipped with a `SourceReport` saying so: this is
what makes ingest idempotent. Kept apart from reading so the skip decision never depends on content.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from output_contracts.choices import SOURCE_SUFFIXES
from output_contracts.errors import TraceError
from output_contracts.jsonutil import file_sha256

STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One input as given (`name`), the file to read, and whether a folder walk found it."""

    name: str
    path: Path
    from_folder: bool = False
    #: The input as the user gave it (the file, the folder walked, or `-`): what "no tool call found"
    #: names. Empty = `name`.
    given: str = ""


@dataclass(frozen=True)
class SourceReport:
    """Accounting for one source.

    `lines` = `ok` + `rejects` + `blank` always holds. `unit` says what a "line" is: a text line, or a
    record (run, simulation, document) of a whole-file format. `calls` are calls written; `episodes`
    counts episode records (0 for flat); `dropped_calls` are calls left out of kept episodes.
    `skipped` sources were not read (`note` says why).
    """

    source: str
    sha256: str
    format: str
    lines: int
    calls: int
    rejects: int
    blank: int
    skipped: bool = False
    ok: int = 0
    episodes: int = 0
    dropped_calls: int = 0
    unit: str = "line"
    bytes: int = 0
    note: str | None = None


def skipped_source(name: str, sha: str, fmt: str, size: int, note: str) -> SourceReport:
    """The report of a source that was hashed but not read (`note` says why)."""
    return SourceReport(name, sha, fmt, 0, 0, 0, 0, True, bytes=size, note=note)


def expand_sources(sources: Sequence[str | Path], *, exclude: Path | None = None) -> list[Source]:
    """Files as given; folders walked recursively for trace files (sorted); `-` for stdin.

    Hidden files and folders (names starting with `.`) and anything inside `exclude` (the corpus being
    written) are not picked up from folders.
    """
    out: list[Source] = []
    ex = exclude.resolve() if exclude is not None else None
    for s in sources:
        if str(s) == STDIN:
            out.append(Source(STDIN, Path(STDIN), given=STDIN))
            continue
        p = Path(s)
        if p.is_dir():
            found = []
            for f in p.rglob("*"):
                rel = f.relative_to(p)
                if any(part.startswith(".") for part in rel.parts) or not f.is_file():
                    continue
                if not f.name.endswith(SOURCE_SUFFIXES):
                    continue
                if ex is not None and (f.resolve() == ex or ex in f.resolve().parents):
                    continue
                found.append(f)
            if not found:
                if (p / "calls.parquet").exists() or (p / "leaves.parquet").exists():
                    raise TraceError(
                        "looks like a corpus folder but has no corpus.json: damaged, or not a corpus "
                        "(re-ingest its sources)",
                        source=str(p),
                    )
                raise TraceError(
                    f"folder holds no trace files ({', '.join('*' + x for x in SOURCE_SUFFIXES)}; hidden "
                    "files are skipped)",
                    source=str(p),
                )
            for f in sorted(found, key=lambda x: x.relative_to(p).as_posix()):
                out.append(Source(str(f), f, from_folder=True, given=str(s)))
        elif p.is_file():
            out.append(Source(str(p), p, given=str(s)))
        else:
            raise TraceError("no such file or folder", code="E_USAGE", source=str(p))
    return out


def known_sources(manifest: dict[str, Any] | None) -> dict[str, str]:
    """sha256 -> source name of every source already in the corpus (empty for a new corpus)."""
    return {s["sha256"]: s["source"] for s in (manifest or {}).get("sources", [])}


def total_bytes(srcs: Sequence[Source]) -> int | None:
    """The bytes the run will read, for progress; None when stdin (of unknown size) is among them."""
    sizes = [s.path.stat().st_size for s in srcs if s.name != STDIN]
    return sum(sizes) if len(sizes) == len(srcs) else None


def _stdin_to_file(stage: Path) -> Path:
    p = stage / "stdin.jsonl"
    with open(p, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 20)
    return p


@dataclass(frozen=True)
class Hashed:
    """A source ready to read: the file holding its bytes, their sha256 and size."""

    source: Source
    path: Path
    sha256: str
    size: int


def hashed_sources(srcs: Sequence[Source], stage: Path) -> Iterator[Hashed]:
    """Each source with its sha256, in order; stdin is spooled into `stage` first.

    Lazy on purpose: a source is hashed just before it is read, so a failure in one source stops the
    run before later ones are touched (and stdin is read only when its turn comes).
    """
    for src in srcs:
        path = _stdin_to_file(stage) if src.name == STDIN else src.path
        yield Hashed(src, path, file_sha256(path), path.stat().st_size)


def already_ingested(h: Hashed, known: dict[str, str]) -> SourceReport | None:
    """The skip report of a source whose bytes are in the corpus or earlier in this run, else None."""
    seen_as = known.get(h.sha256)
    if seen_as is None:
        return None
    note = "already ingested" if seen_as == h.source.name else f"same bytes as {seen_as}"
    return skipped_source(h.source.name, h.sha256, "-", h.size, note)
