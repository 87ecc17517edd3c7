"""The one canonical JSON form used by ids, hashes, artifacts and the ledger.

Canonical JSON here means: object keys sorted by code point, no insignificant whitespace, UTF-8 (no
`\\u` escapes for non-ASCII), integers as decimal digits of any size, and floats in the shortest form that
round-trips (orjson's: `0.1`, `1.0`, `1e-7`, `1e+21`, `-0.0`). NaN and infinities are not JSON and are
refused. Every hash in the project is computed over these bytes, so the form is part of the contract.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from output_contracts.errors import io_failure, reading

_OPTS = orjson.OPT_SORT_KEYS
_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def _fragmentize(value: Any) -> Any:
    """Replace integers orjson cannot encode with raw JSON fragments, and refuse non-finite floats."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if _INT64_MIN <= value <= _UINT64_MAX:
            return value
        return orjson.Fragment(str(value).encode())
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite float {value!r} is not JSON")
        return value
    if isinstance(value, dict):
        return {k: _fragmentize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fragmentize(v) for v in value]
    return value


def canonical_json(value: Any) -> bytes:
    """Canonical UTF-8 bytes of `value` (see module docstring). Raises ValueError on NaN/inf."""
    try:
        out = orjson.dumps(value, option=_OPTS)
    except TypeError:
        return orjson.dumps(_fragmentize(value), option=_OPTS)
    if b"null" in out and _has_nonfinite(value):
        raise ValueError("non-finite float is not JSON")
    return out


def _has_nonfinite(value: Any) -> bool:
    """Whether a float anywhere in `value` (dict values, list and tuple items) is NaN or infinite.

    One loop over a stack rather than a generator per container (every receipt with a `null` in it is
    searched so): the exact types first, subclasses by `isinstance` as before."""
    stack = [value]
    pop, push, isfinite = stack.pop, stack.extend, math.isfinite
    while stack:
        v = pop()
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is dict:
            push(v.values())
        elif t is list or t is tuple:
            push(v)
        elif t is float or isinstance(v, float):
            if not isfinite(v):
                return True
        elif isinstance(v, dict):
            push(v.values())
        elif isinstance(v, list | tuple):
            push(v)
    return False


def canonical_str(value: Any) -> str:
    """`canonical_json` as text."""
    return canonical_json(value).decode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """Lowercase hex SHA-256 of bytes (text is UTF-8 encoded)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def json_sha256(value: Any) -> str:
    """SHA-256 of the canonical JSON of `value`."""
    return sha256_hex(canonical_json(value))


def stable_id(prefix: str, *parts: Any, length: int = 12) -> str:
    """A short stable id: `prefix-` + the first `length` hex digits of sha256(canonical_json(parts))."""
    return f"{prefix}-{json_sha256(list(parts))[:length]}"


def loads(data: bytes | str) -> Any:
    """Strict JSON parse (orjson: no NaN, no trailing garbage, UTF-8 only)."""
    return orjson.loads(data)


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Streaming SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def pretty_json(value: Any) -> bytes:
    """Human-friendly but still deterministic JSON (sorted keys, 2-space indent, trailing newline)."""
    return orjson.dumps(_fragmentize(value), option=_OPTS | orjson.OPT_INDENT_2) + b"\n"


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes | Iterable[bytes], *, fsync: bool = True
) -> None:
    """Write to a temp file in the same folder, then rename over `path`: readers never see half a file.

    An OS error of the write itself (a full disk, a file-size limit, a read-only folder) becomes the
    one-line `IOFailure` naming `path`; an error raised by the `data` iterable passes through as it is
    (it is the producer's, not the writer's)."""
    target = Path(path)
    with reading(target, writing=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    fh = os.fdopen(fd, "wb")
    try:
        if isinstance(data, bytes | bytearray):
            _write(fh, data, target)
        else:
            for chunk in data:
                _write(fh, chunk, target)
        with reading(target, writing=True):
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
            fh.close()
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the mode open() would
            os.replace(tmp, target)
    except BaseException:
        # closing flushes what is buffered: after a failed write that fails again, and must not replace
        # the error being raised (a `with` block's close would)
        with contextlib.suppress(OSError):
            fh.close()
        Path(tmp).unlink(missing_ok=True)
        raise


def _write(fh: Any, chunk: bytes, target: Path) -> None:
    try:  # a bare try: free when nothing is raised, and chunks can be many (one receipt a line)
        fh.write(chunk)
    except OSError as e:
        raise io_failure(e, target, writing=True) from e


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | os.PathLike[str], value: Any) -> None:
    """Atomically write `value` as pretty canonical JSON."""
    atomic_write_bytes(path, pretty_json(value))


def chunked_lines(
    read: Callable[[int], bytes], before_read: Callable[[], None] | None = None, size: int = 1 << 16
) -> Iterator[bytes]:
    """The lines (each with its newline; the last one as it ends) of a byte stream read by
    `read(size)` until it returns nothing, with `before_read()` called before each read (a caller
    flushes its output there, so an interactive writer gets its answer before the reader blocks).

    A line longer than one chunk is kept as a list of pieces joined once its newline arrives, so a
    long line costs its length in copying, not its length times the number of reads."""
    for batch in chunked_batches(read, before_read, size):
        yield from batch


def chunked_batches(
    read: Callable[[int], bytes], before_read: Callable[[], None] | None = None, size: int = 1 << 16
) -> Iterator[list[bytes]]:
    """`chunked_lines` a read at a time: the lines each read completes, as one list (never empty),
    given before the next read (and its `before_read`)."""
    pending: list[bytes] = []
    while True:
        if before_read is not None:
            before_read()
        chunk = read(size)
        if not chunk:
            break
        find = chunk.find
        end = find(b"\n")
        if end < 0:
            pending.append(chunk)
            continue
        if pending:
            pending.append(chunk[: end + 1])
            lines = [b"".join(pending)]
            pending.clear()
        else:
            lines = [chunk[: end + 1]]
        start = end + 1
        while (end := find(b"\n", start)) >= 0:
            lines.append(chunk[start : end + 1])
            start = end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
        yield lines
    if pending:
        yield [b"".join(pending)]
