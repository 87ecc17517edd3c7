"""The two checker paths, held to the same answers: `check_corpus` (vectorised) and `call_violations`
(per call, each episode's calls in input order through one `EpisodeMemory`) give the same violations,
witnesses byte for byte, in any batching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from output_contracts.checks.checker import call_violations, check_corpus
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.engine.evaluate import episode_memory
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records


def frame_rows(df: pl.DataFrame) -> list[tuple[Any, ...]]:
    """A violations frame as sorted (rule, code, path, expected JSON, observed JSON, present, detail)."""
    return sorted(
        (
            r["rule"],
            r["code"],
            r["path"],
            r["expected"].encode(),
            r["observed"].encode(),
            r["present"],
            r["detail"],
        )
        for r in df.iter_rows(named=True)
    )


def call_rows(vs: Any) -> list[tuple[Any, ...]]:
    """`call_violations`' result in the same form as `frame_rows`."""
    return sorted(
        (v.rule, v.code, v.path, orjson.dumps(v.expected), orjson.dumps(v.observed), v.present, v.detail)
        for v in vs
    )


def assert_paths_agree(
    cs: ContractSet, corpus: Corpus, *, fold: int | None = None, batch_calls: int = 2
) -> pl.DataFrame:
    """Check every call of `corpus` both ways and assert the same violations; returns the frame."""
    df = check_corpus(cs, corpus, fold=fold)
    assert check_corpus(cs, corpus, fold=fold, batch_calls=batch_calls).equals(df)  # batching changes nothing
    calls = (
        corpus.scan_calls()
        .sort("source", "line", "index")
        .select("cid", "call_id", "trace_id", "tool", "status", "arguments", "result")
        .collect()
    )
    memories: dict[str, Any] = {}  # per episode, in input order: what CONSISTENT compares with
    for cid, call_id, trace, tool, status, args, res in calls.iter_rows():
        memory = memories.setdefault(trace, episode_memory(cs, fold))
        if status != "ok":  # not checked, but its arguments may name (touch) an entity
            memory.record(tool, orjson.loads(args), None, call_id, ok=False)
            continue
        py = call_violations(
            cs, tool, orjson.loads(args), orjson.loads(res), fold=fold, memory=memory, call_id=call_id
        )
        assert frame_rows(df.filter(pl.col("cid") == cid)) == call_rows(py), (args, res)
    return df


def hand_rule(
    tool: str, code: str, paths: Sequence[str], params: Mapping[str, Any], support: Support = Support(100, 9)
) -> Rule:
    """A rule written by hand rather than mined: its id is the miner's for the same rule."""
    return Rule(rule_id(tool, code, paths, params), tool, code, tuple(paths), params, support)


def one_checker(rules: Sequence[Rule], maps: Mapping[str, Sequence[str]] | None = None) -> ContractSet:
    """A contract set of `rules` alone, their tools' in order (with each tool's map parents in `maps`),
    one checker (k = 1) holding them all: what hand-written rules are checked with."""
    maps = maps or {}
    tools = {
        tool: ToolContracts(rules=tuple(r for r in rules if r.tool == tool), maps=tuple(maps.get(tool, ())))
        for tool in dict.fromkeys(r.tool for r in rules)
    }
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools=tools,
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


def agree_on(rules: tuple[Rule, ...], calls: list[tuple[dict[str, Any], Any]], tmp: Path) -> pl.DataFrame:
    """`calls` ((arguments, result) of the rules' one tool, an episode each) checked both ways by a
    one-checker set of `rules` alone, in batches of 3 calls: the frame, once the two paths agree."""
    (tool,) = {r.tool for r in rules}
    cs = one_checker(rules)
    recs = [
        {"trace_id": f"ep-{i}", "tool": tool, "arguments": a, "result": r} for i, (a, r) in enumerate(calls)
    ]
    return assert_paths_agree(cs, corpus_from_records(recs, tmp / "corpus"), batch_calls=3)
