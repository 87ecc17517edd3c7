"""CONSISTENT over a corpus: the calls of each episode in input order, each compared with the latest
earlier call that returned the same entity at the same (P, K) place (`output_contracts.codes.consistent.memory`).

The vectorised pass (`episode_violations`) does in polars what `EpisodeMemory` does call by call: every
status-ok call of an episode that holds a judged key at K and a scalar at P becomes a row (episode,
order, P, K, key, value); within (episode, P, K, key), ordered by input order, each row's *previous*
value is the latest earlier sighting; a row whose value differs from it breaks the rule of its tool at
(P, K), if its checker has one. `repeats` is that pairing, shared with mining
(`output_contracts.codes.consistent.mine`), so the miner counts exactly the pairs the checker judges. The witness of each violation
(the earlier value and call) is rendered by replaying `EpisodeMemory` over the few episodes that hold a
violation (`episode_witnesses`): one implementation of the semantics, two evaluations of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from output_contracts.codes.consistent import Consistent
from output_contracts.codes.consistent.memory import EXACT_LIMIT, EpisodeMemory
from output_contracts.codes.hits import RuleEntry, empty_hits
from output_contracts.codes.violation import Violation
from output_contracts.errors import CheckError
from output_contracts.frames import pack_pair
from output_contracts.traces.call_texts import CallTexts
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.mining_view import VIEW_FILE, VIEW_PATTERNS_FILE
from output_contracts.traces.pointers import KINDS

#: Salts that keep a string's hash apart from a number's (and a boolean's, and null) in `entity_expr`
#: and `value_hash`. A 64-bit collision within one episode could pair two entities; the corpus path's
#: witnesses are replayed by `EpisodeMemory` on the values themselves, which would refuse it (E_INTERNAL).
_STR_SALT, _BOOL_SALT, _NULL = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9


def entity_expr(is_str: pl.Expr, is_int: pl.Expr, text: pl.Expr | None = None) -> pl.Expr:
    """A key value's identity (`entity_key`) as a 64-bit hash: of the text, or of the whole number below
    2^53; null if not judged. Hashes, not text: the corpus pass sorts and joins millions of them.
    `text`: what stands for the string (default: the hash of `str`; the mining view's string code,
    equal exactly when the strings are, in the checker's episode pass)."""
    return (
        pl.when(is_str)
        .then((pl.col("str").hash() if text is None else text) ^ pl.lit(_STR_SALT, pl.UInt64))
        .when(is_int & (pl.col("num").abs() < EXACT_LIMIT))
        .then(pl.col("num").hash())
        .otherwise(None)
    )


def value_hash(
    is_null: pl.Expr, is_bool: pl.Expr, is_num: pl.Expr, is_str: pl.Expr, text: pl.Expr | None = None
) -> pl.Expr:
    """A scalar's value under ECHO's equality (numbers by value, -0 = 0) as a 64-bit hash; null for
    containers. `text`: as in `entity_expr`."""
    return (
        pl.when(is_null)
        .then(pl.lit(_NULL, pl.UInt64))
        .when(is_bool)
        .then(pl.col("num").hash() ^ pl.lit(_BOOL_SALT, pl.UInt64))
        .when(is_num)
        .then((pl.col("num") + 0.0).hash())
        .when(is_str)
        .then((pl.col("str").hash() if text is None else text) ^ pl.lit(_STR_SALT, pl.UInt64))
        .otherwise(None)
    )


def value_expr(is_null: pl.Expr, is_bool: pl.Expr, is_num: pl.Expr, is_str: pl.Expr) -> pl.Expr:
    """A scalar's value as text under ECHO's equality (numbers by value); null for containers."""
    return (
        pl.when(is_null)
        .then(pl.lit("z"))
        .when(is_bool)
        .then(pl.lit("b") + pl.col("num").cast(pl.String))
        .when(is_num)
        .then(pl.lit("n") + pl.col("num").cast(pl.String))
        .when(is_str)
        .then(pl.lit("s") + pl.col("str"))
        .otherwise(None)
    )


def repeats(rows: pl.LazyFrame, touches: pl.LazyFrame) -> pl.LazyFrame:
    """Add `prev` to sightings (trace, ord, vp, kp, key, val, ...): the value of the latest earlier
    sighting of the same (trace, vp, kp, key) by `ord` — null for an entity's first sighting, and null
    when a call strictly between the two (`touches`: trace, ord, key of every key value in every call's
    arguments, whatever its status) named the entity (`EpisodeMemory.touch`).

    Linear after two sorts, no window function: the previous sighting is the previous row of the
    sightings sorted by (trace, vp, kp, key, ord) when it has the same keys; the latest touch before a
    sighting is a running maximum over the sightings and touches of one (trace, key) sorted by ord,
    touches after sightings at the same ord (a call's own arguments do not void its own comparison).
    The running maximum is taken over `grp * 2^32 + ord` with the group's dense rank `grp`, so one
    cumulative maximum over the whole sorted frame never carries a touch into the next group."""
    schema = rows.collect_schema()
    if schema["vp"] == schema["kp"] == pl.UInt32:
        # place ids (the view's path): both in one exact UInt64, one sort key fewer
        places = [pack_pair("vp", "kp").alias("_vp")]
    else:
        places = [pl.col("vp").hash().alias("_vp"), pl.col("kp").hash().alias("_kp")]
    place_cols = [p.meta.output_name() for p in places]
    group = ["trace", *place_cols, "key"]
    s = rows.with_columns(places).collect().with_row_index("_row")
    events = pl.concat(
        [
            s.select("trace", "key", pl.col("ord").cast(pl.UInt32), "_row", pl.lit(False).alias("touch")),
            touches.select(
                "trace",
                "key",
                pl.col("ord").cast(pl.UInt32),
                pl.lit(None, pl.UInt32).alias("_row"),
                pl.lit(True).alias("touch"),
            ).collect(),
        ],
        how="vertical_relaxed",
    ).sort("trace", "key", "ord", "touch")
    new_group = (pl.col("trace") != pl.col("trace").shift(1)) | (pl.col("key") != pl.col("key").shift(1))
    gid = new_group.fill_null(True).cast(pl.UInt64).cum_sum()
    last = (
        events.with_columns(gid.alias("_g"))
        .with_columns(
            pl.when(pl.col("touch"))
            .then(pl.col("_g") * (1 << 32) + pl.col("ord").cast(pl.UInt64) + 1)
            .otherwise(pl.col("_g") * (1 << 32))
            .cum_max()
            .alias("_m")
        )
        .filter(~pl.col("touch"))
        # the latest touch of this (trace, key) before the sighting, + 1; 0 for none
        .select("_row", (pl.col("_m") - pl.col("_g") * (1 << 32)).alias("_t"))
        .sort("_row")
    )
    s = s.with_columns(last["_t"])  # one row per sighting: in `_row` order, the order of `s`
    same = pl.all_horizontal([pl.col(c) == pl.col(c).shift(1) for c in group])
    voided = (pl.col("_t") > 0) & (pl.col("_t") - 1 > pl.col("ord").shift(1))
    return (
        s.sort([*group, "ord"])
        .with_columns(pl.when(same & ~voided).then(pl.col("val").shift(1)).alias("prev"))
        .drop("_row", "_t", *place_cols)
        .lazy()
    )


def _sightings(corpus: Corpus, calls: pl.LazyFrame, pairs: pl.DataFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(sightings, touches) over every call of the episodes in `calls`. Sightings: one row per
    (status-ok call, tracked place) where the call holds a judged key and a scalar value: cid, trace,
    ord, vp, kp, key, val. Touches: trace, ord, key of each key value in any call's arguments. `trace`
    is an integer standing for the trace id (equal exactly when the ids are).

    Calls of other episodes may be among them (when `calls` covers every episode, the calls are not
    narrowed to its episodes): a call is paired only with calls of its own episode, so they change
    nothing for the checked calls, which the caller keeps."""
    order = _call_order(corpus, calls)
    kind = pl.col("kind")
    places = sorted(set(pairs["vp"].to_list()) | set(pairs["kp"].to_list()))
    # The leaves read once for both: argument keys (touches) and the few result leaves at tracked places
    # (the keys and values of sightings). Kind and pattern are compared in the corpus's own
    # Enum/Categorical types: casting every leaf's to String first cost more than the rest of the scan.
    # Leaves of calls outside `order` meet nothing in its joins below.
    arg = pl.col("side") == "arg"
    read = (
        corpus.scan_leaves()
        .filter(
            (arg & kind.is_in(["string", "int"]))
            | ((pl.col("side") == "result") & pl.col("pattern").is_in(places))
        )
        .select("cid", "side", "pattern", "kind", "num", "str")
        .collect()
        .lazy()
    )
    touches = (
        read.filter(arg)
        .select("cid", "kind", "num", "str")
        .join(order, on="cid")
        .select("trace", "ord", entity_expr(kind == "string", kind == "int").alias("key"))
        .filter(pl.col("key").is_not_null())
    )
    leaves = (
        read.filter(~arg)
        .select("cid", pl.col("pattern").cast(pl.String).alias("place"), "kind", "num", "str")
        .collect()
        .lazy()
    )
    keys = leaves.select(
        "cid",
        pl.col("place").alias("kp"),
        entity_expr(kind == "string", kind == "int").alias("key"),
    ).filter(pl.col("key").is_not_null())
    vals = leaves.select(
        "cid",
        pl.col("place").alias("vp"),
        value_hash(kind == "null", kind == "bool", kind.is_in(["int", "float"]), kind == "string").alias(
            "val"
        ),
    ).filter(pl.col("val").is_not_null())
    rows = (
        vals.join(pairs.lazy(), on="vp")
        .join(keys, on=["cid", "kp"])
        .join(order, on="cid")
        .select("cid", "trace", "ord", "vp", "kp", "key", "val")
    )
    return rows, touches


def _call_order(corpus: Corpus, calls: pl.LazyFrame, view_ranks: bool = False) -> pl.LazyFrame:
    """Every call of the episodes in `calls` (of every episode when `calls` covers them all): cid,
    trace, ord, in corpus order (source, line, index), and with `view_ranks` the call's rank among all
    the corpus's cids (`call`, the mining view's call column). `trace` is the trace as an integer (its
    Categorical code, one per distinct id in this frame, which every row derived from it shares): the
    pairing sorts and groups by it."""
    everything = corpus.scan_calls().select("cid", "trace_id", "source", "line", "index")
    if view_ranks:  # ranked before the narrowing below, so the ranks are the whole corpus's
        everything = everything.with_columns(
            (pl.col("cid").rank("ordinal") - 1).cast(pl.UInt32).alias("call")
        )
    traces = calls.select("trace_id").unique()
    n_traces = traces.select(pl.len()).collect().item()
    if n_traces < corpus.scan_episodes().select(pl.len()).collect().item():
        everything = everything.join(traces, on="trace_id", how="semi")
    keep = ["cid", "call", "trace"] if view_ranks else ["cid", "trace"]
    frame = everything.with_columns(
        pl.col("trace_id").cast(pl.Categorical).to_physical().alias("trace")
    ).collect()
    # sorted by gathering the kept integer columns in the sort's order: a sort of the frame would move
    # its strings (trace id, source) too, about half of this function's time at 1M calls
    order = frame.select(pl.arg_sort_by("source", "line", "index")).to_series()
    return (
        frame.select(pl.col(c).gather(order) for c in keep).with_row_index("ord").select(*keep, "ord").lazy()
    )


def _view_sightings(
    corpus: Corpus, folder: Path, calls: pl.LazyFrame, pairs: pl.DataFrame, place_ids: Mapping[str, int]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """`_sightings` read from the mining view (`output_contracts.traces.mining_view`) instead of the
    leaves: its integer columns only (call rank, literal pattern id, kind code, number, string code), so
    no string is decoded, and a string stands for itself by its corpus-wide code (equal exactly when
    the texts are) instead of a hash of its text. `vp` and `kp` are the places' ids in `place_ids`."""
    order = _call_order(corpus, calls, view_ranks=True)
    patterns = pl.read_parquet(folder / VIEW_PATTERNS_FILE).select("side", "pattern")
    arg_lpats = patterns.with_row_index("lpat").filter(pl.col("side") == "arg").get_column("lpat")
    place = patterns.select(
        pl.when(pl.col("side") == "result")
        .then(pl.col("pattern").replace_strict(place_ids, default=None, return_dtype=pl.UInt32))
        .alias("place")
    ).get_column("place")
    place_lpats = place.is_not_null().arg_true()
    code = {k: i for i, k in enumerate(KINDS)}
    kind = pl.col("kind")
    arg = pl.col("lpat").is_in(arg_lpats.cast(pl.UInt32).implode())
    read = (
        pl.scan_parquet(folder / VIEW_FILE)
        .select("call", "lpat", "kind", "num", "str")
        .filter(
            (arg & kind.is_in([code["string"], code["int"]]))
            | pl.col("lpat").is_in(place_lpats.cast(pl.UInt32).implode())
        )
        .collect()
    )
    text = pl.col("str").cast(pl.UInt64)
    is_str, is_int = kind == code["string"], kind == code["int"]
    touches = (
        read.lazy()
        .filter(arg)
        .join(order, on="call")
        .select("trace", "ord", entity_expr(is_str, is_int, text).alias("key"))
        .filter(pl.col("key").is_not_null())
    )
    result = read.filter(~arg)
    leaves = result.with_columns(place.gather(result.get_column("lpat")).alias("place")).lazy()
    keys = leaves.select(
        "call", pl.col("place").alias("kp"), entity_expr(is_str, is_int, text).alias("key")
    ).filter(pl.col("key").is_not_null())
    is_num = kind.is_in([code["int"], code["float"]])
    vals = leaves.select(
        "call",
        pl.col("place").alias("vp"),
        value_hash(kind == code["null"], kind == code["bool"], is_num, is_str, text).alias("val"),
    ).filter(pl.col("val").is_not_null())
    rows = (
        vals.join(pairs.lazy(), on="vp")
        .join(keys, on=["call", "kp"])
        .join(order, on="call")
        .select("cid", "trace", "ord", "vp", "kp", "key", "val")
    )
    return rows, touches


def episode_violations(entries: Sequence[RuleEntry], corpus: Corpus, calls: pl.LazyFrame) -> pl.DataFrame:
    """(cid, ridx, path, present) of every violation of CONSISTENT's `entries` among the checked `calls`
    (cid, trace_id, k, tool, ...), the episodes' other status-ok calls serving as earlier sightings."""
    mine = list(entries)
    if not mine:
        return empty_hits().collect()
    rules = pl.DataFrame(
        {
            "ridx": [e.ridx for e in mine],
            "k": [e.k for e in mine],
            "tool": [e.rule.tool for e in mine],
            "vp": [e.rule.paths[0] for e in mine],
            "kp": [e.rule.paths[1] for e in mine],
        },
        schema={"ridx": pl.UInt32, "k": pl.Int32, "tool": pl.String, "vp": pl.String, "kp": pl.String},
    )
    checked = calls.select("cid", pl.col("k").cast(pl.Int32), pl.col("tool").cast(pl.String))
    rules = rules.with_columns(pl.col("vp").alias("path"))
    folder = corpus.view()
    if folder is not None:
        # the places as dense ids (the sightings are read from the view by pattern id)
        place_ids = {p: i for i, p in enumerate(sorted(set(rules["vp"]) | set(rules["kp"])))}
        rules = rules.with_columns(
            pl.col(c).replace_strict(place_ids, return_dtype=pl.UInt32) for c in ("vp", "kp")
        )
        sightings = _view_sightings(corpus, folder, calls, rules.select("vp", "kp").unique(), place_ids)
    else:
        sightings = _sightings(corpus, calls, rules.select("vp", "kp").unique())
    broke = (
        repeats(*sightings)
        .filter(pl.col("prev").is_not_null() & (pl.col("prev") != pl.col("val")))
        .join(checked, on="cid")
        .join(rules.lazy(), on=["k", "tool", "vp", "kp"])
        .select("cid", "ridx", "path", pl.lit(True).alias("present"))
    )
    return broke.collect()


def episode_witnesses(
    spec: Consistent,
    entries: Sequence[RuleEntry],
    corpus: Corpus,
    found: pl.DataFrame,
    texts: CallTexts | None = None,
) -> dict[tuple[int, int], Violation]:
    """The violation of each hit (cid, ridx) of CONSISTENT's `entries` in `found`, rendered (by `spec`) by
    replaying `EpisodeMemory`
    over the status-ok calls of the episodes that hold one, in input order. `texts`: those calls, read
    already (`CallTexts`); read from the corpus when absent or when it does not hold them all."""
    by_idx = {e.ridx: e for e in entries}
    hits = found.filter(pl.col("ridx").is_in([e.ridx for e in entries]))
    if hits.height == 0:
        return {}
    want: dict[int, list[int]] = {}
    for cid, ridx in hits.select("cid", "ridx").iter_rows():
        want.setdefault(cid, []).append(ridx)
    pairs = {(e.rule.paths[0], e.rule.paths[1]) for e in entries}
    cids = pl.Series(list(want), dtype=pl.UInt64)
    calls = corpus.scan_calls()
    if texts is not None and texts.has_calls(cids):
        held = texts.frame.lazy()
        of_hits = held.filter(pl.col("cid").is_in(cids.implode())).select("trace_id").unique().collect()
        if texts.has_episodes(of_hits.get_column("trace_id")):
            calls = held
    traces = calls.filter(pl.col("cid").is_in(cids.implode())).select("trace_id").unique()
    episode_calls = (
        calls.join(traces, on="trace_id", how="semi")
        .sort("source", "line", "index")
        .select("cid", "call_id", "trace_id", pl.col("tool").cast(pl.String), "status", "arguments", "result")
        .collect()
    )
    memories: dict[str, EpisodeMemory] = {}
    out: dict[tuple[int, int], Violation] = {}
    for cid, call_id, trace, tool, status, args_txt, res_txt in episode_calls.iter_rows():
        memory = memories.setdefault(trace, EpisodeMemory(pairs))
        arguments: Any = orjson.loads(args_txt) if args_txt is not None else None
        ok = status == "ok"
        result: Any = orjson.loads(res_txt) if ok and res_txt is not None else None
        for ridx in want.get(cid, ()):
            rule = by_idx[ridx].rule
            seen = memory.breaks(rule, result)
            if seen is None:
                raise CheckError(
                    f"rule {rule.id}: the corpus pass and the episode replay disagree on call {call_id}",
                    code="E_INTERNAL",
                    field=rule.id,
                )
            out[(cid, ridx)] = spec.episode_witness(rule, result, seen)
        memory.record(tool, arguments, result, call_id, ok=ok)
    return out
