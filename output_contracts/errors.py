"""User-facing errors: one class per package, each with a stable code.

An error means "cannot run" (bad input, bad usage); findings such as violations are data, never
exceptions. The CLI catches `ContractsError` once, prints `error[CODE]: file:line: message` on stderr
and exits 2.
"""

from __future__ import annotations

import errno
import gzip
import os
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager


class ContractsError(Exception):
    """Base of every error the CLI renders as one line and exit code 2."""

    default_code = "E_INPUT"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.source = source
        self.line = line
        self.field = field

    def location(self) -> str:
        """`file:line: ` prefix (empty when the error is not tied to a file)."""
        if self.source is None:
            return ""
        if self.line is None:
            return f"{self.source}: "
        return f"{self.source}:{self.line}: "

    def render(self) -> str:
        """The one line the CLI prints: `error[CODE]: file:line: message (field X)`."""
        field = f" (field '{self.field}')" if self.field and self.field not in self.message else ""
        return f"error[{self.code}]: {self.location()}{self.message}{field}"

    def __str__(self) -> str:
        return self.render()


class UsageError(ContractsError):
    """Bad combination of options or arguments."""

    default_code = "E_USAGE"


class ConfigError(ContractsError):
    """Invalid project configuration (contracts.toml / [tool.contracts])."""

    default_code = "E_CONFIG"


class SchemaError(ContractsError):
    """An artifact (contract set, registry, case file, ...) does not match its JSON Schema."""

    default_code = "E_SCHEMA_INVALID"


class TraceError(ContractsError):
    """Unreadable trace input or corpus."""

    default_code = "E_TRACE"


class MiningError(ContractsError):
    """Mining cannot run (empty clean set, bad thresholds, ...)."""

    default_code = "E_MINE"


class CheckError(ContractsError):
    """Checking cannot run (bad contract set, fold mismatch, ...)."""

    default_code = "E_CHECK"


class RepairError(ContractsError):
    """Repair replay cannot run (bad cases, policy failure, ...)."""

    default_code = "E_REPAIR"


class LedgerError(ContractsError):
    """Ledger cannot be created, opened or appended to (lock held, frozen, ...)."""

    default_code = "E_LEDGER"


class ReportError(ContractsError):
    """An input of `contracts report` is not an artifact it knows (empty, not JSON, unknown shape)."""

    default_code = "E_REPORT"


class IOFailure(ContractsError):
    """A file cannot be opened, decompressed, read or written (permissions, a folder where a file is
    expected, a damaged or truncated `.gz`, a full disk)."""

    default_code = "E_IO"


def io_failure(
    e: BaseException, path: str | os.PathLike[str] | None = None, *, writing: bool = False
) -> IOFailure:
    """The one-line error for an OS or decompression failure on `path` (or the path the error names).

    The one place such errors are worded: readers wrap their file access with `reading`, the CLI turns
    any that escape into this (`output_contracts.cli.common`), so no command ends in a traceback on them."""
    name = path if path is not None else getattr(e, "filename", None)
    src = os.fspath(name) if name is not None else None
    verb = "write" if writing else "read"
    if isinstance(e, gzip.BadGzipFile):
        msg = f"not a gzip file, although its name ends in .gz ({e})"
    elif isinstance(e, EOFError):
        msg = "compressed stream ends early: the .gz file is truncated"
    elif isinstance(e, zlib.error):
        msg = f"corrupt compressed data ({e})"
    elif isinstance(e, IsADirectoryError):
        msg = "is a folder; a file is expected here"
    elif isinstance(e, NotADirectoryError):
        msg = "is a file; a folder is expected here"
    elif isinstance(e, PermissionError):
        msg = f"permission denied: cannot {verb} it"
    elif isinstance(e, FileNotFoundError):
        msg = "no such file or folder"
    elif isinstance(e, OSError) and e.errno == errno.ENOSPC:
        msg = "no space left on the device (nothing was half-written: outputs are written to a temporary file, then renamed)"
    elif isinstance(e, OSError):
        msg = f"cannot {verb} it: {e.strerror or e}"
    else:
        msg = f"cannot {verb} it: {e}"
    return IOFailure(msg, source=src)


#: What `reading` and the CLI translate: OS errors, and the errors a damaged `.gz` raises.
IO_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error)

_OS_ERROR_IN_TEXT = re.compile(r"\(os error (\d+)\)")


def os_error_of(e: BaseException) -> OSError | None:
    """The OS error inside an exception a library raised in its own type: polars reports a failed
    Parquet write (a full disk, a file-size limit) as `ComputeError: ... (os error 28)`. None when
    there is none."""
    if isinstance(e, OSError):
        return e
    m = _OS_ERROR_IN_TEXT.search(str(e))
    if m is None:
        return None
    n = int(m.group(1))
    return OSError(n, os.strerror(n))


@contextmanager
def reading(path: str | os.PathLike[str], *, writing: bool = False) -> Iterator[None]:
    """Turn an OS or decompression error raised inside into an `IOFailure` naming `path`."""
    try:
        yield
    except IO_ERRORS as e:
        raise io_failure(e, path, writing=writing) from e
    except ContractsError:
        raise
    except Exception as e:  # a library's own error type around an OS error (`os_error_of`)
        inner = os_error_of(e)
        if inner is None:
            raise
        raise io_failure(inner, path, writing=writing) from e
