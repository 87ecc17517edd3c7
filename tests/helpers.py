"""Small hand-written corpora for the mining tests: records in, contract set out."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.mining import mine
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records

_counter = itertools.count()


def call(
    task: str, tool: str, result: Any, arguments: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """One flat call record; every call gets its own trace (episode) in `task`."""
    n = next(_counter)
    rec = {
        "trace_id": f"{task}-ep{n}",
        "task_id": task,
        "tool": tool,
        "arguments": dict(arguments or {}),
        "result": result,
    }
    rec.update(extra)
    return rec


def corpus(tmp_path: Path, records: Iterable[Mapping[str, Any]], name: str = "c") -> Corpus:
    return corpus_from_records(list(records), tmp_path / name)


def mine_records(tmp_path: Path, records: Iterable[Mapping[str, Any]], **kw: Any) -> ContractSet:
    """Mine the records with the verification pass on (unless `verify=False` is given)."""
    kw.setdefault("verify", True)
    return mine(corpus(tmp_path, records, name=f"c{next(_counter)}"), **kw)


def rules(
    cs: ContractSet, code: str | None = None, tool: str | None = None, fold: int | None = None
) -> list[Rule]:
    return [
        r for r in cs.rules_for(fold) if (code is None or r.code == code) and (tool is None or r.tool == tool)
    ]


def find(
    cs: ContractSet, code: str, *paths: str, tool: str | None = None, fold: int | None = None
) -> Rule | None:
    for r in rules(cs, code, tool, fold):
        if tuple(r.paths) == paths:
            return r
    return None


def tasks(n: int) -> list[str]:
    return [f"task-{i:03d}" for i in range(n)]
