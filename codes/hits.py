"""The vectorised side of the codes: the rules of a corpus pass (`RuleEntry`), the operand rows the
leaves are joined to (`OpRow`), and the frame helpers codes judge their hits with (`broken`, `outside`,
`with_key`, ...). A hit is a leaf of a checked call joined to one operand of one rule (`HIT_COLS`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import Operand
from output_contracts.frames import pack_pair
from output_contracts.traces.pointers import KINDS


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


def rows(entries: Sequence[RuleEntry], **cols: Callable[[RuleEntry], Any]) -> dict[str, list[Any]]:
    """Columns of a small per-rule table: `rows(es, ridx=lambda e: e.ridx, ...)`."""
    return {name: [f(e) for e in entries] for name, f in cols.items()}
