"""The truth an audit is scored against, joined only after the freeze: fault labels per call, and per
episode its task, reward and whether it carries an episode-level `fault` label; a labels file may
override them (`contracts audit-score --labels`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus


@dataclass(frozen=True)
class Truth:
    """Labels and rewards joined after the freeze: per labelled call (fault kind, faulted paths); per
    episode, as a frame (`EPISODE_SCHEMA`: one row per trace, its task, reward and whether it carries an
    episode-level `fault` label); and reward overrides (`rewards`, from a labels file) that replace an
    episode's reward, null included."""

    faults: Mapping[str, tuple[str, tuple[str, ...]]]
    episodes: pl.DataFrame
    rewards: Mapping[str, float | None] = field(default_factory=dict)


EPISODE_SCHEMA = pl.Schema(
    {"trace_id": pl.String(), "task_id": pl.String(), "reward": pl.Float64(), "ep_fault": pl.Boolean()}
)


def _fault_of(labels: Any) -> tuple[str, tuple[str, ...]] | None:
    if not isinstance(labels, dict) or not labels.get("fault"):
        return None
    paths = labels.get("fault_paths")
    if not isinstance(paths, list):
        paths = [p for p in (labels.get("fault_path"), labels.get("swapped_with")) if isinstance(p, str)]
    return str(labels["fault"]), tuple(str(p) for p in paths)


def truth_from_corpus(corpus: Corpus) -> Truth:
    """Labels and rewards as the corpus records them."""
    calls = corpus.scan_calls().filter(pl.col("fault").is_not_null()).select("call_id", "labels").collect()
    faults = {}
    for cid, lab in calls.iter_rows():
        f = _fault_of(orjson.loads(lab) if lab else {})
        if f is not None:
            faults[cid] = f
    eps = (
        corpus.scan_episodes()
        .select("trace_id", pl.col("task_id").cast(pl.String), pl.col("reward").cast(pl.Float64), "labels")
        .collect()
    )
    # an episode label is parsed only when it can name a fault (`{}` and "" cannot)
    maybe = eps.filter(pl.col("labels").is_not_null() & ~pl.col("labels").is_in(["", "{}"]))
    ep_faults = [
        t
        for t, lab in maybe.select("trace_id", "labels").iter_rows()
        if _fault_of(orjson.loads(lab)) is not None
    ]
    # one row per trace: its last row's task and reward (as a dict built over the rows would keep)
    episodes = (
        eps.with_columns(
            pl.col("trace_id").is_in(pl.Series(ep_faults, dtype=pl.String).implode()).alias("ep_fault")
        )
        .unique(subset="trace_id", keep="last")
        .select(list(EPISODE_SCHEMA))
        .cast(EPISODE_SCHEMA)
    )
    return Truth(faults, episodes)


def apply_labels_file(truth: Truth, path: str | Path) -> Truth:
    """Override labels/rewards from a JSONL file: `{"call_id", "labels": {...}}` replaces a call's labels
    (`{}` clears them); `{"trace_id", "reward": x}` replaces an episode's reward. Unlisted ones keep the
    corpus's values."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError as e:
        raise TraceError("labels file not found", source=str(p)) from e
    faults = dict(truth.faults)
    rewards = dict(truth.rewards)  # overrides only (small), never one entry per episode
    for i, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise TraceError(f"invalid JSON: {e}", source=str(p), line=i) from e
        if not isinstance(rec, dict):
            raise TraceError("each line must be a JSON object", source=str(p), line=i)
        if "call_id" in rec:
            if not isinstance(rec.get("labels"), dict):
                raise TraceError(
                    "a call line needs 'labels' (an object)", source=str(p), line=i, field="labels"
                )
            f = _fault_of(rec["labels"])
            if f is None:
                faults.pop(str(rec["call_id"]), None)
            else:
                faults[str(rec["call_id"])] = f
        elif "trace_id" in rec:
            r = rec.get("reward")
            if r is not None and (not isinstance(r, int | float) or isinstance(r, bool)):
                raise TraceError("'reward' must be a number or null", source=str(p), line=i, field="reward")
            rewards[str(rec["trace_id"])] = None if r is None else float(r)
        else:
            raise TraceError(
                "each line needs 'call_id' (labels) or 'trace_id' (reward)", source=str(p), line=i
            )
    return Truth(faults, truth.episodes, rewards)
