"""The compiled per-call checker: each tool's rules turned into one generated Python function.

`check_call`, `Checker.check` / `Session` and `contracts check -` judge one call at a time. The generic
engine (`output_contracts.codes.engine.evaluate.call_violations`) first indexes every node of the call
(`index_nodes`) and then runs one finder per rule over that index. Here, as fastjsonschema does for a
JSON Schema, the Python source of one function per tool is written once per contract set and checker
(`compile()`, `exec`): it walks only the places the tool's rules read (a key lookup per literal token, a
loop per array wildcard or map, an index per fixed index) and tests each rule's predicate inline at its
place; the witness of what breaks is rendered by `evaluate.witness`, as the engine renders it, so receipts
are byte-identical (a hypothesis test holds the two to the same violations).

Covered inline: REQUIRED (the keys of one parent tested together first), TYPE, POSITIVE, NONNEG,
DOMAIN, RANGE (floats and ints below 2^53 compared without `float()`, which gives the same answers;
years of date prefixes kept in a bounded memo), LENGTH and FORMAT at their place (FORMAT as one regular
expression of the allowed shapes, `format_breaks`). The tests of one place are written together under one
test of the value's type (`str`; `int` or `float`; anything else, in each test's general form), and at a
place with FORMAT or a year's RANGE the strings that pass all of them are kept in a bounded memo: ids,
names, states and dates repeat across calls. After the walk, on the one node of each place, ECHO,
RELATION (its arithmetic written out: `rhs_of` and `within`, the same operations in the same order),
CONDITIONAL (not sum: strings by set membership, numbers by sign) and DATE_ORDER (instants kept per mode)
between places without wildcards; at each array element (or map entry), RELATION between members of that
element; during the walk, RELATION sum_over (a running total, in the order the finder adds) and UNIQUE
of one path under one wildcard (the first of each value kept, the paths of repeats). Per-rule fallback to
the code's own finder (`Check.find`), run on the nodes the walk collected for that rule's operands
only (still no full index): ECHO with wildcards, RELATION across elements and sum_over with wildcards in
A or the array, CONDITIONAL sum, DATE_ORDER with wildcards, composite and nested UNIQUE. CONSISTENT is
judged against the episode memory exactly as the engine does; on a memory from `compiled_memory` its
`observe` is written out per contract set (`_observer`), and a tool's CONSISTENT rules are looked at only
when the result's entity was seen at one of their places (`_seen_test`). Whole-call fallback to the generic engine:
an object that is not a map holding a key `*` or `*N` on a walked place (the key and an array index then
share a pattern token), and a tool whose generated source does not compile. Object keys are taken to be
strings (JSON): a result dict with non-string keys is a Python value JSON cannot hold. A witness is
rendered only for a rule that breaks, with the rule's code and operands kept per program.

Cache: programs are kept per (sha256 of the contract set's canonical JSON, checker, codes); the digest
itself is kept per contract set object, so a call pays one dict lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.codes.conditional import ConditionalParams
from output_contracts.codes.consistent.check import (
    _ABSENT,
    _JUDGED_TYPES,
    CallId,
    EpisodeMemory,
    _ekey,
    episode_witness,
    judged,
    walk_steps,
)
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.dates import TZ_MODES, parse_instant, str_instant
from output_contracts.codes.echo.check import echo_equal
from output_contracts.codes.engine.evaluate import EPISODE_CODE, call_violations, code, render_witness
from output_contracts.codes.evaluation import Check
from output_contracts.codes.format.check import FORMAT_MAX_LEN, LONG, NON_ASCII
from output_contracts.codes.nodes import (
    KIND_OF_TYPE,
    NUMERIC_KINDS,
    SCALAR_KINDS,
    Operand,
    PathFinder,
    is_num,
    kind_of,
)
from output_contracts.codes.range.check import _year
from output_contracts.codes.relation.check import CENT_TOL, RelationParams, within
from output_contracts.codes.required.check import _child_missing
from output_contracts.codes.unique.check import EXACT_LIMIT as _UNIQUE_LIMIT
from output_contracts.codes.unique.check import item_split
from output_contracts.codes.violation import Violation
from output_contracts.jsonutil import canonical_json, sha256_hex
from output_contracts.traces.leaves import (
    INDEX_TOKEN,
    MAP_TOKEN,
    escape_token,
    fixed_index,
    unescape_token,
)

#: Codes whose rules the generated code tests inline at their one place.
INLINE_NODE_CODES = frozenset(("TYPE", "POSITIVE", "NONNEG", "DOMAIN", "RANGE", "LENGTH", "FORMAT"))
#: An object place with at least this many keys below it is walked in blocks of `WIDE_BLOCK` keys, each
#: block looked up only when the object holds one of its keys.
WIDE_KEYS = 16
WIDE_BLOCK = 8
#: Programs kept at once (contract set x checker x codes).
CACHE_SIZE = 32
#: Answers kept per FORMAT rule, and years of date prefixes kept: cleared when full.
MEMO_SIZE = 4096
#: Instants kept per DATE_ORDER mode (timestamps are many: as many as `dates.parse_instant` keeps).
INSTANTS_SIZE = 1 << 16
#: The longest date the patterns accept (`YYYY-MM-DDThh:mm:ss.fffffffff+hh:mm`).
_DATE_MAX_LEN = 35
_YEARS: dict[str, int | None] = {}


_INSTANTS: dict[str, dict[str, int | None]] = {tz: {} for tz in TZ_MODES}


def _instant(v: str, tz: str) -> int | None:
    """`parse_instant` of a string in mode `tz`, kept (DATE_ORDER's two places: dates repeat): here, not
    in `parse_instant`'s own cache as well."""
    x = str_instant(v, tz)
    if len(v) <= _DATE_MAX_LEN:  # what can be a date (long text is not kept)
        memo = _INSTANTS[tz]
        if len(memo) >= INSTANTS_SIZE:
            memo.clear()
        memo[v] = x
    return x


def _year_of(head: str) -> int | None:
    """RANGE's year of a string (`range._year`, which reads its first ten characters only), kept."""
    y = _year(head)
    if len(_YEARS) >= MEMO_SIZE:
        _YEARS.clear()
    _YEARS[head] = y
    return y


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


def _echo_bad(r: Any, a: Any) -> bool:
    return kind_of(r) in SCALAR_KINDS and kind_of(a) in SCALAR_KINDS and not echo_equal(r, a)


#: Integers of at most this magnitude convert to float exactly: a comparison with a float bound gives the
#: same answer on the int as on `float(int)` (larger ones take the `float()` spelling, as the finders do).
_EXACT_INT = 2**53


def _num_test(x: str) -> str:
    """A condition on variable `x`: whether it holds a number, as `is_num` (a missing value does not)."""
    return f"(type({x}) in _NUMT or ({x} is not _MISS and type({x}) not in _KOT and _is_num({x})))"


def _relation_expr(w: _Writer, rp: RelationParams, a: str, xs: Sequence[str]) -> str:
    """A condition on variables `a`, `xs` (values or `_MISS`): true when the relation breaks, as
    `Relation._paths` judges one instance: the same operations in the same order (`rhs_of`, `within`)."""
    conds = [_num_test(a)]
    vals = []
    for x in xs:
        if rp.form == "count_of":
            conds.append(f"type({x}) is list")
            vals.append(f"len({x})")
        else:
            conds.append(_num_test(x))
            vals.append(x)
    if rp.form == "count_of":
        rhs = vals[0]
    elif rp.form == "product":
        rhs = f"({vals[0]} * {vals[1]})"
    else:
        rhs = "0"
        for c, v in zip(rp.coef, vals, strict=True):
            rhs = f"({rhs} {'+' if c == 1 else '-'} {v})"
    return " and ".join(conds) + f" and {_outside(w, a, rhs, rp.tol)}"


def _outside(w: _Writer, a: str, rhs: str, tol: str) -> str:
    """`not within(a, rhs, tol)` as an expression (rhs an expression without side effects)."""
    if tol == "exact":
        return f"not (abs({a} - {rhs}) == 0)"
    if tol == "cent":
        return f"not (abs({a} - {rhs}) <= {w.const(CENT_TOL)})"
    return f"not _within({a}, {rhs}, {tol!r})"


def _holds_expr(w: _Writer, prm: ConditionalParams, d: str) -> str:
    """`d is not _MISS and prm.holds(d)` as an expression: strings by set membership, floats and ints of
    exact magnitude by sign, anything else through `holds` itself."""
    strs = w.const(frozenset(k[2:] for k in prm.keys if k.startswith("s:")))
    z, pos, neg = ("n:zero" in prm.keys), ("n:positive" in prm.keys), ("n:negative" in prm.keys)
    h = w.const(prm.holds)
    sign = f"({z} if {d} == 0 else ({pos} if {d} > 0 else {neg}))"
    return (
        f"({d} in {strs} if type({d}) is str else ({sign} if (type({d}) is float or (type({d}) is int and "
        f"-{_EXACT_INT} <= {d} <= {_EXACT_INT})) else ({d} is not _MISS and {h}({d}))))"
    )


def _then_expr(w: _Writer, prm: ConditionalParams, v: str) -> str:
    """Whether the judged place's value `v` (or `_MISS`) breaks the consequent, as `Conditional.paths`."""
    then = prm.then
    if then == "present":
        return f"{v} is _MISS"
    if then == "absent":
        return f"{v} is not _MISS"
    if then == "nonempty":
        return f"(type({v}) is list and len({v}) == 0)"
    if then == "empty":
        return f"(type({v}) is list and len({v}) > 0)"
    val = w.const(prm.value)
    slow = f"({v} is not _MISS and _echo_bad({v}, {val}))"
    if type(prm.value) is str:
        return f"({v} != {val} if type({v}) is str else {slow})"
    return slow


#: The characters a shape holds for a class of characters (`output_contracts.codes.format.check.shape`), as
#: regular-expression classes (bodies, without brackets).
_CLASS_RE = {"A": "A-Z", "a": "a-z", "9": "0-9", NON_ASCII: "\\x80-\\U0010ffff"}


def _shape_re(sh: str, loose: bool) -> str | None:
    """A regular expression matching exactly the strings (of at most FORMAT_MAX_LEN characters) whose
    shape is `sh`, or None when no string has that shape (a letter, digit or non-ASCII character other
    than the class characters, or, loose, a run of one class that the shape would have collapsed)."""
    out = []
    prev = ""
    for ch in sh:
        if ch in _CLASS_RE:
            if loose and ch == prev:
                return None
            out.append(f"[{_CLASS_RE[ch]}]" + ("+" if loose else ""))
        elif ch.isascii() and not ch.isalnum():
            out.append(re.escape(ch))
        else:
            return None
        prev = ch
    return "".join(out)


def format_breaks(level: str, shapes: Sequence[str]) -> Callable[[str], bool]:
    """FORMAT's test of one string (`shape(s, level) not in shapes`, or for `charset` `not parts(s) <=
    shapes`) without computing the shape: the allowed shapes as one regular expression (per length for
    `charset`). A hypothesis test holds it to `shape` and `parts`."""
    long_ok = LONG in shapes
    if level == "charset":
        by_len: dict[int, set[str]] = {}
        for p in shapes:
            n, sep, c = p.partition(":")
            if sep and n.isdigit() and len(c) <= 1:
                chars = by_len.setdefault(int(n), set())
                if c in _CLASS_RE:
                    chars.add(_CLASS_RE[c])
                elif c and c.isascii() and not c.isalnum():
                    chars.add(re.escape(c))
        rx = {
            n: re.compile(f"[{''.join(sorted(cs))}]+" if n else "")
            for n, cs in by_len.items()
            if cs or n == 0
        }

        def charset(v: str) -> bool:
            n = len(v)
            if n > FORMAT_MAX_LEN:
                return not long_ok
            r = rx.get(n)
            return r is None or r.fullmatch(v) is None

        return charset
    _, one = _shapes_re(level, shapes)

    def shaped(v: str) -> bool:
        if len(v) > FORMAT_MAX_LEN:
            return not long_ok
        return one is None or one.fullmatch(v) is None

    return shaped


def _shapes_re(level: str, shapes: Sequence[str]) -> tuple[bool, re.Pattern[str] | None]:
    """For the `exact` and `loose` levels: whether the long shape is allowed, and one regular expression
    of the other allowed shapes (None when no string has any of them)."""
    alts = [a for sh in shapes if sh != LONG and (a := _shape_re(sh, level == "loose")) is not None]
    return LONG in shapes, (re.compile("|".join(f"(?:{a})" for a in alts)) if alts else None)


#: What generated code reads besides its own constants.
_GLOBALS: dict[str, Any] = {
    "_BAIL": _BAIL,
    "_MISS": _MISS,
    "_KOT": KIND_OF_TYPE,
    "_NUMT": frozenset((int, float)),
    "_tok": _tok,
    "_type_ok": _type_ok,
    "_is_num": is_num,
    "_YEARS": _YEARS,
    "_INSTANTS": _INSTANTS,
    "_instant": _instant,
    "_pi": parse_instant,
    "_year_of": _year_of,
    "_echo_bad": _echo_bad,
    "_cm": _child_missing,
    "_follow": None,  # set below, once `_follow` is defined
    "_within": within,
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
    #: the one-place tests at this place (TYPE, POSITIVE, NONNEG, DOMAIN, RANGE, LENGTH, FORMAT):
    #: written together, under one test of the value's type (`_Writer.tests`)
    tests: list[_Test] = field(default_factory=list)
    #: REQUIRED rules of this parent: (rule index, rule)
    required: list[tuple[int, Rule]] = field(default_factory=list)
    #: TYPE rules among `tests`: (rule index, the types that hold, the kind, "$args" or "")
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


class _Writer:
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
        if not node.children and not node.required:
            return
        stars = {t: c for t, c in node.children.items() if t == INDEX_TOKEN or fixed_index(t) is not None}
        dict_lines: list[str] = []
        # REQUIRED: a key the walk looks up anyway is judged missing in the lookup's `else`; the other
        # keys of the parent each by one `in` (a subset test of the keys' view costs more than that)
        misses: dict[str, list[str]] = {}
        if node.required:
            keyed_toks = set(node.children) - set(stars) - {MAP_TOKEN}
            wide = len(keyed_toks) >= WIDE_KEYS
            folded = node.descent not in maps and not wide
            # the subset test of every key, then each key (`_required_act`, its lines past the test of
            # the parent's type): an object of a dict subclass (a caller's own value) is tested so
            every = _required_act(self, node.required)(var, tvar, path)[1:]
            self.lines.append(f"{ind}if {tvar} is not dict and isinstance({var}, dict):")
            self.lines.extend(f"{ind}{x}" for x in every)
            if folded:
                misses, rest = _required_misses(self, node.required, var, path, keyed_toks)
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
                    and not c.required
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

    def tests(self, tests: Sequence[_Test], v: str, t: str, path: str) -> list[str]:
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
                f"    if len(out) == {n0} and len({v}) <= {FORMAT_MAX_LEN}:",
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
# Inline tests per code


def _holding(want: str) -> frozenset[type]:
    """The value types of kind `want` (TYPE's test: a type outside them is judged by `_type_ok`)."""
    return frozenset(
        t for t, k in KIND_OF_TYPE.items() if k == want or (want == "number" and k in NUMERIC_KINDS)
    )


@dataclass(frozen=True)
class _Test:
    """A one-place code's test at its place, in three parts, each giving the lines that append (rule
    index, path) when it breaks: `on_str` for a value of type `str` exactly, `on_num` for `int` or
    `float` exactly (given the value and type variables), `other` for any other value (the general
    test, right for every type). `pure`: on a `str` its answer depends on the string alone and costs
    more than one lookup (FORMAT, a year's RANGE), so the place's strings that pass are worth keeping."""

    on_str: Callable[[str, str], list[str]]
    on_num: Callable[[str, str, str], list[str]]
    other: Callable[[str, str, str], list[str]]
    pure: bool = False
    #: TYPE's kind is neither a string nor a number: the place's values are mostly of another type
    other_kind: bool = False


def _nothing(*_a: str) -> list[str]:
    return []


def _node_test(w: _Writer, rule: Rule, ri: int) -> _Test:
    """The inline test of a one-place code at its place (`_Test`: its lines per type of the value)."""
    c = code(rule)
    prefix = "$args" if Operand.of(rule.paths[0]).side == "arg" else ""
    name = rule.code
    p = c.params(rule)
    pre = repr(prefix) + " + " if prefix else ""

    def hit(path: str) -> str:
        return f"out.append(({ri}, {pre}{path}))"

    def when(cond: Callable[[str, str], str]) -> Callable[[str, str, str], list[str]]:
        return lambda v, t, path: [f"if {cond(v, t)}:", f"    {hit(path)}"]

    if name == "TYPE":
        want = p.kind
        holding = _holding(want)
        ok = w.const(holding)
        wk = w.const(want)
        # a str, int or float is a type `KIND_OF_TYPE` names: it holds exactly when its type is held
        on_str: Callable[[str, str], list[str]] = (
            _nothing if str in holding else (lambda v, path: [hit(path)])
        )
        nums = holding & {int, float}
        on_num: Callable[[str, str, str], list[str]]
        if nums == {int, float}:
            on_num = _nothing
        elif nums:
            other_t = "float" if int in nums else "int"
            on_num = lambda v, t, path: [f"if {t} is {other_t}:", f"    {hit(path)}"]  # noqa: E731
        else:
            on_num = lambda v, t, path: [hit(path)]  # noqa: E731
        # one type that holds (object, array, bool, null...): `is not` instead of a set's lookup
        (only,) = holding if len(holding) == 1 else (None,)
        held = f"is not {only.__name__ if only in (bool, dict, list, str, int, float) else w.const(only)}"
        return _Test(
            on_str,
            on_num,
            when(
                lambda v, t: (
                    f"{t} {held if only is not None else 'not in ' + ok} and "
                    f"({t} in _KOT or not _type_ok({v}, {wk}))"
                )
            ),
            other_kind=not holding & {str, int, float},
        )
    if name in ("POSITIVE", "NONNEG"):
        op = "<=" if name == "POSITIVE" else "<"
        return _Test(
            _nothing,
            when(lambda v, t: f"{v} {op} 0"),
            when(
                lambda v, t: (
                    f"(({t} is int or {t} is float) or ({t} not in _KOT and _is_num({v}))) and {v} {op} 0"
                )
            ),
        )
    if name == "DOMAIN":
        allowed = w.const(frozenset(p.values))
        return _Test(
            lambda v, path: [f"if {v} not in {allowed}:", f"    {hit(path)}"],
            _nothing,
            when(lambda v, t: f"isinstance({v}, str) and {v} not in {allowed}"),
        )
    if name == "LENGTH":
        m = w.const(p.min)
        return _Test(_nothing, _nothing, when(lambda v, t: f"{t} is list and len({v}) < {m}"))
    if name == "RANGE":
        hi = w.const(p.max)
        # a float, or an int of exact magnitude, compares as its `float()` does: no conversion
        exact = f"({{t}} is float or (-{_EXACT_INT} <= {{v}} <= {_EXACT_INT}))"
        bounded = abs(p.max) <= _EXACT_INT and (p.min is None or abs(p.min) <= _EXACT_INT)
        if p.of == "year":
            lo = w.const(-float("inf") if p.min is None else p.min)

            def year_lines(v: str, path: str) -> list[str]:
                y = w.name("y")
                return [
                    f"{y} = _YEARS.get({v}[:10], _MISS)",
                    f"if {y} is _MISS:",
                    f"    {y} = _year_of({v}[:10])",
                    f"if {y} is not None and ({y} < {lo} or {y} > {hi}):",
                    f"    {hit(path)}",
                ]

            # only a value of type `str` exactly has a year
            return _Test(year_lines, _nothing, _nothing, pure=True)
        # the tests below hold only for a value of type int or float exactly: `on_num`
        if p.of == "magnitude":
            neg = w.const(-p.max)

            def num_cond(v: str, t: str) -> str:
                slow = f"abs(float({v})) > {hi}"
                if not bounded:
                    return slow
                # the exact comparison first, on any int or float: when it holds, so does the
                # `float()` one (rounding to the nearest float keeps order, and the bound is a float)
                return f"({v} > {hi} or {v} < {neg}) and (abs({v}) > {hi} if {exact.format(t=t, v=v)} else {slow})"
        else:
            lo = w.const(0.0 if p.min is None else p.min)

            def num_cond(v: str, t: str) -> str:
                slow = f"(float({v}) > {hi} or 0 < float({v}) < {lo})"
                if not bounded:
                    return slow
                low = "" if p.min is None else f" or 0 < {v} < {lo}"
                return (
                    f"({v} > {hi}{low}) and "
                    f"(({v} > {hi} or 0 < {v} < {lo}) if {exact.format(t=t, v=v)} else {slow})"
                )

        return _Test(_nothing, when(num_cond), _nothing)
    if name == "FORMAT":
        if p.level == "charset":
            breaks = w.const(format_breaks(p.level, p.shapes))

            def test(v: str) -> str:
                return f"{breaks}({v})"
        else:
            long_ok, one = _shapes_re(p.level, p.shapes)
            fm = None if one is None else w.const(one.fullmatch)

            def test(v: str) -> str:
                if fm is None:
                    return f"len({v}) <= {FORMAT_MAX_LEN}" if long_ok else "True"
                if long_ok:
                    return f"(len({v}) <= {FORMAT_MAX_LEN} and {fm}({v}) is None)"
                return f"(len({v}) > {FORMAT_MAX_LEN} or {fm}({v}) is None)"

        return _Test(
            lambda v, path: [f"if {test(v)}:", f"    {hit(path)}"],
            _nothing,
            when(lambda v, t: f"isinstance({v}, str) and {test(v)}"),
            pure=True,
        )
    raise ValueError(name)  # pragma: no cover - guarded by INLINE_NODE_CODES


def _required_act(w: _Writer, members: list[tuple[int, Rule]]) -> Callable[[str, str, str], list[str]]:
    """REQUIRED rules sharing one parent: each key tested in the parent object (as `Required.group`);
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


def _required_misses(
    w: _Writer, members: list[tuple[int, Rule]], v: str, path: str, walked: set[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """REQUIRED rules of one parent that is an object (not a map, not wide), for the walk: per token the
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


def _unique_act(w: _Writer, seen: str, pre: str) -> Callable[[str, str, str], list[str]]:
    """Keep an item's value in a single-path UNIQUE's table: the first one, and the path of a repeat."""

    def act(v: str, t: str, path: str) -> list[str]:
        # `unique._key` written out: a string is its own key, a number its float (a string never equals
        # a float, so one table serves both, as the tagged pairs did)
        k, r = w.name("u"), w.name("r")
        return [
            f"if {t} is str:",
            f"    {k} = {v}",
            f"elif {t} is int or {t} is float:",
            f"    {k} = float({v})",
            f"    if not abs({k}) < {_UNIQUE_LIMIT!r}:",
            f"        {k} = None",
            "else:",
            f"    {k} = None",
            f"if {k} is not None:",
            f"    {r} = {seen}.get({k})",
            f"    if {r} is None:",
            f"        {seen}[{k}] = []",
            "    else:",
            f"        {r}.append({pre}{path})",
        ]

    return act


def _add_to(total: str) -> Callable[[str, str, str], list[str]]:
    """Add a node to a sum_over's running total when it is a number (`Relation._paths`' sum)."""
    return lambda v, t, path: [f"if {_num_test(v)}:", f"    {total} = {total} + {v}"]


def _flat_test(
    w: _Writer, rule: Rule, ops: Sequence[Operand]
) -> tuple[Callable[[list[str]], str], str] | None:
    """For RELATION (not sum_over), CONDITIONAL (not sum) and DATE_ORDER whose places have no wildcard:
    the condition on the places' values (variables, `_MISS` when absent) under which the rule breaks,
    judged after the walk, and the path a violation is reported at."""
    if any(op.wpos for op in ops):
        return None
    p = code(rule).params(rule)
    if rule.code == "RELATION" and p.form != "sum_over":
        return (lambda vs: _relation_expr(w, p, vs[0], vs[1:])), ops[0].display(ops[0].concrete(()))
    if rule.code == "CONDITIONAL" and p.then != "sum_of":
        return (lambda vs: f"{_holds_expr(w, p, vs[0])} and {_then_expr(w, p, vs[1])}"), ops[1].display(
            ops[1].concrete(())
        )
    return None


def _sum_over(rule: Rule, ops: Sequence[Operand]) -> RelationParams | None:
    """A RELATION sum_over judged by the walk: A and the summed array without wildcards (one node each at
    most), the members summed as the walk meets them (the order `Relation._paths` adds them in)."""
    if rule.code != "RELATION":
        return None
    p = code(rule).params(rule)
    if p.form != "sum_over" or ops[0].wpos or ops[2].wpos:
        return None
    return p


def _steps(descent: str, suffix: Sequence[str], maps: frozenset[str]) -> list[tuple[str, Any, str]]:
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


def _follow(v: Any, steps: Sequence[tuple[str, Any, str]]) -> Any:
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


def _instance_test(
    rule: Rule, ops: Sequence[Operand], maps: tuple[frozenset[str], frozenset[str]]
) -> tuple[str, list[list[tuple[str, Any, str]]], str, RelationParams] | None:
    """RELATION (not sum_over) whose places are members of one array element (or map entry): the same
    wildcards, the same pattern up to the last one (P), no wildcard below it. Judged at each node of P
    on the places below it (one node each at most), as `Relation._paths` pairs them by their indexes.
    Returns (P, the steps from a node of P to each place, the judged place's path below P, params)."""
    if rule.code != "RELATION":
        return None
    p = code(rule).params(rule)
    side = ops[0].side
    if (
        p.form == "sum_over"
        or not ops[0].wpos
        or any(op.side != side or op.wpos != ops[0].wpos for op in ops)
    ):
        return None
    last = ops[0].wpos[-1]
    toks = [op.pattern.split("/") for op in ops]
    if any(t[: last + 1] != toks[0][: last + 1] for t in toks):
        return None
    prefix = "/".join(toks[0][: last + 1])
    descent = "/".join(INDEX_TOKEN if fixed_index(t) is not None else t for t in toks[0][: last + 1])
    side_maps = maps[0] if side == "arg" else maps[1]
    steps = [_steps(descent, t[last + 1 :], side_maps) for t in toks]
    below = "".join("/" + (fixed_index(t) or t) for t in toks[0][last + 1 :])
    return prefix, steps, below, p


def _element_act(
    w: _Writer, ri: int, pre: str, below: str, steps: list[list[tuple[str, Any, str]]], rp: RelationParams
) -> Callable[[str, str, str], list[str]]:
    """The lines judging one element at its node: each place followed down from it (keys inline, other
    steps by `_follow`, every place before any test, as `_follow` was), then the relation's condition."""

    def act(v: str, t: str, path: str) -> list[str]:
        lines = []
        names = []
        one_key: list[tuple[str, str]] = []  # places one key below the element: read under one test
        for st in steps:
            x = w.name("x")
            names.append(x)
            if len(st) == 1 and st[0][0] == "k":
                one_key.append((x, st[0][1]))
            elif all(kind == "k" for kind, _k, _t in st):
                lines.append(f"{x} = {v}")
                for _kind, key, _tok in st:
                    lines.append(f"{x} = {x}.get({key!r}, _MISS) if type({x}) is dict else _MISS")
            else:
                lines.append(f"{x} = _follow({v}, {w.const(st)})")
        if one_key:
            head = [f"if {t} is dict:", *(f"    {x} = {v}.get({key!r}, _MISS)" for x, key in one_key)]
            lines[:0] = [*head, "else:", f"    {' = '.join(x for x, _k in one_key)} = _MISS"]
        lines.append(f"if {_relation_expr(w, rp, names[0], names[1:])}:")
        lines.append(f"    out.append(({ri}, {pre}{path} + {below!r}))")
        return lines

    return act


_GLOBALS["_follow"] = _follow


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
    """Generate, compile and load one tool's checker (its rules but CONSISTENT)."""
    w = _Writer()
    roots = {"arg": _Node(""), "result": _Node("")}
    tail: list[str] = []  # judged after the walk
    init: list[str] = []
    slots: dict[tuple[str, str, bool], str] = {}
    fallbacks: list[tuple[int, PathFinder, list[tuple[tuple[str, str], str]]]] = []

    def slot(op: Operand, collect: bool) -> str:
        key = (op.side, op.pattern, collect)
        if key not in slots:
            name = slots[key] = w.name("N" if collect else "E")
            init.append(f"    {name} = []" if collect else f"    {name} = _MISS")
            _place(roots[op.side], op.pattern).acts.append(_store(name, collect))
        return slots[key]

    for ri, rule in enumerate(rules):
        c = code(rule)
        ops = c.operands(rule)
        if rule.code in INLINE_NODE_CODES:
            place = _place(roots[ops[0].side], ops[0].pattern)
            place.tests.append(_node_test(w, rule, ri))
            if rule.code == "TYPE":
                want = c.params(rule).kind
                place.kinds.append((ri, _holding(want), want, "$args" if ops[0].side == "arg" else ""))
        elif rule.code == "REQUIRED":
            _place(roots[ops[0].side], ops[0].pattern).required.append((ri, rule))
        elif rule.code == "ECHO" and not ops[0].wpos and not ops[1].wpos:
            a, b = slot(ops[0], False), slot(ops[1], False)
            tail.append(
                f"    if {a} is not _MISS and {b} is not _MISS and not (type({a}) is type({b}) and {a} == {b}):"
            )
            tail.append(f"        if _echo_bad({a}, {b}):")
            tail.append(f"            out.append(({ri}, {ops[0].display(ops[0].concrete(()))!r}))")
        elif (inst := _instance_test(rule, ops, maps)) is not None:
            at, steps, below, rp = inst
            pre = "'$args' + " if ops[0].side == "arg" else ""
            _place(roots[ops[0].side], at).acts.append(_element_act(w, ri, pre, below, steps, rp))
        elif rule.code == "DATE_ORDER" and not ops[0].wpos and not ops[1].wpos:
            tz = code(rule).params(rule).tz
            memo = w.const(_INSTANTS[tz])  # the same dictionary (cleared, never replaced)
            a, b = slot(ops[0], False), slot(ops[1], False)
            tail.append(f"    if {a} is not _MISS and {b} is not _MISS:")
            names = []
            for x in (a, b):
                i = w.name("i")
                names.append(i)
                tail.append(f"        {i} = {memo}.get({x}, _MISS) if type({x}) is str else _pi({x}, {tz!r})")
                tail.append(f"        if {i} is _MISS:")
                tail.append(f"            {i} = _instant({x}, {tz!r})")
            ia, ib = names
            tail.append(f"        if {ia} is None or {ib} is None or {ia} > {ib}:")
            tail.append(f"            out.append(({ri}, {ops[1].display(ops[1].concrete(()))!r}))")
        elif (flat := _flat_test(w, rule, ops)) is not None:
            test, shown = flat
            tail.append(f"    if {test([slot(op, False) for op in ops])}:")
            tail.append(f"        out.append(({ri}, {shown!r}))")
        elif (
            rule.code == "UNIQUE"
            and len(ops) == 1
            and len(ops[0].wpos) == 1
            and item_split(ops[0].pattern) is not None
        ):
            # one list per call: the walk meets its items in index order, keeping the first of each value
            # and the paths of the later ones (`Unique.find`: grouped by value, first seen first)
            seen = w.name("U")
            init.append(f"    {seen} = {{}}")
            pre = "'$args' + " if ops[0].side == "arg" else ""
            _place(roots[ops[0].side], ops[0].pattern).acts.append(_unique_act(w, seen, pre))
            tail.append(f"    for _ps in {seen}.values():")
            tail.append("        for _p in _ps:")
            tail.append(f"            out.append(({ri}, _p))")
        elif (sp := _sum_over(rule, ops)) is not None:
            total = w.name("S")
            init.append(f"    {total} = 0")
            _place(roots[ops[1].side], ops[1].pattern).acts.append(_add_to(total))
            a, arr = slot(ops[0], False), slot(ops[2], False)
            tail.append(
                f"    if isinstance({arr}, list) and {_num_test(a)} and {_outside(w, a, total, sp.tol)}:"
            )
            tail.append(f"        out.append(({ri}, {ops[0].display(ops[0].concrete(()))!r}))")
        else:
            fallbacks.append((ri, c.find(rule, ops), [((op.side, op.pattern), slot(op, True)) for op in ops]))
    body: list[str] = []
    for side, var in (("arg", "A"), ("result", "R")):
        root = roots[side]
        if root.acts or root.tests or root.children:
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
    namespace: dict[str, Any] = {**_GLOBALS, **w.consts}
    try:
        exec(compile(src, "<contracts compiled checker>", "exec"), namespace)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly deep patterns
        return ToolProgram(tuple(rules), None, None)
    render = tuple((code(r), tuple(Operand.of(p) for p in r.paths)) for r in rules)
    return ToolProgram(tuple(rules), namespace["check"], src, render)


# ----------------------------------------------------------------------------------------------------
# Programs per contract set, and the per-call entry point


def _observer(
    template: EpisodeMemory,
) -> Callable[[list[dict[Any, Any]], set[Any], Any, CallId, str], None] | None:
    """`EpisodeMemory.observe` written out for the template's places (`observe(seen, known, result,
    call_id, tool)` on a memory's `_seen` and `_known`): the same lookups, tests and stores in the same
    order, with each key a constant and no loop over the plan (a memory's plan is its places': one
    sharing the template's places has the template's plan). None when there are no places."""
    if not template.pairs:
        return None
    w = _Writer()
    lines = [
        "def observe(seen, known, R, cid, tool):",
        "    if type(R) is not dict and not isinstance(R, dict):",
        "        return",
        "    get = R.get",
    ]
    for k, ks, ktop, places in template._plan:
        kv, key, hit = w.name("kv"), w.name("key"), w.name("hit")
        read = (
            f"get({w.const(ktop)}, _ABSENT)" if ktop is not None else f"_walk(R, {w.const(ks)}, {w.const(k)})"
        )
        lines += [
            f"    {kv} = {read}",
            f"    if {kv} is not _ABSENT:",
            f"        {key} = {kv} if type({kv}) is str else _ekey({kv})",
            f"        if {key} is not None:",
            f"            {hit} = False",
        ]
        for i, p, ps, ptop in places:
            pv = w.name("pv")
            pread = (
                f"get({w.const(ptop)}, _ABSENT)"
                if ptop is not None
                else f"_walk(R, {w.const(ps)}, {w.const(p)})"
            )
            lines += [
                f"            {pv} = {pread}",
                f"            if {pv} is not _ABSENT and (type({pv}) in _JT or _judged({pv})):",
                f"                seen[{int(i)}][{key}] = ({pv}, cid, tool)",
                f"                {hit} = True",
            ]
        lines += [f"            if {hit}:", f"                known.add({key})"]
    ns: dict[str, Any] = {
        "_ABSENT": _ABSENT,
        "_ekey": _ekey,
        "_walk": walk_steps,
        "_JT": _JUDGED_TYPES,
        "_judged": judged,
        **w.consts,
    }
    try:
        exec(compile("\n".join(lines) + "\n", "<contracts compiled episode memory>", "exec"), ns)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly many places
        return None
    fn: Callable[[list[dict[Any, Any]], set[Any], Any, CallId, str], None] = ns["observe"]
    return fn


def _seen_test(
    template: EpisodeMemory, rules: Sequence[Rule]
) -> Callable[[list[dict[Any, Any]], Any], bool] | None:
    """For one tool's CONSISTENT rules: `test(seen, result)`, False only when no rule can break, that is
    when `EpisodeMemory.breaks` would give None for each without looking further (the result's entity at
    K not seen at the rule's place), on a memory with the template's places. K one key below the result
    is read by `get`; a deeper K, or a result that is not a dict, answers True (`breaks` decides)."""
    w = _Writer()
    lines = ["def test(seen, R):", "    if type(R) is not dict:", "        return True"]
    by_k: dict[str, list[int]] = {}
    for r in rules:
        p, k = r.paths
        i = template._index.get((p, k))
        if i is None:
            continue  # `breaks` gives None at once
        by_k.setdefault(k, []).append(i)
    for k, idx in by_k.items():
        toks = k.split("/")
        if k == "" or len(toks) != 2 or toks[1].isdigit():
            return None  # deeper, the root, or an index: `breaks` walks it
        kv, key = w.name("kv"), w.name("key")
        lines += [
            f"    {kv} = R.get({w.const(unescape_token(toks[1]))}, _ABSENT)",
            f"    if {kv} is not _ABSENT:",
            f"        {key} = {kv} if type({kv}) is str else _ekey({kv})",
            f"        if {key} is not None and ({' or '.join(f'{key} in seen[{i}]' for i in idx)}):",
            "            return True",
        ]
    lines.append("    return False")
    ns: dict[str, Any] = {"_ABSENT": _ABSENT, "_ekey": _ekey, **w.consts}
    try:
        exec(compile("\n".join(lines) + "\n", "<contracts compiled episode test>", "exec"), ns)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly many places
        return None
    fn: Callable[[list[dict[Any, Any]], Any], bool] = ns["test"]
    return fn


@dataclass(frozen=True)
class Program:
    """The compiled checker of one contract set, checker (`fold`) and `codes` filter."""

    sha: str
    tools: dict[str, ToolProgram]
    episode: dict[str, list[Rule]]
    #: the (P, K) places of the checker's CONSISTENT rules: what an episode's memory tracks
    places: tuple[tuple[str, str], ...] = ()
    #: an empty memory of those places (`compiled_memory` gives copies of it), and its `observe`
    #: written out (`_observer`): used on a memory that shares the template's places
    template: EpisodeMemory | None = None
    observe: Callable[[list[dict[Any, Any]], set[Any], Any, CallId, str], None] | None = None
    #: per tool with CONSISTENT rules, `_seen_test`: whether any of them can break (its entity seen)
    seen_tests: dict[str, Callable[[list[dict[Any, Any]], Any], bool]] = field(default_factory=dict)


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
    episode: dict[str, list[Rule]] = {}
    for r in contracts.rules_for(fold):
        code(r)  # validate, as the engine does
        if r.code == EPISODE_CODE:
            episode.setdefault(r.tool, []).append(r)
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
    places = tuple((r.paths[0], r.paths[1]) for rules in episode.values() for r in rules)
    template = EpisodeMemory(places)
    seen_tests = {t: f for t, rules in episode.items() if (f := _seen_test(template, rules)) is not None}
    prog = Program(sha, tools, episode, places, template, _observer(template), seen_tests)
    if len(_PROGRAMS) >= CACHE_SIZE:
        _PROGRAMS.clear()
    _PROGRAMS[key] = prog
    STATS["built"] += 1
    return prog


def compiled_memory(contracts: ContractSet, fold: int | None = None) -> EpisodeMemory:
    """`evaluate.episode_memory` from the cached program: an empty memory of one episode, without
    listing the contract set's rules again (a stream starts one per episode)."""
    prog = program(contracts, fold)
    return prog.template.blank() if prog.template is not None else EpisodeMemory(prog.places)


def compiled_violations(
    contracts: ContractSet,
    tool: str,
    arguments: Any,
    result: Any,
    *,
    fold: int | None = None,
    codes: Sequence[str] | None = None,
    memory: EpisodeMemory | None = None,
    call_id: CallId = "",
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
        ours = prog.template is not None and memory.pairs is prog.template.pairs
        erules = prog.episode.get(tool) if memory._known else None  # an empty memory breaks nothing
        if (
            erules
            and (codes is None or EPISODE_CODE in codes)
            and (not ours or (st := prog.seen_tests.get(tool)) is None or st(memory._seen, result))
        ):
            for rule in erules:
                seen = memory.breaks(rule, result)
                if seen is not None:
                    out.append(episode_witness(rule, result, seen))
        observe = prog.observe
        if observe is not None and ours:
            # `memory.record`, with its `observe` written out for these places
            if memory._known:
                memory.touch(arguments)
            observe(memory._seen, memory._known, result, call_id, tool)
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
