"""UNIQUE — `paths [P]` or `[A/*/f1, A/*/f2, ...]`, params `{}`: within one list, no two items hold the
same value at P (or, given several fields of the items of one list, the same values at all of them).

P is `A/*` (the items of the list at A are scalars) or `A/*/f` (each item is an object and `f` its
field: the item's id). The list is the *instance*: the concrete path before the last `*`'s index, so
under nested lists (`/orders/*/items/*/id`) each order's items are judged apart. A repeated value is
reported at its second and later positions (in index order), with the first one named.

What it catches: a page that repeats an item (offset pagination that drifted while items were added),
a join that duplicated rows, a cache that served the same record twice in one list.

*Composite* (several paths, every one `A/*/f` of the same list): an item's identity is the set of
(field, value) pairs it holds among those fields, judged values only (an item holding none of them is
not judged); no two items of one list may have the same identity. For items whose every single field
repeats legitimately (a round trip's two flights share a flight number on different days, a flight's
date recurs), the whole item still never does. A repeat is reported at the later item's path (`/flights/1`),
the item itself as observed.

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

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import Act, ToolBuilder
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.hits import RuleEntry, broken, display
from output_contracts.codes.nodes import Nodes, Operand, PathFinder
from output_contracts.codes.unique import Unique
from output_contracts.codes.unique.items import EXACT_LIMIT, identities, instance_of, item_split, judged_key


def _first_of_each(b: ToolBuilder, seen: str, pre: str) -> Act:
    """Keep an item's value in a single-path UNIQUE's table: the first one, and the path of a repeat."""

    def act(v: str, t: str, path: str) -> list[str]:
        # `judged_key` written out: a string is its own key, a number its float (a string never equals
        # a float, so one table serves both, as the tagged pairs did)
        k, r = b.name("u"), b.name("r")
        return [
            f"if {t} is str:",
            f"    {k} = {v}",
            f"elif {t} is int or {t} is float:",
            f"    {k} = float({v})",
            f"    if not abs({k}) < {EXACT_LIMIT!r}:",
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


class UniqueCheck(Unique, NodeCheck):
    hit_cols = ("cid", "ridx", "op", "path", "kind", "num", "str")

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return list(self.find(rule, ops)(nodes))

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        if len(ops) > 1:
            return _composite_finder(ops)
        key, prefix = self.at(ops)
        after = item_split(ops[0].pattern)
        assert after is not None

        def repeats(nodes: Nodes) -> list[str]:
            got = nodes.get(key)
            if not got or len(got) < 2:
                return []
            seen: dict[tuple[str, tuple[int, object]], list[tuple[int, str]]] = {}
            for path, v in got:
                k = judged_key(v)
                if k is not None:
                    inst, idx = instance_of(path, after)
                    seen.setdefault((inst, k), []).append((idx, path))
            out: list[str] = []
            for places in seen.values():
                if len(places) > 1:
                    places.sort()
                    out.extend(prefix + p for _i, p in places[1:])
            return out

        return repeats

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        single = [e for e in entries if len(e.ops) == 1]
        multi = [e for e in entries if len(e.ops) > 1]
        out = []
        if single:
            ids = pl.Series([e.ridx for e in single], dtype=pl.UInt32).implode()
            out.append(self._single(single, hits.filter(pl.col("ridx").is_in(ids))))
        if multi:
            ids = pl.Series([e.ridx for e in multi], dtype=pl.UInt32).implode()
            out.append(_composite(multi, hits.filter(pl.col("ridx").is_in(ids))))
        return pl.concat(out) if len(out) > 1 else out[0]

    def _single(self, entries: Sequence[RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
        cuts = pl.DataFrame(
            {
                "ridx": [e.ridx for e in entries],
                "after": [item_split(e.ops[0].pattern) or 0 for e in entries],
            },
            schema={"ridx": pl.UInt32, "after": pl.Int64},
        )
        toks = pl.col("path").str.split("/")
        cut = toks.list.len() - pl.col("after") - 1
        value = value_expr()
        # Only values that repeat within a call and rule can repeat within one list of it: a cheap
        # equality test on the raw columns first (the judged number, -0 as 0, or string), so that the
        # paths are split and ranked for those few hits alone.
        numeric = pl.col("kind").cast(pl.String).is_in(["int", "float"]) & (pl.col("num").abs() < EXACT_LIMIT)
        num = pl.when(numeric).then(pl.when(pl.col("num") == 0).then(0.0).otherwise(pl.col("num")))
        text = pl.when(pl.col("kind") == "string").then(pl.col("str"))
        repeated = pl.struct(pl.col("cid"), pl.col("ridx"), num.alias("_n"), text.alias("_s")).is_duplicated()
        h = (
            hits.filter(repeated)
            .join(cuts.lazy(), on="ridx")
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

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        if len(ops) != 1 or len(ops[0].wpos) != 1 or item_split(ops[0].pattern) is None:
            return False
        # one list per call: the walk meets its items in index order, keeping the first of each value
        # and the paths of the later ones (`find`: grouped by value, first seen first)
        seen = b.name("U")
        b.init.append(f"    {seen} = {{}}")
        pre = "'$args' + " if ops[0].side == "arg" else ""
        b.act_at(ops[0].side, ops[0].pattern, _first_of_each(b, seen, pre))
        b.tail += [
            f"    for _ps in {seen}.values():",
            "        for _p in _ps:",
            f"            out.append(({ri}, _p))",
        ]
        return True


def value_expr() -> pl.Expr:
    """`_key` over hit columns as text (`n<number>`, `s<string>`; null for what is not judged)."""
    return (
        pl.when(pl.col("kind").cast(pl.String).is_in(["int", "float"]) & (pl.col("num").abs() < EXACT_LIMIT))
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


def _composite_finder(ops: Sequence[Operand]) -> PathFinder:
    prefix = "$args" if ops[0].side == "arg" else ""

    def repeats(nodes: Nodes) -> list[str]:
        seen: dict[tuple[str, tuple[tuple[int, object], ...]], list[int]] = {}
        for (inst, idx), ident in identities(nodes, ops).items():
            seen.setdefault((inst, ident), []).append(idx)
        out: list[str] = []
        for (inst, _ident), idxs in seen.items():
            if len(idxs) > 1:
                out.extend(f"{prefix}{inst}/{i}" for i in sorted(idxs)[1:])
        return out

    return repeats


def _composite(entries: Sequence[RuleEntry], hits: pl.LazyFrame) -> pl.LazyFrame:
    """Composite repeats over a corpus: per item, its sorted (operand, value) pairs as one key."""
    toks = pl.col("path").str.split("/")
    cut = toks.list.len() - 2
    items = (
        hits.with_columns(value_expr().alias("val"))
        .filter(pl.col("val").is_not_null())
        .with_columns(
            toks.list.head(cut).list.join("/").alias("inst"),
            toks.list.get(cut).cast(pl.Int64).alias("idx"),
            pl.concat_str(pl.col("op").cast(pl.String), pl.lit(":"), pl.col("val")).alias("fv"),
        )
        .group_by("cid", "ridx", "inst", "idx")
        .agg(pl.col("fv").sort().str.join("\u001f").alias("ident"))
        .with_columns(pl.col("idx").rank("ordinal").over("cid", "ridx", "inst", "ident").alias("nth"))
        .filter(pl.col("nth") > 1)
    )
    path = pl.concat_str(pl.col("inst"), pl.lit("/"), pl.col("idx").cast(pl.String))
    return display(entries, broken(items, path), 0)


CHECKS = (UniqueCheck(),)
