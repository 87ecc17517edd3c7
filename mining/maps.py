"""Which objects are maps: keys that are data (record ids, names), not field names.

`get_product_details` returns `{"variants": {"<item id>": {...}}}`; a user carries
`{"payment_methods": {"gift_card_7513": {...}}}`; `list_all_airports` returns `{"SFO": "San Francisco", ...}`.
Read literally, every key is its own path and every rule about it is a fact about one record
(`/variants/7583936705/price > 0`), which fires when that one record changes and says nothing about the
next one. A *map parent* is an object pattern whose keys are data: below it the key is written `~*`
(`output_contracts.traces.pointers.MAP_TOKEN`), so rules speak of every entry (`/variants/~*/price > 0`).

The decision is made per (tool, side, parent pattern), top-down (a map's entries may hold maps), from the
clean calls' pattern table alone: how often each key occurs, in which JSON kinds, and the keys' spelling.
An object is a map when its entries are *homogeneous* (every key holds the same kind of value, null
aside: one record type, or one scalar type) and at least one of:

- **identifier keys**: at least `ID_SHARE` of its distinct keys (and at least 2) carry a run of three or
  more digits or an `@` (`7583936705`, `gift_card_7513`, `#W2378156`, `2024-05-01`, an e-mail). Field names
  almost never do: none of the 215 field names of the τ-bench outputs (retail, airline, the recorded
  gpt-4o runs) and the sample world, nor of the 1,149 parameter names of the BFCL v3 functions, has a
  run of three digits or an `@`;
- **wide**: its objects hold on average at least `MIN_WIDTH` keys, all of one kind. A lookup table
  (`{"Action Camera": "<id>", ...}`, 50 keys) is wide and uniform; a record that wide with a single value
  kind is rare, and if one is taken for a map only its per-field facts are lost (never a false receipt:
  the entry rules are what every field had in common). This is quicktype's size test (a class of 20 or
  more properties with one unified type becomes a map), which quicktype pairs with a name model
  trained on English identifiers; the identifier test above replaces that model with a rule one can
  read;
- **open key set**: at least `OPEN_MIN_KEYS` distinct keys, the parent seen in at least
  `OPEN_MIN_TASKS` tasks, and the Good–Turing unseen mass of its keys counted in tasks — (key, task)
  pairs whose key occurs in one task only, over all (key, task) pairs — of at least `OPEN_MIN_UNSEEN`.
  A record's keys come from a closed schema, so new tasks bring no new keys and that mass falls
  towards 0 as tasks are added (the same estimate DOMAIN closes a value set with, DOMAIN_MAX_UNSEEN =
  1%); keys that belong to one task's records (one customer's cards, one user's bookings) keep it near 1.
  Half is far from both.

Options-like objects (`{"color": "red", "size": "M"}`) stay records: their keys are words, few per object,
shared by many tasks, and their per-key domains (`/items/*/options/color`) are worth having.

Why the whole corpus and not per fold. The decision is structural, like telling an array from an
object: it reads which keys occur, never the values any rule is about, and every checker (full and
fold) shares it, so rule patterns are the same in every checker. A key first seen in fold f can only
make fold f's checker apply its entry rules to that key; it cannot make a rule hold that did not hold
on the other folds' data.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

import polars as pl

from output_contracts.traces.pointers import WILD_TOKENS, generalize, unescape_token

ID_SHARE = 0.9
ID_KEY = re.compile(r"\d{3}|@")
MIN_WIDTH = 20
OPEN_MIN_KEYS = 10
OPEN_MIN_TASKS = 10
OPEN_MIN_UNSEEN = 0.5

#: Bits of the `kinds` mask (one per leaves.parquet kind code) and the value classes they fall in.
_NULL_BIT = 1 << 0
_OBJ_BIT = 1 << 6
_NUMBER_BITS = (1 << 2) | (1 << 3)


def is_id_key(token: str) -> bool:
    """Whether an (escaped) key is spelled like an identifier rather than a field name."""
    return ID_KEY.search(unescape_token(token)) is not None


def _classes(mask: int) -> int:
    """Distinct value classes in a kinds mask, null left out (int and float are one class)."""
    m = mask & ~_NULL_BIT
    n = bin(m & ~_NUMBER_BITS).count("1")
    return n + (1 if m & _NUMBER_BITS else 0)


Stats = dict[str, tuple[int, int, int]]  # generalized pattern -> (nodes, object nodes, kinds mask)


def _aggregate(lit: Mapping[str, tuple[int, int, int]], maps: set[str]) -> Stats:
    out: Stats = {}
    for pat, (n, n_obj, kinds) in lit.items():
        g = generalize(pat, maps)
        old = out.get(g)
        out[g] = (n, n_obj, kinds) if old is None else (old[0] + n, old[1] + n_obj, old[2] | kinds)
    return out


#: Evidence for the open-key-set test of one (tool, side, parent): the parent's distinct tasks, and each
#: key's (its generalized child pattern's) distinct tasks.
OpenEvidence = tuple[int, Mapping[str, int]]


def decide(
    stats: pl.DataFrame,
    evidence: Mapping[tuple[str, str, str], OpenEvidence] | None = None,
    declared: Mapping[tuple[str, str], frozenset[str]] | None = None,
) -> dict[tuple[str, str], frozenset[str]]:
    """Map parents per (tool, side), as generalized patterns (`""` for a map at the root).

    `stats`: one row per literal (tool, side, pattern) of the clean calls with `n` (nodes), `n_obj`
    (object nodes) and `kinds` (OR of `1 << kind code`). `evidence`, where given, holds the task counts
    of each open-key-set candidate (see `open_candidates`); without it that test is not applied.
    `declared`: map parents a registry declares (`output_contracts.traces.tool_registry.declared_maps`): maps
    whatever the data says, and the starting point of the decisions below them.
    """
    per: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = defaultdict(dict)
    for tool, side, pattern, n, n_obj, kinds in stats.select(
        "tool", "side", "pattern", "n", "n_obj", "kinds"
    ).iter_rows():
        per[(tool, side)][pattern] = (int(n), int(n_obj), int(kinds))
    out: dict[tuple[str, str], frozenset[str]] = {}
    for key in sorted(per):
        lit = per[key]
        maps: set[str] = set((declared or {}).get(key, frozenset()))
        depth = 0
        max_depth = max(p.count("/") for p in lit)
        while depth < max_depth:
            agg = _aggregate(lit, maps)
            children: dict[str, list[str]] = defaultdict(list)
            for g in agg:
                if g and g.count("/") == depth + 1:
                    par, _, tok = g.rpartition("/")
                    if tok not in WILD_TOKENS:
                        children[par].append(g)
            for par in sorted(children):
                if par in maps:
                    continue
                ev = (evidence or {}).get((key[0], key[1], par))
                if is_map(par, children[par], agg, ev):
                    maps.add(par)
            depth += 1
        if maps:
            out[key] = frozenset(maps)
    return out


def is_map(parent: str, kids: list[str], agg: Stats, evidence: OpenEvidence | None = None) -> bool:
    """The decision for one parent (see the module docstring), given its children's statistics."""
    p = agg.get(parent)
    if p is None or p[1] == 0 or len(kids) < 2:
        return False
    mask = 0
    for c in kids:
        mask |= agg[c][2]
    if _classes(mask) != 1:
        return False
    toks = [c.rpartition("/")[2] for c in kids]
    if sum(is_id_key(t) for t in toks) >= ID_SHARE * len(toks):
        return True
    if sum(agg[c][0] for c in kids) >= MIN_WIDTH * p[1]:
        return True
    return evidence is not None and open_keys(*evidence)


