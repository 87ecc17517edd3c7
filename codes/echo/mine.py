"""ECHO — `paths [R, "$args/A"]` (no wildcards), params `{}`

*Qualifying example*: a call where both R and A are present and scalar. *Holds* when the values are
equal — numbers numerically (`3 == 3.0`), everything else by kind and value (`"3" != 3`). Absence of R
is REQUIRED's business, not a counterexample. With a registry that declares the tool's `parameters`,
only declared argument paths are candidates. *Trivial cases*: ≥ 2 distinct argument values (equal
constants are not an echo). *Catches*: a stale result for another id (`order_id` differs from the one
asked for).

Checker semantics: when both are present and scalar, result value == argument value. Violation path =
R's concrete path; expected the argument value; observed the result value.

**ECHO: 2 distinct argument values.** Two fields that are always `"USD"` are equal by coincidence; an
echo is only evidenced when the argument varied and the result followed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import ARGS_PREFIX
from output_contracts.codes.mining_context import MiningContext
from output_contracts.codes.mining_frames import (
    CLS_STR,
    ECHO_SAMPLE_CALLS,
    SCALAR_CLASSES,
    Leaves,
    by_checker,
    cand_frame,
    first_calls,
    fold_examples,
    merged_examples,
)

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a call with both paths present and scalar"
SUPPORT = "≥ {min_support} calls"
CONDITIONS = "≥ 2 distinct argument values"

ECHO_MIN_DISTINCT = 2  # an echo needs >= 2 distinct argument values (equal constants are coincidence)
#: What the contract set records of these constants (its `params`).
CONSTANTS = {"min_distinct": ECHO_MIN_DISTINCT}


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


def _arg_pids(ctx: MiningContext) -> pl.DataFrame:
    """Argument patterns (no wildcard) that may be echoed: declared parameters when the registry
    declares them for the tool, else every argument path seen."""
    pats = ctx.data.patterns.filter((pl.col("side") == "arg") & ~pl.col("wild"))
    if ctx.registry is None:
        return pats
    keep = []
    for name in pats["tool"].unique().sort().to_list():
        spec = ctx.registry.get(name)
        if spec is not None and isinstance(spec.parameters, dict) and spec.parameters.get("properties"):
            declared = set(declared_arg_patterns(spec.parameters))
            keep += [
                p
                for p, pat in pats.filter(pl.col("tool") == name).select("pid", "pattern").iter_rows()
                if pat in declared
            ]
        else:
            keep += pats.filter(pl.col("tool") == name)["pid"].to_list()
    return pats.filter(pl.col("pid").is_in(keep))


def _scalars(part: Leaves, pids: list[int]) -> pl.DataFrame:
    """cid, pid, cls, v (value hash: numbers compare numerically), fold, task of scalar nodes."""
    value = pl.when(pl.col("cls") == CLS_STR).then(pl.col("str").hash()).otherwise(pl.col("num").hash())
    # lazily: the filter reads and copies only the columns selected, not the whole frame
    return (
        part.leaves.lazy()
        .filter(pl.col("cls").is_in(SCALAR_CLASSES) & pl.col("pid").is_in(pids))
        .select("cid", "pid", "cls", value.alias("v"), "fold", "task")
        .collect()
    )


_SAME = (pl.col("cls") == pl.col("acls")) & (pl.col("v") == pl.col("av"))


def _args(part: Leaves, apids: list[int]) -> pl.DataFrame:
    return _scalars(part, apids).select(
        "cid", pl.col("pid").alias("apid"), pl.col("cls").alias("acls"), pl.col("v").alias("av")
    )


class EchoMiner:
    """The ECHO rule class.

    Search: every (result field, argument) pair of a tool is a candidate; a sample of calls per fold refutes
    most of them at once (a pair whose values differ in sampled calls of two folds cannot hold in any
    checker), and only the survivors are counted over every call (one join of their nodes on the call key).
    Values are compared through a 64-bit hash of the string or the number.
    """

    codes = ("ECHO",)

    def plan(self, ctx: MiningContext) -> pl.DataFrame | None:
        """The (rpid, apid) pairs that survive refutation on the sample."""
        data, k = ctx.data, ctx.data.k
        res_p = data.patterns.filter((pl.col("side") == "result") & ~pl.col("wild")).select("pid", "tool")
        arg_p = _arg_pids(ctx).select(pl.col("pid").alias("apid"), "tool")
        pairs = res_p.join(arg_p, on="tool").select(pl.col("pid").alias("rpid"), "apid")
        if pairs.height == 0:
            return None
        # Refute pairs on a sample of calls: a pair that differs in a sampled call of two folds (one when
        # k == 1) cannot hold in any checker; only the survivors are counted on every call.
        sample = first_calls(data.calls, ECHO_SAMPLE_CALLS).select("cid")
        in_sample = pl.col("cid").is_in(sample["cid"].implode())
        res = _scalars(ctx.sample, res_p["pid"].to_list()).rename({"pid": "rpid"}).filter(in_sample)
        args = _args(ctx.sample, arg_p["apid"].to_list()).filter(in_sample)
        refuted = (
            res.join(args, on="cid")
            .filter(~_SAME)
            .group_by("rpid", "apid")
            .agg(pl.col("fold").n_unique().alias("folds"))
            .filter(pl.col("folds") > (1 if k > 1 else 0))
        )
        pairs = pairs.join(refuted, on=["rpid", "apid"], how="anti")
        return pairs if pairs.height else None

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        pairs: pl.DataFrame = plan
        key = (
            pl.col("rpid").cast(pl.UInt64) * (1 << 32) + pl.col("apid").cast(pl.UInt64) * 256 + pl.col("fold")
        )
        res = _scalars(part, pairs["rpid"].unique().sort().to_list()).rename({"pid": "rpid"})
        args = _args(part, pairs["apid"].unique().sort().to_list())
        return (
            res.join(pairs, on="rpid")
            .join(args, on=["cid", "apid"])
            .with_columns(key.alias("key"))
            .group_by("key")
            .agg(
                pl.len().alias("n_both"),
                _SAME.sum().alias("n_match"),
                pl.col("task").n_unique().alias("tasks"),
                pl.col("av").min().alias("vmin"),
                pl.col("av").max().alias("vmax"),
                fold_examples(),
            )
            .with_columns(
                (pl.col("key") // (1 << 32)).cast(pl.UInt32).alias("rpid"),
                ((pl.col("key") // 256) % (1 << 24)).cast(pl.UInt32).alias("apid"),
                (pl.col("key") % 256).cast(pl.Int32).alias("fold"),
            )
            .drop("key")
        )

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None:
            return cand_frame()
        data, k = ctx.data, ctx.data.k
        names = data.patterns.select("pid", "tool", "pattern")
        both = (
            pl.concat(rows)
            .join(names.rename({"pid": "rpid"}), on="rpid")
            .join(names.select(pl.col("pid").alias("apid"), pl.col("pattern").alias("arg")), on="apid")
        )
        m = by_checker(
            both,
            ["tool", "pattern", "arg"],
            [
                pl.col("n_both").sum(),
                pl.col("n_match").sum(),
                pl.col("tasks").sum(),
                pl.col("vmin").min(),
                pl.col("vmax").max(),
                merged_examples(),
            ],
            k,
        )
        assert ECHO_MIN_DISTINCT == 2  # vmin != vmax is the ">= 2 distinct argument values" test
        out = m.filter(
            (pl.col("n_both") == pl.col("n_match"))
            & (pl.col("n_match") >= ctx.params.needed("ECHO"))
            & (pl.col("tasks") >= ctx.params.tasks_needed("ECHO"))
            & (pl.col("vmin") != pl.col("vmax"))
        ).with_columns(
            pl.lit("ECHO").alias("code"),
            pl.concat_list(pl.col("pattern"), pl.lit(ARGS_PREFIX) + pl.col("arg")).alias("paths"),
            pl.lit("{}").alias("params"),
            pl.col("n_match").alias("calls"),
            pl.col("n_match").alias("n"),
        )
        return cand_frame(out)


#: This folder's miners, in the order the miner runs them.
MINERS = (EchoMiner,)
