"""Where a fault can go: what fault injection (`output_contracts.audit.inject`) learns from the input records and
the targets it finds per kind.

Without a contract set, structural heuristics computed over the input itself (`learn`: a field present in
every result of a tool, a number never negative at a path, two dates always ordered, a total always equal
to the sum of its parts) pick nodes that *look* invariant; with one, the targets are the nodes its rules
cover (`Targets`, named the way the rules name them, map keys as `~*`). `FINDERS` is the one table from a
fault kind to its finder.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.codes.contract_set import Rule, split_side
from output_contracts.codes.dates import classify
from output_contracts.codes.nodes import KIND_OF_TYPE
from output_contracts.traces.pointers import MAP_TOKEN, WILD_TOKENS, escape_token, unescape_token

#: The fault taxonomy, in the order reports list it (docs/faults.md).
KINDS: tuple[str, ...] = (
    "sign_flip",
    "drop_field",
    "null_field",
    "type_swap",
    "stale_echo",
    "date_swap",
    "relation_break",
    "domain_drift",
    "plausible_string",
    "truncated_list",
)

MIN_EVIDENCE = 5  # records of a tool a heuristic needs before it trusts an "always" pattern
#: Distinct strings `learn` counts per place: a place with more is neither a categorical domain (2 to 8
#: values) nor too small for `plausible_string` (more than 8), and nothing reads which ones they are,
#: so the count stops there and memory stays bounded however many ids the input holds.
STRINGS_KEPT = 9


# --- JSON pointer helpers -------------------------------------------------------------------------


Node = tuple[str, str, Any]
"""(concrete path, pattern, value)."""


def walk(doc: Any, maps: frozenset[str] = frozenset()) -> Iterator[Node]:
    """Every node of `doc` with its RFC 6901 path and `*`-pattern, in document order; the keys of an
    object at a pattern in `maps` (a contract set's map parents) are `~*` in the pattern."""
    stack: list[Node] = [("", "", doc)]
    while stack:
        path, pattern, v = stack.pop()
        yield path, pattern, v
        if isinstance(v, dict):
            is_map = pattern in maps
            for k in reversed(list(v)):
                tok = "/" + escape_token(str(k))
                stack.append((path + tok, pattern + ("/" + MAP_TOKEN if is_map else tok), v[k]))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{path}/{i}", pattern + "/*", v[i]))


def _patterns(doc: Any, tokens: dict[str, str]) -> list[tuple[str, Any]]:
    """(pattern, value) of every node of `doc`, in `walk`'s order, without the concrete paths;
    `tokens`: each key's `/`-prefixed escaped token, kept across calls."""
    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        pattern, v = stack.pop()
        out.append((pattern, v))
        if isinstance(v, dict):
            for k in reversed(list(v)):
                tok = tokens.get(k)
                if tok is None:
                    tok = tokens[k] = "/" + escape_token(str(k))
                stack.append((pattern + tok, v[k]))
        elif isinstance(v, list) and v:
            item = pattern + "/*"
            stack.extend((item, x) for x in reversed(v))
    return out


def _tokens(path: str) -> list[str]:
    return [unescape_token(t) for t in path.split("/")[1:]] if path else []


def get_at(doc: Any, path: str) -> Any:
    """The node at a concrete pointer (KeyError/IndexError when absent)."""
    node = doc
    for tok in _tokens(path):
        node = node[int(tok)] if isinstance(node, list) else node[tok]
    return node


def set_at(doc: Any, path: str, value: Any) -> Any:
    """Set the node at `path` (in place) and return the document (a new root when `path` is "")."""
    toks = _tokens(path)
    if not toks:
        return value
    parent = get_at(doc, "".join("/" + escape_token(t) for t in toks[:-1]))
    if isinstance(parent, list):
        parent[int(toks[-1])] = value
    else:
        parent[toks[-1]] = value
    return doc


def delete_at(doc: Any, path: str) -> Any:
    """Remove the object member at `path` (in place)."""
    toks = _tokens(path)
    parent = get_at(doc, "".join("/" + escape_token(t) for t in toks[:-1]))
    del parent[toks[-1]]
    return doc


class Walked:
    """One result and its nodes (`walk`), walked once per map set however many fault kinds ask about
    it. The result is read as it is on the first ask: the caller does not change it in between
    (`Planting` plants a fault in a copy)."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self._walks: dict[frozenset[str], list[Node]] = {}
        self._values: list[tuple[str, Any]] | None = None

    def nodes(self, maps: frozenset[str] = frozenset()) -> list[Node]:
        """`list(walk(doc, maps))`."""
        got = self._walks.get(maps)
        if got is None:
            got = self._walks[maps] = list(walk(self.doc, maps))
        return got

    def values(self) -> list[tuple[str, Any]]:
        """(concrete path, value) of every node, in document order."""
        if self._values is None:
            self._values = [(p, v) for p, _pat, v in self.nodes()]
        return self._values

    def at(self, pattern: str, maps: frozenset[str] = frozenset()) -> list[tuple[str, Any]]:
        """Concrete (path, value) of every node whose pattern is `pattern`."""
        return [(p, v) for p, pat, v in self.nodes(maps) if pat == pattern]


# --- value helpers ----------------------------------------------------------------------------------


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def decimals(x: float) -> int:
    """Decimal places of a number as written (0 for ints)."""
    if isinstance(x, int):
        return 0
    text = repr(float(x))
    if "e" in text or "E" in text:
        return 10
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def _tol_ok(a: float, rhs: float, exact: bool) -> bool:
    if exact:
        return a == rhs
    return abs(a - rhs) <= 0.005 + 1e-9


# --- corpus-wide heuristic context ---------------------------------------------------------------


@dataclass
class Context:
    """What the heuristics learn from the whole input before choosing targets."""

    tool_calls: Counter[str] = field(default_factory=Counter)
    # (tool, parent pattern) -> number of object nodes there; (tool, pattern) -> number of nodes present
    parents: Counter[tuple[str, str]] = field(default_factory=Counter)
    present: Counter[tuple[str, str]] = field(default_factory=Counter)
    kinds: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    negative: set[tuple[str, str]] = field(default_factory=set)
    nums: Counter[tuple[str, str]] = field(default_factory=Counter)
    strings: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    scalars: dict[tuple[str, str], list[Any]] = field(default_factory=lambda: defaultdict(list))
    echo_ok: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    echo_seen: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    order_ok: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    order_seen: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    rel_ok: Counter[tuple[str, tuple[str, ...]]] = field(default_factory=Counter)
    rel_seen: Counter[tuple[str, tuple[str, ...]]] = field(default_factory=Counter)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


class _Place:
    """What `learn` counts at one (tool, pattern), kept together so that a node costs one lookup."""

    __slots__ = ("kinds", "negative", "nums", "parents", "pool", "present", "strings")

    def __init__(self) -> None:
        self.present = self.nums = self.parents = 0
        self.negative = False
        self.kinds: set[str] = set()
        self.strings: Counter[str] = Counter()
        self.pool: list[Any] = []


def _arg_scalars(args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [
        (p, v)
        for p, pat, v in walk(args)
        if p and "*" not in pat and isinstance(v, str | int) and not isinstance(v, bool)
    ]


def _sibling_dates(obj: Mapping[str, Any], instants: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """Pairs (key A, key B, value A, value B) of date strings in one object, same parse mode.
    `instants`: `classify`'s answers per string, kept across the objects of one `learn`."""
    dated = []
    for k, v in obj.items():
        if isinstance(v, str):
            p = instants.get(v, False)
            if p is False:
                p = instants[v] = classify(v)
            if p is not None:
                dated.append((k, v, p))
    out = []
    for i, (ka, va, pa) in enumerate(dated):
        for kb, vb, pb in dated[i + 1 :]:
            if pa[0] == pb[0]:
                out.append((ka, kb, va, vb))
                out.append((kb, ka, vb, va))
    return out


#: One object's relation candidates, by key: its numeric members (the first 12, in document order) and
#: the sum terms (`arr/*/x`) of its lists of objects. Objects of one shape have the same candidates.
Shape = tuple[tuple[str, ...], tuple[str, ...]]


def _relation_members(obj: Mapping[str, Any]) -> tuple[list[tuple[str, Any]], list[tuple[str, Any, bool]]]:
    """(numeric members, sum terms) of one object (see `Shape`); no terms when no member is numeric."""
    nums = [(k, v) for k, v in obj.items() if is_num(v)][:12]
    terms: list[tuple[str, Any, bool]] = []
    if not nums:
        return nums, terms
    for kl, lst in obj.items():
        if isinstance(lst, list) and lst and all(isinstance(x, dict) for x in lst):
            keys = set.intersection(*(set(x) for x in lst))
            for kx in sorted(keys):
                vals = [x[kx] for x in lst]
                if all(is_num(v) for v in vals):
                    terms.append(
                        (
                            f"{escape_token(kl)}/*/{escape_token(kx)}",
                            sum(vals),
                            all(isinstance(v, int) for v in vals),
                        )
                    )
    return nums, terms


def _relation_signatures(shape: Shape) -> Iterator[tuple[str, ...]]:
    """Every candidate relation of an object of this shape: (A, B, C) meaning A = B + C (B before C in
    the object), and (A, arr/*/x) meaning A = the sum of x over arr. A signature is a tuple of member
    keys (`arr/*/x` for a sum term)."""
    keys, terms = shape
    for ka in keys:
        for j, kb in enumerate(keys):
            if kb == ka:
                continue
            for kc in keys[j + 1 :]:
                if kc != ka:
                    yield (ka, kb, kc)
        for term in terms:
            yield (ka, term)


def _holding_relations(
    nums: Sequence[tuple[str, Any]], terms: Sequence[tuple[str, Any, bool]]
) -> Iterator[tuple[str, ...]]:
    """The signatures of `_relation_signatures` that hold in this object: exactly when every member is
    an int, else within half a cent."""
    for ka, a in nums:
        a_int = isinstance(a, int)
        for j, (kb, b) in enumerate(nums):
            if kb == ka:
                continue
            for kc, c in nums[j + 1 :]:
                if kc != ka and _tol_ok(a, b + c, a_int and isinstance(b, int) and isinstance(c, int)):
                    yield (ka, kb, kc)
        for term, total, all_int in terms:
            if _tol_ok(a, total, a_int and all_int):
                yield (ka, term)


def _relation_key(tool: str, pattern: str, keys: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    return tool, tuple(f"{pattern}/{k}" if "/*/" in k else f"{pattern}/{escape_token(k)}" for k in keys)


#: What `learn` can learn, and the parts each fault kind reads (its finder, or `_apply`, or both): the
#: node statistics with every basic kind, the rest only for a finder that guesses without a contract set.
PARTS = ("nodes", "echo", "order", "relations")
_HEURISTIC_PARTS = {"stale_echo": "echo", "date_swap": "order", "relation_break": "relations"}


def parts_needed(kinds: Sequence[str], *, heuristic: bool) -> frozenset[str]:
    """The parts of `Context` that targeting and planting `kinds` read: none for the incident suite
    (its targets are found by value shape alone), `nodes` for any basic kind, and the pair and relation
    statistics only for the kinds that use them when no contract set names the targets."""
    basic = [k for k in kinds if k in KINDS]
    out = {"nodes"} if basic else set()
    if heuristic:
        out |= {_HEURISTIC_PARTS[k] for k in basic if k in _HEURISTIC_PARTS}
    return frozenset(out)


def learn(records: Iterable[Mapping[str, Any]], parts: Collection[str] = PARTS) -> Context:
    """The heuristics' context over the eligible records; only `parts` (see `PARTS`) are filled, the
    others stay empty (nothing reads them for the kinds asked: `parts_needed`)."""
    ctx = Context()
    nodes, echo, order, relations = (part in parts for part in PARTS)
    if not (nodes or echo or order or relations):
        return ctx
    instants: dict[str, Any] = {}
    shapes: Counter[tuple[str, str, Shape]] = Counter()
    places: dict[str, dict[str, _Place]] = {}  # tool -> pattern -> its counts
    tokens: dict[str, str] = {}
    for rec in records:
        if not is_eligible(rec, allow_labelled=False):
            continue
        tool = rec["tool"]
        ctx.tool_calls[tool] += 1
        result = rec["result"]
        arg_vals = _arg_scalars(rec.get("arguments") or {}) if echo else []
        here = places.setdefault(tool, {})  # keyed by pattern alone: a string keeps its hash
        for pattern, v in _patterns(result, tokens):
            kind = KIND_OF_TYPE.get(type(v)) or _kind(v)  # one lookup for JSON's own types
            if nodes:
                at = here.get(pattern)
                if at is None:
                    at = here[pattern] = _Place()
                at.present += 1
                at.kinds.add(kind)
                if kind == "string":
                    if v in at.strings:
                        at.strings[v] += 1
                    elif len(at.strings) < STRINGS_KEPT:
                        at.strings[v] = 1
                    if len(at.pool) < 64 and v not in at.pool:
                        at.pool.append(v)
                elif kind == "int" or kind == "float":
                    at.nums += 1
                    if v < 0:
                        at.negative = True
                    if kind == "int" and len(at.pool) < 64 and v not in at.pool:
                        at.pool.append(v)
                elif kind == "object":
                    at.parents += 1
            if kind == "object":
                if order:
                    for ka, kb, va, vb in _sibling_dates(v, instants):
                        sig = (tool, pattern + tokens[ka], pattern + tokens[kb])
                        ctx.order_seen[sig] += 1
                        if va <= vb:
                            ctx.order_ok[sig] += 1
                if relations:
                    nums, terms = _relation_members(v)
                    if nums:
                        shapes[
                            (tool, pattern, (tuple(k for k, _ in nums), tuple(t for t, _, _ in terms)))
                        ] += 1
                        for sig_keys in _holding_relations(nums, terms):
                            ctx.rel_ok[_relation_key(tool, pattern, sig_keys)] += 1
            elif arg_vals and (kind == "string" or kind == "int") and pattern and "*" not in pattern:
                for ap, av in arg_vals:  # (`pattern` is empty only at the root)
                    esig = (tool, pattern, ap)
                    ctx.echo_seen[esig] += 1
                    if av == v and type(av) is type(v):
                        ctx.echo_ok[esig] += 1
    for tool, here in places.items():
        for pattern, at in here.items():
            key = (tool, pattern)
            ctx.present[key] = at.present
            ctx.kinds[key] = at.kinds
            ctx.scalars[key] = at.pool
            if at.nums:
                ctx.nums[key] = at.nums
            if at.negative:
                ctx.negative.add(key)
            if at.strings:
                ctx.strings[key] = at.strings
            if at.parents:
                ctx.parents[key] = at.parents
    # every candidate is counted as seen once per object of its shape (the candidates of the few
    # distinct shapes are listed once, not once per object)
    for (tool, pattern, shape), n in sorted(shapes.items()):
        for sig_keys in _relation_signatures(shape):
            ctx.rel_seen[_relation_key(tool, pattern, sig_keys)] += n
    return ctx


def is_eligible(rec: Mapping[str, Any], *, allow_labelled: bool = False) -> bool:
    if rec.get("status", "ok") != "ok" or "result" not in rec:
        return False
    labels = rec.get("labels") or {}
    return allow_labelled or not (isinstance(labels, dict) and labels.get("fault"))


# --- targets -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One place a fault of `kind` can be planted: the node at `path` (plus `other` for pairs/relations)."""

    kind: str
    path: str
    other: str = ""
    params: tuple[tuple[str, Any], ...] = ()


def _always_present(ctx: Context, tool: str, pattern: str) -> bool:
    parent = pattern.rpartition("/")[0]
    n_parent = ctx.parents[(tool, parent)]
    return n_parent >= MIN_EVIDENCE and ctx.present[(tool, pattern)] == n_parent


class Targets:
    """Finds targets of each kind in one call, from rules (when given) or heuristics."""

    def __init__(
        self,
        ctx: Context,
        rules: Mapping[str, list[Rule]] | None,
        maps: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.rules = rules
        self.maps = maps or {}

    def _named(self, tool: str) -> frozenset[str]:
        """The map parents of the patterns the targets are named in: the rules' (map keys as `~*`) when
        targeting from a contract set, none (the literal patterns the heuristics learnt) otherwise."""
        return self.maps.get(tool, frozenset()) if self.rules is not None else frozenset()

    def _rules(self, tool: str, *codes: str) -> list[Rule] | None:
        if self.rules is None:
            return None
        return [r for r in self.rules.get(tool, []) if r.code in codes]

    def find(self, kind: str, rec: Mapping[str, Any], walked: Walked | None = None) -> list[Target]:
        """Where a fault of `kind` can go in this call (the kind's finder in `FINDERS`); `walked`: the
        call's result, `Walked` once for all the kinds asked about it."""
        w = walked if walked is not None else Walked(rec["result"])
        return FINDERS[kind](self, rec["tool"], w, rec.get("arguments") or {})

    def _t_sign_flip(self, tool: str, w: Walked, args: Any) -> list[Target]:
        rules = self._rules(tool, "POSITIVE", "NONNEG")
        if rules is not None:
            pats = {r.paths[0] for r in rules if split_side(r.paths[0])[0] == "result"}
            return [
                Target("sign_flip", p)
                for p, pat, v in w.nodes(self._named(tool))
                if pat in pats and is_num(v) and v > 0
            ]
        c = self.ctx
        return [
            Target("sign_flip", p)
            for p, pat, v in w.nodes()
            if is_num(v) and v > 0 and (tool, pat) not in c.negative and c.nums[(tool, pat)] >= MIN_EVIDENCE
        ]

    def _required_paths(self, tool: str, w: Walked) -> list[tuple[str, str, Any]]:
        rules = self._rules(tool, "REQUIRED")
        if rules is not None:
            pats = {r.paths[0] for r in rules if split_side(r.paths[0])[0] == "result" and r.paths[0]}
            return [(p, pat, v) for p, pat, v in w.nodes(self._named(tool)) if pat in pats and p]
        return [(p, pat, v) for p, pat, v in w.nodes() if p and _always_present(self.ctx, tool, pat)]

    def _t_drop_field(self, tool: str, w: Walked, args: Any) -> list[Target]:
        res = w.doc
        out = []
        for p, _pat, _v in self._required_paths(tool, w):
            parent = get_at(res, p.rpartition("/")[0])
            if isinstance(parent, dict):
                out.append(Target("drop_field", p))
        return out

    def _t_null_field(self, tool: str, w: Walked, args: Any) -> list[Target]:
        res = w.doc
        out = []
        for p, pat, v in self._required_paths(tool, w):
            parent = get_at(res, p.rpartition("/")[0])
            if (
                v is not None
                and isinstance(parent, dict)
                and "null" not in self.ctx.kinds.get((tool, pat), set())
            ):
                out.append(Target("null_field", p))
        return out

    def _t_type_swap(self, tool: str, w: Walked, args: Any) -> list[Target]:
        rules = self._rules(tool, "TYPE")
        if rules is not None:
            pats = {
                r.paths[0]
                for r in rules
                if split_side(r.paths[0])[0] == "result"
                and r.params.get("kind") in ("int", "number", "object")
            }
        else:
            pats = {
                pat
                for (t, pat), ks in self.ctx.kinds.items()
                if t == tool
                and len(ks) == 1
                and ks & {"int", "float", "object"}
                and self.ctx.present[(t, pat)] >= MIN_EVIDENCE
            }
        return [
            Target("type_swap", p)
            for p, pat, v in w.nodes(self._named(tool))
            if p and pat in pats and (is_num(v) or (isinstance(v, dict) and v))
        ]

    def _t_stale_echo(self, tool: str, w: Walked, args: Any) -> list[Target]:
        res = w.doc
        rules = self._rules(tool, "ECHO")
        pairs: list[tuple[str, str]]
        if rules is not None:
            pairs = [(r.paths[0], split_side(r.paths[1])[1]) for r in rules if len(r.paths) == 2]
        else:
            c = self.ctx
            pairs = [
                (pat, ap)
                for (t, pat, ap), n in c.echo_seen.items()
                if t == tool and n >= MIN_EVIDENCE and c.echo_ok[(t, pat, ap)] == n
            ]
        out = []
        for rp, ap in sorted(set(pairs)):
            try:
                rv, av = get_at(res, rp), get_at(args, ap)
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if isinstance(rv, str | int) and not isinstance(rv, bool) and rv == av:
                out.append(Target("stale_echo", rp, ap))
        return out

    def _t_date_swap(self, tool: str, w: Walked, args: Any) -> list[Target]:
        res = w.doc
        rules = self._rules(tool, "DATE_ORDER")
        if rules is not None:
            pairs = [
                (r.paths[0], r.paths[1]) for r in rules if all(split_side(p)[0] == "result" for p in r.paths)
            ]
        else:
            c = self.ctx
            pairs = [
                (a, b)
                for (t, a, b), n in c.order_seen.items()
                if t == tool and n >= MIN_EVIDENCE and c.order_ok[(t, a, b)] == n
            ]
        out = []
        for pa, pb in sorted(set(pairs)):
            for path_a, va in w.at(pa, self._named(tool)):
                path_b = _pair_path(path_a, pa, pb)
                try:
                    vb = get_at(res, path_b)
                except (KeyError, IndexError, TypeError, ValueError):
                    continue
                x, y = classify(va), classify(vb)
                if x and y and x[0] == y[0] and x[1] < y[1]:
                    out.append(Target("date_swap", path_b, path_a))
        return out

    def _t_relation_break(self, tool: str, w: Walked, args: Any) -> list[Target]:
        rules = self._rules(tool, "RELATION")
        out = []
        if rules is not None:
            for r in rules:
                if split_side(r.paths[0])[0] != "result":
                    continue
                tol = str(r.params.get("tol", "exact"))
                for p, v in w.at(r.paths[0], self._named(tool)):
                    if is_num(v):
                        out.append(Target("relation_break", p, params=(("tol", tol),)))
            return out
        c = self.ctx
        heads = sorted(
            {
                sig[0]
                for (t, sig), n in c.rel_seen.items()
                if t == tool and n >= MIN_EVIDENCE and c.rel_ok[(t, sig)] == n
            }
        )
        for pat in heads:
            for p, v in w.at(pat):
                if is_num(v):
                    tol = "exact" if isinstance(v, int) else "cent"
                    out.append(Target("relation_break", p, params=(("tol", tol),)))
        return out

    def _domain_values(self, tool: str) -> dict[str, list[str]]:
        rules = self._rules(tool, "DOMAIN")
        if rules is not None:
            return {
                r.paths[0]: list(r.params.get("values", []))
                for r in rules
                if split_side(r.paths[0])[0] == "result"
            }
        c = self.ctx
        return {
            pat: sorted(cnt)
            for (t, pat), cnt in c.strings.items()
            if t == tool and 2 <= len(cnt) <= 8 and sum(cnt.values()) >= 20 and min(cnt.values()) >= 3
        }

    def _t_domain_drift(self, tool: str, w: Walked, args: Any) -> list[Target]:
        doms = self._domain_values(tool)
        return [
            Target("domain_drift", p, params=(("values", tuple(doms[pat])),))
            for p, pat, v in w.nodes(self._named(tool))
            if pat in doms and isinstance(v, str)
        ]

    def _t_plausible_string(self, tool: str, w: Walked, args: Any) -> list[Target]:
        c = self.ctx
        doms = self._domain_values(tool)
        arg_strings = {v for _p, v in _arg_scalars(args) if isinstance(v, str)}
        out = []
        for p, pat, v in w.nodes():
            if not isinstance(v, str) or pat in doms or v in arg_strings or classify(v) is not None:
                continue
            others = [s for s in c.scalars.get((tool, pat), []) if isinstance(s, str) and s != v]
            if len(c.strings.get((tool, pat), {})) > 8 and others:
                out.append(Target("plausible_string", p))
        return out

    def _t_truncated_list(self, tool: str, w: Walked, args: Any) -> list[Target]:
        return [
            Target("truncated_list", p) for p, _pat, v in w.nodes() if isinstance(v, list) and len(v) >= 2
        ]


#: Each fault kind's target finder: the one table from kind to code (every kind of KINDS has one).
FINDERS: dict[str, Callable[[Targets, str, Walked, Any], list[Target]]] = {
    "sign_flip": Targets._t_sign_flip,
    "drop_field": Targets._t_drop_field,
    "null_field": Targets._t_null_field,
    "type_swap": Targets._t_type_swap,
    "stale_echo": Targets._t_stale_echo,
    "date_swap": Targets._t_date_swap,
    "relation_break": Targets._t_relation_break,
    "domain_drift": Targets._t_domain_drift,
    "plausible_string": Targets._t_plausible_string,
    "truncated_list": Targets._t_truncated_list,
}
assert tuple(FINDERS) == KINDS


def _pair_path(path_a: str, pat_a: str, pat_b: str) -> str:
    """B's concrete path paired with A's by equal array indexes and map keys (same wildcard positions)."""
    ta, tb = path_a.split("/"), pat_b.split("/")
    pa = pat_a.split("/")
    out = []
    for i, tok in enumerate(tb):
        if tok in WILD_TOKENS and i < len(pa) and pa[i] == tok:
            out.append(ta[i])
        else:
            out.append(tok)
    return "/".join(out)
