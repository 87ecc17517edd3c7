"""The checker: evaluate a contract set's rules on tool calls and report every violation.

Two entry points with one meaning (the shared rule semantics in docs/codes.md):

* `check_corpus` — vectorised over a Parquet corpus. The leaves of the checked calls are joined once to
  a table of rule operands on (fold, tool, side, pattern); each rule class then finds its violations with
  polars expressions over those hits (anti-joins for REQUIRED and DOMAIN, filters for TYPE/POSITIVE/
  NONNEG, pairing joins for ECHO, DATE_ORDER and RELATION). Python runs only per *violation* (to render
  the witness values exactly as `check_call` does), never per call.
* `check_call` — one call in plain Python, for use inside an agent loop. It gives exactly the same
  violations as `check_corpus` for the same call (a test compares them over the sample world).

Calls checked in a corpus: those with `status == "ok"` (a failed call has no result to hold to a result
contract). Calls of a tool the contract set does not know are never violations; they are counted apart
(`CheckCounts.unknown_tool_calls`).
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson
import polars as pl

from contracts.checks.receipts import Receipt, Violation, recovery_tools
from contracts.errors import CheckError, ContractsError
from contracts.frames import detach
from contracts.jsonutil import canonical_str, sha256_hex
from contracts.progress import NULL_PROGRESS, Progress
from contracts.rules.dates import TZ_MODES, parse_instant, with_instant
from contracts.rules.folds import fold_table
from contracts.rules.model import CODES, ContractSet, Rule, split_side
from contracts.traces.corpus import Corpus
from contracts.traces.leaves import (
    KINDS,
    MAP_TOKEN,
    SIDE_DTYPE,
    WILD_TOKENS,
    escape_token,
    generalize,
    json_kind,
    parent_pattern,
    unescape_token,
)
from contracts.traces.model import ToolCall, make_call_id

Fold = int | None | Literal["cross"]
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

#: Columns and types of the frame `check_corpus` returns (one row per violation).
VIOLATION_SCHEMA: dict[str, pl.DataType] = {
    "cid": pl.UInt64(),
    "call_id": pl.String(),
    "trace_id": pl.String(),
    "task_id": pl.String(),
    "tool": pl.String(),
    "fold": pl.Int32(),
    "rule": pl.String(),
    "code": pl.String(),
    "path": pl.String(),
    "expected": pl.String(),
    "observed": pl.String(),
    "present": pl.Boolean(),
    "detail": pl.String(),
    "source": pl.String(),
    "line": pl.Int64(),
}
SORT_KEYS = ["source", "line", "cid", "rule", "path"]
#: Calls per batch of the corpus checker: bounds its memory (about 0.5 GiB for typical results).
BATCH_CALLS = 250_000

NUMERIC_KINDS = ("int", "float")
SCALAR_KINDS = ("null", "bool", "int", "float", "string")
TOLERANCES = ("exact", "cent", "rel")
CENT_TOL = 0.005 + 1e-9
REL_TOL = 1e-9


# ----------------------------------------------------------------------------------------------------
# Rule operands: the (side, pattern) pairs a rule reads, with their wildcard positions.


@dataclass(frozen=True)
class Operand:
    """One path a rule reads: its side (`arg`/`result`), pointer pattern and wildcard token positions.

    `wpos` are positions in `pattern.split("/")` (index 0 is the empty token before the first `/`) of its
    wildcard tokens (`*` an array index, `~*` a map key); the same positions of a concrete path's tokens
    are its indexes and keys, which pair instances of two operands with the same wildcard positions.
    """

    side: str
    pattern: str
    wpos: tuple[int, ...]

    @classmethod
    def of(cls, rule_path: str) -> Operand:
        side, pattern = split_side(rule_path)
        toks = pattern.split("/")
        return cls(side, pattern, tuple(i for i, t in enumerate(toks) if t in WILD_TOKENS))

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
        return "/".join(toks)

    def display(self, path: str) -> str:
        """A concrete path as written in rules: argument paths keep their `$args` prefix."""
        return "$args" + path if self.side == "arg" else path


def operands(rule: Rule) -> list[Operand]:
    """The operands of a rule, in its path order; REQUIRED also reads the parent (returned first)."""
    ops = [Operand.of(p) for p in rule.paths]
    if rule.code == "REQUIRED":
        side, pattern = split_side(rule.paths[0])
        parent = Operand.of(("$args" if side == "arg" else "") + parent_pattern(pattern))
        return [parent, *ops]
    return ops


def _validate_rule(rule: Rule) -> None:
    """Refuse rules this checker cannot evaluate faithfully (a contract set from a newer miner)."""

    def bad(msg: str) -> CheckError:
        return CheckError(f"rule {rule.id} ({rule.tool} {rule.code}): {msg}", code="E_RULE", field=rule.id)

    if rule.code not in CODES:
        raise bad(f"unknown property code (known: {', '.join(CODES)})")
    n = len(rule.paths)
    p = rule.params
    if rule.code in ("REQUIRED", "TYPE", "POSITIVE", "NONNEG", "DOMAIN") and n != 1:
        raise bad("needs exactly one path")
    if rule.code == "REQUIRED" and split_side(rule.paths[0])[1] == "":
        raise bad("REQUIRED needs a path below the root")
    if rule.code == "TYPE" and p.get("kind") not in (
        "null",
        "bool",
        "int",
        "string",
        "array",
        "object",
        "number",
    ):
        raise bad(f"TYPE kind {p.get('kind')!r} is not one of null bool int string array object number")
    if rule.code == "DOMAIN" and not (
        isinstance(p.get("values"), list) and all(isinstance(v, str) for v in p["values"])
    ):
        raise bad("DOMAIN needs params.values, a list of strings")
    if rule.code in ("ECHO", "DATE_ORDER") and n != 2:
        raise bad("needs exactly two paths")
    if rule.code == "DATE_ORDER" and p.get("tz") not in TZ_MODES:
        raise bad(f"DATE_ORDER tz must be one of {', '.join(TZ_MODES)}")
    if rule.code == "RELATION":
        form = p.get("form")
        if p.get("tol") not in TOLERANCES:
            raise bad(f"RELATION tol must be one of {', '.join(TOLERANCES)}")
        if form == "linear":
            coef = p.get("coef")
            if not (isinstance(coef, list) and len(coef) == n - 1 and all(c in (1, -1) for c in coef)):
                raise bad("linear RELATION needs one coefficient in {1, -1} per term")
        elif form == "product":
            if n != 3:
                raise bad("product RELATION needs paths [A, X1, X2]")
        elif form == "sum_over":
            if n != 2 or not Operand.of(rule.paths[1]).wpos:
                raise bad("sum_over RELATION needs paths [A, pattern with a wildcard]")
            if MAP_TOKEN in rule.paths[1]:
                raise bad("sum_over RELATION sums array members only (its pattern has a map key '~*')")
        else:
            raise bad(f"unknown RELATION form {form!r}")


# ----------------------------------------------------------------------------------------------------
# Plain-Python evaluation of one call (check_call) and witness rendering (both paths).

Nodes = dict[tuple[str, str], list[tuple[str, Any]]]


def _index_nodes(side: str, doc: Any, out: Nodes, maps: frozenset[str] = frozenset()) -> None:
    """Every node of `doc` under (side, pattern) -> [(concrete path, value)] (order is irrelevant).

    `maps`: the tool's map parents on this side; the keys of an object there are indexed as `~*`."""
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


def _resolve(doc: Any, path: str) -> tuple[bool, Any]:
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


_KIND_OF_TYPE = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    list: "array",
    dict: "object",
}


def _kind(v: Any) -> str:
    k = _KIND_OF_TYPE.get(type(v))
    if k is not None:
        return k
    try:
        return json_kind(v)
    except TypeError:
        return "other"


def _is_num(v: Any) -> bool:
    return _kind(v) in NUMERIC_KINDS


def _echo_equal(r: Any, a: Any) -> bool:
    kr, ka = _kind(r), _kind(a)
    if kr in NUMERIC_KINDS and ka in NUMERIC_KINDS:
        return float(r) == float(a)
    return kr == ka and r == a


def _within(a: float, rhs: float, tol: str) -> bool:
    d = abs(a - rhs)
    if tol == "exact":
        return d == 0
    if tol == "cent":
        return d <= CENT_TOL
    return d <= REL_TOL * max(1.0, abs(a), abs(rhs))


