"""The compiled per-call checker: each tool's rules turned into one generated Python function.

`check_call`, `Checker.check` / `Session` and `contracts check -` judge one call at a time. The generic
engine (`output_contracts.codes.engine.evaluate.call_violations`) first indexes every node of the call
(`index_nodes`) and then runs one finder per rule over that index. Here, as fastjsonschema does for a
JSON Schema, the Python source of one function per tool is written once per contract set and checker
(`compile()`, `exec`): it walks only the places the tool's rules read (a key lookup per literal token, a
loop per array wildcard or map, an index per fixed index) and tests each rule's predicate inline at its
place; the witness of what breaks is rendered by `evaluate.witness`, as the engine renders it, so receipts
are byte-identical (a hypothesis test holds the two to the same violations).

What each code writes is its own (`Check.compile`, in its folder's `check.py`), built with the parts this
module offers (`ToolBuilder`): a test inline at a place (`InlineTest`: the tests of one place are written
together under one test of the value's type, `str`; `int` or `float`; anything else in each test's
general form, and where a test is costly on a string the place's strings that pass all of them are kept in
a bounded memo: ids, names, states and dates repeat across calls), key presence at a parent object (the
keys of one parent tested together first), lines run at every node of a place (`act_at`), and the nodes of
a place kept for lines after the walk (`slot`, `tail`). A rule whose code writes nothing for it falls back
to the code's own finder (`Check.find`), run on the nodes the walk collected for that rule's operands only
(still no full index). The code judged per episode is compiled by its own check (`EpisodeCheck.compiled`)
and stepped after the call's own rules. Whole-call fallback to the generic engine: an object that is not a
map holding a key `*` or `*N` on a walked place (the key and an array index then share a pattern token),
and a tool whose generated source does not compile. Object keys are taken to be strings (JSON): a result
dict with non-string keys is a Python value JSON cannot hold. A witness is rendered only for a rule that
breaks, with the rule's code and operands kept per program.

Cache: programs are kept per (sha256 of the contract set's canonical JSON, checker, codes); the digest
itself is kept per contract set object, so a call pays one dict lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.engine.evaluate import call_violations, code, render_witness
from output_contracts.codes.evaluation import Check, EpisodeMemory, EpisodeProgram, NoMemory
from output_contracts.codes.nodes import (
    KIND_OF_TYPE,
    NUMERIC_KINDS,
    Operand,
    PathFinder,
    child_missing,
    is_num,
    kind_of,
)
from output_contracts.codes.table import episode_check
from output_contracts.codes.violation import Violation
from output_contracts.jsonutil import canonical_json, sha256_hex
from output_contracts.traces.pointers import INDEX_TOKEN, MAP_TOKEN, escape_token, fixed_index, unescape_token

#: An object place with at least this many keys below it is walked in blocks of `WIDE_BLOCK` keys, each
#: block looked up only when the object holds one of its keys.
WIDE_KEYS = 16
WIDE_BLOCK = 8
#: Programs kept at once (contract set x checker x codes).
CACHE_SIZE = 32
#: Answers a code keeps of a costly test of one string (the strings of a place that pass every test of
#: it, a year read from a date), cleared when full ...
MEMO_SIZE = 4096
#: ... and the longest string kept (ids, codes and dates repeat; long text does not).
MEMO_MAX_LEN = 64


class Bail(Exception):
    """Raised by generated code on a call its walk does not cover: the generic engine judges it."""


_BAIL = Bail()
_MISS = object()


def _tok(k: Any) -> str:
    """A key's pointer token, as `index_nodes` writes it."""
    return k if type(k) is str and "~" not in k and "/" not in k else escape_token(str(k))


def _type_ok(v: Any, want: str) -> bool:
    k = kind_of(v)
    return k in NUMERIC_KINDS if want == "number" else k == want


#: Integers of at most this magnitude convert to float exactly: a comparison with a float bound gives the
#: same answer on the int as on `float(int)` (larger ones take the `float()` spelling, as the finders do).
EXACT_INT = 2**53


