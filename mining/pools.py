"""Pools: the places where several tools (or one tool in several places) return the same object shape.

Every write tool of a shop returns the whole order, so each of them sees `/items/*/options/connectivity`,
and each alone sees few values of it: a value set judged per tool is cut short by thin data, and the
tool that happened not to see `wired` in its training folds flags it in a clean call. What each tool
returns there is the same thing (an order item's options, which also make up a catalogue variant's
options in `get_product_details`), so the evidence should be judged together. A *pool* is a set of
(tool, result pattern) places that hold the same field of the same object shape; rule classes that
judge value sets and value ranges (DOMAIN, TYPE, POSITIVE/NONNEG) judge them per pool, and every
member gets the pooled rule.

Same shape. Two object patterns (of any tools) have the same shape when their key sets — the union of
keys seen below them in the clean calls, map keys and array members left out — share at least
`MIN_SHARED` keys, at least `MIN_OVERLAP` of the smaller set (a thin tool sees a subset of the keys a
busy one sees), and at least `MIN_JACCARD` of the union (so that two unrelated records that both
carry `id` and `name` stay apart), and unless both sit under named keys that differ (`/*/prices` and
`/*/available_seats` have the same cabin keys and are different things; an object at the root, in an
array or under a map key has no name of its own). Shapes are joined transitively (connected components), which is
what lets a thin tool's subset reach the catalogue through the busy tools between them.

Pool of a pattern. The nearest object ancestor A of a pattern P (its parent, or the first object above
it when P sits in an array) and P's path below A: `/items/*/options/color` is `color` below the options
object. Places whose A has the same shape and whose rest is the same are one pool. A pattern whose A
shares its shape with nothing is a pool of its own, which is the per-tool judgement of before.

Pooling only ever adds evidence: a pooled value set is the union of the members', a pooled minimum
the least of theirs. It can lift a thin member over a support threshold with the other members'
evidence, which is the point; it never makes a rule hold where one member's own clean data breaks it.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl

from output_contracts.traces.pointers import WILD_TOKENS

MIN_SHARED = 2
MIN_OVERLAP = 0.8
MIN_JACCARD = 0.3
_OBJ_BIT = 1 << 6


def _key_sets(patterns: pl.DataFrame) -> dict[tuple[str, str], frozenset[str]]:
    """Result-side object patterns -> their child keys (wildcard children left out)."""
    objects = {
        (t, p)
        for t, p, k in patterns.filter(pl.col("side") == "result")
        .select("tool", "pattern", "kinds")
        .iter_rows()
        if int(k) & _OBJ_BIT
    }
    keys: dict[tuple[str, str], set[str]] = defaultdict(set)
    for t, p in patterns.filter(pl.col("side") == "result").select("tool", "pattern").iter_rows():
        if not p:
            continue
        par, _, tok = p.rpartition("/")
        if tok not in WILD_TOKENS and (t, par) in objects:
            keys[(t, par)].add(tok)
    return {o: frozenset(k) for o, k in keys.items() if len(k) >= MIN_SHARED}


def same_shape(a: frozenset[str], b: frozenset[str]) -> bool:
    """The same-shape test on two key sets (module docstring)."""
    shared = len(a & b)
    return (
        shared >= MIN_SHARED
        and shared >= MIN_OVERLAP * min(len(a), len(b))
        and shared >= MIN_JACCARD * len(a | b)
    )


def _name(pattern: str) -> str | None:
    """The key an object sits under (`prices` for `/*/prices`), None at the root or an array/map member."""
    tok = pattern.rpartition("/")[2]
    return None if not pattern or tok in WILD_TOKENS else tok


def same_name(a: str, b: str) -> bool:
    """Two object patterns may pool unless both sit under named keys that differ: `/*/prices` and
    `/*/available_seats` hold the same three cabin keys but are different things (a price is never 0,
    a seat count often is)."""
    na, nb = _name(a), _name(b)
    return na is None or nb is None or na == nb


def shape_groups(patterns: pl.DataFrame) -> dict[tuple[str, str], int]:
    """Object patterns that share their shape with another one -> a group id (dense, deterministic).

    Candidate pairs come from an inverted index on keys (two shapes must share MIN_SHARED keys), so
    the work follows the number of key collisions, not the square of the number of objects."""
    sets = _key_sets(patterns)
    order = sorted(sets)
    index = {o: i for i, o in enumerate(order)}
    parent = list(range(len(order)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_key: dict[str, list[int]] = defaultdict(list)
    for o in order:
        for k in sets[o]:
            by_key[k].append(index[o])
    seen: set[tuple[int, int]] = set()
    for members in by_key.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                i, j = members[x], members[y]
                if (i, j) in seen:
                    continue
                seen.add((i, j))
                if (
                    find(i) != find(j)
                    and same_name(order[i][1], order[j][1])
                    and same_shape(sets[order[i]], sets[order[j]])
                ):
                    parent[max(find(i), find(j))] = min(find(i), find(j))
    roots: dict[int, list[int]] = defaultdict(list)
    for i in range(len(order)):
        roots[find(i)].append(i)
    out: dict[tuple[str, str], int] = {}
    for gid, root in enumerate(sorted(r for r, m in roots.items() if len(m) > 1)):
        for i in roots[root]:
            out[order[i]] = gid
    return out


def linked_tools(patterns: pl.DataFrame) -> list[tuple[str, ...]]:
    """Tools whose objects share a shape, as groups (each sorted; groups in order of their first tool).

    Mining a set of tools that is a union of these groups gives each of them the pools it would have in
    the whole corpus; the Dask engine partitions by them (`output_contracts.mining.distributed`)."""
    tools = sorted(set(patterns["tool"].to_list()))
    parent = {t: t for t in tools}

    def find(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    members: dict[int, list[str]] = defaultdict(list)
    for (tool, _pattern), gid in shape_groups(patterns).items():
        members[gid].append(tool)
    for ts in members.values():
        for t in ts[1:]:
            a, b = find(ts[0]), find(t)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = defaultdict(list)
    for t in tools:
        groups[find(t)].append(t)
    return [tuple(groups[r]) for r in sorted(groups)]


def pools(patterns: pl.DataFrame) -> pl.DataFrame:
    """(pid, tool, pattern, pool) of every result-side pattern: equal `pool` = judged together.

    `patterns`: the mining pattern table (pid, tool, side, pattern, kinds). Pool ids are dense and
    follow the sorted pool keys, so they do not depend on row order."""
    res = patterns.filter(pl.col("side") == "result").select("pid", "tool", "pattern", "kinds")
    objects = {(t, p) for t, p, k in res.select("tool", "pattern", "kinds").iter_rows() if int(k) & _OBJ_BIT}
    groups = shape_groups(patterns)
    keys = []
    for tool, pattern in res.select("tool", "pattern").iter_rows():
        key = f"p\x00{tool}\x00{pattern}"  # a pool of its own
        anc = pattern
        while anc:
            anc = anc.rpartition("/")[0]
            if (tool, anc) in objects:
                g = groups.get((tool, anc))
                if g is not None:
                    key = f"g\x00{g:09d}\x00{pattern[len(anc) :]}"
                break
        keys.append(key)
    tab = res.select("pid", "tool", "pattern").with_columns(pl.Series("key", keys, pl.String))
    return tab.with_columns(pl.col("key").rank("dense").cast(pl.UInt32).alias("pool")).drop("key")