def _relation_rhs(rule: Rule, ops: Sequence[Operand], values: list[Any]) -> float | int:
    """Right-hand side of a linear/product relation from operand values [X1, X2, ...] (all numeric)."""
    form = rule.params["form"]
    if form == "product":
        product: float | int = values[0] * values[1]
        return product
    total: float | int = 0
    for c, v in zip(rule.params["coef"], values, strict=True):
        total = total + v if c == 1 else total - v
    return total


def _side_doc(side: str, arguments: Any, result: Any) -> Any:
    return arguments if side == "arg" else result


def _num_text(v: Any) -> str:
    return canonical_str(v)


def _name(path: str) -> str:
    """How a detail sentence names a place: the pointer without its leading slash (`items/2/price`)."""
    return path[1:] if path.startswith("/") else (path or "the whole result")


def _returned(path: str, shown: str) -> str:
    """`available=-3`, or `[1,2] as the whole result` for the root."""
    return f"{shown} as the whole result" if path == "" else f"{_name(path)}={shown}"


def witness(rule: Rule, path: str, arguments: Any, result: Any) -> Violation:
    """The violation of `rule` at concrete `path` of this call, with its expected/observed witnesses.

    Both implementations call this once they know *where* a rule is broken, so the rendered values are
    identical whichever found it. `path` is in rule notation (`$args/...` for an argument path). The
    detail cites the rule's clean support; a rule that only the registry declares (source `schema`,
    not mined) cites the declaration instead, since it has no clean calls behind it.
    """
    v = _witness(rule, path, arguments, result)
    if "mined" not in rule.source:
        head = v.detail.split("; ", 1)[0]
        v = replace(v, detail=f"{head}; the registry declares this in {rule.tool}'s output schema")
    return v


def _witness(rule: Rule, path: str, arguments: Any, result: Any) -> Violation:
    ops = [Operand.of(p) for p in rule.paths]
    n = rule.support.calls
    tool = rule.tool
    code = rule.code
    side, raw = split_side(path)
    _present, observed = _resolve(_side_doc(side, arguments, result), raw)
    if code == "REQUIRED":
        key = unescape_token(raw.rpartition("/")[2])
        return Violation(
            code,
            rule.id,
            path,
            "present",
            None,
            False,
            f"{tool} returned no '{key}' at {path}; every one of {n} clean results had it",
        )
    shown = _num_text(observed)
    if code == "TYPE":
        want = rule.params["kind"]
        art = "an" if want[0] in "aeiou" else "a"
        return Violation(
            code,
            rule.id,
            path,
            want,
            observed,
            True,
            f"{tool} returned {_returned(path, shown)} ({_kind(observed)}); "
            f"every one of {n} clean results had {art} {want} there",
        )
    if code in ("POSITIVE", "NONNEG"):
        exp = "> 0" if code == "POSITIVE" else ">= 0"
        return Violation(
            code,
            rule.id,
            path,
            exp,
            observed,
            True,
            f"{tool} returned {_name(path)}={shown}; every one of {n} clean results had {_name(path)} {exp}",
        )
    if code == "DOMAIN":
        values = list(rule.params["values"])
        listed = ", ".join(canonical_str(v) for v in values)
        return Violation(
            code,
            rule.id,
            path,
            values,
            observed,
            True,
            f"{tool} returned {_returned(path, shown)}; every one of {n} clean results had one of {listed}",
        )
    if code == "ECHO":
        arg = ops[1]
        _, a_val = _resolve(arguments, arg.pattern)
        return Violation(
            code,
            rule.id,
            path,
            a_val,
            observed,
            True,
            f"{tool} returned {_name(path)}={shown} but was called with {arg.display(arg.pattern)}="
            f"{canonical_str(a_val)}; in every one of {n} clean calls the result echoed the argument",
        )
    if code == "DATE_ORDER":
        a_op, b_op = ops
        b_key = b_op.key_of(raw)
        a_path = a_op.concrete(b_key)
        _, a_val = _resolve(_side_doc(a_op.side, arguments, result), a_path)
        a_shown = a_val if isinstance(a_val, str) else canonical_str(a_val)
        a_name = a_op.display(a_path)
        return Violation(
            code,
            rule.id,
            path,
            f">= {a_name} ({a_shown})",
            observed,
            True,
            f"{tool} returned {_name(path)}={shown} against {_name(a_name)}={canonical_str(a_val)}; "
            f"every one of {n} clean results had {_name(a_op.display(a_op.pattern))} <= "
            f"{_name(b_op.display(b_op.pattern))} ({rule.params['tz']} ISO-8601)",
        )
    if code == "RELATION":
        a_op = ops[0]
        form = rule.params["form"]
        a_key = a_op.key_of(raw)
        if form == "sum_over":
            term = ops[1]
            nodes: Nodes = {}
            _index_nodes(term.side, _side_doc(term.side, arguments, result), nodes)
            rhs: float | int = 0
            for _p, v in nodes.get((term.side, term.pattern), []):
                if _is_num(v):
                    rhs = rhs + v
            formula = f"sum of {_name(term.display(term.pattern))}"
        else:
            vals = []
            for op in ops[1:]:
                _, v = _resolve(_side_doc(op.side, arguments, result), op.concrete(a_key))
                vals.append(v)
            rhs = _relation_rhs(rule, ops, vals)
            names = [_name(op.display(op.pattern)) for op in ops[1:]]
            if form == "product":
                formula = " * ".join(names)
            else:
                parts = [names[0] if rule.params["coef"][0] == 1 else f"-{names[0]}"]
                for c, nm in zip(rule.params["coef"][1:], names[1:], strict=True):
                    parts.append(f"{'+' if c == 1 else '-'} {nm}")
                formula = " ".join(parts)
        tol = rule.params["tol"]
        how = {"exact": "exactly", "cent": "to the cent", "rel": "to 1e-9 relative"}[tol]
        return Violation(
            code,
            rule.id,
            path,
            rhs,
            observed,
            True,
            f"{tool} returned {_name(path)}={shown} but {formula} = {canonical_str(rhs)}; every one of "
            f"{n} clean results had {_name(a_op.display(a_op.pattern))} = {formula} {how}",
        )
    raise AssertionError(code)


def violation_paths(rule: Rule, nodes: Nodes, ops: Sequence[Operand] | None = None) -> list[str]:
    """Concrete paths (rule notation) where `rule` is broken, given the call's indexed nodes.

    `ops` are the rule's `operands` (pass them precomputed on hot paths)."""
    if ops is None:
        ops = operands(rule)
    code = rule.code
    out: list[str] = []
    if code == "REQUIRED":
        parent, child = ops
        key_tok = child.pattern.rpartition("/")[2]
        have = {p.rpartition("/")[0] for p, _ in nodes.get((child.side, child.pattern), [])}
        for p, v in nodes.get((parent.side, parent.pattern), []):
            if isinstance(v, dict) and p not in have:
                out.append(child.display(f"{p}/{key_tok}"))
        return out
    first = ops[0]
    here = nodes.get((first.side, first.pattern), [])
    if code == "TYPE":
        want = rule.params["kind"]
        for p, v in here:
            k = _kind(v)
            if (k not in NUMERIC_KINDS) if want == "number" else (k != want):
                out.append(first.display(p))
        return out
    if code in ("POSITIVE", "NONNEG"):
        for p, v in here:
            if _is_num(v) and (v <= 0 if code == "POSITIVE" else v < 0):
                out.append(first.display(p))
        return out
    if code == "DOMAIN":
        allowed = set(rule.params["values"])
        for p, v in here:
            if isinstance(v, str) and v not in allowed:
                out.append(first.display(p))
        return out
    if code == "ECHO":
        arg = ops[1]
        args_at = nodes.get((arg.side, arg.pattern), [])
        for p, r in here:
            for _q, a in args_at:
                if _kind(r) in SCALAR_KINDS and _kind(a) in SCALAR_KINDS and not _echo_equal(r, a):
                    out.append(first.display(p))
        return out
    if code == "DATE_ORDER":
        b_op = ops[1]
        tz = rule.params["tz"]
        a_by_key: dict[tuple[str, ...], list[Any]] = {}
        for p, v in here:
            a_by_key.setdefault(first.key_of(p), []).append(v)
        for p, v in nodes.get((b_op.side, b_op.pattern), []):
            for a in a_by_key.get(b_op.key_of(p), []):
                ia, ib = parse_instant(a, tz), parse_instant(v, tz)
                if ia is None or ib is None or ia > ib:
                    out.append(b_op.display(p))
        return out
    if code == "RELATION":
        form = rule.params["form"]
        tol = rule.params["tol"]
        if form == "sum_over":
            term = ops[1]
            prefix = term.pattern[: term.pattern.index("/*")]
            arrays = [v for _p, v in nodes.get((term.side, prefix), []) if isinstance(v, list)]
            if not arrays:
                return out
            total: float | int = 0
            for _p, v in nodes.get((term.side, term.pattern), []):
                if _is_num(v):
                    total = total + v
            for p, a in here:
                if _is_num(a) and not _within(a, total, tol):
                    out.append(first.display(p))
            return out
        by_key: list[dict[tuple[str, ...], list[Any]]] = []
        for op in ops[1:]:
            d: dict[tuple[str, ...], list[Any]] = {}
            for p, v in nodes.get((op.side, op.pattern), []):
                d.setdefault(op.key_of(p), []).append(v)
            by_key.append(d)
        for p, a in here:
            key = first.key_of(p)
            vals = [d.get(key, []) for d in by_key]
            if not _is_num(a) or any(len(v) != 1 or not _is_num(v[0]) for v in vals):
                continue
            if not _within(a, _relation_rhs(rule, ops, [v[0] for v in vals]), tol):
                out.append(first.display(p))
        return out
    raise AssertionError(code)


