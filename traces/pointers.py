"""The notation of paths and patterns, in plain Python (no polars): RFC 6901 reference tokens, the JSON
kinds, and the pattern tokens of leaves and rules.

`path` is the RFC 6901 pointer with literal array indexes; a pattern replaces every array index with `*`
(`/items/2/price` has pattern `/items/*/price`); an object whose keys are data (a map, recognised by the
miner from corpus evidence, `output_contracts.mining.maps`) has its keys written `~*` (`/variants/~*/price`):
`~` followed by anything but `0` or `1` is not a valid RFC 6901 token, so this spelling cannot clash with a
real key. A rule path may name one array member, `*N` (`*0`: the first). `generalize` applies a map
decision to a pattern.
"""

from __future__ import annotations

import re
from typing import Any

#: The JSON kinds a node has (bool is not int).
KINDS = ("null", "bool", "int", "float", "string", "array", "object")


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
