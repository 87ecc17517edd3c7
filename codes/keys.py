"""Instance keys of wildcard operands over a corpus, cut from the path instead of split into tokens.

`output_contracts.codes.spec.with_key` names the instance a hit belongs to (the same array element,
the same map entry) by its operand's wildcard tokens: the path is split at every `/`, those tokens are
gathered and joined again, for every hit. When every operand of a rule has its wildcards at the same
positions and the same tokens up to the last one (`/lines/*/quantity` beside `/lines/*/unit_price`),
the concrete path's head up to that last wildcard token (`/lines/3`) names the same instance: the
tokens before it are the same text in every path of the rule, and the tail after it is the operand's
own literal tokens, the same text in every path of the operand, cut by its length. Two hits of such a rule have equal heads
exactly when their wildcard tokens are equal, so a code joining or grouping on `key` within a rule
finds the same pairs; only the key's text differs, and no output shows it. Other rules keep
`with_key`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.codes.hits import RuleEntry, with_key


def tail(e: RuleEntry, i: int) -> str | None:
    """The text after the last wildcard token in every concrete path of operand `i` of `e` (`/quantity`,
    or ""), when the rule's operands share their wildcard positions and the tokens up to the last one,
    with no fixed index after it (a fixed index is spelled as a number of any length); else None."""
    ops = e.ops
    if len(ops) <= i or not ops[0].wpos or any(op.wpos != ops[0].wpos for op in ops):
        return None
    last = ops[0].wpos[-1]
    if len({tuple(op.pattern.split("/")[: last + 1]) for op in ops}) != 1:
        return None
    if any(pos > last for op in ops for pos, _n in op.fixed):
        return None
    toks = ops[i].pattern.split("/")
    return "".join("/" + t for t in toks[last + 1 :])


def with_instance_key(df: pl.LazyFrame, entries: Sequence[RuleEntry], i: int) -> pl.LazyFrame:
    """`with_key(df, entries, i)`'s pairing: `key` names each hit's instance, by the head of its path
    for the rules `tail` allows, by `with_key` for the others."""
    tails = {e.ridx: t for e in entries if (t := tail(e, i)) is not None}
    if not tails:
        return with_key(df, entries, i)
    # the tail's length in characters, cut from the right (`str.head` of a negative length); a tail
    # of 0 characters leaves the path itself (`head(-0)` would be empty)
    cut = pl.DataFrame(
        {"ridx": list(tails), "_cut": [len(t) for t in tails.values()]},
        schema={"ridx": pl.UInt32, "_cut": pl.Int64},
    )
    parts = [
        df.join(cut.filter(pl.col("_cut") > 0).lazy(), on="ridx")
        .with_columns(pl.col("path").str.head(-pl.col("_cut")).alias("key"))
        .drop("_cut"),
        df.join(cut.filter(pl.col("_cut") == 0).lazy(), on="ridx")
        .with_columns(pl.col("path").alias("key"))
        .drop("_cut"),
    ]
    rest = [e for e in entries if e.ridx not in tails]
    if rest:
        ids = pl.Series(list(tails), dtype=pl.UInt32).implode()
        parts.insert(0, with_key(df.filter(~pl.col("ridx").is_in(ids)), rest, i))
    return pl.concat(parts)


def instance_key(entries: Sequence[RuleEntry]) -> list[str]:
    """The columns that name a hit's instance for these rules: ["key"] when some operand has a
    wildcard, else [] (every instance key would be "", a string grouped and joined on for nothing)."""
    return ["key"] if any(op.wpos for e in entries for op in e.ops) else []


def keyed_hits(df: pl.LazyFrame, entries: Sequence[RuleEntry], i: int, key: Sequence[str]) -> pl.LazyFrame:
    """Hits of operand `i` with their instance `key` column when `key` (`instance_key`) asks for it."""
    return with_instance_key(df, entries, i) if key else df
