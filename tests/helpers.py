"""Small hand-written corpora for the mining tests: records in, contract set out."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import MineParams, mine
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


def task_record(task: str, result: Any, tool: str = "tool") -> dict[str, Any]:
    """One flat call record of `task` without arguments; its trace is named by the task, tool and result."""
    return {
        "trace_id": f"{task}-{tool}-{canonical_str(result)}",
        "task_id": task,
        "step": 0,
        "tool": tool,
        "arguments": {},
        "result": result,
        "status": "ok",
    }


def few_tasks(*codes: str, n: int = 1) -> MineParams:
    """The default parameters with the task threshold of `codes` lowered to `n`."""
    params = MineParams.of()
    return dataclasses.replace(params, min_tasks={**params.min_tasks, **dict.fromkeys(codes, n)})


def sig(cs: ContractSet, fold: int | None = None, codes: tuple[str, ...] = ()) -> set[tuple[str, int, int]]:
    """(id, calls, tasks) of checker `fold`'s rules of `codes` (all codes when empty)."""
    return {
        (r.id, r.support.calls, r.support.tasks) for r in cs.rules_for(fold) if not codes or r.code in codes
    }


def codes_of(rs: list[Rule]) -> set[str]:
    return {r.code for r in rs}


def order_calls(n_tasks: int, calls_per_task: int, result_of: Callable[[int], Any]) -> list[dict[str, Any]]:
    """Flat `get_order` records: `calls_per_task` calls (an episode each) in each of `n_tasks` tasks,
    task t's results `result_of(t)` (called in that order), each call's argument its result's order id."""
    out = []
    for t in range(n_tasks):
        for step in range(calls_per_task):
            res = result_of(t)
            out.append(
                {
                    "trace_id": f"ep-{t:04d}-{step}",
                    "task_id": f"task-{t:04d}",
                    "step": step,
                    "tool": "get_order",
                    "arguments": {"order_id": res["order_id"]},
                    "result": res,
                    "status": "ok",
                }
            )
    return out


def order_record(i: int, result: Any) -> dict[str, Any]:
    """Call i of `get_order` (task and episode of its own), its argument the result's order id if any."""
    oid = result.get("order_id") if isinstance(result, dict) else None
    return {
        "trace_id": f"ep-{i:04d}",
        "task_id": f"task-{i:04d}",
        "step": 0,
        "tool": "get_order",
        "arguments": {"order_id": oid} if isinstance(oid, str) else {},
        "result": result,
        "status": "ok",
    }
