"""What every property code shares: operands, a call's indexed nodes, violations, and the interface.

A property code (`REQUIRED`, `DOMAIN`, ...) is one module in this package with one `PropertyCode`
subclass. It says everything about the code except how the miner finds it (that is
`output_contracts.mining.rule_classes`): its validation, its one-line description, its witness text, and its two
evaluations — per call, in plain Python over the call's indexed nodes (`find`), and vectorised, in
polars over the hits of a corpus's leaves joined to the rule operands (`vectorised`). The engine
(`output_contracts.codes.engine.evaluate`) is a driver over the table of codes (`output_contracts.codes.table`); a property
test holds the two evaluations to the same answers.

Paths: a rule path is an RFC 6901 pattern into the result (`""` the whole result, `*` any array
index, `~*` any key of a map) or, prefixed `$args`, into the arguments. An `Operand` is one path a rule
reads, split into its side and pattern, with the positions of its wildcard tokens: those positions of
a concrete path are its indexes and keys, which pair the instances of two operands (the same array
element, the same map entry).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import polars as pl

from output_contracts.codes.contract_set import Rule, split_side
from output_contracts.errors import CheckError
from output_contracts.frames import pack_pair
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.leaves import (
    KINDS,
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
class Violation:
    """One broken rule at one concrete place of one call.

    `observed` is the JSON value found; for a missing field it is None with `present=False`, which
    keeps "absent" distinct from "present and null" (`observed=None, present=True`).
    """

    code: str
    rule: str
    path: str
    expected: Any
    observed: Any
    present: bool
    detail: str
    #: the call id of the earlier call a cross-call violation (CONSISTENT) disagrees with
    refers: str | None = None

    def sort_key(self) -> tuple[str, str]:
        """Order inside a receipt: by rule id, then concrete path (the order `check_corpus` uses)."""
        return (self.rule, self.path)

    def sentence(self) -> str:
        """The v1 rendering: one human sentence naming the place, the expectation and the evidence."""
        if self.code == "REQUIRED":
            found = "it is missing"
        else:
            found = f"observed {canonical_str(self.observed)}"
        exp = self.expected if isinstance(self.expected, str) else canonical_str(self.expected)
        return f"{self.code} at {self.path or '(whole result)'}: expected {exp}, {found} ({self.detail})."


# ----------------------------------------------------------------------------------------------------
# Operands and a call's nodes


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


# ----------------------------------------------------------------------------------------------------
# Witness text


def name(path: str) -> str:
    """How a detail sentence names a place: the pointer without its leading slash (`items/2/price`)."""
    return path[1:] if path.startswith("/") else (path or "the whole result")


def returned(path: str, shown: str) -> str:
    """`available=-3`, or `[1,2] as the whole result` for the root."""
    return f"{shown} as the whole result" if path == "" else f"{name(path)}={shown}"


@dataclass(frozen=True)
class At:
    """Where a witness is rendered: the call, the concrete path (rule notation) and what is there."""

    arguments: Any
    result: Any
    path: str  # rule notation (`$args/...` on the argument side)
    raw: str  # the same path without its side prefix
    observed: Any  # the value at `path` (None when absent)
    ops: tuple[Operand, ...]  # the rule's paths as operands (no implied operands)

    @property
    def shown(self) -> str:
        return canonical_str(self.observed)


# ----------------------------------------------------------------------------------------------------
# The vectorised side: rule entries and the hits of a batch of leaves


@dataclass(frozen=True)
class RuleEntry:
    """One rule of one checker in a vectorised pass: `ridx` its row id, `k` the join key (the fold in
    cross mode, else 0), `fold` its checker, `ops` its operands (`PropertyCode.operands`)."""

    ridx: int
    k: int
    fold: int | None
    rule: Rule
    ops: tuple[Operand, ...]


#: Columns of a hit: a leaf of a checked call joined to one operand of one rule. `skey` is a key of the
#: string value `str` (null with it): equal keys are equal strings within a pass. On a corpus with a
#: mining view it is the view's UInt32 string code, so the codes that group, deduplicate or join by
#: string value (FORMAT, DATE_ORDER) hash integers, not text; without a view it is `str` itself.
HIT_COLS = ["cid", "k", "ridx", "op", "path", "kind", "num", "str", "skey", "len"]
#: One bit per JSON kind; a TYPE rule's allowed kinds are the OR of theirs (`number` = int | float).
KIND_BIT = {k: 1 << i for i, k in enumerate(KINDS)}
NUMERIC_BITS = KIND_BIT["int"] | KIND_BIT["float"]


def rule_string_key(hits: pl.LazyFrame) -> pl.Expr | None:
    """One UInt64 key of a hit's (rule `ridx`, string key `skey`), when `skey` is the view's UInt32 code
    (HIT_COLS), else None. Deduplicating or matching pairs on one integer (`is_first_distinct`,
    `is_in`) costs about a third of a two-column `unique` or join."""
    if hits.collect_schema()["skey"] != pl.UInt32:
        return None
    return pack_pair("ridx", "skey").alias("_rs")


def empty_hits() -> pl.LazyFrame:
    """An empty violations frame (cid, ridx, path, present)."""
    return pl.LazyFrame(
        schema={"cid": pl.UInt64, "ridx": pl.UInt32, "path": pl.String, "present": pl.Boolean}
    )


def op_hits(hits: pl.LazyFrame, i: int) -> pl.LazyFrame:
    """The hits of operand `i`."""
    return hits.filter(pl.col("op") == i)


def with_key(df: pl.LazyFrame, entries: Sequence[RuleEntry], i: int) -> pl.LazyFrame:
    """Add `key`, the operand's index tuple joined by '/', to hits of operand `i`.

    An operand without wildcards has the empty tuple as key (""): only the hits of operands with
    wildcards have their paths split into tokens."""
    wild = [e for e in entries if len(e.ops) > i and e.ops[i].wpos]
    no_key = df.with_columns(pl.lit("").alias("key"))
    if not wild:
        return no_key
    wp = pl.DataFrame(
        {"ridx": [e.ridx for e in wild], "wpos": [list(e.ops[i].wpos) for e in wild]},
        schema={"ridx": pl.UInt32, "wpos": pl.List(pl.Int64)},
    )
    keyed = (
        df.join(wp.lazy(), on="ridx")
        .with_columns(pl.col("path").str.split("/").list.gather(pl.col("wpos")).list.join("/").alias("key"))
        .drop("wpos")
    )
    if len(wild) == sum(1 for e in entries if len(e.ops) > i):
        return keyed
    wild_ids = pl.Series([e.ridx for e in wild], dtype=pl.UInt32).implode()
    return pl.concat([no_key.filter(~pl.col("ridx").is_in(wild_ids)), keyed])


def broken(df: pl.LazyFrame, path: pl.Expr | str = "path") -> pl.LazyFrame:
    """Hits that break their rule as violations (cid, ridx, path, present = True)."""
    p = pl.col(path) if isinstance(path, str) else path
    return df.select("cid", "ridx", p.alias("path"), pl.lit(True).alias("present"))


def outside(hits: pl.LazyFrame, allowed: Sequence[tuple[int, Sequence[str]]], col: str) -> pl.LazyFrame:
    """The hits whose `col` is not among their rule's allowed strings (`allowed`: (ridx, strings) per
    rule), as violations: the set-membership test of DOMAIN (values) and FORMAT (shapes)."""
    table = pl.DataFrame(
        {"ridx": [r for r, vs in allowed for _ in vs], col: [v for _r, vs in allowed for v in vs]},
        schema={"ridx": pl.UInt32, col: pl.String},
    )
    return broken(hits.join(table.lazy(), on=["ridx", col], how="anti"))


def display(entries: Sequence[RuleEntry], df: pl.LazyFrame, i: int) -> pl.LazyFrame:
    """Prefix `$args` to paths of operand `i` when it is an argument path."""
    argish = [e.ridx for e in entries if len(e.ops) > i and e.ops[i].side == "arg"]
    if not argish:
        return df
    return df.with_columns(
        pl.when(pl.col("ridx").is_in(argish))
        .then(pl.concat_str(pl.lit("$args"), pl.col("path")))
        .otherwise(pl.col("path"))
        .alias("path")
    )


@dataclass(frozen=True)
class OpRow:
    """One row of the operand table the leaves are joined to: operand `op` of rule `ridx` (or of the
    group `ridx`, by the code's own convention) at (side, pattern) of `tool`, in checker `k`.

    A `lean` row is joined apart and keeps only (cid, ridx, aux) of the leaves that match it: for
    operands whose presence matters but not their paths or values (REQUIRED's children under a parent
    without wildcards); `aux` is a number the code carries along (REQUIRED: the rule's group)."""

    k: int
    tool: str
    side: str
    pattern: str
    ridx: int
    op: int
    aux: int = 0
    lean: bool = False


# ----------------------------------------------------------------------------------------------------
# The interface


@dataclass(frozen=True)
class NoParams:
    """The params of a code whose rules carry none (`{}`: REQUIRED, POSITIVE, NONNEG, ECHO)."""


class PropertyCode:
    """One property code. Subclasses set the class attributes and override what differs.

    Defaults: operands are the rule's paths; the per-call finder calls `paths`; the vectorised side
    reads one hit per (rule, operand); no per-node prefilter (`node_class` 0)."""

    name: ClassVar[str]  # the stable code, `REQUIRED`
    short: ClassVar[str]  # the column heading of `contracts mine`'s table, `REQ`
    summary: ClassVar[str]  # the line `contracts codes` prints
    n_paths: ClassVar[int | None] = 1  # how many paths a rule has (None: checked by `validate`)
    #: Per-node codes are judged inside the join of leaves to operands (`keep`): a class number > 0.
    node_class: ClassVar[int] = 0
    #: A per-node code whose `keep` reads only `kbit` and its operand row's columns (not the leaf's
    #: value): the corpus pass judges it once per distinct (pattern, kind) of a batch.
    keep_by_kind: ClassVar[bool] = False
    #: A per-node code whose operand rows with these `tmask` values break only on a number outside
    #: magnitude bounds (`|num| > hi`, or `0 < num < lo`): on a pass where every call has checker key
    #: 0, the corpus pass first keeps the leaves outside their pattern's envelope of those rows (the
    #: least `hi`, the greatest `lo`), read from dense per-pattern arrays, and joins only those.
    envelope_tmasks: ClassVar[tuple[int, ...]] = ()
    #: The hit columns `vectorised` reads (a subset of HIT_COLS): the corpus pass gathers only these
    #: from the join of leaves to operands (a column not read is a column not copied per hit).
    hit_cols: ClassVar[tuple[str, ...]] = tuple(HIT_COLS)

    # --- the rule itself

    def bad(self, rule: Rule, msg: str) -> CheckError:
        """The error for a rule this checker cannot evaluate faithfully."""
        return CheckError(f"rule {rule.id} ({rule.tool} {rule.code}): {msg}", code="E_RULE", field=rule.id)

    def params(self, rule: Rule) -> Any:
        """The rule's params as this code's frozen dataclass, validated (a CheckError when they are not
        what the code can evaluate). Codes without params return `NoParams()`."""
        return NoParams()

    def validate(self, rule: Rule) -> None:
        """Refuse a rule this code cannot evaluate (a contract set from a newer miner): CheckError."""
        if self.n_paths is not None and len(rule.paths) != self.n_paths:
            raise self.bad(rule, "needs exactly one path" if self.n_paths == 1 else "needs exactly two paths")
        self.params(rule)

    def describe(self, rule: Rule) -> str:
        """A one-line statement of the rule, as people read it (`/total = /subtotal + /tax (cent)`)."""
        raise NotImplementedError

    def operands(self, rule: Rule) -> list[Operand]:
        """The (side, pattern) places the rule reads, in the order its evaluations number them."""
        return [Operand.of(p) for p in rule.paths]

    # --- one call

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        """Concrete paths (rule notation) where `rule` is broken, given the call's indexed nodes."""
        raise NotImplementedError

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        """`paths` specialised once for one rule (the per-call hot path)."""
        return lambda nodes: self.paths(rule, nodes, ops)

    def witness(self, rule: Rule, at: At) -> Violation:
        """The violation of `rule` at `at.path`, with its expected and observed witnesses and detail."""
        raise NotImplementedError

    # --- a corpus

    def op_rows(self, entries: Sequence[RuleEntry]) -> list[OpRow]:
        """The operand rows of this code's rules (default: one per rule and operand)."""
        return [
            OpRow(e.k, e.rule.tool, op.side, op.pattern, e.ridx, i)
            for e in entries
            for i, op in enumerate(e.ops)
        ]

    def node_mask(self, rule: Rule) -> int:
        """A per-rule integer the per-node prefilter reads (`tmask`; TYPE's allowed kinds)."""
        return 0

    def node_bounds(self, rule: Rule) -> tuple[float | None, float | None]:
        """Two per-rule numbers the per-node prefilter reads (`lo`, `hi`; RANGE's bounds)."""
        return (None, None)

    def keep(self) -> pl.Expr:
        """For a per-node code: whether a hit breaks its rule (reads kbit, num, tmask)."""
        raise NotImplementedError

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        """Violations (cid, ridx, path, present) of this code's `entries` among `hits` (its `hit_cols`, the
        leaves matching this code's operand rows; per-node codes' hits are already only the breaking
        ones) and `lean` (cid, ridx, aux of the leaves matching its lean rows)."""
        raise NotImplementedError

    # --- one call, grouped

    def group(self, rules: Sequence[tuple[Rule, Sequence[Operand]]]) -> list[GroupFinder] | None:
        """Per-call finders for several rules of one tool at once, or None: one `find` per rule.

        A code whose rules share work per call (REQUIRED: one lookup of a parent object serves every
        key required in it) groups them here; each finder returns (rule, concrete path) pairs."""
        return None


def rows(entries: Sequence[RuleEntry], **cols: Callable[[RuleEntry], Any]) -> dict[str, list[Any]]:
    """Columns of a small per-rule table: `rows(es, ridx=lambda e: e.ridx, ...)`."""
    return {name: [f(e) for e in entries] for name, f in cols.items()}


class NodeCode(PropertyCode):
    """A one-path code whose per-call finder (`find`) is its evaluation: `paths` runs it, and `at` gives
    the finder its node key and how its paths are written (`$args` on the argument side)."""

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return list(self.find(rule, ops)(nodes))

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        raise NotImplementedError

    @staticmethod
    def at(ops: Sequence[Operand]) -> tuple[tuple[str, str], str]:
        """The node key (side, pattern) and display prefix of the rule's one operand."""
        return (ops[0].side, ops[0].pattern), "$args" if ops[0].side == "arg" else ""
