"""The writer lock: one process at a time may append to a ledger.

The lock is `fcntl.flock(LOCK_EX | LOCK_NB)` on the file `ledger.lock` inside the ledger folder, which
holds the holder's pid and host for diagnostics. A second writer, in this or another process, fails at once
with a LedgerError naming the holder. The kernel drops a flock when its holder dies, so a crash never
leaves a lock that blocks: a leftover `ledger.lock` is only a file, and the next writer simply locks it
again (that is the whole of stale-lock handling; no pid guessing). On release the file is unlinked
before the lock is dropped; a writer that opened the old file in between notices that the file it locked
is no longer the one at the path and retries, so two writers can never both hold "the" lock.

POSIX only (fcntl). Caveat: flock is local to one machine; on some network file systems it is advisory or a no-op. Keep
ledgers on local disk while they are written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path

from output_contracts.errors import LedgerError

LOCK_NAME = "ledger.lock"


class WriterLock:
    """An acquired exclusive lock on `<dir>/ledger.lock`; `release()` unlinks the file and unlocks."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as e:
                raise LedgerError(
                    f"cannot create {LOCK_NAME}: {e.strerror}", code="E_LEDGER_LOCKED", source=str(directory)
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise LedgerError(
                    f"ledger is locked by another writer ({holder}); only one process may append at a time",
                    code="E_LEDGER_LOCKED",
                    source=str(directory),
                ) from None
            except OSError as e:  # e.g. a file system without flock support
                os.close(fd)
                raise LedgerError(
                    f"cannot lock {LOCK_NAME}: {e.strerror}", code="E_LEDGER_LOCKED", source=str(directory)
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                break
            os.close(fd)  # we locked a file the previous holder had just unlinked: try again
        else:  # pragma: no cover - needs a pathological race
            raise LedgerError("could not take the ledger lock", code="E_LEDGER_LOCKED", source=str(directory))
        info = f"pid {os.getpid()} on {socket.gethostname()}\n".encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, info, 0)

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Unlink the lock file, then drop the lock. Idempotent."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "holder unknown"
