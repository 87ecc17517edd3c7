"""A call's nodes and the places rules read: operands, the node index, kinds.

A rule path is an RFC 6901 pattern into the result (`""` the whole result, `*` any array index, `~*` any
key of a map, `*N` the array member at index N) or, prefixed `$args`, into the arguments. An `Operand` is
one path a rule reads, split into its side and pattern, with the positions of its wildcard tokens: those
positions of a concrete path are its indexes and keys, which pair the instances of two operands (the same
array element, the same map entry). `index_nodes` lists every node of a call under its (side, pattern):
the per-call evaluation of every code reads it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.codes.contract_set import Rule, split_side
from output_contracts.traces.pointers import (
    MAP_TOKEN,
    WILD_TOKENS,
    escape_token,
    fixed_index,
    json_kind,
    unescape_token,
    unfix,
)

NUMERIC_KINDS = ("int", "float")


SCALAR_KINDS = ("null", "bool", "int", "float", "string")


@dataclass(frozen=True)
class Operand:
    """One path a rule reads: its side (`arg`/`result`), pointer pattern and wildcard token positions.

    `wpos` are positions in `pattern.split("/")` (index 0 is the empty token before the first `/`) of its
    wildcard tokens (`*` an array index, `~*` a map key); the same positions of a concrete path's tokens
    are its indexes and keys, which pair instances of two operands with the same wildcard positions.
    `fixed`: (position, index) of its fixed-index tokens (`*0`: the first member), which are no wildcard
    (one node per instance of the rest) and which the concrete path spells as the index itself.
    """

    side: str
    pattern: str
    wpos: tuple[int, ...]
    fixed: tuple[tuple[int, str], ...] = ()

    @classmethod
    def of(cls, rule_path: str) -> Operand:
        side, pattern = split_side(rule_path)
        toks = pattern.split("/")
        fixed = tuple((i, n) for i, t in enumerate(toks) if (n := fixed_index(t)) is not None)
        return cls(side, pattern, tuple(i for i, t in enumerate(toks) if t in WILD_TOKENS), fixed)

    def key_of(self, path: str) -> tuple[str, ...]:
        """The index tuple of a concrete path at this operand."""
        if not self.wpos:
            return ()
        toks = path.split("/")
        return tuple(toks[i] for i in self.wpos)

    def concrete(self, key: tuple[str, ...]) -> str:
        """This operand's concrete path for an index tuple (the inverse of `key_of`)."""
        toks = self.pattern.split("/")
        for i, k in zip(self.wpos, key, strict=True):
            toks[i] = k
        for i, n in self.fixed:
            toks[i] = n
        return "/".join(toks)

    def display(self, path: str) -> str:
        """A concrete path as written in rules: argument paths keep their `$args` prefix."""
        return "$args" + path if self.side == "arg" else path


#: A call's nodes: (side, pattern) -> [(concrete path, value)].
Nodes = dict[tuple[str, str], list[tuple[str, Any]]]


#: Fixed-index aliases of one side: leaf pattern (`/a/*/b`) -> [(rule pattern `/a/*0/b`, its fixed tokens)].
Aliases = dict[str, list[tuple[str, tuple[tuple[int, str], ...]]]]


def aliases_of(ops: Sequence[Operand]) -> dict[str, Aliases]:
    """Per side, the fixed-index aliases the operands need (`index_nodes`' `fixed`)."""
    out: dict[str, Aliases] = {}
    for op in ops:
        if op.fixed:
            entry = (op.pattern, op.fixed)
            bucket = out.setdefault(op.side, {}).setdefault(unfix(op.pattern), [])
            if entry not in bucket:
                bucket.append(entry)
    return out


#: A rule's per-call evaluation: the concrete paths (rule notation) where it is broken.
PathFinder = Callable[[Nodes], Sequence[str]]


#: Several rules' per-call evaluation at once: (rule, concrete path) of each violation.
GroupFinder = Callable[[Nodes], list[tuple[Rule, str]]]


def index_nodes(
    side: str, doc: Any, out: Nodes, maps: frozenset[str] = frozenset(), fixed: Aliases | None = None
) -> None:
    """Every node of `doc` under (side, pattern) -> [(concrete path, value)] (order is irrelevant).

    `maps`: the tool's map parents on this side; the keys of an object there are indexed as `~*`.
    `fixed`: the fixed-index patterns rules read (`aliases_of`): a node whose concrete indexes match is
    also indexed under the rule's pattern (`/payment_history/0/amount` under `/payment_history/*0/amount`)."""
    stack: list[tuple[str, str, Any]] = [("", "", doc)]
    pop, push = stack.pop, stack.append
    while stack:
        path, pattern, v = pop()
        key = (side, pattern)
        bucket = out.get(key)
        if bucket is None:
            out[key] = [(path, v)]
        else:
            bucket.append((path, v))
        if fixed and pattern in fixed:
            toks = path.split("/")
            for alias, where in fixed[pattern]:
                if all(toks[i] == n for i, n in where):
                    out.setdefault((side, alias), []).append((path, v))
        t = type(v)
        if t is dict:
            if maps and pattern in maps:
                pat = pattern + "/" + MAP_TOKEN
                for k, child in v.items():
                    plain = type(k) is str and "~" not in k and "/" not in k
                    push((path + "/" + (k if plain else escape_token(str(k))), pat, child))
                continue
            for k, child in v.items():
                plain = type(k) is str and "~" not in k and "/" not in k
                tok = "/" + (k if plain else escape_token(str(k)))
                push((path + tok, pattern + tok, child))
        elif t is list:
            pat = pattern + "/*"
            for i, child in enumerate(v):
                push((f"{path}/{i}", pat, child))


def resolve(doc: Any, path: str) -> tuple[bool, Any]:
    """(present, value) of a concrete RFC 6901 path in `doc` (array tokens are indexes)."""
    if path == "":
        return True, doc
    cur = doc
    for tok in path.split("/")[1:]:
        if isinstance(cur, dict):
            key = unescape_token(tok)
            if key not in cur:
                return False, None
            cur = cur[key]
        elif isinstance(cur, list):
            if not tok.isdigit() or int(tok) >= len(cur):
                return False, None
            cur = cur[int(tok)]
        else:
            return False, None
    return True, cur


KIND_OF_TYPE = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    list: "array",
    dict: "object",
}


def kind_of(v: Any) -> str:
    """The JSON kind of a value (`other` for what JSON cannot hold)."""
    k = KIND_OF_TYPE.get(type(v))
    if k is not None:
        return k
    try:
        return json_kind(v)
    except TypeError:
        return "other"


def is_num(v: Any) -> bool:
    return kind_of(v) in NUMERIC_KINDS


def side_doc(side: str, arguments: Any, result: Any) -> Any:
    return arguments if side == "arg" else result


def child_missing(parent: dict[Any, Any], key: str, tok: str, canonical: bool) -> bool:
    """Whether an object node has no child indexed under token `tok` (as `index_nodes` indexes keys):
    `key` is the token unescaped, `canonical` whether escaping it again gives `tok`."""
    if canonical and key in parent:
        return False
    return all(escape_token(str(k)) != tok for k in parent)
