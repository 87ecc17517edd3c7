"""CONSISTENT — `paths [P, K]` (no wildcards, one object), params `{}`

*Qualifying example*: a clean call of the tool holding a key (a string, or an integer below 2^53) at K
and a scalar at P, after an earlier call of the same episode — any tool, input order — that returned the
same key at K and a scalar at P: the pairing `output_contracts.codes.consistent.episodes.repeats` shared by the miner and
the checker. ≥ 30 such repeats from ≥ 200 tasks, none with a change; P took ≥ 2 values; K is named by
one of the tool's own arguments and showed ≥ 50 distinct values. Candidates: per tool, every (P, K) of fields of one
object whose K qualifies. *Catches*: a time served in another zone (`local_time_as_utc`), a field of
another entity's cached record, a wrong currency on an order seen before: values that are plausible on
their own. Limits: only entities seen twice in an episode are judged (on τ-bench airline, 521 repeats of
a reservation in 600 tasks × 2 trials); a thin write tool (fewer than 200 tasks with a repeat) gets no
rule; `mine --tool` sees only the selected tools' calls as earlier calls, `check` sees every call.

Checker semantics (`output_contracts.codes.consistent.check`): the latest earlier sighting per (entity, P, K) place
wins, whatever tool returned it; a write tool's result updates it like a read's; error calls are no
sighting. Both paths replay one `EpisodeMemory`; the corpus path finds the violations in polars over
whole episodes and renders their witnesses by replaying the memory over those episodes only.

**CONSISTENT: 200 tasks, and a key that is an identity.** "An entity's field does not change between two
reads in one episode" is, like LENGTH's and UNIQUE's, a claim about a rare event: after zero changes in t
tasks the 95% upper bound of the per-task rate is ≈ 3/t, 1.5% at 200 tasks. What is mutable the data
refutes long before (a status a write tool changes; a baggage count an update moves). Two things make the
claim about an *entity* rather than a coincidence: K must be the identity of the returned record — a field
whose name the tool itself takes as an argument (it was called for that entity; `get_reservation_details`
takes `reservation_id`, not `user_id`, which names the owner, another entity) and whose repeats show ≥ 50
distinct values (kept exactly over parts and folds as the 50 smallest value hashes: the bottom 50 of a
union is the bottom 50 of the parts' bottom 50), so a cabin class or a list of airports is no key; and P
must take ≥ 2 values (a field that never varies holds under any key and says nothing about the entity;
a one-value DOMAIN is what judges a constant). Keyed by any identity found in the record, the first version also mined
`nonfree_baggages` per `user_id` on τ-bench airline (in the training folds every reservation of a user in
one episode had the same count) and it fired twice on held-out episodes: a foreign key names the owner,
not the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.consistent.episodes import entity_expr, value_hash
from output_contracts.codes.mining_context import MiningContext, support_ok
from output_contracts.codes.mining_frames import (
    CLS_BOOL,
    CLS_NULL,
    CLS_NUM,
    CLS_STR,
    KIND_CODE,
    SCALAR_CLASSES,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from output_contracts.errors import MiningError
from output_contracts.frames import pack_pair
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.mining_view_reader import View, call_indexes
from output_contracts.traces.pointers import WILD_TOKENS

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = (
    "a call holding entity K = k and a scalar at P, "
    "after an earlier call of the episode that returned K = k and P"
)
SUPPORT = "≥ {min_support} repeats, ≥ {min_tasks} tasks"
CONDITIONS = (
    "no change; P took ≥ 2 values; K named by one of the tool's own arguments and ≥ 50 distinct key values"
)

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


def _view_touches(corpus: Corpus, view: View, others: pl.DataFrame) -> pl.DataFrame:
    """The touches (trace, ord, key) of the calls `others` (cid, trace, ord), read from the mining
    view's integer columns (only their few strings decoded) instead of `leaves.parquet`: the same rows
    as `Consistent.plan` reads there. The view is read whole, not `View.scan`: these calls are the ones
    mining leaves out."""
    calls = call_indexes(corpus, others["cid"])
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
        raw.with_columns(view.texts(raw["str"]).alias("str"))
        .join(at, on="call")
        .select(
            "trace", "ord", entity_expr(kind == KIND_CODE["string"], kind == KIND_CODE["int"]).alias("key")
        )
        .filter(pl.col("key").is_not_null())
    )


#: Bits of the packed input-order key of `call_order` (wider input is ranked column by column).
ORDER_KEY_BITS = 64


def call_order(corpus: Corpus, clean: pl.DataFrame) -> pl.DataFrame:
    """(cid, trace, ord) of every call of the episodes holding a clean call (`clean`: cid), errors
    included: `trace` numbers the episodes in trace-id order from 1, `ord` numbers the calls in input
    order (source, line, index) from 0.

    Built on integers: the trace ids and sources are numbered through small tables, and input order is
    one 64-bit key (source number, line and index packed) ranked once. At 10M calls the sort of the
    string columns and the dense rank of trace-id strings it replaces took 1.5 GiB."""
    calls = corpus.scan_calls().select("cid", "trace_id", "source", "line", "index")
    traces = (
        calls.join(clean.lazy(), on="cid", how="semi")
        .select(pl.col("trace_id").unique())
        .collect(engine="streaming")
        .sort("trace_id")
        .with_row_index("trace", offset=1)
    )
    sources = calls.select(pl.col("source").unique()).collect().sort("source").with_row_index("src")
    span = calls.select(
        pl.col("line").min().alias("l0"),
        pl.col("line").max().alias("l1"),
        pl.col("index").min().alias("i0"),
        pl.col("index").max().alias("i1"),
        pl.sum_horizontal(pl.col("source", "line", "index").null_count()).alias("nulls"),
    ).collect()
    l0, l1, i0, i1, nulls = (int(v or 0) for v in span.row(0))
    lbits, ibits = max(l1 - l0, 0).bit_length(), max(i1 - i0, 0).bit_length()
    if nulls or (sources.height - 1).bit_length() + lbits + ibits > ORDER_KEY_BITS:  # rank the columns
        frame = (
            calls.join(traces.lazy(), on="trace_id")
            .select("cid", "trace", "source", "line", "index")
            .collect(engine="streaming")
        )
        ord_ = frame.select(pl.arg_sort_by("source", "line", "index").arg_sort()).to_series() + 1
        frame = frame.drop("source", "line", "index")
    else:
        u64 = pl.UInt64
        key = (pl.col("line") - l0).cast(u64) * pl.lit(1 << ibits, u64) + (pl.col("index") - i0).cast(u64)
        if sources.height > 1:  # then the shift is below 64
            key = pl.col("src").cast(u64) * pl.lit(1 << (lbits + ibits), u64) + key
        frame = (
            calls.join(traces.lazy(), on="trace_id")
            .join(sources.lazy(), on="source")
            .select("cid", "trace", key.alias("_k"))
            .collect(engine="streaming")
        )
        ord_ = frame["_k"].rank("ordinal")
        frame = frame.drop("_k")
    return frame.with_columns((ord_ - 1).cast(pl.UInt32).alias("ord"))


@dataclass(frozen=True)
class CallOrder:
    """The episode (`trace`) and input order (`ord`) of every clean call, as two UInt32 columns in the
    order of `cids`, the clean calls' keys sorted (the miner's call table's own column, not a copy):
    8 bytes a call kept through the part loop instead of a (cid, trace, ord) table of 16."""

    cids: pl.Series
    trace: pl.Series
    ord: pl.Series

    @staticmethod
    def of(cids: pl.Series, everything: pl.DataFrame) -> CallOrder:
        """From the clean calls' keys and `call_order`'s rows (which hold every clean call)."""
        if not cids.flags["SORTED_ASC"]:
            cids = cids.sort()
        at = cids.search_sorted(everything["cid"])
        found = _found(cids, at, everything["cid"])
        at = at.filter(found)
        n = cids.len()  # (scatter writes in place: one new column each)
        return CallOrder(
            cids,
            pl.zeros(n, pl.UInt32, eager=True).scatter(at, everything["trace"].filter(found)),
            pl.zeros(n, pl.UInt32, eager=True).scatter(at, everything["ord"].filter(found)),
        )

    def holds(self, cids: pl.Series) -> pl.Series:
        """Which of `cids` are clean calls."""
        return _found(self.cids, self.cids.search_sorted(cids), cids)

    def attach(self, frame: pl.DataFrame) -> pl.DataFrame:
        """`frame` (rows of clean calls, `cid`) with the `trace` and `ord` of their calls."""
        at = self.cids.search_sorted(frame["cid"])
        return frame.with_columns(self.trace.gather(at).alias("trace"), self.ord.gather(at).alias("ord"))


def _found(sorted_cids: pl.Series, at: pl.Series, cids: pl.Series) -> pl.Series:
    """Whether `sorted_cids` holds each of `cids`, `at` being their `search_sorted` positions."""
    if sorted_cids.len() == 0:
        return pl.Series([False] * cids.len())
    return sorted_cids.gather(at.clip(0, sorted_cids.len() - 1)) == cids


#: The statistics `Consistent.scan` returns per (tool, vp, kp, fold).
_AGG_COLUMNS = ("n", "changed", "tasks", "calls", "keys", "vmin", "vmax", "ex")
_LOW31 = (1 << 31) - 1


def sighting_pairs(
    keys: pl.DataFrame, vals: pl.DataFrame, pairs: pl.DataFrame, touches: pl.DataFrame
) -> pl.DataFrame:
    """The sightings that have a previous one, with its value `prev`: the rows of
    `output_contracts.codes.consistent.episodes.repeats` whose `prev` is not null, computed on integers.

    `keys` (cid, trace, ord, kp, key, and any columns to carry along): a judged key at key place `kp`
    of call `cid`, the `ord`-th call in input order, of episode `trace`; `vals` (cid, vp, val): the
    scalar at place `vp` of a call; `pairs` (kp, vp): the tracked places; `touches` (trace, ord, key).
    Ids are integers (`trace`, `ord`, `kp`, `vp` UInt32; `key`, `val` UInt64). A sighting is a `keys`
    row and a `vp` paired with its `kp` that its call holds; its previous one is the latest earlier
    sighting of the same (trace, kp, key, vp) by `ord`, none when a touch of (trace, key) lies strictly
    between the two. Returns the `keys` columns with vp, val, prev.

    Linear apart from three sorts of integers, no window function and no string: the keys by (trace,
    key, kp, ord), which puts each entity's sightings at one place together (an entity seen once there
    has no pair and is dropped before anything is joined) and numbers the rows `_r`; the latest touch
    before each kept row, a running maximum over it and its (trace, key)'s touches in one packed UInt64
    sort (touches after rows at the same `ord`: a call's own arguments do not void its comparison);
    and the sightings by (vp, `_r`), also packed, where the previous row of the same group is the
    previous sighting."""
    k = keys.sort("trace", "key", "kp", "ord")
    tr, ky, kp, g = pl.col("trace"), pl.col("key"), pl.col("kp"), pl.col("_g")
    new_tk = ((tr != tr.shift(1)) | (ky != ky.shift(1))).fill_null(True)
    k = k.with_columns((new_tk | (kp != kp.shift(1)).fill_null(True)).cum_sum().alias("_g"))
    k = k.filter((g == g.shift(1)).fill_null(False) | (g == g.shift(-1)).fill_null(False))
    k = k.with_columns(new_tk.cum_sum().cast(pl.UInt64).alias("_tk")).with_row_index("_r")
    t = touches.select("trace", "key", pl.col("ord").cast(pl.UInt32)).join(
        k.select("trace", "key", "_tk").unique(), on=["trace", "key"]
    )
    most = max(k.height, int(k["ord"].max() or 0), int(t["ord"].max() or 0) if t.height else 0)  # type: ignore[arg-type]
    if most > _LOW31:
        raise MiningError(f"CONSISTENT: more than 2^31 rows or calls in one part ({most})", field="part_rows")
    e = pl.col("_e")
    at = pl.col("_tk") * (1 << 32) + pl.col("ord").cast(pl.UInt64) * 2
    events = pl.concat(
        [
            k.select(at.alias("_e"), "_r"),
            t.select((at + 1).alias("_e"), pl.lit(None, pl.UInt32).alias("_r")),
        ]
    ).sort("_e")
    start = (e // (1 << 32)) * (1 << 32)
    # per kept row: 1 + the order of the latest touch of its (trace, key) before it; 0 for none
    last = (
        events.with_columns(
            pl.when(e % 2 == 1).then(e // 2 % (1 << 31) + 1 + start).otherwise(start).cum_max().alias("_m")
        )
        .filter(pl.col("_r").is_not_null())
        .select("_r", (pl.col("_m") - start).alias("_t"))
    )
    lt = pl.zeros(k.height, pl.UInt64, eager=True).scatter(last["_r"], last["_t"])
    k = k.with_columns(lt.alias("_t")).drop("_tk")
    # A row whose previous key row (same entity and place) is voided by a touch, or is none, has no
    # previous sighting at any vp; and a row neither paired with the one before it nor with the one
    # after it is no one's previous sighting either (a sighting further back is voided by the touch
    # that voided the pair in between): both are dropped before the values are joined.
    lt_, o = pl.col("_t"), pl.col("ord")
    valid = ((g == g.shift(1)) & ~((lt_ > 0) & (lt_ - 1 > o.shift(1).cast(pl.UInt64)))).fill_null(False)
    k = k.filter(valid | valid.shift(-1).fill_null(False)).drop("_r").with_row_index("_r")
    # each kept row with the values its call holds at the places paired with its key place: joined on
    # the call alone (only the row number travels; the rest is gathered by it), the pairs tested on one
    # packed integer
    pair_ids = pairs.select(pack_pair("kp", "vp"))
    rows = (
        k.select("cid", "kp", "_r")
        .join(vals.filter(pl.col("vp").is_in(pairs["vp"].implode())), on="cid")
        .filter(pack_pair("kp", "vp").is_in(pair_ids.to_series().implode()))
        .select("_r", "vp", "val")
    )
    # by (vp, _r): the previous row of the same (entity, place, vp) is the previous sighting
    rows = rows.sort(pack_pair("vp", "_r"))
    r = rows["_r"]
    s = rows.with_columns(k["_g"].gather(r), k["ord"].gather(r), k["_t"].gather(r))
    vp = pl.col("vp")
    same = (g == g.shift(1)) & (vp == vp.shift(1))
    voided = (lt_ > 0) & (lt_ - 1 > o.shift(1).cast(pl.UInt64))
    found = s.select(pl.when(same & ~voided).then(pl.col("val").shift(1)).alias("prev")).to_series()
    hit = found.is_not_null()
    return (
        k.drop("_g", "_r", "_t")
        .gather(r.filter(hit))
        .with_columns(rows["vp"].filter(hit), rows["val"].filter(hit), found.filter(hit))
    )


class ConsistentMiner:
    """The CONSISTENT rule class.

    Candidates: per tool, (P, K) pairs of result fields of one object (no wildcards, not the root), where K is
    a *key*: its name is the name of one of the tool's own arguments (the tool is called for the entity it
    returns: `get_reservation_details(reservation_id)` returns `/reservation_id`; its `/user_id` names another
    entity, the reservation's owner, and is no key of the reservation); P is any other field of the same
    object that held a scalar. Qualifying example: a clean call of the tool holding a judged key at K and a
    scalar at P, after an earlier call of the same episode (any tool, input order) that returned the same key
    at K and a scalar at P, with no call in between whose arguments name the key (a touch); it holds when the
    two values are equal (ECHO's equality). The pairing (`sighting_pairs`, on integer keys) gives exactly the
    pairs of the checker's own (`output_contracts.codes.consistent.episodes.repeats`; a property test holds the
    two together), so the miner counts exactly what the checker judges.

    K must hold at least 50 distinct values in the repeats (`ID_MIN_KEYS`: a category is not an identity; a
    field that is the same for every reservation of a cabin class in one episode is a coincidence of who the
    episode is about).

    A thin write tool of τ-bench airline has 80-140 tasks with a repeat in a 600-task corpus and gets no rule;
    the reservation reader, 340, does. What is mutable the data refutes long before: a status that a write
    tool changes, a count that a booking moves, a field keyed by something that is not an identity (two
    reservations of one user differ in every field).

    Statistics: per (part, fold, tool, P, K): pairs, changed pairs, distinct tasks (each task lies in one part
    and one fold, so they add up), example calls.
    """

    codes = ("CONSISTENT",)

    def plan(self, ctx: MiningContext) -> dict[str, Any] | None:
        """`cands` (tool, vp, kp), `pids` (pid, place) of every tool's nodes at a tracked place, and
        `order` (`CallOrder`): the clean calls' episode and input order."""
        cand = candidates(ctx.data.patterns)
        # A key is an identity (>= ID_MIN_KEYS distinct values in its repeats, counted in `finish`): a key
        # place showing at most SAMPLE_CATEGORY values among the candidate sample's calls is a category
        # (a warehouse, a currency, a service level) and is not counted at all. The sample is read once,
        # whatever the task parts, so the choice does not depend on them.
        pid_of = {
            (t, p): pid
            for pid, t, p in _plain(ctx.data.patterns).select("pid", "tool", "pattern").iter_rows()
        }
        key_pids = [
            pid_of[t, kp] for t, kp in cand.select("tool", "kp").unique().iter_rows() if (t, kp) in pid_of
        ]
        shown = dict(
            ctx.sample.result()
            .filter(pl.col("cls").is_in([CLS_STR, CLS_NUM]) & pl.col("pid").is_in(key_pids))
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
        # places and tools as dense integers: `pid_place` (pid, place_id, tool_id), `pairs` (kp, vp) of
        # place ids, `cand_ids` (tool_id, vp, kp and their names)
        pids = (
            _plain(ctx.data.patterns)
            .filter(pl.col("pattern").is_in(sorted(places)))
            .select(pl.col("pid").cast(pl.UInt32), pl.col("pattern").alias("place"), "tool")
        )
        place_ids = pl.DataFrame({"place": sorted(places)}).with_row_index("place_id")
        tool_ids = pl.DataFrame({"tool": sorted(set(pids["tool"].to_list()))}).with_row_index("tool_id")
        pid_place = (
            pids.join(place_ids, on="place").join(tool_ids, on="tool").select("pid", "place_id", "tool_id")
        )
        named = (
            cand.join(tool_ids, on="tool")
            .join(place_ids.rename({"place": "vp", "place_id": "vp_id"}), on="vp")
            .join(place_ids.rename({"place": "kp", "place_id": "kp_id"}), on="kp")
        )
        cand_ids = named.select(
            "tool_id",
            pl.col("vp_id").alias("vp"),
            pl.col("kp_id").alias("kp"),
            "tool",
            pl.col("vp").alias("vp_name"),
            pl.col("kp").alias("kp_name"),
        )
        pairs = cand_ids.select("kp", "vp").unique().sort("kp", "vp")
        corpus = ctx.data.corpus
        clean = ctx.data.calls.select("cid")
        # every call of the clean episodes, errors included: they too touch what their arguments name
        everything = call_order(corpus, clean)
        order = CallOrder.of(clean["cid"], everything)
        others = everything.filter(~order.holds(everything["cid"]))
        del everything
        kind = pl.col("kind")
        # the touches of the calls mining has no leaves of (errors, calls of tools left out): few
        if ctx.data.view is not None:
            touches = _view_touches(corpus, ctx.data.view, others)
        else:
            touches = (
                corpus.scan_leaves()
                .filter(pl.col("side") == "arg")
                .select("cid", pl.col("kind").cast(pl.String), "num", "str")
                .join(others.lazy(), on="cid")
                .select("trace", "ord", entity_expr(kind == "string", kind == "int").alias("key"))
                .filter(pl.col("key").is_not_null())
                .collect()
            )
        return {
            "cands": cand,
            "pids": pids,
            "pid_place": pid_place,
            "pairs": pairs,
            "cand_ids": cand_ids,
            "order": order,
            "touches": touches,
        }

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        # places, tools and candidates as small integers through the sorts and joins, names at the end
        cls = pl.col("cls")
        leaves = (
            part.result()
            .lazy()
            .filter(cls.is_in(SCALAR_CLASSES) & pl.col("pid").is_in(plan["pids"]["pid"].implode()))
            .join(plan["pid_place"].lazy(), on="pid")
            .select(
                "cid",
                "task",
                "fold",
                "place_id",
                "tool_id",
                entity_expr(cls == CLS_STR, pl.col("code") == KIND_CODE["int"]).alias("key"),
                value_hash(cls == CLS_NULL, cls == CLS_BOOL, cls == CLS_NUM, cls == CLS_STR).alias("val"),
            )
            .collect()
        )
        keys = (
            leaves.lazy()
            .filter(pl.col("place_id").is_in(plan["pairs"]["kp"].implode()) & pl.col("key").is_not_null())
            .select("cid", pl.col("place_id").alias("kp"), "key", "tool_id", "task", "fold")
            .collect()
        )
        keys = (
            plan["order"].attach(keys).select("cid", "trace", "ord", "kp", "key", "tool_id", "task", "fold")
        )
        vals = leaves.select("cid", pl.col("place_id").alias("vp"), "val")
        args = (
            part.leaves.filter(pl.col("side") == "arg")
            if part.n_result is None
            else part.leaves.slice(part.n_result)
        )
        arg_keys = (
            args.lazy()
            .filter(cls.is_in([CLS_STR, CLS_NUM]))
            .select("cid", entity_expr(cls == CLS_STR, pl.col("code") == KIND_CODE["int"]).alias("key"))
            .filter(pl.col("key").is_not_null())
            .collect()
        )
        touches = pl.concat([plan["order"].attach(arg_keys).select("trace", "ord", "key"), plan["touches"]])
        judged = sighting_pairs(keys, vals, plan["pairs"], touches).join(
            plan["cand_ids"], on=["tool_id", "vp", "kp"], how="semi"
        )
        if judged.height == 0:
            return None
        out = (
            judged.group_by("tool_id", "vp", "kp", "fold")
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
            .join(plan["cand_ids"], on=["tool_id", "vp", "kp"])
            .select(
                "tool", pl.col("vp_name").alias("vp"), pl.col("kp_name").alias("kp"), "fold", *_AGG_COLUMNS
            )
        )
        return out

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


#: This folder's miners, in the order the miner runs them.
MINERS = (ConsistentMiner,)
