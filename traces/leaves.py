"""Flatten JSON values into one row per node (`leaves.parquet`), and rebuild them.

Every node is a row, containers included, so that presence of an object or array (and its size) is as
visible to mining as a scalar is; the root is the row with path `""`. `path` is the RFC 6901 pointer
with literal array indexes; `pattern` replaces every array index with `*`, so `/items/2/price` has
pattern `/items/*/price`. An object key that is literally `*` is indistinguishable from an index in a
pattern; that is accepted and documented in docs/formats.md.

Objects whose keys are data, not field names (`{"variants": {"<item id>": {...}}}`), are recognised
later, from corpus evidence (`output_contracts.mining.maps`); their keys are then written `~*` in a pattern
(`/variants/~*/price`): `~` followed by anything but `0` or `1` is not a valid RFC 6901 token, so this
spelling cannot clash with a real key. `generalize` applies such a decision to a pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import polars as pl

KINDS = ("null", "bool", "int", "float", "string", "array", "object")
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


def escape_token(key: str) -> str:
    """RFC 6901 escaping of one reference token."""
    return key.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    """Inverse of `escape_token`."""
    return token.replace("~1", "/").replace("~0", "~")


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value (bool is not int)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


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


#: The pattern token of an array index, and of an object key that is data (a map key).
INDEX_TOKEN = "*"
MAP_TOKEN = "~*"
WILD_TOKENS = frozenset((INDEX_TOKEN, MAP_TOKEN))
#: A rule-path token naming one fixed array index: `*0` is the first member (`/payment_history/*0/amount`).
#: Leaves never carry it (their patterns write every index `*`); rules may, and the checker matches such a
#: token against the concrete index.
_FIXED_RE = re.compile(r"\*(0|[1-9][0-9]{0,8})")


def fixed_index(token: str) -> str | None:
    """The index a fixed-index token names (`*0` -> "0"), else None."""
    m = _FIXED_RE.fullmatch(token)
    return m.group(1) if m else None


def unfix(pattern: str) -> str:
    """A rule pattern with every fixed index written as any index (`/a/*0/b` -> `/a/*/b`): the pattern of
    the leaves it picks from."""
    if "/*" not in pattern:
        return pattern
    return "/".join(INDEX_TOKEN if fixed_index(t) is not None else t for t in pattern.split("/"))


def is_wild(pattern: str) -> bool:
    """Whether a pattern has a wildcard token (an array index or a map key)."""
    return any(t in WILD_TOKENS for t in pattern.split("/"))


def generalize(pattern: str, maps: frozenset[str] | set[str]) -> str:
    """`pattern` with the key below every map parent in `maps` written as `MAP_TOKEN`.

    `maps` holds generalized parent patterns (`/variants`, `/users/*/cards`, `""` for the root), so a
    nested map is found as the walk down the tokens builds the generalized prefix."""
    if not maps or (pattern == "" and "" not in maps):
        return pattern
    toks = pattern.split("/")
    cur = toks[0]  # "" (patterns start with "/")
    for tok in toks[1:]:
        # An array where a map usually is keeps its index token: only object keys are map keys.
        cur = cur + "/" + (MAP_TOKEN if cur in maps and tok != INDEX_TOKEN else tok)
    return cur


def parent_pattern(pattern: str) -> str:
    """Pattern of the containing node (`/items/*/price` -> `/items/*`; `/a` -> `""`)."""
    return pattern.rpartition("/")[0]