PathFinder = Callable[[Nodes], Sequence[str]]


def _path_finder(rule: Rule, ops: list[Operand]) -> PathFinder:
    """`violation_paths` of one rule specialised once (no per-call dispatch on the code).

    The simple per-node classes get a closure over their pattern; the rest use `violation_paths`.
    The property test comparing `check_call` with `check_corpus` covers both forms.
    """
    code = rule.code
    if code == "REQUIRED":
        parent, child = ops
        pkey, ckey = (parent.side, parent.pattern), (child.side, child.pattern)
        prefix = "$args" if child.side == "arg" else ""
        tail = "/" + child.pattern.rpartition("/")[2]

        def required(nodes: Nodes) -> Sequence[str]:
            parents = nodes.get(pkey)
            if not parents:
                return ()
            have = {p.rpartition("/")[0] for p, _ in nodes.get(ckey, ())}
            return [prefix + p + tail for p, v in parents if isinstance(v, dict) and p not in have]

        return required
    if code not in ("TYPE", "POSITIVE", "NONNEG", "DOMAIN"):
        return lambda nodes: violation_paths(rule, nodes, ops)
    key = (ops[0].side, ops[0].pattern)
    prefix = "$args" if ops[0].side == "arg" else ""
    if code == "TYPE":
        want = rule.params["kind"]
        ok_types = frozenset(
            t for t, k in _KIND_OF_TYPE.items() if k == want or (want == "number" and k in NUMERIC_KINDS)
        )

        def type_ok(v: Any) -> bool:
            # The exact types of parsed JSON decide at once; anything else goes through `_kind`.
            t = type(v)
            if t in ok_types:
                return True
            if t in _KIND_OF_TYPE:
                return False
            k = _kind(v)
            return k in NUMERIC_KINDS if want == "number" else k == want

        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if not type_ok(v)]
    if code == "POSITIVE":
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if _is_num(v) and v <= 0]
    if code == "NONNEG":
        return lambda nodes: [prefix + p for p, v in nodes.get(key, ()) if _is_num(v) and v < 0]
    allowed = frozenset(rule.params["values"])
    return lambda nodes: [
        prefix + p for p, v in nodes.get(key, ()) if isinstance(v, str) and v not in allowed
    ]


#: REQUIRED rules of one tool sharing a parent node: (parent's (side, pattern), `$args` or "", members),
#: each member (rule, child key, child token, whether the token is the key's canonical escaping).
_RequiredGroup = tuple[tuple[str, str], str, list[tuple[Rule, str, str, bool]]]


def _child_missing(parent: dict[Any, Any], key: str, tok: str, canonical: bool) -> bool:
    """Whether an object node has no child indexed under token `tok` (as `_index_nodes` indexes keys)."""
    if canonical and key in parent:
        return False
    return all(escape_token(str(k)) != tok for k in parent)


@dataclass
class _Compiled:
    contracts: ContractSet
    by_tool: dict[str, list[tuple[Rule, PathFinder]]]  # every rule but the grouped REQUIRED ones
    required: dict[str, list[_RequiredGroup]]
    known: frozenset[str] = frozenset()  # tools with any rule
    reads_args: frozenset[str] = frozenset()  # tools with a rule that reads the arguments
    maps: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)  # (arg, result)


_CACHE: dict[tuple[int, int | None], _Compiled] = {}


def _compiled(contracts: ContractSet, fold: int | None) -> _Compiled:
    """Rules of one checker grouped by tool, validated once and cached per contract set object.

    REQUIRED rules are grouped by parent node: a call's parent objects are looked up once per group
    and each rule tests its key in the parent's dict, instead of every rule collecting the present
    children (what `violation_paths` does, with the same meaning)."""
    key = (id(contracts), fold)
    hit = _CACHE.get(key)
    if hit is not None and hit.contracts is contracts:
        return hit
    by_tool: dict[str, list[tuple[Rule, PathFinder]]] = {}
    groups: dict[str, dict[tuple[str, str], _RequiredGroup]] = {}
    reads: set[str] = set()
    for r in contracts.rules_for(fold):
        _validate_rule(r)
        ops = operands(r)
        if any(op.side == "arg" for op in ops):
            reads.add(r.tool)
        if r.code == "REQUIRED":
            parent, child = ops
            tok = child.pattern.rpartition("/")[2]
            name = unescape_token(tok)
            pkey = (parent.side, parent.pattern)
            tool_groups = groups.setdefault(r.tool, {})
            if pkey not in tool_groups:
                tool_groups[pkey] = (pkey, "$args" if child.side == "arg" else "", [])
            tool_groups[pkey][2].append((r, name, tok, escape_token(name) == tok))
            by_tool.setdefault(r.tool, [])
            continue
        by_tool.setdefault(r.tool, []).append((r, _path_finder(r, ops)))
    if len(_CACHE) >= 16:
        _CACHE.clear()
    required = {t: list(g.values()) for t, g in groups.items()}
    comp = _Compiled(
        contracts, by_tool, required, frozenset(by_tool), frozenset(reads), _map_table(contracts)
    )
    _CACHE[key] = comp
    return comp


_NO_MAPS: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def call_violations(
    contracts: ContractSet,
    tool: str,
    arguments: Any,
    result: Any,
    *,
    fold: int | None = None,
    codes: Sequence[str] | None = None,
) -> list[Violation]:
    """Every violation of checker `fold` on one call, sorted by (rule, path). Unknown tool: none."""
    comp = _compiled(contracts, fold)
    if tool not in comp.known:
        return []
    nodes: Nodes = {}
    arg_maps, res_maps = comp.maps.get(tool, _NO_MAPS)
    if tool in comp.reads_args:
        _index_nodes("arg", arguments, nodes, arg_maps)
    _index_nodes("result", result, nodes, res_maps)
    out: list[Violation] = []
    if codes is None or "REQUIRED" in codes:
        for pkey, prefix, members in comp.required.get(tool, ()):
            for p, v in nodes.get(pkey, ()):
                if isinstance(v, dict):
                    for rule, name, tok, canonical in members:
                        if canonical and name in v:
                            continue  # present (the common case, tested inline)
                        if _child_missing(v, name, tok, canonical):
                            out.append(witness(rule, f"{prefix}{p}/{tok}", arguments, result))
    for rule, finder in comp.by_tool[tool]:
        if codes is not None and rule.code not in codes:
            continue
        found = finder(nodes)
        if found:
            out.extend(witness(rule, p, arguments, result) for p in sorted(set(found)))
    out.sort(key=Violation.sort_key)
    return out


def check_call(
    contracts: ContractSet,
    tool: str,
    arguments: dict[str, Any],
    result: Any,
    *,
    fold: int | None = None,
    visible_tools: Sequence[str] | None = None,
    encoder: str = "v2",
) -> Receipt | None:
    """Check one call with checker `fold` (None = the full checker); a receipt, or None when it holds.

    For use inside an agent loop: append `encode(receipt)` beside the unchanged result. A tool the
    contract set has never seen gives None (nothing to hold it to).
    """
    vs = call_violations(contracts, tool, arguments, result, fold=fold)
    if not vs:
        return None
    return Receipt(
        tool=tool,
        result=result,
        violations=tuple(vs),
        recovery_tools=tuple(recovery_tools(contracts, tool, visible_tools)),
        encoder=encoder,
    )


