"""Polars helpers shared by the batch and part loops of mining, checking and auditing, and by the
writers of the corpus files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from polars.datatypes import DataTypeClass


def pack_pair(a: str, b: str) -> pl.Expr:
    """Two integer id columns below 2^32 as one UInt64 (`a` high, `b` low): a pair deduplicated,
    tested with one `is_in`, joined or sorted on one integer instead of two columns. Exact, and
    ordered as (a, b)."""
    return pl.col(a).cast(pl.UInt64) * (1 << 32) + pl.col(b).cast(pl.UInt64)


def _holds_bytes(dtype: pl.DataType | DataTypeClass) -> bool:
    """Whether a column of this type stores string or binary data (at any depth)."""
    if isinstance(dtype, pl.String | pl.Binary):
        return True
    if isinstance(dtype, pl.List | pl.Array):
        return _holds_bytes(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_holds_bytes(f.dtype) for f in dtype.fields)
    return False


def detach(value: Any) -> Any:
    """`value` with every DataFrame in it (also inside tuples and lists) owning its memory.

    Why: a frame computed from a big one can share the big one's buffers. Its columns may be many
    chunks, each a slice of a larger array (a few violations out of a 6M-row batch came back as 442
    chunks a column), and a String or Binary column is a column of views into shared data buffers that a
    filter, join or group-by copies as views, keeping the whole buffers alive. A small result kept
    across the iterations of a batch or part loop (violations of one batch, statistics of one part, the
    candidate sample) then pins the data of every batch or part it came from, and memory grows with the
    corpus (measured: about 85 MiB a batch in the 10M-call audit) although each iteration frees its own
    frame. Rechunking copies the slices into one contiguous chunk a column; rebuilding the strings writes
    fresh buffers. Other values are returned as they are.
    """
    if isinstance(value, pl.DataFrame):
        strings = [n for n, t in value.schema.items() if isinstance(t, pl.String)]
        nested = [n for n, t in value.schema.items() if n not in strings and _holds_bytes(t)]
        out = value.rechunk()  # a copy when a column has several chunks, else the same columns
        if not strings and not nested:
            return out
        # Building new strings (concatenating "") writes fresh buffers; nulls stay null.
        out = out.with_columns(pl.concat_str([pl.col(n), pl.lit("")]).alias(n) for n in strings)
        if nested:  # rare: an Arrow round trip writes fresh (non-view) buffers
            copied = pl.from_arrow(value.select(nested).to_arrow())
            assert isinstance(copied, pl.DataFrame)
            out = out.with_columns(copied.get_column(n) for n in nested)
        return out
    if isinstance(value, tuple):
        return tuple(detach(v) for v in value)
    if isinstance(value, list):
        return [detach(v) for v in value]
    return value


class ExactGroups:
    """Rows written in row groups of exactly `size` rows, whatever the pieces they are added in (the
    last group holds the rest): a file's bytes then do not depend on where its pieces were cut."""

    def __init__(self, write: Callable[[pl.DataFrame], None], size: int) -> None:
        self.write = write
        self.size = size
        self.held: list[pl.DataFrame] = []
        self.n_held = 0
        self.written = False

    def add(self, rows: pl.DataFrame) -> None:
        self.held.append(rows)
        self.n_held += rows.height
        if self.n_held >= self.size:
            rows = pl.concat(self.held, rechunk=False)
            full = self.n_held // self.size * self.size
            for s in range(0, full, self.size):
                self.write(rows.slice(s, self.size))
            rest = rows.slice(full)
            self.held, self.n_held, self.written = [rest], rest.height, True

    def close(self, empty: pl.DataFrame) -> None:
        """Write the rest; `empty` (one empty group, for the schema) when no row came at all."""
        if self.n_held or not self.written:
            self.write(pl.concat(self.held) if self.n_held else empty)


def write_ipc(
    frame: pl.DataFrame, path: Path, batch_rows: int | None = None, compression: str | None = "lz4"
) -> None:
    """Write `frame` as an Arrow IPC file (for `pl.read_ipc`, or `pa.ipc.open_file` a batch at a
    time), in record batches of exactly `batch_rows` rows (the last one holds the rest) when given.
    pyarrow's writer: it took 0.6x the CPU of polars' `write_ipc` (a streaming sink) on a chunk of the
    mining view's rows. A Categorical column of several chunks exports one dictionary a chunk, which an
    IPC file cannot hold: they are unified."""
    table = frame.to_arrow().unify_dictionaries()
    if batch_rows is not None:  # one chunk, so every batch but the last holds exactly `batch_rows` rows
        table = table.combine_chunks()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as w:
        w.write_table(table, max_chunksize=batch_rows)


@dataclass(frozen=True)
class StringBytes:
    """A String Series as its Arrow buffers, for readers that work byte by byte in numpy (FORMAT's
    shapes, ISO dates): `data[offsets[i]:offsets[i + 1]]` is the UTF-8 of row i (empty for null),
    `lengths` its byte counts."""

    array: pa.LargeStringArray
    offsets: np.ndarray
    data: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, strings: pl.Series) -> StringBytes:
        arr = strings.rechunk().to_arrow()
        if not isinstance(arr, pa.LargeStringArray):  # pragma: no cover - polars exports String so today
            arr = pa.array(arr).cast(pa.large_string())
        _validity, offsets_buf, data_buf = arr.buffers()
        n = len(arr)
        if offsets_buf is None:  # pragma: no cover - an empty array may come without buffers
            offsets = np.zeros(n + 1, dtype=np.int64)
        else:
            offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + n + 1]
        data = np.zeros(0, dtype=np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
        return cls(arr, offsets, data, np.diff(offsets))

    def ascii(self) -> np.ndarray:
        """Whether every byte of each string is below 0x80 (true for null)."""
        over = self.data >= 0x80
        if not over.any():  # the common case (ids, dates, codes): no running count needed
            return np.ones(self.lengths.size, dtype=bool)
        high = np.zeros(self.data.size + 1, dtype=np.int64)
        np.cumsum(over, out=high[1:])
        return high[self.offsets[1:]] == high[self.offsets[:-1]]

    def mapped(self, table: np.ndarray) -> pl.Series:
        """Every byte through `table` (256 bytes), same offsets and nulls: valid UTF-8 when the table
        maps ASCII to ASCII and leaves the other bytes alone."""
        a = self.array
        validity, offsets_buf, data_buf = a.buffers()
        if data_buf is None or len(a) == 0:
            return from_arrow_strings(a)
        # `take`: about twice as fast as indexing by a byte array (numpy's general fancy-index path)
        data = pa.py_buffer(table.take(self.data))
        out = pa.LargeStringArray.from_buffers(len(a), offsets_buf, data, validity, a.null_count, a.offset)
        return from_arrow_strings(out)


class _ArrowCArray:
    """An Arrow array seen only through the Arrow PyCapsule interface (`__arrow_c_array__`)."""

    __slots__ = ("array",)

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
        return self.array.__arrow_c_array__(requested_schema)


def from_arrow_strings(array: pa.LargeStringArray) -> pl.Series:
    """A String Series of a large-string Arrow array, zero-copy, through the Arrow PyCapsule interface:
    polars' path for a pyarrow array first imports `pyarrow.compute` (0.05 CPU-s, once per process,
    for a cast this array never needs)."""
    return pl.Series(_ArrowCArray(array)).cast(pl.String)
