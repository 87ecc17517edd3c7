"""CONSISTENT's one implementation of its semantics: an episode's memory (`EpisodeMemory`) of what each
entity was at each tracked (P, K) place; `paths [P, K]`, params `{}`: within one episode, an entity keeps
the value at P.

K is the entity's key (`/reservation_id`), P a field of the same object (`/created_at`); both are result
pointers without wildcards, with the same parent. The rule is the only one that judges a call against
*other* calls: when a call of the rule's tool returns the entity K = k with P = v, and an earlier call of
the same episode (any tool) returned P = w for the same K = k at the same pointers, then v must equal w.
Catches what no per-call contract can see because the value is plausible on its own: a time shifted by
a zone (local time labelled UTC), another record's field served from a stale cache, a wrong currency.

Definitions both evaluations share (`EpisodeMemory` is the one implementation, and the corpus path
replays it for the witness):
- *earlier*: earlier in the input (source, line, index within the line), among the episode's calls with
  status ok; what each of them returned at (P, K) is remembered, the latest one winning, whatever the
  tool (a write tool's result updates the memory like a read's);
- *touched*: a call whose arguments name the entity (its key value anywhere in them), of any tool and
  any status, voids what was remembered of it before: unless its own result shows the entity again,
  there is no earlier value to compare a later call with (a write whose result is an error page or an
  acknowledgement may have changed it). A call's own arguments never void its own comparison;
- *the same entity*: K holds a string, or an integer below 2^53, equal as JSON (`"7"` is not `7`);
- *equal*: as ECHO compares — numbers by value, everything else by kind and value; only scalars at P
  are judged (a list or object at P is not).
A call with no earlier call of its entity is not judged; nor is a call checked alone (`check_call`
without an `EpisodeMemory`): the rule needs the episode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from output_contracts.codes.consistent import CallId, Seen
from output_contracts.codes.contract_set import Rule
from output_contracts.codes.echo.check import echo_equal
from output_contracts.codes.nodes import resolve
from output_contracts.traces.pointers import unescape_token

#: Integer keys at or beyond 2^53 are not judged: a corpus stores numbers as float64 (as UNIQUE).
EXACT_LIMIT = 2.0**53


def entity_key(v: Any) -> tuple[str, Any] | None:
    """The identity of a key value: a string, or an integer below 2^53; None for anything else."""
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) < EXACT_LIMIT:
        return ("n", float(v))
    return None


def judged(v: Any) -> bool:
    """Whether a value at P is judged: JSON scalars only."""
    return v is None or isinstance(v, bool | int | float | str)


#: What `walk` gives for a path that names no node.
ABSENT = object()


#: A pointer's steps: per token, the object key and the array index it names (None: no index).
Steps = tuple[tuple[str, int | None], ...]


#: Paths whose steps `steps_of` keeps (the cache is emptied when full).
STEPS_CACHE_SIZE = 4096


_STEPS: dict[str, Steps | None] = {}


def steps_of(path: str) -> Steps | None:
    """The steps `resolve` takes down a concrete path, computed once per path; None when a token is a
    non-ASCII digit string (`resolve` itself then judges: `int()` of it is its business)."""
    hit = _STEPS.get(path, ABSENT)
    if hit is not ABSENT:
        return hit  # type: ignore[return-value]
    steps: Steps | None = ()
    out: list[tuple[str, int | None]] = []
    for tok in path.split("/")[1:]:
        if tok.isdigit() and not tok.isascii():
            steps = None
            break
        out.append((unescape_token(tok), int(tok) if tok.isdigit() else None))
    else:
        steps = tuple(out)
    if len(_STEPS) >= STEPS_CACHE_SIZE:  # bounded, whatever the paths (non-ASCII digits included)
        _STEPS.clear()
    _STEPS[path] = steps
    return steps


def walk(doc: Any, path: str) -> Any:
    """`resolve(doc, path)`'s value when present, else `ABSENT`: the same walk on precomputed steps."""
    return walk_steps(doc, steps_of(path) if path else (), path)


def walk_steps(doc: Any, steps: Steps | None, path: str) -> Any:
    """`walk` with the path's steps given (`steps_of(path)`)."""
    if steps is None:
        ok, v = resolve(doc, path)
        return v if ok else ABSENT
    cur = doc
    for key, idx in steps:
        if isinstance(cur, dict):
            if key not in cur:
                return ABSENT
            cur = cur[key]
        elif isinstance(cur, list):
            if idx is None or idx >= len(cur):
                return ABSENT
            cur = cur[idx]
        else:
            return ABSENT
    return cur


_EXACT_INT = 2**53


def entity_value(v: Any) -> Any:
    """`entity_key` as one value, what `EpisodeMemory` keys by: the string itself, or the integer's float
    (a string never equals a float, so the tagged pairs are not needed); None when not an entity."""
    t = type(v)
    if t is str:
        return v
    if t is int:
        return float(v) if -_EXACT_INT < v < _EXACT_INT else None
    key = entity_key(v)  # subclasses, and what is no key
    return None if key is None else key[1]


