"""Flatten JSON values into one row per node (`leaves.parquet`), and rebuild them.

Every node is a row, containers included, so that presence of an object or array (and its size) is as
visible to mining as a scalar is; the root is the row with path `""`. `path` is the RFC 6901 pointer
with literal array indexes, `pattern` the same with every index written `*`
(`output_contracts.traces.pointers` holds the notation). An object key that is literally `*` is
indistinguishable from an index in a pattern; that is accepted and documented in docs/formats.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from output_contracts.traces.pointers import KINDS, escape_token, unescape_token

SIDES = ("arg", "result")
KIND_DTYPE = pl.Enum(list(KINDS))
SIDE_DTYPE = pl.Enum(list(SIDES))

#: Column order and types of `leaves.parquet`. A leaf names its call by `cid` alone (the call's
#: `call_id` as an integer, `calls.parquet` has both); corpora of format 1 also carry `call_id`.
LEAF_SCHEMA: dict[str, pl.DataType] = {
    "cid": pl.UInt64(),
    "tool": pl.Categorical(),
    "task_id": pl.Categorical(),
    "side": SIDE_DTYPE,
    "path": pl.String(),
    "pattern": pl.Categorical(),
    "kind": KIND_DTYPE,
    "num": pl.Float64(),
    "str": pl.String(),
    "len": pl.Int64(),
}

Leaf = tuple[str, str, str, float | None, str | None, int | None]
"""(path, pattern, kind, num, str, len)."""


def tp_expr() -> pl.Expr:
    """One UInt64 per literal (tool, side, pattern) of a leaf frame: tool code << 33 | side << 32 |
    pattern code. The codes are the frame's Categorical physical codes, so the key holds within the one
    frame (or query) it is computed on, never across reads."""
    u64 = pl.UInt64()
    return (
        pl.col("tool").to_physical().cast(u64) * (1 << 33)
        + pl.col("side").to_physical().cast(u64) * (1 << 32)
        + pl.col("pattern").to_physical().cast(u64)
    ).alias("tp")


def tp_patterns(frame: pl.DataFrame) -> pl.DataFrame:
    """The distinct `tp` keys (`tp_expr`) of a leaf frame holding `tp`, `tool`, `side` and `pattern`,
    each with its (tool, side, pattern) as Strings: the small table that maps one frame's codes to a
    file's (the view's pattern dictionary, mining's pattern ids)."""
    return (
        frame.group_by("tp")
        .agg(pl.col("tool").first(), pl.col("side").first(), pl.col("pattern").first())
        .with_columns(
            pl.col("tool").cast(pl.String), pl.col("side").cast(pl.String), pl.col("pattern").cast(pl.String)
        )
    )


def flatten(value: Any) -> Iterator[Leaf]:
    """Yield every node of `value` in document order (pre-order, keys in their given order)."""
    stack: list[tuple[str, str, Any]] = [("", "", value)]
    while stack:
        path, pattern, v = stack.pop()
        if v is None:
            yield (path, pattern, "null", None, None, None)
        elif v is True or v is False:
            yield (path, pattern, "bool", 1.0 if v else 0.0, None, None)
        elif isinstance(v, int):
            yield (path, pattern, "int", float(v), None, None)
        elif isinstance(v, float):
            yield (path, pattern, "float", v, None, None)
        elif isinstance(v, str):
            yield (path, pattern, "string", None, v, len(v))
        elif isinstance(v, list):
            yield (path, pattern, "array", None, None, len(v))
            pat = pattern + "/*"
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{path}/{i}", pat, v[i]))
        elif isinstance(v, dict):
            yield (path, pattern, "object", None, None, len(v))
            items = list(v.items())
            for k, child in reversed(items):
                tok = "/" + escape_token(str(k))
                stack.append((path + tok, pattern + tok, child))
        else:
            raise TypeError(f"not a JSON value at '{path}': {type(v).__name__}")


def rebuild(leaves: list[Leaf]) -> Any:
    """Inverse of `flatten` for leaves in the order `flatten` yields them (used by property tests)."""
    if not leaves:
        raise ValueError("no leaves")
    nodes: dict[str, Any] = {}
    root: Any = None
    for path, _pattern, kind, num, s, _ln in leaves:
        if kind == "object":
            node: Any = {}
        elif kind == "array":
            node = []
        elif kind == "null":
            node = None
        elif kind == "bool":
            node = bool(num)
        elif kind == "int":
            node = int(num) if num is not None else None
        elif kind == "float":
            node = num
        else:
            node = s
        if path == "":
            root = node
        else:
            parent_path, _, token = path.rpartition("/")
            parent = nodes[parent_path]
            if isinstance(parent, list):
                parent.append(node)
            else:
                parent[unescape_token(token)] = node
        if kind in ("object", "array"):
            nodes[path] = node
    return root
