"""The items of a list as UNIQUE judges them, in plain Python: which token of a pattern is the item
index (`item_split`), which list and index a concrete path is (`instance_of`), a judged value's identity
(`judged_key`) and a composite item's (`identities`)."""

from __future__ import annotations

from collections.abc import Sequence

from output_contracts.codes.nodes import Nodes, Operand


def item_split(pattern: str) -> int | None:
    """How many tokens follow the last `*` of a UNIQUE pattern (0 for `A/*`, 1 for `A/*/f`), or None
    when the pattern is neither form."""
    toks = pattern.split("/")
    if len(toks) >= 2 and toks[-1] == "*":
        return 0
    if len(toks) >= 3 and toks[-2] == "*" and toks[-1] not in ("*", "~*"):
        return 1
    return None


#: Numbers at or beyond 2^53 in magnitude are not judged: a corpus stores numbers as float64, where
#: distinct ids of that size (snowflake ids) can collide.
EXACT_LIMIT = 2.0**53


def judged_key(v: object) -> tuple[int, object] | None:
    """The identity of a judged value: (0, number) or (1, string); None for what is not judged."""
    t = type(v)
    if t is int or t is float:
        x = float(v)  # type: ignore[arg-type]
        return (0, x) if abs(x) < EXACT_LIMIT else None
    if t is str:
        return (1, v)
    return None


def instance_of(path: str, after: int) -> tuple[str, int]:
    """(list path, index) of a concrete path at a UNIQUE pattern with `after` tokens after the `*`."""
    toks = path.split("/")
    cut = len(toks) - after - 1
    return "/".join(toks[:cut]), int(toks[cut])


#: The most fields a composite UNIQUE reads.
MAX_FIELDS = 16


def list_of(path: str) -> str:
    """The list pattern of a composite UNIQUE field (`/flights/*/date` -> `/flights/*`)."""
    return path.rpartition("/")[0]


def identities(nodes: Nodes, ops: Sequence[Operand]) -> dict[tuple[str, int], tuple[tuple[int, object], ...]]:
    """Per item (list path, index) of a composite rule: its (field, value) pairs, judged values only."""
    items: dict[tuple[str, int], dict[int, object]] = {}
    for fi, op in enumerate(ops):
        for path, v in nodes.get((op.side, op.pattern), ()):
            k = judged_key(v)
            if k is not None:
                items.setdefault(instance_of(path, 1), {})[fi] = k
    return {item: tuple(sorted(fields.items())) for item, fields in items.items()}