#: The types `judged` accepts, tested by identity first.
JUDGED_TYPES = frozenset((str, int, float, bool, type(None)))


class EpisodeMemory:
    """The latest value each entity had at each tracked (P, K) place, over the calls of one episode seen
    so far. `observe` every call with status ok, in input order, after checking it.

    Kept per place (in `pairs` order): a table from the entity (`entity_value`) to what was seen, (value, call
    id, tool); the places are walked grouped by K, so a K shared by several places is read once."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs = tuple(sorted(set(pairs)))
        self.index = {pk: i for i, pk in enumerate(self.pairs)}
        by_k: dict[str, list[tuple[int, str, Steps | None]]] = {}
        for i, (p, k) in enumerate(self.pairs):
            by_k.setdefault(k, []).append((i, p, steps_of(p) if p else ()))
        #: per K: (K, its steps, its key when one key below the result, its places (index, P, P's steps,
        #: P's key when one key below the result)): the steps computed once per memory
        self.plan = tuple(
            (
                k,
                ks,
                ks[0][0] if ks is not None and len(ks) == 1 else None,
                tuple(
                    (i, p, ps, ps[0][0] if ps is not None and len(ps) == 1 else None) for i, p, ps in places
                ),
            )
            for k, places in by_k.items()
            for ks in [steps_of(k) if k else ()]
        )
        self._fresh()

    def _fresh(self) -> None:
        self.seen: list[dict[Any, tuple[Any, CallId, str]]] = [{} for _ in self.pairs]
        #: the entities remembered at any place, so that `touch` skips the others at once
        self.known: set[Any] = set()

    def earlier(self, p: str, k: str, key: tuple[str, Any]) -> Seen | None:
        """What was last seen of entity `key` (an `entity_key`) at (P, K), or None."""
        i = self.index.get((p, k))
        hit = None if i is None else self.seen[i].get(key[1])
        return None if hit is None else Seen(*hit)

    def touch(self, arguments: Any) -> None:
        """Forget every entity the call's arguments name (a key value anywhere in them): the call may
        have changed it, and unless its result shows the entity again there is nothing to compare a
        later call with. Every call does this, whatever its status, after it is checked."""
        known = self.known
        if not known:
            return
        # every scalar anywhere in the arguments whose entity is remembered
        stack = [arguments]
        while stack:
            v = stack.pop()
            t = type(v)
            if t is dict:
                stack.extend(v.values())
            elif t is list:
                stack.extend(v)
            elif t is str:
                if v in known:
                    self._forget(v)
            elif isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            else:
                key = entity_value(v)
                if key is not None and key in known:
                    self._forget(key)

    def _forget(self, key: Any) -> None:
        self.known.discard(key)
        for seen in self.seen:
            seen.pop(key, None)

    def blank(self) -> EpisodeMemory:
        """An empty memory of another episode tracking the same places (what a stream starts per
        episode), without sorting the places or computing their steps again."""
        fresh = EpisodeMemory.__new__(EpisodeMemory)
        fresh.pairs, fresh.index, fresh.plan = self.pairs, self.index, self.plan
        fresh._fresh()
        return fresh

    def record(self, tool: str, arguments: Any, result: Any, call_id: CallId = "", ok: bool = True) -> None:
        """After a call is checked: `touch` its arguments, then `observe` its result (status ok only)."""
        if self.known:
            self.touch(arguments)
        if ok:
            self.observe(tool, result, call_id)

    def observe(self, tool: str, result: Any, call_id: CallId = "") -> None:
        """Remember what `result` shows at each tracked place. `call_id` may be a function giving it:
        it is then kept as is and called only when a violation cites the call (`check -` hashes an id
        only if needed)."""
        if type(result) is not dict and not isinstance(result, dict):
            return
        get = result.get
        seen = self.seen
        for k, ks, ktop, places in self.plan:
            kv = get(ktop, ABSENT) if ktop is not None else walk_steps(result, ks, k)
            if kv is ABSENT:
                continue
            key = entity_value(kv)
            if key is None:
                continue
            hit = False
            for i, p, ps, ptop in places:
                pv = get(ptop, ABSENT) if ptop is not None else walk_steps(result, ps, p)
                if pv is not ABSENT and (type(pv) in JUDGED_TYPES or judged(pv)):
                    seen[i][key] = (pv, call_id, tool)
                    hit = True
            if hit:
                self.known.add(key)

    def breaks(self, rule: Rule, result: Any) -> Seen | None:
        """The earlier sighting `result` contradicts under `rule`, or None."""
        p, k = rule.paths
        i = self.index.get((p, k))
        if i is None or not self.known:
            return None
        kv = walk(result, k)
        key = None if kv is ABSENT else entity_value(kv)
        if key is None:
            return None
        hit = self.seen[i].get(key)
        if hit is None:
            return None
        pv = walk(result, p)
        if pv is ABSENT or not judged(pv):
            return None
        w = hit[0]
        if (type(pv) is type(w) and pv == w) or echo_equal(pv, w):
            return None
        return Seen(*hit)