def open_keys(parent_tasks: int, key_tasks: Mapping[str, int]) -> bool:
    """The open-key-set test: enough keys and tasks, and a Good–Turing unseen mass of the keys, counted
    in (key, task) pairs, of at least OPEN_MIN_UNSEEN."""
    if len(key_tasks) < OPEN_MIN_KEYS or parent_tasks < OPEN_MIN_TASKS:
        return False
    pairs = sum(key_tasks.values())
    once = sum(1 for t in key_tasks.values() if t == 1)
    return pairs > 0 and once >= OPEN_MIN_UNSEEN * pairs


def open_candidates(
    stats: pl.DataFrame, decided: Mapping[tuple[str, str], frozenset[str]]
) -> set[tuple[str, str, str]]:
    """(tool, side, parent) where only the open-key-set test could still make a map: enough keys,
    homogeneous entries, and not a map already. Their keys' task counts are what `decide` needs next;
    most corpora have none, and then nothing more is read."""
    per: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = defaultdict(dict)
    for tool, side, pattern, n, n_obj, kinds in stats.select(
        "tool", "side", "pattern", "n", "n_obj", "kinds"
    ).iter_rows():
        per[(tool, side)][pattern] = (int(n), int(n_obj), int(kinds))
    out: set[tuple[str, str, str]] = set()
    for key, lit in per.items():
        agg = _aggregate(lit, set(decided.get(key, frozenset())))
        children: dict[str, list[str]] = defaultdict(list)
        for g in agg:
            if g:
                par, _, tok = g.rpartition("/")
                if tok not in WILD_TOKENS:
                    children[par].append(g)
        for par, kids in children.items():
            if len(kids) < OPEN_MIN_KEYS or par in decided.get(key, frozenset()):
                continue
            mask = 0
            for c in kids:
                mask |= agg[c][2]
            if _classes(mask) == 1 and agg.get(par, (0, 0, 0))[1] > 0:
                out.add((key[0], key[1], par))
    return out


def map_paths(maps: Mapping[tuple[str, str], frozenset[str]], tool: str) -> tuple[str, ...]:
    """A tool's map parents in rule-path notation (`$args` prefix for the argument side), sorted."""
    out: list[str] = []
    for (t, side), parents in maps.items():
        if t == tool:
            out.extend(("$args" + p) if side == "arg" else p for p in parents)
    return tuple(sorted(out))


def literal_table(stats: pl.DataFrame, maps: Mapping[tuple[str, str], frozenset[str]]) -> pl.DataFrame:
    """(tool, side, pattern, gpattern): every literal pattern with its generalized form."""
    rows = stats.select("tool", "side", "pattern")
    g = [generalize(p, maps.get((t, s), frozenset())) for t, s, p in rows.iter_rows()]
    return rows.with_columns(pl.Series("gpattern", g, pl.String))
