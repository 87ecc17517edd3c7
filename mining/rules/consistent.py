"""CONSISTENT: within one episode, an entity keeps the value of a field (`output_contracts.rules.consistent`).

Candidates: per tool, (P, K) pairs of result fields of one object (no wildcards, not the root), where K
is a *key*: its name is the name of one of the tool's own arguments (the tool is called for the entity
it returns: `get_reservation_details(reservation_id)` returns `/reservation_id`; its `/user_id` names
another entity, the reservation's owner, and is no key of the reservation); P is any other field of the
same object that held a scalar. Qualifying example: a clean call of the tool holding a judged key
at K and a scalar at P, after an earlier call of the same episode (any tool, input order) that returned
the same key at K and a scalar at P, with no call in between whose arguments name the key (a touch);
it holds when the two values are equal (ECHO's equality). The
pairing is the checker's own (`output_contracts.rules.episodes.repeats`), so the miner counts exactly what the
checker judges.

Keep only if no qualifying pair changed, with at least 30 pairs from at least 200 distinct tasks, and
P took at least two values over them (a field that never varies is the same under any key, and says
nothing about the entity: DOMAIN and RANGE judge constants), and K held at least 50 distinct values
in the repeats (`ID_MIN_KEYS`: a category is not an identity; a field that is the same for every
reservation of a cabin class in one episode is a coincidence of who the episode is about).

Chance argument. The claim is about a rare event, as LENGTH's and UNIQUE's: that a field of one entity
does not change between two reads in one episode. After zero changes in t tasks, the 95% upper bound of
the share of tasks where it changes is 1 − 0.05^(1/t) ≈ 3/t, 1.5% at 200 tasks. What is mutable the data
refutes long before: a status that a write tool changes, a count that a booking moves, a field keyed
by something that is not an identity (two reservations of one user differ in every field).

Statistics: per (part, fold, tool, P, K): pairs, changed pairs, distinct tasks (each task lies in one
part and one fold, so they add up), example calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.mining.data import (
    CLS_BOOL,
    CLS_NULL,
    CLS_NUM,
    CLS_STR,
    KIND_CODE,
    SCALAR_CLASSES,
    Leaves,
    View,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from output_contracts.mining.rules.base import MiningContext, support_ok
from output_contracts.rules.episodes import entity_expr, repeats, value_hash
from output_contracts.traces.leaves import WILD_TOKENS

#: A key is an identifier when its repeats show at least this many distinct values: a category (DOMAIN
#: admits at most 8 values; a cabin class, a list of a few dozen airports) names no entity. Counted
#: exactly across parts and folds by keeping the smallest ID_MIN_KEYS value hashes (a bottom-k set:
#: the bottom k of a union is the bottom k of the parts' bottom k).
ID_MIN_KEYS = 50
#: ... and a key place with at most this many distinct values among the candidate sample's calls (up to
#: 64 per tool and fold) is a category, screened out before counting (`Consistent.plan`).
SAMPLE_CATEGORY = 16
SCALAR_BITS = sum(1 << KIND_CODE[k] for k in ("null", "bool", "int", "float", "string"))
KEY_BITS = (1 << KIND_CODE["int"]) | (1 << KIND_CODE["string"])


def _last(pattern: str) -> str:
    return pattern.rsplit("/", 1)[-1]


def _parent(pattern: str) -> str:
    return pattern.rsplit("/", 1)[0]


def _plain(patterns: pl.DataFrame) -> pl.DataFrame:
    """Result patterns without wildcards, the root left out."""
    return patterns.filter((pl.col("side") == "result") & ~pl.col("wild") & (pl.col("pattern") != ""))


def candidates(patterns: pl.DataFrame) -> pl.DataFrame:
    """(tool, vp, kp) of every candidate rule, from a mining pattern table (pid, tool, side, pattern,
    wild, kinds): K a field that held a string or an integer and that one of the tool's own arguments
    names, P a sibling field that held a scalar."""
    arg_names: dict[str, set[str]] = {}
    for tool, p in patterns.filter(pl.col("side") == "arg").select("tool", "pattern").iter_rows():
        if p and _last(p) not in WILD_TOKENS:
            arg_names.setdefault(tool, set()).add(_last(p))
    by_tool: dict[str, list[tuple[str, int]]] = {}
    for tool, pattern, kinds in _plain(patterns).select("tool", "pattern", "kinds").iter_rows():
        by_tool.setdefault(tool, []).append((pattern, int(kinds)))
    cands = []
    for tool, places in sorted(by_tool.items()):
        for kp, kk in places:
            if not kk & KEY_BITS or _last(kp) not in arg_names.get(tool, set()):
                continue
            for vp, vk in places:
                if vp != kp and _parent(vp) == _parent(kp) and vk & SCALAR_BITS:
                    cands.append((tool, vp, kp))
    schema = {"tool": pl.String, "vp": pl.String, "kp": pl.String}
    return pl.DataFrame(cands, schema=schema, orient="row").unique().sort("tool", "vp", "kp")


def episode_links(patterns: pl.DataFrame) -> list[tuple[str, ...]]:
    """Groups of tools a candidate rule ties together: its tool and every tool whose results hold both of
    its places (their calls are the earlier sightings it is judged against). Mining a tool without
    them would count other pairs, so the Dask engine keeps each group in one partition."""
    cand = candidates(patterns)
    if cand.height == 0:
        return []
    held = _plain(patterns).select("tool", "pattern")
    holders: dict[str, set[str]] = {}
    for tool, pattern in held.iter_rows():
        holders.setdefault(pattern, set()).add(tool)
    out = set()
    for tool, vp, kp in cand.iter_rows():
        out.add(tuple(sorted({tool} | (holders.get(vp, set()) & holders.get(kp, set())))))
    return sorted(out)


def _view_touches(view: View, others: pl.DataFrame) -> pl.DataFrame:
    """The touches (trace, ord, key) of the calls `others` (cid, trace, ord), read from the mining
    view's integer columns (only their few strings decoded) instead of `leaves.parquet`: the same rows
    as `Consistent.plan` reads there. The view is read whole, not `View.scan`: these calls are the ones
    mining leaves out."""
    calls = view.cids.search_sorted(others["cid"]).cast(pl.UInt32)
    at = others.select(calls.alias("call"), "trace", "ord")
    args = view.lpats.filter(pl.col("side") == "arg")["lpat"].cast(pl.UInt32)
    kind = pl.col("kind")
    raw = (
        pl.scan_parquet(view.path)
        .filter(
            pl.col("call").is_in(calls.implode())
            & pl.col("lpat").is_in(args.implode())
            & kind.is_in([KIND_CODE["string"], KIND_CODE["int"]])
        )
        .select("call", "kind", "num", "str")
        .collect()
    )
    return (
        raw.with_columns(view.strings.gather(raw["str"]).alias("str"))
        .join(at, on="call")
        .select(
            "trace", "ord", entity_expr(kind == KIND_CODE["string"], kind == KIND_CODE["int"]).alias("key")
        )
        .filter(pl.col("key").is_not_null())
    )


class Consistent:
    """The CONSISTENT rule class."""

    codes = ("CONSISTENT",)

    def plan(self, ctx: MiningContext) -> dict[str, pl.DataFrame] | None:
        """`cands` (tool, vp, kp), `pids` (pid, place) of every tool's nodes at a tracked place, and
        `order` (cid, trace, ord): the clean calls' episode and input order."""
        cand = candidates(ctx.data.patterns)
        # A key is an identity (>= ID_MIN_KEYS distinct values in its repeats, counted in `finish`): a key
        # place showing at most SAMPLE_CATEGORY values among the candidate sample's calls is a category
        # (a warehouse, a currency, a service level) and is not counted at all. The sample is read once,
        # whatever the task parts, so the choice does not depend on them.
        pid_of = {
            (t, p): pid
            for pid, t, p in _plain(ctx.data.patterns).select("pid", "tool", "pattern").iter_rows()
        }
        shown = dict(
            ctx.sample.result()
            .filter(pl.col("cls").is_in([CLS_STR, CLS_NUM]))
            .group_by("pid")
            .agg(pl.struct("str", "num").n_unique())
            .iter_rows()
        )
        few = {
            (t, kp)
            for t, kp in cand.select("tool", "kp").unique().iter_rows()
            if 0 < shown.get(pid_of.get((t, kp), -1), 0) <= SAMPLE_CATEGORY
        }
        cand = cand.filter(~pl.struct("tool", "kp").is_in([{"tool": t, "kp": k} for t, k in sorted(few)]))
        if cand.height == 0:
            return None
        places = set(cand["vp"].to_list()) | set(cand["kp"].to_list())
        pids = (
            _plain(ctx.data.patterns)
            .filter(pl.col("pattern").is_in(sorted(places)))
            .select(pl.col("pid").cast(pl.UInt32), pl.col("pattern").alias("place"))
        )
        corpus = ctx.data.corpus
        clean = ctx.data.calls.select("cid")
        calls = corpus.scan_calls().select("cid", "trace_id", "status", "source", "line", "index")
        traces = calls.join(clean.lazy(), on="cid", how="semi").select("trace_id").unique()
        # every call of the clean episodes, errors included: they too touch what their arguments name
        everything = (
            calls.join(traces, on="trace_id", how="semi")
            .sort("source", "line", "index")
            .with_row_index("ord")
            .with_columns(pl.col("trace_id").rank("dense").cast(pl.UInt32).alias("trace"))
            .select("cid", "trace", "ord", "status")
            .collect()
        )
        order = everything.join(clean, on="cid", how="semi").select("cid", "trace", "ord")
        others = everything.join(clean, on="cid", how="anti").select("cid", "trace", "ord")
        kind = pl.col("kind")
        # the touches of the calls mining has no leaves of (errors, calls of tools left out): few
        if ctx.data.view is not None:
            return {
                "cands": cand,
                "pids": pids,
                "order": order,
                "touches": _view_touches(ctx.data.view, others),
            }
        other_touches = (
            corpus.scan_leaves()
            .filter(pl.col("side") == "arg")
            .select("cid", pl.col("kind").cast(pl.String), "num", "str")
            .join(others.lazy(), on="cid")
            .select("trace", "ord", entity_expr(kind == "string", kind == "int").alias("key"))
            .filter(pl.col("key").is_not_null())
            .collect()
        )
        return {"cands": cand, "pids": pids, "order": order, "touches": other_touches}

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        # places as small integers (`place_id`) through the joins and sorts, names only at the end
        ids = plan["pids"].select("place").unique().sort("place").with_row_index("place_id")
        pid_place = plan["pids"].join(ids, on="place").select("pid", "place_id")
        pairs = (
            plan["cands"]
            .select("vp", "kp")
            .unique()
            .join(ids.rename({"place": "vp", "place_id": "vp_id"}), on="vp")
            .join(ids.rename({"place": "kp", "place_id": "kp_id"}), on="kp")
            .select("vp_id", "kp_id")
        )
        leaves = (
            part.result()
            .lazy()
            .filter(pl.col("cls").is_in(SCALAR_CLASSES) & pl.col("pid").is_in(plan["pids"]["pid"].implode()))
            .join(pid_place.lazy(), on="pid")
        )
        cls = pl.col("cls")
        order = plan["order"].lazy()
        keys = (
            leaves.select(
                "cid",
                pl.col("place_id").alias("kp_id"),
                entity_expr(cls == CLS_STR, pl.col("code") == KIND_CODE["int"]).alias("key"),
            )
            .filter(pl.col("key").is_not_null())
            .join(order.select("cid", "trace"), on="cid")
        )
        # an entity seen once in its episode has no earlier sighting and is none: keep those seen twice
        twice = keys.group_by("trace", "kp_id", "key").len().filter(pl.col("len") >= 2).drop("len")
        keys = keys.join(twice, on=["trace", "kp_id", "key"], how="semi").drop("trace")
        vals = leaves.select(
            "cid",
            pl.col("place_id").alias("vp_id"),
            value_hash(cls == CLS_NULL, cls == CLS_BOOL, cls == CLS_NUM, cls == CLS_STR).alias("val"),
        )
        rows = (
            keys.join(pairs.lazy(), on="kp_id")
            .join(vals, on=["cid", "vp_id"])
            .join(order, on="cid")
            .select(
                "cid", "trace", "ord", pl.col("vp_id").alias("vp"), pl.col("kp_id").alias("kp"), "key", "val"
            )
        )
        args = (
            part.leaves.filter(pl.col("side") == "arg")
            if part.n_result is None
            else part.leaves.slice(part.n_result)
        )
        touches = pl.concat(
            [
                args.lazy()
                .filter(pl.col("cls").is_in([CLS_STR, CLS_NUM]))
                .join(plan["order"].lazy(), on="cid")
                .select(
                    "trace",
                    "ord",
                    entity_expr(cls == CLS_STR, pl.col("code") == KIND_CODE["int"]).alias("key"),
                )
                .filter(pl.col("key").is_not_null()),
                plan["touches"].lazy(),
            ]
        )
        calls = part.calls.lazy().select("cid", "task", "fold", pl.col("tool").cast(pl.String))
        named = (
            repeats(rows, touches)
            .filter(pl.col("prev").is_not_null())
            .join(ids.lazy().rename({"place_id": "vp", "place": "vp_name"}), on="vp")
            .join(ids.lazy().rename({"place_id": "kp", "place": "kp_name"}), on="kp")
            .drop("vp", "kp")
            .rename({"vp_name": "vp", "kp_name": "kp"})
        )
        judged = named.join(calls, on="cid").join(plan["cands"].lazy(), on=["tool", "vp", "kp"])
        out = (
            judged.group_by("tool", "vp", "kp", "fold")
            .agg(
                pl.len().alias("n"),
                (pl.col("val") != pl.col("prev")).sum().alias("changed"),
                pl.col("task").n_unique().alias("tasks"),
                pl.col("cid").n_unique().alias("calls"),
                pl.col("key").hash().unique().bottom_k(ID_MIN_KEYS).alias("keys"),
                pl.col("val").min().alias("vmin"),
                pl.col("val").max().alias("vmax"),
                fold_examples(),
            )
            .collect()
        )
        return out if out.height else None

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        merged = by_checker(
            pl.concat(rows),
            ["tool", "vp", "kp"],
            [
                pl.col("n").sum(),
                pl.col("changed").sum(),
                pl.col("tasks").sum(),
                pl.col("calls").sum(),
                pl.col("keys").list.explode().unique().bottom_k(ID_MIN_KEYS),
                pl.col("vmin").min(),
                pl.col("vmax").max(),
                merged_examples(),
            ],
            ctx.data.k,
        )
        varies = pl.col("vmin") != pl.col("vmax")
        identity = pl.col("keys").list.len() >= ID_MIN_KEYS
        held = merged.filter((pl.col("changed") == 0) & varies & identity & support_ok(ctx, "CONSISTENT"))
        out = held.with_columns(
            pl.lit("CONSISTENT").alias("code"),
            pl.concat_list("vp", "kp").alias("paths"),
            pl.lit("{}").alias("params"),
        )
        return cand_frame(out)
