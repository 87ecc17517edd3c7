"""The writer: create a ledger, append entries durably under a lock, freeze it.

Durability: each `append` is one `write()` of the whole line to a file opened with O_APPEND, then
`fsync`; only after that does it return. A crash leaves either the ledger as it was or with the new line
complete, except that the kernel may have written a prefix of the line: `verify` then reports a
`TRUNCATED_TAIL`, and `Ledger.open(dir, repair_tail=True)` cuts the partial line off and records what it
cut as a `ledger.repair` entry. `append_many` writes a batch with one `write()` and one `fsync` (far
faster; a crash may keep any prefix of the batch's lines, never a torn line that verifies).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from output_contracts.errors import LedgerError, UsageError
from output_contracts.jsonutil import sha256_hex
from output_contracts.ledger.entry import Entry, check_kind, encode_body, encode_entry, loads_exact
from output_contracts.ledger.header import (
    ENTRIES_NAME,
    HEADER_NAME,
    new_header,
    read_header,
    write_header,
)
from output_contracts.ledger.lock import LOCK_NAME, WriterLock
from output_contracts.ledger.manifest import MANIFEST_NAME, write_manifest
from output_contracts.ledger.merkle import Digests, merkle_root_bytes
from output_contracts.ledger.scan import scan_entries

REPAIR_KIND = "ledger.repair"
_DROPPED_TEXT_MAX = 4096


@dataclass(frozen=True)
class FreezeInfo:
    """What `freeze()` recorded: entry count, head hash and Merkle root (anchor these elsewhere)."""

    entries: int
    head: str
    root: str


OVERWRITE_FLAG = "--overwrite"


def claim_folder(dir: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Make `dir` ready for `Ledger.create` before a long run starts, the same way for every writer.

    A missing or empty folder is fine. A non-empty one is refused (a ledger is evidence: nothing is
    reused, suffixed or replaced silently) with a usage error naming `--overwrite`; with `overwrite`, a
    folder that holds a ledger (`ledger.json` or `ledger.jsonl`) is emptied under the writer lock (so a
    ledger another process is writing is never removed). A non-empty folder that is not a ledger is
    refused even then: `--overwrite` replaces ledgers, never other files.
    """
    directory = Path(dir)
    if not directory.exists():
        return
    if not directory.is_dir():
        raise UsageError("the ledger folder is a file: give a new or empty folder", source=str(directory))
    if not any(directory.iterdir()):
        return
    is_ledger = (directory / HEADER_NAME).exists() or (directory / ENTRIES_NAME).exists()
    if not overwrite:
        what = "holds a ledger (from an earlier run?)" if is_ledger else "is not empty"
        raise UsageError(
            f"the ledger folder {what}: pass {OVERWRITE_FLAG} to replace it, or give a new folder with --ledger",
            source=str(directory),
        )
    if not is_ledger:
        raise UsageError(
            f"the ledger folder is not empty and holds no ledger; {OVERWRITE_FLAG} replaces only a ledger: "
            "give a new folder with --ledger",
            source=str(directory),
        )
    lock = WriterLock(directory)  # a LedgerError naming the holder when another process writes it
    try:
        for child in directory.iterdir():
            if child.name == LOCK_NAME:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    finally:
        lock.release()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Ledger:
    """An open, locked, appendable ledger folder. Use `Ledger.create` or `Ledger.open`, not the constructor.

    Also a context manager: leaving the `with` block releases the lock (`close()`) but does not freeze;
    freezing is a decision, made by calling `freeze()`.
    """

    def __init__(self, directory: Path, lock: WriterLock, header: dict[str, Any], hashes: Digests) -> None:
        self.dir = directory
        self._lock: WriterLock | None = lock
        self._header = header
        self._hashes = hashes
        self._head = hashes[-1].hex() if hashes else header["genesis"]
        self._frozen = False
        self._fd: int | None = os.open(directory / ENTRIES_NAME, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        self._size = os.fstat(self._fd).st_size

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        dir: str | os.PathLike[str],
        config: dict[str, Any],
        seed: int,
        source_revision: str | None = None,
        inputs: Sequence[str | os.PathLike[str]] = (),
    ) -> Ledger:
        """Start a ledger in `dir`, which must not exist or be empty; take the writer lock.

        Writes `ledger.json` (bound to `config`, its sha256, `source_revision` — computed when None, see
        `header.source_revision` — the sha256 of each input file, `seed` and `created_at`) and an empty
        `ledger.jsonl`.
        """
        directory = Path(dir)
        if directory.exists():
            if not directory.is_dir():
                raise LedgerError("cannot create a ledger: not a folder", source=str(directory))
            if any(directory.iterdir()):
                raise LedgerError(
                    "cannot create a ledger in a folder that is not empty", source=str(directory)
                )
        header = new_header(config, seed, source_revision, inputs)
        directory.mkdir(parents=True, exist_ok=True)
        lock = WriterLock(directory)
        try:
            if any(p.name != LOCK_NAME for p in directory.iterdir()):
                raise LedgerError("another process started a ledger here first", source=str(directory))
            write_header(directory, header)
            fd = os.open(directory / ENTRIES_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            _fsync_dir(directory)
            return cls(directory, lock, header, Digests())
        except BaseException:
            lock.release()
            raise

    @classmethod
    def open(cls, dir: str | os.PathLike[str], repair_tail: bool = False) -> Ledger:
        """Re-open an unfrozen ledger to continue its chain; take the writer lock.

        The whole file is checked first: a ledger that does not verify is refused (LedgerError), except a
        partial last line when `repair_tail` is true: it is cut off and a `ledger.repair` entry records its
        offset, length, sha256 and (up to 4 KiB of) its text. A frozen ledger refuses appends.
        """
        directory = Path(dir)
        if not directory.is_dir():
            raise LedgerError("no such ledger folder", source=str(directory))
        lock = WriterLock(directory)
        try:
            header = read_header(directory)
            if header.get("frozen") is not False:
                raise LedgerError(
                    "ledger is frozen and refuses appends; start a new ledger", source=str(directory)
                )
            path = directory / ENTRIES_NAME
            if not path.is_file():
                raise LedgerError("ledger.jsonl is missing", source=str(directory))
            scan = scan_entries(path)
            repair: dict[str, Any] | None = None
            if scan.problems:
                if not (repair_tail and scan.only_tail):
                    first = scan.problems[0]
                    hint = (
                        " (open with repair_tail=True, or run `contracts ledger repair`, to drop it)"
                        if scan.only_tail
                        else ""
                    )
                    raise LedgerError(
                        f"ledger does not verify: {first.render()}{hint}",
                        source=str(directory),
                        code="E_LEDGER",
                    )
                repair = {
                    "reason": scan.problems[0].code,
                    "offset": scan.good_size,
                    "dropped_bytes": len(scan.tail),
                    "dropped_sha256": sha256_hex(scan.tail),
                    "dropped_text": scan.tail[:_DROPPED_TEXT_MAX].decode("utf-8", "replace"),
                    "after_seq": len(scan.hashes) - 1 if scan.hashes else None,
                }
                with path.open("r+b") as fh:
                    fh.truncate(scan.good_size)
                    fh.flush()
                    os.fsync(fh.fileno())
            led = cls(directory, lock, header, scan.hashes)
        except BaseException:
            lock.release()
            raise
        if repair is not None:
            try:
                led._append_one(REPAIR_KIND, repair, allow_reserved=True)
            except BaseException:
                led.close()
                raise
        return led

    # -- state --------------------------------------------------------------------------------------

    @property
    def head(self) -> str:
        """Hash of the last entry (the genesis value when there is none)."""
        return self._head

    @property
    def count(self) -> int:
        """Number of entries."""
        return len(self._hashes)

    @property
    def header(self) -> dict[str, Any]:
        """A copy of the header as last written."""
        return dict(self._header)

    @property
    def frozen(self) -> bool:
        """Whether `freeze()` has run."""
        return self._frozen

    def root(self) -> str:
        """RFC 6962 Merkle root of the entry hashes so far."""
        return merkle_root_bytes(self._hashes).hex()

    # -- writing ------------------------------------------------------------------------------------

    def _check_writable(self) -> int:
        if self._frozen:
            raise LedgerError("ledger is frozen and refuses appends", source=str(self.dir))
        if self._fd is None or self._lock is None or not self._lock.held:
            raise LedgerError("ledger is closed; Ledger.open it again to append", source=str(self.dir))
        return self._fd

    def append(self, kind: str, body: dict[str, Any]) -> Entry:
        """Append one entry and fsync before returning it. `kind` must not start with `ledger.`."""
        return self._append_one(kind, body, allow_reserved=False)

    def _append_one(self, kind: str, body: dict[str, Any], *, allow_reserved: bool) -> Entry:
        fd = self._check_writable()
        check_kind(kind, allow_reserved=allow_reserved)
        body_json = encode_body(body)
        seq = len(self._hashes)
        digest, line = encode_entry(seq, self._head, kind, body_json)
        self._write(fd, line)
        os.fsync(fd)
        entry = Entry(seq, self._head, digest, kind, loads_exact(body_json))
        self._hashes.append(bytes.fromhex(digest))
        self._head = digest
        return entry

    def append_many(self, items: Iterable[tuple[str, dict[str, Any]]]) -> list[Entry]:
        """Append a batch with one write and one fsync; every item is checked before anything is written.

        Durability trade-off: nothing of the batch is promised until this returns; after a crash any
        prefix of the batch's lines may be present (a torn last line is a `TRUNCATED_TAIL`).
        """
        fd = self._check_writable()
        seq = len(self._hashes)
        head = self._head
        entries: list[Entry] = []
        lines: list[bytes] = []
        for kind, body in items:
            check_kind(kind)
            body_json = encode_body(body)
            digest, line = encode_entry(seq, head, kind, body_json)
            entries.append(Entry(seq, head, digest, kind, loads_exact(body_json)))
            lines.append(line)
            seq += 1
            head = digest
        if not lines:
            return []
        self._write(fd, b"".join(lines))
        os.fsync(fd)
        self._hashes.extend(bytes.fromhex(e.hash) for e in entries)
        self._head = head
        return entries

    def _write(self, fd: int, data: bytes) -> None:
        """One write of all bytes; on failure, cut the file back so no partial line stays behind."""
        try:
            done = os.write(fd, data)
            while done < len(data):  # regular files write fully unless the disk is full or a signal hit
                done += os.write(fd, data[done:])
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._size)
                os.fsync(fd)
            raise
        self._size += len(data)

    def freeze(self) -> FreezeInfo:
        """Seal the ledger: record count, head and Merkle root in `ledger.json`, write the manifest, unlock.

        Order matters for crash safety: entries are already fsynced; the header is replaced atomically;
        then the manifest (covering the header, the entries and any other file put in the folder) is
        written atomically, the lock file removed, and the folder fsynced. Afterwards `append` refuses.
        """
        self._check_writable()
        info = FreezeInfo(entries=len(self._hashes), head=self._head, root=self.root())
        header = {
            **self._header,
            "frozen": True,
            "entries": info.entries,
            "head": info.head,
            "root": info.root,
        }
        write_header(self.dir, header)
        self._header = header
        write_manifest(self.dir, exclude=frozenset({LOCK_NAME}))
        self._frozen = True
        self.close()
        _fsync_dir(self.dir)
        return info

    def close(self) -> None:
        """Release the lock and the file without freezing. Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten close() must not keep the lock for the process's life
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        state = "frozen" if self._frozen else ("open" if self._fd is not None else "closed")
        return f"Ledger({str(self.dir)!r}, entries={self.count}, head={self._head[:12]}…, {state})"


__all__ = ["HEADER_NAME", "MANIFEST_NAME", "FreezeInfo", "Ledger"]