# ----------------------------------------------------------------------------------------------------
# Vectorised evaluation over a corpus.


@dataclass(frozen=True)
class _RuleEntry:
    """One rule of one checker: `k` is the join key (the fold in cross mode, else 0)."""

    ridx: int
    k: int
    fold: int | None
    rule: Rule
    ops: tuple[Operand, ...]


def _rule_entries(
    contracts: ContractSet, fold: Fold, tools: Sequence[str] | None, codes: Sequence[str] | None
) -> list[_RuleEntry]:
    if fold == "cross":
        if not contracts.folds:
            raise CheckError(
                "cross-fitted checking needs a contract set mined with folds (mine --folds K)", code="E_FOLD"
            )
        have = sorted(fc.fold for fc in contracts.folds)
        if have != list(range(contracts.k)):
            raise CheckError(
                f"contract set declares k = {contracts.k} but has fold checkers {have}", code="E_FOLD"
            )
        pairs: list[tuple[int, int | None]] = [(f, f) for f in have]
    else:
        pairs = [(0, fold)]
    entries: list[_RuleEntry] = []
    for k, f in pairs:
        for r in contracts.rules_for(f):
            if tools is not None and r.tool not in tools:
                continue
            if codes is not None and r.code not in codes:
                continue
            _validate_rule(r)
            entries.append(_RuleEntry(len(entries), k, f, r, tuple(operands(r))))
    return entries


def _checked_calls(
    contracts: ContractSet,
    corpus: Corpus,
    fold: Fold,
    tools: Sequence[str] | None,
    clean_only: bool,
) -> pl.LazyFrame:
    """The calls to check: cid, k (join key), fold, and the metadata the output carries."""
    lf = corpus.scan_calls().filter(pl.col("status") == "ok")
    if tools is not None:
        lf = lf.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    if clean_only:
        faulty = corpus.scan_episodes().filter(pl.col("faulty")).select("trace_id")
        lf = lf.filter(pl.col("fault").is_null()).join(faulty, on="trace_id", how="anti")
    lf = lf.select(
        "cid",
        "call_id",
        "trace_id",
        pl.col("task_id").cast(pl.String),
        pl.col("tool").cast(pl.String),
        "source",
        "line",
    )
    if fold == "cross":
        tasks = lf.select("task_id").unique().collect().to_series()
        ft = fold_table(tasks, contracts.seed, contracts.k)
        lf = lf.join(ft.lazy(), on="task_id", how="left").with_columns(pl.col("fold").alias("k"))
    else:
        lf = lf.with_columns(pl.lit(fold, pl.Int32).alias("fold"), pl.lit(0, pl.Int32).alias("k"))
    return lf


_HIT_COLS = ["cid", "k", "ridx", "op", "path", "kind", "num", "str"]


PARENT_CODE = "_PARENT"

#: The per-node classes, evaluated inside the join of leaves to operands (`_node_keep`): a hit of one of
#: them is kept only when it breaks its rule. Hits of every other class (0) are all kept.
_NODE_CLASS = {"TYPE": 1, "POSITIVE": 2, "NONNEG": 3, "DOMAIN": 4}
#: One bit per JSON kind; a TYPE rule's allowed kinds are the OR of theirs (`number` = int | float).
_KIND_BIT = {k: 1 << i for i, k in enumerate(KINDS)}


def _allowed_kinds(want: str) -> int:
    if want == "number":
        return _KIND_BIT["int"] | _KIND_BIT["float"]
    return _KIND_BIT[want]


def _kind_bit(kind_dtype: pl.DataType) -> pl.Expr:
    """The `_KIND_BIT` of each leaf's kind (from the Enum's physical code when it is the corpus's own)."""
    if kind_dtype == pl.Enum(list(KINDS)):
        return pl.lit(2, pl.UInt8).pow(pl.col("kind").to_physical()).cast(pl.UInt8)
    return pl.col("kind").cast(pl.String).replace_strict(_KIND_BIT, default=0, return_dtype=pl.UInt8)


_NUMERIC_BITS = _KIND_BIT["int"] | _KIND_BIT["float"]


def _node_keep() -> pl.Expr:
    """True for a hit to keep: any hit of a class other than the per-node ones, or a per-node hit that
    breaks its rule (the same conditions `_vec_type`, `_vec_sign` and `_vec_domain` then apply): TYPE,
    a kind outside the rule's allowed-kinds mask; POSITIVE / NONNEG, a number <= 0 / < 0; DOMAIN, a
    string (whether it is an allowed value is left to the anti-join of `_vec_domain`). Reads `kbit`,
    the leaf's `_kind_bit`."""
    cls = pl.col("cls")
    kbit = pl.col("kbit")
    numeric = (kbit & _NUMERIC_BITS) != 0
    return (
        (cls == 0)
        | ((cls == 1) & ((pl.col("tmask") & kbit) == 0))
        | ((cls == 2) & numeric & (pl.col("num") <= 0))
        | ((cls == 3) & numeric & (pl.col("num") < 0))
        | ((cls == 4) & (kbit == _KIND_BIT["string"]))
    )


def _required_groups(
    entries: list[_RuleEntry],
) -> tuple[dict[int, int], dict[tuple[int, str, str, str], int]]:
    """REQUIRED rules grouped by their parent node: (rule ridx -> group id, group key -> group id).

    Every REQUIRED rule of a tool with the same parent pattern reads the same parent nodes, so the
    parents are joined once per group instead of once per rule.
    """
    gid_of: dict[int, int] = {}
    groups: dict[tuple[int, str, str, str], int] = {}
    for e in entries:
        if e.rule.code == "REQUIRED":
            key = (e.k, e.rule.tool, e.ops[0].side, e.ops[0].pattern)
            gid_of[e.ridx] = groups.setdefault(key, len(groups))
    return gid_of, groups


def _flat_required(e: _RuleEntry) -> bool:
    """A REQUIRED rule whose parent has no wildcard: one parent node per call at most."""
    return e.rule.code == "REQUIRED" and not e.ops[0].wpos


def _flat_required_table(entries: list[_RuleEntry]) -> pl.DataFrame:
    """The child operands of flat REQUIRED rules: (k, tool, side, pattern) -> (ridx, gid).

    They are joined to the leaves apart from the other operands (`_find_batch`), keeping only ids:
    a flat rule needs to know which of its children are present, not their paths or values."""
    gid_of, _groups = _required_groups(entries)
    flat = [e for e in entries if _flat_required(e)]
    return pl.DataFrame(
        {
            "k": [e.k for e in flat],
            "tool": [e.rule.tool for e in flat],
            "side": [e.ops[1].side for e in flat],
            "pattern": [e.ops[1].pattern for e in flat],
            "ridx": [e.ridx for e in flat],
            "gid": [gid_of[e.ridx] for e in flat],
        },
        schema={
            "k": pl.Int32,
            "tool": pl.String,
            "side": pl.String,
            "pattern": pl.String,
            "ridx": pl.UInt32,
            "gid": pl.UInt32,
        },
    )


def _op_table(entries: list[_RuleEntry]) -> pl.DataFrame:
    """Every operand the leaves are joined to, but the children of flat REQUIRED rules
    (`_flat_required_table`); REQUIRED parents once per group (`_required_groups`)."""
    rows: dict[str, list[Any]] = {
        "k": [],
        "tool": [],
        "side": [],
        "pattern": [],
        "ridx": [],
        "op": [],
        "code": [],
        "cls": [],
        "tmask": [],
    }
    groups = _required_groups(entries)
    for (k, tool, side, pattern), gid in groups[1].items():
        for col, v in zip(rows, (k, tool, side, pattern, gid, 0, PARENT_CODE, 0, 0), strict=True):
            rows[col].append(v)
    for e in entries:
        for i, op in enumerate(e.ops):
            if e.rule.code == "REQUIRED" and i == 0:
                continue  # the parent: one row per group above, not one per rule
            if _flat_required(e):
                continue  # the child of a flat rule: in `_flat_required_table`
            rows["k"].append(e.k)
            rows["tool"].append(e.rule.tool)
            rows["side"].append(op.side)
            rows["pattern"].append(op.pattern)
            rows["ridx"].append(e.ridx)
            rows["op"].append(i)
            rows["code"].append(e.rule.code)
            rows["cls"].append(_NODE_CLASS.get(e.rule.code, 0))
            rows["tmask"].append(_allowed_kinds(e.rule.params["kind"]) if e.rule.code == "TYPE" else 0)
    return pl.DataFrame(
        rows,
        schema={
            "k": pl.Int32,
            "tool": pl.String,
            "side": pl.String,
            "pattern": pl.String,
            "ridx": pl.UInt32,
            "op": pl.UInt8,
            "code": pl.String,
            "cls": pl.UInt8,
            "tmask": pl.UInt8,
        },
    )


