"""ECHO: a result field repeats an argument.

Paths [R, "$args/A"], both without wildcards. Qualifying example: a clean call where both R and A are
present and scalar (null, bool, number, string). It holds when the values are equal — numbers compared
numerically (3 == 3.0), everything else by kind and value. Support >= 20 calls; and the argument must
take >= 2 distinct values among the qualifying calls, because two paths that always hold the same
constant are equal by coincidence, not by echo.

Search: result and argument scalars are joined on (call, kind class, value hash), which yields only the
matching pairs — never the cross product of every result field with every argument. Co-presence is then
counted for the few (R, A) pairs that matched often enough. When the registry declares the tool's
`parameters`, only declared argument paths are echo candidates.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from contracts.mining.data import (
    CLS_STR,
    SCALAR_CLASSES,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from contracts.mining.model import ARGS_PREFIX
from contracts.mining.params import ECHO_MIN_DISTINCT
from contracts.mining.rules.base import MiningContext


def declared_arg_patterns(schema: Any, prefix: str = "") -> list[str]:
    """Every pointer pattern a parameters JSON Schema declares (`properties` recursively, `items` -> `*`)."""
    out: list[str] = []
    if not isinstance(schema, dict):
        return out
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            p = prefix + "/" + str(key).replace("~", "~0").replace("/", "~1")
            out.append(p)
            out.extend(declared_arg_patterns(sub, p))
    items = schema.get("items")
    if isinstance(items, dict):
        out.extend(declared_arg_patterns(items, prefix + "/*"))
    return out


def _scalars(ctx: MiningContext, side: str) -> pl.DataFrame:
    wild = ctx.data.patterns.filter(pl.col("side") == side)
    plain = wild.filter(~pl.col("wild")).select("tool", "pattern")
    if side == "arg" and ctx.registry is not None:
        allowed = []
        for name in plain["tool"].unique().to_list():
            spec = ctx.registry.get(name)
            if spec is not None and isinstance(spec.parameters, dict) and spec.parameters.get("properties"):
                allowed += [(name, p) for p in declared_arg_patterns(spec.parameters)]
            else:
                allowed += [(name, p) for p in plain.filter(pl.col("tool") == name)["pattern"].to_list()]
        plain = plain.join(
            pl.DataFrame(allowed, schema={"tool": pl.String, "pattern": pl.String}, orient="row"),
            on=["tool", "pattern"],
            how="semi",
        )
    value = pl.when(pl.col("cls") == CLS_STR).then(pl.col("str").hash()).otherwise(pl.col("num").hash())
    return (
        ctx.data.leaves.filter((pl.col("side") == side) & pl.col("cls").is_in(SCALAR_CLASSES))
        .join(plain, on=["tool", "pattern"], how="semi")
        .select("cid", "tool", "pattern", "cls", "num", "str", "task_id", "fold", value.alias("v"))
    )


class Echo:
    """The ECHO rule class."""

    codes = ("ECHO",)

    def mine(self, ctx: MiningContext) -> pl.DataFrame:
        k = ctx.data.k
        res = _scalars(ctx, "result")
        args = _scalars(ctx, "arg").select(
            "cid",
            pl.col("pattern").alias("arg"),
            "cls",
            "v",
            pl.col("num").alias("anum"),
            pl.col("str").alias("astr"),
        )
        if res.height == 0 or args.height == 0:
            return cand_frame()
        matches = (
            res.join(args, on=["cid", "cls", "v"], how="inner")
            .filter(
                pl.when(pl.col("cls") == CLS_STR)
                .then(pl.col("str") == pl.col("astr"))
                .otherwise((pl.col("num") == pl.col("anum")) | pl.col("num").is_null())
            )
            .group_by("tool", "pattern", "arg", "fold")
            .agg(
                pl.len().alias("n_match"),
                pl.col("task_id").n_unique().alias("tasks"),
                pl.col("v").min().alias("vmin"),
                pl.col("v").max().alias("vmax"),
                fold_examples(),
            )
        )
        m = by_checker(
            matches,
            ["tool", "pattern", "arg"],
            [
                pl.col("n_match").sum(),
                pl.col("tasks").sum(),
                pl.col("vmin").min(),
                pl.col("vmax").max(),
                merged_examples(),
            ],
            k,
        ).filter(
            (pl.col("n_match") >= ctx.params.needed("ECHO"))
            & (pl.col("tasks") >= ctx.params.tasks_needed("ECHO"))
            & (pl.col("vmin") != pl.col("vmax"))
        )
        if m.height == 0:
            return cand_frame()
        pairs = m.select("tool", "pattern", "arg").unique()
        both = (
            res.select("cid", "tool", "pattern", "fold")
            .join(pairs, on=["tool", "pattern"], how="inner")
            .join(args.select("cid", "arg"), on=["cid", "arg"], how="semi")
            .group_by("tool", "pattern", "arg", "fold")
            .agg(pl.len().alias("n_both"))
        )
        both_c = by_checker(both, ["tool", "pattern", "arg"], [pl.col("n_both").sum()], k)
        assert ECHO_MIN_DISTINCT == 2  # vmin != vmax is the ">= 2 distinct values" test
        rows = (
            m.join(both_c, on=["tool", "pattern", "arg", "checker"], how="inner")
            .filter(pl.col("n_both") == pl.col("n_match"))
            .with_columns(
                pl.lit("ECHO").alias("code"),
                pl.concat_list(pl.col("pattern"), pl.lit(ARGS_PREFIX) + pl.col("arg")).alias("paths"),
                pl.lit("{}").alias("params"),
                pl.col("n_match").alias("calls"),
                pl.col("n_match").alias("n"),
            )
        )
        return cand_frame(rows)