def num_test(x: str) -> str:
    """A condition on variable `x`: whether it holds a number, as `is_num` (a missing value does not)."""
    return f"(type({x}) in _NUMT or ({x} is not _MISS and type({x}) not in _KOT and _is_num({x})))"


#: What every generated function can read besides the constants its codes give it (`Writer.const`):
#: `_MISS` (a place with no node), `_BAIL` (raise it to leave the call to the generic engine), `_KOT`
#: (the exact types of parsed JSON, by kind), `_NUMT` (int and float), `_is_num`, `_type_ok(v, kind)`,
#: `_tok` (a key's pointer token), `_cm` (`child_missing`), `_follow` (`follow`).
GLOBALS: dict[str, Any] = {
    "_BAIL": _BAIL,
    "_MISS": _MISS,
    "_KOT": KIND_OF_TYPE,
    "_NUMT": frozenset((int, float)),
    "_tok": _tok,
    "_type_ok": _type_ok,
    "_is_num": is_num,
    "_cm": child_missing,
    "_follow": None,  # set below, once `follow` is defined
}


# ----------------------------------------------------------------------------------------------------
# The walk: a trie of the places a tool's rules read


@dataclass
class _Node:
    """One place of the walk: `descent` is the pattern `index_nodes` gives the nodes found here (fixed
    indexes written `*`); `acts` emit the node's tests, given (value var, type var, path expression)."""

    descent: str
    children: dict[str, _Node] = field(default_factory=dict)
    acts: list[Callable[[str, str, str], list[str]]] = field(default_factory=list)
    #: the one-place tests at this place (`ToolBuilder.test_at`): written together, under one test of
    #: the value's type (`Writer.tests`)
    tests: list[InlineTest] = field(default_factory=list)
    #: rules that a key of this parent is present (`ToolBuilder.key_present`): (rule index, rule)
    present: list[tuple[int, Rule]] = field(default_factory=list)
    #: the tests of the value's kind alone among `tests` (`InlineTest.kinds`): (rule index, the types
    #: that hold, the kind, "$args" or "")
    kinds: list[tuple[int, frozenset[type], str, str]] = field(default_factory=list)


def _place(root: _Node, pattern: str) -> _Node:
    node = root
    if pattern == "":
        return node
    for tok in pattern.split("/")[1:]:
        child = node.children.get(tok)
        if child is None:
            step = INDEX_TOKEN if fixed_index(tok) is not None else tok
            child = node.children[tok] = _Node(node.descent + "/" + step)
        node = child
    return node


def _path_expr(pieces: Sequence[tuple[bool, str]]) -> str:
    """A Python expression for a concrete path: constant pieces merged, expressions concatenated."""
    parts_: list[str] = []
    const = ""
    for is_const, text in pieces:
        if is_const:
            const += text
        else:
            if const:
                parts_.append(repr(const))
                const = ""
            parts_.append(text)
    if const or not parts_:
        parts_.append(repr(const))
    return " + ".join(parts_)


