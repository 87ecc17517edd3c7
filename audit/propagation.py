"""Propagation: does a value a receipt flagged travel into the episode's later calls?

The paper's figure ("1 in 5 trackable episodes propagate a corrupted value; two thirds still pass") asks,
for each receipt, whether the agent went on to use the bad value. Offline, the question is answered from
the traces: a receipt's *observed* value (the witness of a violation, as frozen in the audit ledger) is
followed into the argument leaves of the later calls of the same episode.

Definitions (docs/audit.md):

* A violation's value is **trackable** when it is specific enough that meeting it again is not chance:
  a string of >= `MIN_CHARS` characters, or a number that is not an integer or whose magnitude is
  >= `MIN_MAGNITUDE`. Null, booleans, small integers, arrays, objects, a missing field (REQUIRED) and a
  witness the ledger truncated (longer than 200 characters) are not.
* A trackable value **propagates** when it equals an argument leaf of a later call of the episode (a
  larger `step`) and of no call up to and including the receipt's own: a value the agent had already
  used before the receipt (an id it asked about, say) is not carried *by* the receipted result.
* An episode is **trackable** when one of its fire events has a trackable value, and **propagating**
  when one of those values propagates. Outcome: the episode's reward (full reward = reward >= 1) where
  the traces carry one.

The per-call work is polars: the argument leaves of the episodes concerned are joined to the values on
(episode, value), so the cost is one scan of the argument leaves, not a loop over calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from output_contracts.traces.corpus import Corpus

MIN_CHARS = 4
MIN_MAGNITUDE = 100
TRUNCATION_MARK = "…"

#: One row per trackable episode: `trace_id`, `organic` (the episode's trackable values include one of
#: an organic fire event), `labelled` (of a labelled one), and whether a value of each kind propagates.
EPISODE_SCHEMA = {
    "trace_id": pl.String(),
    "organic": pl.Boolean(),
    "labelled": pl.Boolean(),
    "organic_prop": pl.Boolean(),
    "labelled_prop": pl.Boolean(),
}


def trackable(value: Any) -> tuple[str, str | None, float | None] | None:
    """`("s", text, None)` or `("n", None, number)` for a trackable value, else None (see the module)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        if len(value.strip()) < MIN_CHARS or value.endswith(TRUNCATION_MARK):
            return None
        return ("s", value, None)
    if isinstance(value, int | float):
        x = float(value)
        if not math.isfinite(x):
            return None
        if x.is_integer() and abs(x) < MIN_MAGNITUDE:
            return None
        return ("n", None, x)
    return None


def _key(kind: pl.Expr, text: pl.Expr, num: pl.Expr) -> pl.Expr:
    """The join key of a value: `s:<text>` or `n:<number>` (numbers by their Float64 text, so 5 == 5.0)."""
    return pl.when(kind == "s").then(pl.lit("s:") + text).otherwise(pl.lit("n:") + num.cast(pl.String))


def values_frame(events: Iterable[Mapping[str, Any]], organic: set[str] | frozenset[str]) -> pl.DataFrame:
    """The trackable values of fire events: `call_id, key, organic` (one row per distinct value)."""
    rows = []
    for e in events:
        for v in e["violations"]:
            if not v.get("present", True):
                continue
            t = trackable(v.get("observed"))
            if t is not None:
                rows.append((e["call_id"], t[0], t[1], t[2], e["call_id"] in organic))
    frame = pl.DataFrame(
        rows,
        schema={"call_id": pl.String, "k": pl.String, "s": pl.String, "n": pl.Float64, "organic": pl.Boolean},
        orient="row",
    )
    return frame.select(
        "call_id", _key(pl.col("k"), pl.col("s"), pl.col("n")).alias("key"), "organic"
    ).unique()


def propagation_episodes(
    corpus: Corpus, events: Iterable[Mapping[str, Any]], labelled: Iterable[str]
) -> pl.DataFrame:
    """Per trackable episode, whether an organic / labelled fire event's value propagates (`EPISODE_SCHEMA`).

    `labelled`: call ids with a fault label (the others are organic)."""
    events = list(events)
    lab = set(labelled)
    values = values_frame(events, {e["call_id"] for e in events if e["call_id"] not in lab})
    if values.is_empty():
        return pl.DataFrame(schema=EPISODE_SCHEMA)
    ids = values.get_column("call_id").unique().implode()
    fired = (
        corpus.scan_calls()
        .filter(pl.col("call_id").is_in(ids))
        .select("call_id", "trace_id", pl.col("step").alias("at"))
        .collect()
    )
    values = values.join(fired, on="call_id")
    traces = values.get_column("trace_id").unique().implode()
    calls = corpus.scan_calls().filter(pl.col("trace_id").is_in(traces)).select("cid", "trace_id", "step")
    args = (
        corpus.scan_leaves()
        .filter((pl.col("side") == "arg") & pl.col("kind").is_in(["string", "int", "float"]))
        .join(calls, on="cid", how="inner")
        .select(
            "trace_id",
            "step",
            _key(
                pl.when(pl.col("kind") == "string").then(pl.lit("s")).otherwise(pl.lit("n")),
                pl.col("str"),
                pl.col("num"),
            ).alias("key"),
        )
        .unique()
        .collect()
    )
    uses = values.join(args, on=["trace_id", "key"], how="left")
    per_value = uses.group_by("call_id", "key", "organic", "trace_id").agg(
        ((pl.col("step") > pl.col("at")).any().fill_null(False)).alias("later"),
        ((pl.col("step") <= pl.col("at")).any().fill_null(False)).alias("before"),
    )
    per_value = per_value.with_columns((pl.col("later") & ~pl.col("before")).alias("prop"))
    return (
        per_value.group_by("trace_id")
        .agg(
            pl.col("organic").any().alias("organic"),
            (~pl.col("organic")).any().alias("labelled"),
            (pl.col("prop") & pl.col("organic")).any().alias("organic_prop"),
            (pl.col("prop") & ~pl.col("organic")).any().alias("labelled_prop"),
        )
        .select(list(EPISODE_SCHEMA))
        .cast(EPISODE_SCHEMA)  # type: ignore[arg-type]
        .sort("trace_id")
    )
