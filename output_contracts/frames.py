"""Polars helpers shared by the batch and part loops of mining, checking and auditing."""

from __future__ import annotations

from typing import Any

import polars as pl
from polars.datatypes import DataTypeClass


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