def _empty_hits() -> pl.LazyFrame:
    return pl.LazyFrame(
        schema={
            "cid": pl.UInt64,
            "ridx": pl.UInt32,
            "path": pl.String,
            "present": pl.Boolean,
        }
    )


def _by_code(entries: list[_RuleEntry], hits: pl.LazyFrame, codes: tuple[str, ...]) -> pl.LazyFrame:
    ids = [e.ridx for e in entries if e.rule.code in codes]
    return hits.filter(pl.col("ridx").is_in(ids))


def _op(hits: pl.LazyFrame, i: int) -> pl.LazyFrame:
    return hits.filter(pl.col("op") == i)


def _with_key(df: pl.LazyFrame, entries: list[_RuleEntry], i: int) -> pl.LazyFrame:
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


def _v(df: pl.LazyFrame, path: pl.Expr | str = "path") -> pl.LazyFrame:
    p = pl.col(path) if isinstance(path, str) else path
    return df.select("cid", "ridx", p.alias("path"), pl.lit(True).alias("present"))


def _vec_required(
    entries: list[_RuleEntry], hits: pl.LazyFrame, parents: pl.LazyFrame, flat_have: pl.LazyFrame
) -> pl.LazyFrame:
    """Object parents without the required key.

    `parents` holds the parent nodes once per group of REQUIRED rules sharing a parent (`ridx` is the
    group id there). A parent pattern without wildcards has one node per call, so a call is complete
    when its group has as many children as rules; only incomplete calls are expanded to rules and
    anti-joined with the children present (`flat_have`: cid, ridx, gid of each present child of a
    flat rule). Counting rows counts distinct children because a call has one leaf row per path. Under arrays, children (in `hits`) are matched to their parent by path (the child's
    path minus its last token, whose length the rule fixes).
    """
    req = [e for e in entries if e.rule.code == "REQUIRED"]
    if not req:
        return _empty_hits()
    gid_of, _groups = _required_groups(entries)
    keytab = pl.DataFrame(
        {
            "ridx": [e.ridx for e in req],
            "gid": [gid_of[e.ridx] for e in req],
            "tok": [e.ops[1].pattern.rpartition("/")[2] for e in req],
            "cut": [len(e.ops[1].pattern.rpartition("/")[2]) + 1 for e in req],
            "flat": [not e.ops[0].wpos for e in req],
        },
        schema={"ridx": pl.UInt32, "gid": pl.UInt32, "tok": pl.String, "cut": pl.Int64, "flat": pl.Boolean},
    ).lazy()
    n_rules = keytab.group_by("gid").agg(pl.len().alias("n_rules"))
    par = parents.filter(pl.col("kind") == "object").select("cid", pl.col("ridx").alias("gid"), "path")
    flat_children = flat_have.select("cid", "ridx", "gid")
    have = flat_children.group_by("cid", "gid").agg(pl.len().alias("n_have"))
    incomplete = (
        par.join(keytab.filter(pl.col("flat")).select("gid").unique(), on="gid")
        .join(have, on=["cid", "gid"], how="left")
        .join(n_rules, on="gid")
        .filter(pl.col("n_have").fill_null(0) < pl.col("n_rules"))
        .select("cid", "gid", "path")
    )
    simple = (
        incomplete.join(keytab.select("ridx", "gid"), on="gid")
        .join(
            flat_children.join(incomplete.select("cid").unique(), on="cid", how="semi").select("cid", "ridx"),
            on=["cid", "ridx"],
            how="anti",
        )
        .select("cid", "ridx", "path")
    )
    # Under arrays: a child node exists only below an object parent, and a call has one leaf row per
    # path, so a (call, group) whose children number (object parents x rules) is complete; only the
    # other calls are expanded to (parent, rule) and anti-joined with the children by path.
    nested_rules = keytab.filter(~pl.col("flat")).select("ridx", "gid")
    nested_children = (
        hits.filter(pl.col("op") == 1)
        .select("cid", "ridx", "path")
        .join(keytab.filter(~pl.col("flat")), on="ridx")
        .select("cid", "ridx", "gid", pl.col("path").str.head(-pl.col("cut")).alias("path"))
    )
    nested_par = par.join(nested_rules.select("gid").unique(), on="gid")
    short = (
        nested_par.group_by("cid", "gid")
        .agg(pl.len().alias("n_par"))
        .join(
            nested_children.group_by("cid", "gid").agg(pl.len().alias("n_have")),
            on=["cid", "gid"],
            how="left",
        )
        .join(n_rules, on="gid")
        .filter(pl.col("n_have").fill_null(0) < pl.col("n_par") * pl.col("n_rules"))
        .select("cid", "gid")
    )
    nested = (
        nested_par.join(short, on=["cid", "gid"], how="semi")
        .join(nested_rules, on="gid")
        .join(
            nested_children.join(short, on=["cid", "gid"], how="semi").select("cid", "ridx", "path"),
            on=["cid", "ridx", "path"],
            how="anti",
        )
        .select("cid", "ridx", "path")
    )
    missing = pl.concat([simple, nested]).join(keytab.select("ridx", "tok"), on="ridx")
    return missing.select(
        "cid",
        "ridx",
        pl.concat_str(pl.col("path"), pl.lit("/"), pl.col("tok")).alias("path"),
        pl.lit(False).alias("present"),
    )


