"""UNIQUE — `paths [P]`, params `{}`: within one list, no two items hold the same value at P.

P is `A/*` (the items of the list at A are scalars) or `A/*/f` (each item is an object and `f` its
field: the item's id). The list is the *instance*: the concrete path before the last `*`'s index, so
under nested lists (`/orders/*/items/*/id`) each order's items are judged apart. A repeated value is
reported at its second and later positions (in index order), with the first one named.

What it catches: a page that repeats an item (offset pagination that drifted while items were added),
a join that duplicated rows, a cache that served the same record twice in one list.

Values compare as JSON scalars: numbers by value (`1` = `1.0`, `0` = `-0.0`), strings by text, never a
string with a number; null, booleans and numbers of magnitude 2^53 or more (float64 cannot tell such
ids apart) are not judged.

Per call: the nodes at P are grouped by instance and sorted by index. Over a corpus: the same on the
hits of P (instance and index split from the concrete path, duplicates found with a rank over
(call, rule, instance, value)).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from contracts.rules.base import (
    At,
    NodeCode,
    Nodes,
    Operand,
    PathFinder,
    RuleEntry,
    Violation,
    broken,
    display,
    name,
    resolve,
)
from contracts.rules.model import Rule
from contracts.traces.leaves import unescape_token


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


def _key(v: object) -> tuple[int, object] | None:
    """The identity of a judged value: (0, number) or (1, string); None for what is not judged."""
    t = type(v)
    if t is int or t is float:
        x = float(v)  # type: ignore[arg-type]
        return (0, x) if abs(x) < EXACT_LIMIT else None
    if t is str:
        return (1, v)
    return None


def _instance(path: str, after: int) -> tuple[str, int]:
    """(list path, index) of a concrete path at a UNIQUE pattern with `after` tokens after the `*`."""
    toks = path.split("/")
    cut = len(toks) - after - 1
    return "/".join(toks[:cut]), int(toks[cut])


class Unique(NodeCode):
    name = "UNIQUE"
    short = "UNIQ"
    summary = "a list repeats an item (the same id twice) where clean lists never did"

    def validate(self, rule: Rule) -> None:
        super().validate(rule)
        if item_split(Operand.of(rule.paths[0]).pattern) is None:
            raise self.bad(rule, "UNIQUE needs a path ending in `/*` or `/*/<field>`")

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0]} unique within its list"

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        after = item_split(ops[0].pattern)
        assert after is not None

        def repeats(nodes: Nodes) -> list[str]:
            got = nodes.get(key)
            if not got or len(got) < 2:
                return []
            seen: dict[tuple[str, tuple[int, object]], list[tuple[int, str]]] = {}
            for path, v in got:
                k = _key(v)
                if k is not None:
                    inst, idx = _instance(path, after)
                    seen.setdefault((inst, k), []).append((idx, path))
            out: list[str] = []
            for places in seen.values():
                if len(places) > 1:
                    places.sort()
                    out.extend(prefix + p for _i, p in places[1:])
            return out

        return repeats

    def witness(self, rule: Rule, at: At) -> Violation:
        after = item_split(at.ops[0].pattern)
        assert after is not None
        inst, idx = _instance(at.raw, after)
        first = None
        k = _key(at.observed)
        doc = at.arguments if at.ops[0].side == "arg" else at.result
        ok, items = resolve(doc, inst)
        field = unescape_token(at.raw.split("/")[-1])
        if ok and isinstance(items, list):
            for i, item in enumerate(items[:idx]):
                v = item if after == 0 else (item.get(field) if isinstance(item, dict) else None)
                if k is not None and _key(v) == k:
                    first = i
                    break
        tail = "" if after == 0 else "/" + at.raw.split("/")[-1]
        where = f"{name(inst) if inst else 'the result'}"
        earlier = f"item {first}" if first is not None else "an earlier item"
        return Violation(
            self.name,
            rule.id,
            at.path,
            "unique",
            at.observed,
            True,
            f"{rule.tool} returned item {idx} of {where} with {name(tail) if tail else 'the value'} "
            f"{at.shown}, as {earlier} did; in every one of {rule.support.calls} clean results the "
            f"items of that list were distinct",
        )

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        cuts = pl.DataFrame(
            {
                "ridx": [e.ridx for e in entries],
                "after": [item_split(e.ops[0].pattern) or 0 for e in entries],
            },
            schema={"ridx": pl.UInt32, "after": pl.Int64},
        )
        toks = pl.col("path").str.split("/")
        cut = toks.list.len() - pl.col("after") - 1
        value = (
            pl.when(
                pl.col("kind").cast(pl.String).is_in(["int", "float"]) & (pl.col("num").abs() < EXACT_LIMIT)
            )
            .then(
                pl.concat_str(
                    pl.lit("n"),
                    pl.when(pl.col("num") == 0).then(0.0).otherwise(pl.col("num")).cast(pl.String),
                )
            )
            .when(pl.col("kind") == "string")
            .then(pl.concat_str(pl.lit("s"), pl.col("str")))
            .otherwise(None)
        )
        h = (
            hits.join(cuts.lazy(), on="ridx")
            .with_columns(
                toks.list.head(cut).list.join("/").alias("inst"),
                toks.list.get(cut).cast(pl.Int64).alias("idx"),
                value.alias("val"),
            )
            .filter(pl.col("val").is_not_null())
            .with_columns(pl.col("idx").rank("ordinal").over("cid", "ridx", "inst", "val").alias("nth"))
            .filter(pl.col("nth") > 1)
        )
        return display(entries, broken(h), 0)


CODE = Unique()