class Writer:
    """Writes one tool's function: lines, fresh names, and the constants it needs."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any) -> str:
        k = self.name("K")
        self.consts[k] = value
        return k

    def node(
        self, node: _Node, var: str, pieces: list[tuple[bool, str]], ind: str, maps: frozenset[str]
    ) -> None:
        tvar = self.name("t")
        self.lines.append(f"{ind}{tvar} = type({var})")
        path = _path_expr(pieces)
        for act in node.acts:
            self.lines.extend(ind + line for line in act(var, tvar, path))
        if node.tests:
            self.lines.extend(ind + line for line in self.tests(node.tests, var, tvar, path))
        if not node.children and not node.present:
            return
        stars = {t: c for t, c in node.children.items() if t == INDEX_TOKEN or fixed_index(t) is not None}
        dict_lines: list[str] = []
        # key presence: a key the walk looks up anyway is judged missing in the lookup's `else`; the other
        # keys of the parent each by one `in` (a subset test of the keys' view costs more than that)
        misses: dict[str, list[str]] = {}
        if node.present:
            keyed_toks = set(node.children) - set(stars) - {MAP_TOKEN}
            wide = len(keyed_toks) >= WIDE_KEYS
            folded = node.descent not in maps and not wide
            # the subset test of every key, then each key (`_presence_act`, its lines past the test of
            # the parent's type): an object of a dict subclass (a caller's own value) is tested so
            every = _presence_act(self, node.present)(var, tvar, path)[1:]
            self.lines.append(f"{ind}if {tvar} is not dict and isinstance({var}, dict):")
            self.lines.extend(f"{ind}{x}" for x in every)
            if folded:
                misses, rest = _presence_misses(self, node.present, var, path, keyed_toks)
                dict_lines.extend(f"{ind}    {x}" for x in rest)
            else:
                dict_lines.extend(f"{ind}{x}" for x in every)
        if node.descent in maps:
            mapc = node.children.get(MAP_TOKEN)
            if mapc is not None:
                k, c = self.name("k"), self.name("v")
                dict_lines.append(f"{ind}    for {k}, {c} in {var}.items():")
                self._sub(
                    dict_lines, mapc, c, [*pieces, (True, "/"), (False, f"_tok({k})")], ind + "        ", maps
                )
        else:
            for t in stars:  # the key `*` / `*N` would share the index's pattern token: the engine decides
                dict_lines.append(f"{ind}    if {t!r} in {var}:")
                dict_lines.append(f"{ind}        raise _BAIL")
            keyed = [
                (t, child)
                for t, child in node.children.items()
                # `~*` below a non-map and non-canonical tokens name no node of a JSON value
                if t not in stars and t != MAP_TOKEN and escape_token(unescape_token(t)) == t
            ]
            # many keys that are leaves judged by one TYPE rule alone (an object of optional fields):
            # the object's own keys are visited, each looked up in a table of those keys (a violation's
            # place is the same; the order of the found list is free, violations are sorted)
            if len(keyed) >= WIDE_KEYS:
                leaves = {
                    t
                    for t, c in keyed
                    if not c.children
                    and not c.present
                    and not c.acts
                    and len(c.tests) == 1
                    and len(c.kinds) == 1
                }
                if len(leaves) >= WIDE_KEYS:
                    keyed = [(t, c) for t, c in keyed if t not in leaves]
                    table = {}
                    side = ""
                    for tok, leaf in node.children.items():
                        if tok in leaves:
                            ri, ok, want, side = leaf.kinds[0]
                            table[unescape_token(tok)] = (ok, want, ri, "/" + tok)
                    tk, k, x = self.const(table), self.name("k"), self.name("x")
                    e, tx = self.name("e"), self.name("t")
                    pre = repr(side) + " + " if side else ""
                    dict_lines.extend(
                        [
                            f"{ind}    for {k}, {x} in {var}.items():",
                            f"{ind}        {e} = {tk}.get({k})",
                            f"{ind}        if {e} is not None:",
                            f"{ind}            {tx} = type({x})",
                            f"{ind}            if {tx} not in {e}[0] and ({tx} in _KOT or not _type_ok({x}, {e}[1])):",
                            f"{ind}                out.append(({e}[2], {pre}{path} + {e}[3]))",
                        ]
                    )
            # many keys (an object of optional fields, few of them present): each block of keys is
            # looked up only when the object holds one of them (one `isdisjoint`, over the shorter);
            # the keys are still visited in the same order, so the answers are those of one lookup each
            size = WIDE_BLOCK if len(keyed) >= WIDE_KEYS else len(keyed) or 1
            for b in range(0, len(keyed), size):
                block = keyed[b : b + size]
                sub = ind + "    "
                if size < len(keyed):
                    ks = self.const(frozenset(unescape_token(t) for t, _c in block))
                    dict_lines.append(f"{ind}    if not {var}.keys().isdisjoint({ks}):")
                    sub = ind + "        "
                for t, child in block:
                    c = self.name("v")
                    dict_lines.append(f"{sub}if {unescape_token(t)!r} in {var}:")
                    dict_lines.append(f"{sub}    {c} = {var}[{unescape_token(t)!r}]")
                    self._sub(dict_lines, child, c, [*pieces, (True, "/" + t)], sub + "    ", maps)
                    if t in misses:
                        dict_lines.append(f"{sub}else:")
                        dict_lines.extend(f"{sub}    {x}" for x in misses[t])
        list_lines: list[str] = []
        for t, child in stars.items():
            c = self.name("v")
            n = fixed_index(t)
            if n is None:
                i = self.name("i")
                list_lines.append(f"{ind}    for {i}, {c} in enumerate({var}):")
                self._sub(
                    list_lines, child, c, [*pieces, (True, "/"), (False, f"str({i})")], ind + "        ", maps
                )
            else:
                list_lines.append(f"{ind}    if len({var}) > {int(n)}:")
                list_lines.append(f"{ind}        {c} = {var}[{int(n)}]")
                self._sub(list_lines, child, c, [*pieces, (True, "/" + n)], ind + "        ", maps)
        if dict_lines:
            self.lines.append(f"{ind}if {tvar} is dict:")
            self.lines.extend(dict_lines)
        if list_lines:
            self.lines.append(f"{ind}{'elif' if dict_lines else 'if'} {tvar} is list:")
            self.lines.extend(list_lines)

    def tests(self, tests: Sequence[InlineTest], v: str, t: str, path: str) -> list[str]:
        """The one-place tests of a place, under one test of the value's type: a `str`, an `int` or
        `float`, anything else (each test's general form; the general forms alone at a place whose TYPE
        is another kind). The strings that pass every test of a place
        with a costly one (FORMAT, a year) are kept, bounded, so a repeated string costs one lookup."""
        on_str = [x for te in tests for x in te.on_str(v, path)]
        on_num = [x for te in tests for x in te.on_num(v, t, path)]
        other = [x for te in tests for x in te.other(v, t, path)]
        if any(te.other_kind for te in tests):
            return other  # a place of objects, arrays, booleans or nulls: each test in its general form
        if on_str and any(te.pure for te in tests):
            good, n0 = self.const(set()), self.name("o")
            on_str = [
                f"if {v} not in {good}:",
                f"    {n0} = len(out)",
                *("    " + x for x in on_str),
                f"    if len(out) == {n0} and len({v}) <= {MEMO_MAX_LEN}:",
                f"        if len({good}) >= {MEMO_SIZE}:",
                f"            {good}.clear()",
                f"        {good}.add({v})",
            ]
        lines: list[str] = []
        branches = [(f"{t} is str", on_str), (f"{t} is int or {t} is float", on_num)]
        if not other:  # nothing for another type: only the branches that do something
            branches = [(c, b) for c, b in branches if b]
        for i, (cond, body) in enumerate(branches):
            lines.append(f"{'elif' if i else 'if'} {cond}:")
            lines.extend("    " + x for x in body or ["pass"])
        if other:
            if lines:
                lines.append("else:")
                lines.extend("    " + x for x in other)
            else:
                lines.extend(other)
        return lines

    def _sub(
        self,
        into: list[str],
        node: _Node,
        var: str,
        pieces: list[tuple[bool, str]],
        ind: str,
        maps: frozenset[str],
    ) -> None:
        saved, self.lines = self.lines, into
        try:
            self.node(node, var, pieces, ind, maps)
        finally:
            self.lines = saved


# ----------------------------------------------------------------------------------------------------
# What a code's `compile` builds with


#: The lines a place's act emits, given (value variable, type variable, path expression).
Act = Callable[[str, str, str], list[str]]


@dataclass(frozen=True)
class InlineTest:
    """A one-place code's test at its place, in three parts, each giving the lines that append (rule
    index, path) when it breaks: `on_str` for a value of type `str` exactly, `on_num` for `int` or
    `float` exactly (given the value and type variables), `other` for any other value (the general
    test, right for every type). `pure`: on a `str` its answer depends on the string alone and costs
    more than one lookup (a shape, a date's year), so the place's strings that pass are worth keeping."""

    on_str: Callable[[str, str], list[str]]
    on_num: Callable[[str, str, str], list[str]]
    other: Callable[[str, str, str], list[str]]
    pure: bool = False
    #: the test is of the value's kind only, whose kind is neither a string nor a number: the place's
    #: values are mostly of another type
    other_kind: bool = False
    #: the test is exactly "the value's type is none of `kinds[0]` (and not of kind `kinds[1]`)": many
    #: such tests of one object's keys are judged through one table (`Writer.node`)
    kinds: tuple[frozenset[type], str] | None = None


def nothing(*_a: str) -> list[str]:
    """An `InlineTest` part that tests nothing."""
    return []


def when(hit: Callable[[str], str], cond: Callable[[str, str], str]) -> Callable[[str, str, str], list[str]]:
    """An `InlineTest` part: report (`hit`) when `cond(value var, type var)` holds."""
    return lambda v, t, path: [f"if {cond(v, t)}:", f"    {hit(path)}"]


def _presence_act(w: Writer, members: list[tuple[int, Rule]]) -> Callable[[str, str, str], list[str]]:
    """Rules that a key is present, sharing one parent: each key tested in the parent object (as REQUIRED's
    `group`);
    the keys written canonically are first tested together (one subset test), each only when one lacks."""

    def act(v: str, t: str, path: str) -> list[str]:
        canon: list[str] = []
        every: list[str] = []
        odd: list[str] = []
        for ri, rule in members:
            op = Operand.of(rule.paths[0])
            tok = op.pattern.rpartition("/")[2]
            key = unescape_token(tok)
            canonical = escape_token(key) == tok
            kc, tc = w.const(key), w.const(tok)
            pre = "'$args' + " if op.side == "arg" else ""
            test = f"{kc} not in {v} and " if canonical else ""
            lines = [
                f"if {test}_cm({v}, {kc}, {tc}, {canonical}):",
                f"    out.append(({ri}, {pre}{path} + {('/' + tok)!r}))",
            ]
            every.extend(lines)
            if canonical:
                canon.append(key)
            else:
                odd.extend(lines)
        if len(canon) < 2:
            return [f"if {t} is dict or isinstance({v}, dict):", *("    " + x for x in every)]
        keys = w.const(frozenset(canon))
        return [
            f"if {t} is dict or isinstance({v}, dict):",
            f"    if not {v}.keys() >= {keys}:",
            *("        " + x for x in every),
            *(["    else:", *("        " + x for x in odd)] if odd else []),
        ]

    return act


def _presence_misses(
    w: Writer, members: list[tuple[int, Rule]], v: str, path: str, walked: set[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """Key-presence rules of one parent that is an object (not a map, not wide), for the walk: per token the
    walk looks up, the lines judging its key missing (its lookup's `else`); and the lines testing the
    other keys (`_cm` as `Required.group` decides, after one `in` for a key written canonically)."""
    misses: dict[str, list[str]] = {}
    rest: list[str] = []
    for ri, rule in members:
        op = Operand.of(rule.paths[0])
        tok = op.pattern.rpartition("/")[2]
        key = unescape_token(tok)
        canonical = escape_token(key) == tok
        kc, tc = w.const(key), w.const(tok)
        pre = "'$args' + " if op.side == "arg" else ""
        found = [
            f"if _cm({v}, {kc}, {tc}, {canonical}):",
            f"    out.append(({ri}, {pre}{path} + {('/' + tok)!r}))",
        ]
        if canonical and tok in walked:
            misses.setdefault(tok, []).extend(found)
        elif canonical:
            rest.append(f"if {kc} not in {v}:")
            rest.extend("    " + x for x in found)
        else:
            rest.extend(found)
    return misses, rest


def _store(var_name: str, collect: bool) -> Callable[[str, str, str], list[str]]:
    """Keep a node for a rule judged after the walk: appended to a list, or stored (one node at most)."""
    if collect:
        return lambda v, t, path: [f"{var_name}.append(({path}, {v}))"]
    return lambda v, t, path: [f"{var_name} = {v}"]


def steps(descent: str, suffix: Sequence[str], maps: frozenset[str]) -> list[tuple[str, Any, str]]:
    """How the walk goes from a node (pattern `descent`) down `suffix` (tokens without wildcards): per
    token ("k", key, tok) a key of an object that is no map, ("i", index, tok) a fixed index (an object
    that is no map holding the key `tok` is the engine's case), ("im", ...) the same below a map, or
    ("never", ...) a token that names no node there."""
    out: list[tuple[str, Any, str]] = []
    for t in suffix:
        n = fixed_index(t)
        if n is not None:
            out.append(("im" if descent in maps else "i", int(n), t))
            descent += "/" + INDEX_TOKEN
        else:
            canonical = escape_token(unescape_token(t)) == t
            out.append(
                ("never", None, t) if descent in maps or not canonical else ("k", unescape_token(t), t)
            )
            descent += "/" + t
    return out


def follow(v: Any, steps: Sequence[tuple[str, Any, str]]) -> Any:
    """The one node `_steps` lead to from `v`, or `_MISS`."""
    for kind, key, tok in steps:
        t = type(v)
        if kind == "k":
            if t is not dict:
                return _MISS
            v = v.get(key, _MISS)
            if v is _MISS:
                return _MISS
        elif kind == "never":
            return _MISS
        elif t is list:
            if len(v) <= key:
                return _MISS
            v = v[key]
        else:
            if kind == "i" and t is dict and tok in v:
                raise _BAIL
            return _MISS
    return v


GLOBALS["_follow"] = follow


class ToolBuilder:
    """What one tool's checker is built from: each rule's code adds its part (`Check.compile`) through
    these methods, and `compile_tool` writes the function. `w`: the names and constants of the source."""

    def __init__(self, maps: tuple[frozenset[str], frozenset[str]]) -> None:
        self.w = Writer()
        self.maps = maps
        self.roots = {"arg": _Node(""), "result": _Node("")}
        self.init: list[str] = []  # before the walk
        self.tail: list[str] = []  # after the walk
        self.slots: dict[tuple[str, str, bool], str] = {}

    def const(self, value: Any) -> str:
        """A name the source reads `value` by."""
        return self.w.const(value)

    def name(self, prefix: str) -> str:
        """A fresh variable name."""
        return self.w.name(prefix)

    def side_maps(self, side: str) -> frozenset[str]:
        """The tool's map parents on one side (`arg` or `result`)."""
        return self.maps[0] if side == "arg" else self.maps[1]

    def place(self, side: str, pattern: str) -> _Node:
        return _place(self.roots[side], pattern)

    @staticmethod
    def hit(ri: int, side: str) -> Callable[[str], str]:
        """The line reporting rule `ri` broken at a path expression (written `$args...` on that side)."""
        pre = "'$args' + " if side == "arg" else ""
        return lambda path: f"out.append(({ri}, {pre}{path}))"

    def test_at(self, op: Operand, ri: int, test: InlineTest) -> None:
        """Test every node at `op`'s place inline as the walk meets it."""
        node = self.place(op.side, op.pattern)
        node.tests.append(test)
        if test.kinds is not None:
            node.kinds.append((ri, test.kinds[0], test.kinds[1], "$args" if op.side == "arg" else ""))

    def key_present(self, ri: int, rule: Rule, parent: Operand) -> None:
        """Rule `ri` breaks at each object of the `parent` place that lacks the last key of the rule's
        path (`child_missing`)."""
        self.place(parent.side, parent.pattern).present.append((ri, rule))

    def act_at(self, side: str, pattern: str, act: Act) -> None:
        """Run `act`'s lines at every node of a place, as the walk meets it."""
        self.place(side, pattern).acts.append(act)

    def slot(self, op: Operand, collect: bool = False) -> str:
        """A variable the walk stores `op`'s node in (`_MISS` when absent), or, `collect`, a list of its
        (path, value) nodes: for the lines after the walk (`tail`)."""
        key = (op.side, op.pattern, collect)
        if key not in self.slots:
            name = self.slots[key] = self.w.name("N" if collect else "E")
            self.init.append(f"    {name} = []" if collect else f"    {name} = _MISS")
            self.act_at(op.side, op.pattern, _store(name, collect))
        return self.slots[key]


@dataclass(frozen=True)
class ToolProgram:
    """One tool's compiled checker: `run(arguments, result)` gives (rule index, concrete path) pairs;
    `rules` are the tool's rules that index into; `source` is the generated code (None: generic);
    `render` per rule, its (code, paths as operands), what `evaluate.witness` recomputes per witness."""

    rules: tuple[Rule, ...]
    run: Callable[[Any, Any], list[tuple[int, str]]] | None
    source: str | None
    render: tuple[tuple[Check, tuple[Operand, ...]], ...] = ()

    def witness(self, i: int, path: str, arguments: Any, result: Any) -> Violation:
        """The violation of rule `i` at `path`, as `evaluate.witness` renders it."""
        c, ops = self.render[i]
        return render_witness(self.rules[i], c, ops, path, arguments, result)


def compile_tool(rules: Sequence[Rule], maps: tuple[frozenset[str], frozenset[str]]) -> ToolProgram:
    """Generate, compile and load one tool's checker (its rules judged per call): each rule's code adds
    its part (`Check.compile`), or its own finder runs on the nodes the walk collects for it."""
    b = ToolBuilder(maps)
    w, roots, tail, init = b.w, b.roots, b.tail, b.init
    fallbacks: list[tuple[int, PathFinder, list[tuple[tuple[str, str], str]]]] = []
    for ri, rule in enumerate(rules):
        c = code(rule)
        ops = c.operands(rule)
        if not c.compile(rule, ri, ops, b):
            fallbacks.append(
                (ri, c.find(rule, ops), [((op.side, op.pattern), b.slot(op, True)) for op in ops])
            )
    body: list[str] = []
    for side, var in (("arg", "A"), ("result", "R")):
        root = roots[side]
        if root.acts or root.tests or root.children or root.present:
            w.lines = []
            w.node(root, var, [], "    ", maps[0] if side == "arg" else maps[1])
            body.extend(w.lines)
    if fallbacks:
        keys = {k: s for _ri, _f, ks in fallbacks for k, s in ks}
        nk = w.const(None)
        w.consts[nk] = list(keys)
        tail.append("    _n = {" + ", ".join(f"{nk}[{i}]: {s}" for i, s in enumerate(keys.values())) + "}")
        for ri, finder, _ks in fallbacks:
            f = w.const(finder)
            tail.append(f"    for _p in {f}(_n):")
            tail.append(f"        out.append(({ri}, _p))")
    src = "\n".join(["def check(A, R):", "    out = []", *init, *body, *tail, "    return out", ""])
    namespace: dict[str, Any] = {**GLOBALS, **w.consts}
    try:
        exec(compile(src, "<contracts compiled checker>", "exec"), namespace)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly deep patterns
        return ToolProgram(tuple(rules), None, None)
    render = tuple((code(r), tuple(Operand.of(p) for p in r.paths)) for r in rules)
    return ToolProgram(tuple(rules), namespace["check"], src, render)


# ----------------------------------------------------------------------------------------------------
# Programs per contract set, and the per-call entry point


@dataclass(frozen=True)
class Program:
    """The compiled checker of one contract set, checker (`fold`) and `codes` filter."""

    sha: str
    tools: dict[str, ToolProgram]
    #: the rules judged per episode (`output_contracts.codes.table.episode_check`), compiled by their code
    episode: EpisodeProgram | None = None
    #: whether this program judges them (the `codes` filter names their code)
    judges_episode: bool = True


_PROGRAMS: dict[tuple[str, int | None, tuple[str, ...] | None], Program] = {}
_SHAS: dict[int, tuple[ContractSet, str]] = {}
_BY_ID: dict[tuple[int, int | None, tuple[str, ...] | None], tuple[ContractSet, Program]] = {}
_FULL: dict[int, tuple[ContractSet, Program]] = {}
#: How many programs were built (not found in the cache): what the cache tests read.
STATS = {"built": 0}


def contracts_sha(contracts: ContractSet) -> str:
    """sha256 of the contract set's canonical JSON, kept per object (a contract set is frozen)."""
    hit = _SHAS.get(id(contracts))
    if hit is not None and hit[0] is contracts:
        return hit[1]
    sha = sha256_hex(canonical_json(contracts.to_json()))
    if len(_SHAS) >= CACHE_SIZE:
        _SHAS.clear()
    _SHAS[id(contracts)] = (contracts, sha)
    return sha


def program(contracts: ContractSet, fold: int | None = None, codes: Sequence[str] | None = None) -> Program:
    """The compiled checker of `contracts` (checker `fold`, rules of `codes` only), from the cache when a
    contract set with the same digest was compiled before."""
    sha = contracts_sha(contracts)
    key = (sha, fold, None if codes is None else tuple(sorted(set(codes))))
    hit = _PROGRAMS.get(key)
    if hit is not None:
        return hit
    per_tool: dict[str, list[Rule]] = {}
    episodic: list[Rule] = []
    for r in contracts.rules_for(fold):
        c = code(r)  # validate, as the engine does
        if c.per_episode:
            episodic.append(r)
            per_tool.setdefault(r.tool, [])
        elif codes is None or r.code in codes:
            per_tool.setdefault(r.tool, []).append(r)
        else:
            per_tool.setdefault(r.tool, [])
    none: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    tools = {}
    for tool, rules in per_tool.items():
        tc = contracts.tools.get(tool)
        maps = (tc.map_parents("arg"), tc.map_parents("result")) if tc is not None and tc.maps else none
        tools[tool] = compile_tool(rules, maps)
    ep = episode_check()
    prog = Program(
        sha,
        tools,
        None if ep is None else ep.compiled(episodic),
        ep is not None and (codes is None or ep.name in codes),
    )
    if len(_PROGRAMS) >= CACHE_SIZE:
        _PROGRAMS.clear()
    _PROGRAMS[key] = prog
    STATS["built"] += 1
    return prog


def compiled_memory(contracts: ContractSet, fold: int | None = None) -> EpisodeMemory:
    """`evaluate.episode_memory` from the cached program: an empty memory of one episode, without
    listing the contract set's rules again (a stream starts one per episode)."""
    prog = program(contracts, fold)
    return prog.episode.memory() if prog.episode is not None else NoMemory()


def compiled_violations(
    contracts: ContractSet,
    tool: str,
    arguments: Any,
    result: Any,
    *,
    fold: int | None = None,
    codes: Sequence[str] | None = None,
    memory: EpisodeMemory | None = None,
    call_id: Any = "",
) -> list[Violation]:
    """`evaluate.call_violations` through the compiled checker: the same violations, in the same order.
    (`call_id`: what the call is recorded in `memory` as; a function giving it is called only if needed.)"""
    # the per-call path: one lookup by the contract set's identity (the digest is computed once); the
    # full checker without a codes filter (`check_call`'s) by the identity alone
    if fold is None and codes is None:
        hit = _FULL.get(id(contracts))
    else:
        key = (id(contracts), fold, codes if codes is None or type(codes) is tuple else tuple(codes))
        hit = _BY_ID.get(key)
    if hit is not None and hit[0] is contracts:
        prog = hit[1]
    else:
        prog = program(contracts, fold, codes)
        if fold is None and codes is None:
            if len(_FULL) >= CACHE_SIZE:
                _FULL.clear()
            _FULL[id(contracts)] = (contracts, prog)
        else:
            if len(_BY_ID) >= CACHE_SIZE:
                _BY_ID.clear()
            _BY_ID[key] = (contracts, prog)
    tp = prog.tools.get(tool)
    if tp is None:
        if memory is not None:
            memory.record(tool, arguments, result, call_id)
        return []
    out: list[Violation]
    run = tp.run
    if run is None:
        out = call_violations(contracts, tool, arguments, result, fold=fold, codes=codes)
    else:
        try:
            found = run(arguments, result)
        except Bail:
            out = call_violations(contracts, tool, arguments, result, fold=fold, codes=codes)
        else:
            if not found and memory is None:
                return []  # the call holds
            out = [tp.witness(i, p, arguments, result) for i, p in dict.fromkeys(found)] if found else []
    if memory is not None:
        if prog.episode is not None:
            out.extend(prog.episode.step(memory, tool, arguments, result, call_id, prog.judges_episode))
        else:
            memory.record(tool, arguments, result, call_id)
    if len(out) > 1:
        out.sort(key=Violation.sort_key)
    return out


__all__ = [
    "STATS",
    "Bail",
    "Program",
    "ToolProgram",
    "compile_tool",
    "compiled_violations",
    "contracts_sha",
    "program",
]