def _vec_type(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    want = pl.DataFrame(
        {
            "ridx": [e.ridx for e in entries if e.rule.code == "TYPE"],
            "want": [e.rule.params["kind"] for e in entries if e.rule.code == "TYPE"],
        },
        schema={"ridx": pl.UInt32, "want": pl.String},
    )
    h = _by_code(entries, hits, ("TYPE",)).join(want.lazy(), on="ridx")
    kind = pl.col("kind").cast(pl.String)
    bad = (
        pl.when(pl.col("want") == "number").then(~kind.is_in(NUMERIC_KINDS)).otherwise(kind != pl.col("want"))
    )
    return _v(h.filter(bad))


def _vec_sign(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    pos = [e.ridx for e in entries if e.rule.code == "POSITIVE"]
    h = _by_code(entries, hits, ("POSITIVE", "NONNEG")).filter(
        pl.col("kind").cast(pl.String).is_in(NUMERIC_KINDS)
    )
    bad = pl.when(pl.col("ridx").is_in(pos)).then(pl.col("num") <= 0).otherwise(pl.col("num") < 0)
    return _v(h.filter(bad))


def _vec_domain(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    allowed = pl.DataFrame(
        {
            "ridx": [e.ridx for e in entries if e.rule.code == "DOMAIN" for _ in e.rule.params["values"]],
            "str": [v for e in entries if e.rule.code == "DOMAIN" for v in e.rule.params["values"]],
        },
        schema={"ridx": pl.UInt32, "str": pl.String},
    )
    h = _by_code(entries, hits, ("DOMAIN",)).filter(pl.col("kind") == "string")
    return _v(h.join(allowed.lazy(), on=["ridx", "str"], how="anti"))


def _display(entries: list[_RuleEntry], df: pl.LazyFrame, i: int) -> pl.LazyFrame:
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


def _vec_echo(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    h = _by_code(entries, hits, ("ECHO",))
    r = _op(h, 0).filter(pl.col("kind").is_in(SCALAR_KINDS))
    a = (
        _op(h, 1)
        .filter(pl.col("kind").is_in(SCALAR_KINDS))
        .select(
            "cid",
            "ridx",
            pl.col("kind").alias("akind"),
            pl.col("num").alias("anum"),
            pl.col("str").alias("astr"),
        )
    )
    j = r.join(a, on=["cid", "ridx"])
    both_num = pl.col("kind").is_in(NUMERIC_KINDS) & pl.col("akind").is_in(NUMERIC_KINDS)
    same = (pl.col("kind") == pl.col("akind")) & (
        (pl.col("kind") == "null")
        | ((pl.col("kind") == "bool") & (pl.col("num") == pl.col("anum")))
        | ((pl.col("kind") == "string") & (pl.col("str") == pl.col("astr")))
    )
    equal = pl.when(both_num).then(pl.col("num") == pl.col("anum")).otherwise(same)
    return _display(entries, _v(j.filter(~equal)), 0)


def _vec_dates(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    outs = []
    for tz in TZ_MODES:
        sub = [e for e in entries if e.rule.code == "DATE_ORDER" and e.rule.params["tz"] == tz]
        if not sub:
            continue
        h = hits.filter(pl.col("ridx").is_in([e.ridx for e in sub]))
        a = with_instant(_with_key(_op(h, 0), sub, 0), "ia", tz).select("cid", "ridx", "key", "ia")
        b = with_instant(_with_key(_op(h, 1), sub, 1), "ib", tz)
        j = b.join(a, on=["cid", "ridx", "key"])
        bad = pl.col("ia").is_null() | pl.col("ib").is_null() | (pl.col("ia") > pl.col("ib"))
        outs.append(_display(sub, _v(j.filter(bad)), 1))
    return pl.concat(outs) if outs else _empty_hits()


def _tol_ok(a: pl.Expr, rhs: pl.Expr, tol: str) -> pl.Expr:
    d = (a - rhs).abs()
    if tol == "exact":
        return d == 0
    if tol == "cent":
        return d <= CENT_TOL
    return d <= REL_TOL * pl.max_horizontal(pl.lit(1.0), a.abs(), rhs.abs())


def _vec_relation(entries: list[_RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    outs = []
    num_kind = pl.col("kind").is_in(NUMERIC_KINDS)
    for tol in TOLERANCES:
        rel = [e for e in entries if e.rule.code == "RELATION" and e.rule.params["tol"] == tol]
        for form in ("linear", "product", "sum_over"):
            sub = [e for e in rel if e.rule.params["form"] == form]
            if not sub:
                continue
            h = hits.filter(pl.col("ridx").is_in([e.ridx for e in sub]))
            base = (
                _with_key(_op(h, 0), sub, 0)
                .filter(num_kind)
                .select("cid", "ridx", "key", "path", pl.col("num").alias("a"))
            )
            if form == "sum_over":
                terms = _op(h, 1)
                total = terms.group_by("cid", "ridx").agg(pl.col("num").filter(num_kind).sum().alias("rhs"))
                arrays = _op(h, 2).filter(pl.col("kind") == "array").select("cid", "ridx").unique()
                j = base.join(arrays, on=["cid", "ridx"]).join(total, on=["cid", "ridx"], how="left")
                j = j.with_columns(pl.col("rhs").fill_null(0.0))
            else:
                coef = pl.DataFrame(
                    {
                        "ridx": [e.ridx for e in sub for _ in e.ops[1:]],
                        "op": [i for e in sub for i in range(1, len(e.ops))],
                        "c": [
                            (e.rule.params["coef"][i - 1] if form == "linear" else 1)
                            for e in sub
                            for i in range(1, len(e.ops))
                        ],
                        "nterms": [len(e.ops) - 1 for e in sub for _ in e.ops[1:]],
                    },
                    schema={"ridx": pl.UInt32, "op": pl.UInt8, "c": pl.Float64, "nterms": pl.UInt32},
                )
                parts = []
                for i in range(1, max(len(e.ops) for e in sub)):
                    parts.append(
                        _with_key(_op(h, i), sub, i).select("cid", "ridx", "op", "key", "kind", "num")
                    )
                # Plain columns first, so that every aggregation below is a simple one (an expression
                # inside `agg` is evaluated group by group). A product has exactly two terms: the
                # product of a complete group is its first value times its last.
                terms = (
                    pl.concat(parts)
                    .join(coef.lazy(), on=["ridx", "op"])
                    .with_columns((~num_kind).cast(pl.UInt32).alias("nonnum"))
                )
                if form == "linear":
                    agg = (pl.col("c") * pl.col("num")).sum()
                else:
                    agg = pl.col("num").first() * pl.col("num").last()
                total = (
                    terms.group_by("cid", "ridx", "key")
                    .agg(
                        agg.alias("rhs"),
                        pl.len().alias("n"),
                        pl.col("nonnum").sum().alias("nonnum"),
                        pl.col("op").n_unique().alias("nops"),
                        pl.col("nterms").first(),
                    )
                    .filter(
                        (pl.col("nonnum") == 0)
                        & (pl.col("n") == pl.col("nterms"))
                        & (pl.col("nops") == pl.col("nterms"))
                    )
                )
                j = base.join(total, on=["cid", "ridx", "key"])
            bad = ~_tol_ok(pl.col("a"), pl.col("rhs"), tol)
            outs.append(_display(sub, _v(j.filter(bad)), 0))
    return pl.concat(outs) if outs else _empty_hits()


def _sum_over_array_ops(entries: list[_RuleEntry]) -> list[_RuleEntry]:
    """sum_over rules also read the array holding the summed nodes (op 2): present array = qualifying."""
    out = []
    for e in entries:
        if e.rule.code == "RELATION" and e.rule.params.get("form") == "sum_over":
            term = e.ops[1]
            prefix = term.pattern[: term.pattern.index("/*")]
            arr = Operand(term.side, prefix, tuple(p for p in term.wpos if p < len(prefix.split("/"))))
            out.append(_RuleEntry(e.ridx, e.k, e.fold, e.rule, (*e.ops, arr)))
        else:
            out.append(e)
    return out


def _map_table(contracts: ContractSet) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Map parents (arg side, result side) of every tool that has any."""
    return {
        name: (tc.map_parents("arg"), tc.map_parents("result"))
        for name, tc in contracts.tools.items()
        if tc.maps
    }


def generalize_patterns(leaves: FrameT, maps: Mapping[str, tuple[frozenset[str], frozenset[str]]]) -> FrameT:
    """`leaves` with each literal `pattern` rewritten the way the miner wrote it: keys below a tool's map
    parents (arg side, result side) as `~*`. Only the distinct patterns of tools with maps go through
    Python; a lazy frame stays lazy (its distinct patterns are read once)."""
    if not maps:
        return leaves
    lf = leaves.lazy()
    schema = lf.collect_schema()
    distinct = (
        lf.select("tool", "side", "pattern")
        .filter(pl.col("tool").cast(pl.String).is_in(list(maps)))
        .unique()
        .select(
            pl.col("tool").cast(pl.String), pl.col("side").cast(pl.String), pl.col("pattern").cast(pl.String)
        )
        .collect()
    )
    rows = []
    for tool, side, pattern in distinct.iter_rows():
        g = generalize(pattern, maps[tool][0 if side == "arg" else 1])
        if g != pattern:
            rows.append((tool, side, pattern, g))
    if not rows:
        return leaves
    table = pl.DataFrame(rows, schema=["tool", "side", "pattern", "gpattern"], orient="row").with_columns(
        pl.col("tool").cast(schema["tool"]),
        pl.col("side").cast(schema["side"]),
        pl.col("pattern").cast(schema["pattern"]),
        pl.col("gpattern").cast(schema["pattern"]),
    )
    out = (
        lf.join(table.lazy(), on=["tool", "side", "pattern"], how="left")
        .with_columns(pl.coalesce("gpattern", "pattern").alias("pattern"))
        .select(schema.names())
    )
    return out if isinstance(leaves, pl.LazyFrame) else out.collect()


def _find_batch(
    entries: list[_RuleEntry],
    corpus: Corpus,
    calls: pl.LazyFrame,
    ops: pl.DataFrame,
    flat_req: pl.DataFrame,
    in_batch: pl.Expr,
    maps: Mapping[str, tuple[frozenset[str], frozenset[str]]] | None = None,
) -> pl.DataFrame:
    """Violations (cid, ridx, path, present) among one batch of calls.

    The leaves of the batch are read once and joined to the rule operands; the per-node classes
    (TYPE, POSITIVE, NONNEG, DOMAIN) keep only their breaking hits inside that join (`_node_keep`),
    and the children of flat REQUIRED rules are joined apart keeping only ids (`flat_req`). Each rule
    class then reads its own rows (a filter on `code`) and only the columns it needs.
    """
    leaves = corpus.scan_leaves()
    kbit = _kind_bit(leaves.collect_schema()["kind"])
    batch = generalize_patterns(
        leaves.select("cid", "tool", "side", "path", "pattern", "kind", "num", "str")
        .filter(in_batch)
        .join(calls.select("cid", "k"), on="cid")
        .collect(),
        maps or {},
    ).lazy()
    keys = ["k", "tool", "side", "pattern"]
    hits, flat_have = pl.collect_all(
        [
            batch.with_columns(kbit.alias("kbit"))
            .join(ops.lazy(), on=keys)
            .filter(_node_keep())
            .select(*_HIT_COLS, pl.col("code").cast(pl.Categorical())),
            batch.select("cid", *keys).join(flat_req.lazy(), on=keys).select("cid", "ridx", "gid"),
        ]
    )

    def part(*codes: str) -> pl.LazyFrame:
        return hits.lazy().filter(pl.col("code").is_in(codes)).select(_HIT_COLS)

    plans = [
        _vec_required(entries, part("REQUIRED"), part(PARENT_CODE), flat_have.lazy()),
        _vec_type(entries, part("TYPE")),
        _vec_sign(entries, part("POSITIVE", "NONNEG")),
        _vec_domain(entries, part("DOMAIN")),
        _vec_echo(entries, part("ECHO")),
        _vec_dates(entries, part("DATE_ORDER")),
        _vec_relation(entries, part("RELATION")),
    ]
    return pl.concat(pl.collect_all([p.select("cid", "ridx", "path", "present") for p in plans]))


def find_violations(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    clean_only: bool = False,
    batch_calls: int = BATCH_CALLS,
    progress: Progress = NULL_PROGRESS,
) -> tuple[pl.DataFrame, list[_RuleEntry], pl.LazyFrame]:
    """The vectorised core: (cid, ridx, path, present) of every violation, the rule entries, the calls.

    Calls are checked in batches of about `batch_calls` (by call-id range), so peak memory is bounded
    by the batch, not the corpus; each batch re-reads only its rows of `leaves.parquet`.
    """
    entries = _sum_over_array_ops(_rule_entries(contracts, fold, tools, codes))
    calls = _checked_calls(contracts, corpus, fold, tools, clean_only)
    if not entries:
        return _empty_hits().collect(), entries, calls
    ops, flat_req = (
        t.with_columns(
            pl.col("tool").cast(pl.Categorical()),
            pl.col("pattern").cast(pl.Categorical()),
            pl.col("side").cast(SIDE_DTYPE),
        )
        for t in (_op_table(entries), _flat_required_table(entries))
    )
    maps = _map_table(contracts)
    n_calls = calls.select(pl.len()).collect().item()
    n_batches = max(1, -(-n_calls // max(1, batch_calls)))
    edges = [(2**64 * i) // n_batches for i in range(n_batches + 1)]
    found_parts = []
    progress.start("checking calls", n_calls)
    for lo, hi in itertools.pairwise(edges):
        # Call ids are hashes, uniform over u64: equal ranges are batches of about `batch_calls` calls.
        in_batch = pl.col("cid") >= pl.lit(lo, pl.UInt64)
        if hi < 2**64:
            in_batch = in_batch & (pl.col("cid") < pl.lit(hi, pl.UInt64))
        # detach: a batch's few violations must not pin the arrays and strings of its leaves (contracts.frames).
        found_parts.append(
            detach(_find_batch(entries, corpus, calls.filter(in_batch), ops, flat_req, in_batch, maps))
        )
        progress.advance(
            n_calls // n_batches if hi < 2**64 else n_calls - (n_calls // n_batches) * (n_batches - 1)
        )
    progress.finish()
    found = pl.concat(found_parts).unique()
    return found, entries, calls


def check_corpus(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    clean_only: bool = False,
    batch_calls: int = BATCH_CALLS,
    progress: Progress = NULL_PROGRESS,
) -> pl.DataFrame:
    """One row per violation in the corpus (columns `VIOLATION_SCHEMA`), sorted by `SORT_KEYS`.

    `fold`: None = the full checker on every call; an int = that fold's checker on every call;
    `"cross"` = each call checked by the checker of its own task's fold (the cross-fitted replay).
    `tools` / `codes` restrict the calls / rules checked; `clean_only` keeps only calls the miner
    counts as clean (status ok, no fault label, episode not labelled faulty). `batch_calls` bounds
    memory (the output does not depend on it); `progress` hears of each batch (in calls).
    """
    found, entries, calls = find_violations(
        contracts,
        corpus,
        fold=fold,
        tools=tools,
        codes=codes,
        clean_only=clean_only,
        batch_calls=batch_calls,
        progress=progress,
    )
    if found.height == 0:
        return pl.DataFrame(schema=VIOLATION_SCHEMA)
    cids = found.get_column("cid").unique()
    meta = (
        calls.filter(pl.col("cid").is_in(cids.implode()))
        .join(
            corpus.scan_calls()
            .select("cid", "arguments", "result")
            .filter(pl.col("cid").is_in(cids.implode())),
            on="cid",
        )
        .collect()
    )
    rows = found.join(meta, on="cid").sort(["source", "line", "cid", "ridx", "path"])
    by_idx = {e.ridx: e for e in entries}
    docs: dict[int, tuple[Any, Any]] = {}
    expected: list[str] = []
    observed: list[str] = []
    detail: list[str] = []
    rule_ids: list[str] = []
    code_col: list[str] = []
    for cid, ridx, path, args_txt, res_txt in rows.select(
        "cid", "ridx", "path", "arguments", "result"
    ).iter_rows():
        if cid not in docs:
            docs[cid] = (orjson.loads(args_txt), orjson.loads(res_txt) if res_txt is not None else None)
        args, res = docs[cid]
        rule = by_idx[ridx].rule
        v = witness(rule, path, args, res)
        expected.append(canonical_str(v.expected))
        observed.append(canonical_str(v.observed))
        detail.append(v.detail)
        rule_ids.append(rule.id)
        code_col.append(rule.code)
    out = rows.with_columns(
        pl.Series("rule", rule_ids, pl.String),
        pl.Series("code", code_col, pl.String),
        pl.Series("expected", expected, pl.String),
        pl.Series("observed", observed, pl.String),
        pl.Series("detail", detail, pl.String),
    )
    return out.select(list(VIOLATION_SCHEMA)).cast(VIOLATION_SCHEMA).sort(SORT_KEYS)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------
# Turning a violation frame into receipts, and counting what was checked.


@dataclass(frozen=True)
class CheckCounts:
    """How many calls a check looked at, and how many it could not judge (tool unknown to the set)."""

    calls_checked: int
    unknown_tool_calls: int
    calls_by_tool: Mapping[str, int]
    skipped_calls: int = 0


def corpus_counts(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    tools: Sequence[str] | None = None,
    clean_only: bool = False,
) -> CheckCounts:
    """Calls checked per tool (status ok, after filters), those whose tool the set does not know, and
    those skipped because their status is `error`."""
    lf = _checked_calls(contracts, corpus, None, tools, clean_only)
    per = lf.group_by("tool").agg(pl.len().alias("n")).collect().sort("tool")
    by_tool = dict(zip(per.get_column("tool").to_list(), per.get_column("n").to_list(), strict=True))
    unknown = sum(n for t, n in by_tool.items() if t not in contracts.tools)
    everything = corpus.scan_calls()
    if tools is not None:
        everything = everything.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    skipped = everything.filter(pl.col("status") != "ok").select(pl.len()).collect().item()
    return CheckCounts(sum(by_tool.values()), unknown, by_tool, int(skipped))


def receipts_from_frame(
    contracts: ContractSet,
    corpus: Corpus,
    violations: pl.DataFrame,
    *,
    encoder: str = "v2",
    include_all: bool = False,
    tools: Sequence[str] | None = None,
    clean_only: bool = False,
    batch: int = 50_000,
) -> Iterator[Receipt]:
    """Receipts for the calls of a `check_corpus` frame, in (source, line) order.

    With `include_all`, every checked call gets a receipt (violations empty when it holds). Results are
    read `batch` calls at a time, so memory stays bounded by the batch, not the corpus. Recovery tools use each episode's visible tool set
    (episodes.parquet `tools`; null = unknown = every declared substitute).
    """
    visible = {
        t: (None if js is None else tuple(orjson.loads(js)))
        for t, js in corpus.scan_episodes().select("trace_id", "tools").collect().iter_rows()
    }
    grouped: dict[int, list[Violation]] = {}
    for row in violations.iter_rows(named=True):
        grouped.setdefault(row["cid"], []).append(
            Violation(
                row["code"],
                row["rule"],
                row["path"],
                orjson.loads(row["expected"]),
                orjson.loads(row["observed"]),
                row["present"],
                row["detail"],
            )
        )
    lf = _checked_calls(contracts, corpus, None, tools, clean_only).select("cid", "source", "line")
    if not include_all:
        lf = lf.filter(pl.col("cid").is_in(pl.Series(list(grouped), dtype=pl.UInt64).implode()))
    order = lf.sort(["source", "line", "cid"]).collect()  # three small columns, in output order
    for keys in order.iter_slices(batch):
        # Only this slice's results are in memory at a time.
        rows = keys.join(
            corpus.scan_calls()
            .select("cid", "call_id", "trace_id", pl.col("tool").cast(pl.String), "result")
            .filter(pl.col("cid").is_in(keys.get_column("cid").implode()))
            .collect(),
            on="cid",
            how="left",
            maintain_order="left",
        )
        for cid, source, line, call_id, trace_id, tool, res in rows.iter_rows():
            vs = grouped.get(cid, [])
            yield Receipt(
                tool=tool,
                result=orjson.loads(res) if res is not None else None,
                violations=tuple(sorted(vs, key=Violation.sort_key)),
                recovery_tools=tuple(recovery_tools(contracts, tool, visible.get(trace_id))),
                call_id=call_id,
                source=source,
                line=line,
                encoder=encoder,
            )


# ----------------------------------------------------------------------------------------------------
# Loading a contract set for checking, and checking a stream of trace lines.


def load_contracts(path: str | Path) -> ContractSet:
    """`ContractSet.load` plus the checks the checker needs, all as `ContractsError`s naming the file.

    A wrong version or a schema-invalid file is refused by `ContractSet.load`; a file whose shape is
    wrong in ways the schema does not catch (missing keys, a rule this checker cannot evaluate, a fold
    naming an unknown rule) is refused here rather than failing half-way through a check.
    """
    src = str(path)
    try:
        cs = ContractSet.load(path)
    except ContractsError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckError(
            f"contract set does not have the expected shape ({type(e).__name__}: {e})",
            source=src,
            code="E_SCHEMA_INVALID",
        ) from None
    ids = {r.id for r in cs.all_rules()}
    for name, tc in cs.tools.items():
        for r in tc.rules:
            if r.tool != name:
                raise CheckError(
                    f"rule {r.id} is listed under tool '{name}' but names tool '{r.tool}'",
                    source=src,
                    field=f"tools.{name}.rules",
                    code="E_SCHEMA_INVALID",
                )
            try:
                _validate_rule(r)
            except CheckError as e:
                raise CheckError(e.message, source=src, field=e.field, code=e.code) from None
    for fc in cs.folds:
        unknown = [i for i in fc.rules if i not in ids]
        if unknown:
            raise CheckError(
                f"fold {fc.fold} names unknown rule {unknown[0]}",
                source=src,
                field=f"folds[{fc.fold}].rules",
                code="E_SCHEMA_INVALID",
            )
    return cs


@dataclass(frozen=True)
class StreamItem:
    """One event of `check_lines`: a checked call (`receipt` None when it holds and not
    `include_all`), a call not checked (`skipped`: status error), or an unreadable line (`rejected`,
    with the reason). Calls filtered out by `tools` yield nothing."""

    kind: Literal["call", "skipped", "rejected"]
    tool: str | None = None
    receipt: Receipt | None = None
    line: int = 0
    reason: str | None = None


def _flat_parse(rec: Any, source: str, line: int) -> tuple[list[ToolCall], dict[str, tuple[str, ...] | None]]:
    """Fallback parser (flat records) used when the ingest adapters are unavailable."""
    if not isinstance(rec, dict):
        raise ValueError("record is not a JSON object")
    for key in ("trace_id", "tool"):
        if not isinstance(rec.get(key), str):
            raise ValueError(f"missing or non-string '{key}'")
    if not isinstance(rec.get("arguments"), dict):
        raise ValueError("'arguments' is not an object")
    status = rec.get("status") or "ok"
    if status == "ok" and "result" not in rec:
        raise ValueError("missing 'result' (required unless status is 'error')")
    call = ToolCall(
        trace_id=rec["trace_id"],
        tool=rec["tool"],
        arguments=rec["arguments"],
        result=rec.get("result"),
        status=status,
        task_id=rec.get("task_id"),
        source=source,
        line=line,
    )
    tools = rec.get("tools")
    vis = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None
    return [call], {call.trace_id: vis}


class _LineParser:
    """Parse one line of any supported trace format into calls and visible tool sets.

    The format is fixed by `format`, or detected from the first line that some adapter claims; the
    ingest adapters (`contracts.traces.formats`) do the mapping, so `check -` reads what `ingest` reads.
    """

    def __init__(self, source: str, format: str) -> None:
        self.source = source
        self.format = format
        self.sha = sha256_hex(source)
        self.adapter: Any = None
        self.dropped: list[str] = []  # calls the adapter left out of a kept episode (since last read)
        try:
            self.detect: Any = importlib.import_module("contracts.traces.formats.detect")
        except ImportError:  # pragma: no cover - adapters are part of the package
            self.detect = None
        if format != "auto" and self.detect is not None:
            self.adapter = self.detect.get_adapter(format)

    def parse(self, rec: Any, line: int) -> tuple[list[ToolCall], dict[str, tuple[str, ...] | None]]:
        if self.detect is None:
            return _flat_parse(rec, self.source, line)
        from contracts.traces.formats.base import RecordContext

        if self.adapter is None:
            name, score = self.detect.best_match(rec)
            if name is None or score == 0:
                raise ValueError("record does not look like any supported trace format")
            self.adapter = self.detect.get_adapter(name)
        records = self.adapter.records(rec) if self.adapter.whole_file and isinstance(rec, list) else [rec]
        calls: list[ToolCall] = []
        visible: dict[str, tuple[str, ...] | None] = {}
        for r in records:
            parsed = self.adapter.parse(r, RecordContext(self.source, self.sha, line))
            calls.extend(parsed.calls)
            for ep in parsed.episodes:
                visible[ep.trace_id] = ep.tools
            self.dropped.extend(d.reason for d in parsed.dropped)
        return calls, visible


def check_lines(
    contracts: ContractSet,
    lines: Iterable[bytes],
    *,
    source: str = "-",
    format: str = "auto",
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    encoder: str = "v2",
    include_all: bool = False,
) -> Iterator[StreamItem]:
    """Check trace lines as they arrive (`contracts check -`): one `StreamItem` per call or bad line.

    Memory stays flat: each line is parsed, checked with `call_violations` and forgotten; only the
    visible tool sets of episodes seen so far are kept (one small tuple per trace). Call ids hash the
    source *name* (the stream has no file digest), the line and the call's index within the line.
    """
    parser = _LineParser(source, format)
    visible: dict[str, tuple[str, ...] | None] = {}
    code_list = list(codes) if codes is not None else None
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
            calls, vis = parser.parse(rec, n)
        except ContractsError:
            raise
        except Exception as e:  # RecordError, JSON errors, shape errors: the line is rejected
            yield StreamItem("rejected", line=n, reason=str(getattr(e, "reason", e)))
            continue
        visible.update(vis)
        for reason in parser.dropped:  # as ingest does: a call left out of its episode is a reject
            yield StreamItem("rejected", line=n, reason=reason)
        parser.dropped.clear()
        for call in calls:
            if tools is not None and call.tool not in tools:
                continue
            if call.status != "ok":
                yield StreamItem("skipped", tool=call.tool, line=n)
                continue
            f = contracts.fold_of(call.task) if fold == "cross" else fold
            vs = call_violations(contracts, call.tool, call.arguments, call.result, fold=f, codes=code_list)
            receipt = None
            if vs or include_all:
                receipt = Receipt(
                    tool=call.tool,
                    result=call.result,
                    violations=tuple(vs),
                    recovery_tools=tuple(recovery_tools(contracts, call.tool, visible.get(call.trace_id))),
                    call_id=make_call_id(parser.sha, call.line or n, call.index),
                    source=source,
                    line=call.line or n,
                    encoder=encoder,
                )
            yield StreamItem("call", tool=call.tool, receipt=receipt, line=n)
