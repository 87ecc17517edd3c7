"""`mine` on Dask workers: one task per tool partition, merged into the local engine's exact bytes.

Why per tool. Every rule is about one tool, and every statistic a rule class computes is grouped by
(tool, pattern, fold): the candidates, the per-fold sampling windows (RELATION's and ECHO's are per
(tool, fold), first by call key), the example calls (the smallest global call keys) and the schema rules
(per declared tool). Fold assignment hashes each task id on its own (`output_contracts.codes.folds.fold_of`),
so a task lands in the same fold whichever tools are mined with it. Mining `tools=[t]` therefore yields
exactly tool t's part of the all-tools contract set, and the merge is a union: tools are disjoint, each
fold checker's rule list is re-sorted in the full set's rule order, and the corpus summary (clean calls,
distinct tasks) is taken once by the driver from the clean call table. Partitioning by Parquet part and
merging statistics as monoids would also work but would put the merge inside every rule class; the
per-tool cut keeps the rule classes untouched and makes byte-identity a property of the partition,
which `tests/mining/test_distributed.py` checks against the local engine.

Partitions. One per tool that has clean calls, biggest first so the long tasks start early, except that
tools whose outputs share an object shape (`output_contracts.mining.pools.linked_tools`) form one partition:
their DOMAIN, TYPE and sign rules are judged over the pooled evidence, so mining `tools=[t]` alone
would not give t's part of the whole set; likewise a tool with a CONSISTENT candidate and the tools whose
results are its earlier sightings (`output_contracts.codes.consistent.mine.episode_links`). The driver reads the clean pattern table once to find them. Registry
tools without clean calls (their rules are schema declarations only) ride along with the smallest
partition, because mining needs at least one clean call. Each worker reads only its tools' rows: the
tool filter is pushed down into the Parquet scans.

Workers. A `distributed.LocalCluster` of worker processes (one thread each; polars gets the machine's
cores divided among them) unless a scheduler address is given, in which case the cluster's own workers
are used. Every worker must import the same `contracts` version and read the corpus at the same path;
a worker that cannot, or that sees a different corpus (another manifest digest) at that path, fails
the run with an error saying so instead of mining something else. Dask is imported only here and only
when this engine runs: it is the optional `output-contracts[dask]` extra.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from output_contracts.codes.consistent.mine import episode_links
from output_contracts.codes.contract_set import ContractSet, FoldChecker, Support, ToolContracts
from output_contracts.codes.mine_params import MineParams
from output_contracts.errors import MiningError
from output_contracts.mining.clean import clean_calls
from output_contracts.mining.miner import REGISTRY_FILE, corpus_summary, mine, registry_maps, resolve_params
from output_contracts.mining.patterns import pattern_table
from output_contracts.mining.pools import linked_tools
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.tool_registry import Registry, load_registry

#: How long to wait for a remote scheduler to answer before giving up (seconds).
CONNECT_TIMEOUT = 10

DASK_MISSING = (
    "--engine dask needs Dask, which is not installed: pip install 'output-contracts[dask]' "
    "(or pip install 'dask[distributed]')"
)


def merge_groups(groups: Iterable[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Groups of tools that share a member merged (connected components), each sorted, in order."""
    parent: dict[str, str] = {}

    def find(t: str) -> str:
        parent.setdefault(t, t)
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for g in groups:
        for t in g:
            find(t)
        for t in g[1:]:
            a, b = find(g[0]), find(t)
            if a != b:
                parent[max(a, b)] = min(a, b)
    out: dict[str, list[str]] = {}
    for t in sorted(parent):
        out.setdefault(find(t), []).append(t)
    return [tuple(out[r]) for r in sorted(out)]


@dataclass(frozen=True)
class MinePlan:
    """What the driver decided before any worker runs: partitions and the parts only it can compute.

    `parts`: tool tuples, biggest first; `params`: the contract set's `params` (with the user's tool
    restriction, not a partition's); `corpus_info`: the contract set's `corpus` summary.
    """

    corpus_path: str
    corpus_sha256: str
    mine_params: MineParams  # what every partition runs with (its own tools set per partition)
    verify: bool
    registry: Registry | None
    parts: tuple[tuple[str, ...], ...]
    params: Mapping[str, Any]
    corpus_info: Mapping[str, Any]


def plan(
    corpus: Corpus,
    params: MineParams,
    *,
    verify: bool = False,
    registry: Registry | None = None,
) -> MinePlan | None:
    """Partition the mining of `corpus` by tool; None when there is nothing to mine (no clean calls).

    The registry defaults to the corpus folder's `tools.json`, as in `mine`; it is loaded here once and
    shipped to the workers, so a registry given by path need not exist on them.
    """
    if registry is None and (corpus.path / REGISTRY_FILE).is_file():
        registry = load_registry(corpus.path / REGISTRY_FILE)
    calls, _ = clean_calls(corpus, params.clean, params.tools)
    if calls.height == 0:
        return None
    # Tools whose outputs share an object shape are judged together (pools, output_contracts.mining.pools):
    # they go to one partition, so each partition sees every pool it takes part in, whole.
    table = pattern_table(corpus, params.clean, params.tools, registry_maps(registry))
    # ... and so do the tools whose results are the earlier sightings of a CONSISTENT candidate
    linked = merge_groups([*linked_tools(table), *episode_links(table)])
    counts = calls.group_by("tool").len()
    size = dict(zip(counts["tool"].to_list(), counts["len"].to_list(), strict=True))
    groups = [g for g in linked if any(t in size for t in g)]
    grouped = {t for g in groups for t in g}
    groups += [(t,) for t in sorted(size) if t not in grouped]
    parts: list[tuple[str, ...]] = sorted(groups, key=lambda g: (-sum(size.get(t, 0) for t in g), g))
    seen = {t for p in parts for t in p}
    extra = sorted(
        t
        for t in (registry.names() if registry is not None else [])
        if t not in seen and (params.tools is None or t in params.tools)
    )
    if extra:
        parts[-1] = (*parts[-1], *extra)
    return MinePlan(
        corpus_path=str(corpus.path.resolve()),
        corpus_sha256=corpus.sha256(),
        mine_params=params,
        verify=verify,
        registry=registry,
        parts=tuple(parts),
        params=params.to_json(),
        corpus_info=corpus_summary(corpus, calls),
    )


def mine_part(
    corpus_path: str,
    corpus_sha256: str,
    tools: Sequence[str],
    params: MineParams,
    verify: bool,
    registry: Registry | None,
) -> ContractSet:
    """Mine one partition (runs on a worker): `mine(corpus, params with tools=tools)` after checking that
    this machine sees the corpus the driver planned for."""
    where = f"on worker host {socket.gethostname()}"
    if not Path(corpus_path).is_dir():
        raise MiningError(
            f"corpus folder not readable {where}: every Dask worker must see the corpus at the same path",
            source=corpus_path,
        )
    corpus = Corpus.open(corpus_path)
    if corpus.sha256() != corpus_sha256:
        raise MiningError(
            f"the corpus at this path {where} differs from the driver's (manifest digest "
            f"{corpus.sha256()[:12]} != {corpus_sha256[:12]}): every worker must read the same corpus",
            source=corpus_path,
        )
    return mine(corpus, replace(params, tools=tuple(tools)), registry=registry, verify=verify)


def merge(p: MinePlan, results: Iterable[ContractSet]) -> ContractSet:
    """Union the partitions' contract sets into the one the local engine writes for the whole corpus.

    Tools are disjoint across partitions; rules keep their tool's order; each fold checker lists its
    rule ids in the order of the full set's rules (by tool, then the tool's rule order, which is how
    the local engine ranks them) with its supports sorted by id.
    """
    tools: dict[str, ToolContracts] = {}
    fold_sup: dict[int, dict[str, Support]] = {}
    for cs in results:
        for name, tc in cs.tools.items():
            if name in tools:
                raise MiningError(f"tool {name!r} was mined by two partitions", field="tools")
            tools[name] = tc
        for fc in cs.folds:
            fold_sup.setdefault(fc.fold, {}).update(fc.support)
    rank = {r.id: i for i, r in enumerate(r for name in sorted(tools) for r in tools[name].rules)}
    folds = tuple(
        FoldChecker(
            fold=f,
            rules=tuple(sorted(sup, key=lambda i: rank[i])),
            support=dict(sorted(sup.items())),
        )
        for f, sup in sorted(fold_sup.items())
    )
    return ContractSet(
        params=dict(p.params),
        corpus=dict(p.corpus_info),
        tools=dict(sorted(tools.items())),
        folds=folds,
    )


def mine_dask(
    corpus: Corpus,
    params: MineParams | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    registry: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
    verify: bool = False,
    **settings: Any,
) -> ContractSet:
    """`output_contracts.mining.miner.mine` on Dask workers, byte-identical in its result (same `params`, or
    the same settings by name).

    `scheduler`: address of a running Dask scheduler (`tcp://host:8786`); without it a LocalCluster of
    `workers` processes (default: one per core, at most one per partition) runs for the duration of the
    call. Progress counts finished partitions. Errors raised on a worker (bad corpus, a rule that fails
    verification) reach the caller as the same ContractsError.
    """
    params = resolve_params(params, settings)
    if workers is not None and workers < 1:
        raise MiningError(f"workers must be >= 1, got {workers}", field="workers")
    if scheduler is not None and workers is not None:
        raise MiningError(
            "workers sizes the local cluster; a scheduler's cluster brings its own workers",
            field="workers",
        )
    dd = _import_dask()  # before any work: a missing extra is the first thing to say
    p = plan(corpus, params, verify=verify, registry=registry)
    if p is None:  # nothing to distribute: the local engine raises the error a user expects
        return mine(corpus, params, registry=registry, verify=verify)
    progress.start("mine", len(p.parts))
    run = uuid.uuid4().hex[:12]  # task keys only (never in the artifact): runs sharing a scheduler stay apart
    with _client(dd, scheduler, workers, len(p.parts)) as client:
        futures = [
            client.submit(
                mine_part,
                p.corpus_path,
                p.corpus_sha256,
                part,
                p.mine_params,
                p.verify,
                p.registry,
                key=f"contracts-mine-{run}-{i}",
                pure=False,
                priority=len(p.parts) - i,
            )
            for i, part in enumerate(p.parts)
        ]
        try:
            part_of = {f.key: part for f, part in zip(futures, p.parts, strict=True)}
            for f in dd.as_completed(futures):
                if f.status == "error":  # fail fast: the first worker error ends the run
                    _raise_task_error(dd, f, part_of[f.key])
                progress.advance()
            results = client.gather(futures)
        finally:
            client.cancel(futures)
    progress.finish()
    return merge(p, results)


def _raise_task_error(dd: Any, future: Any, part: Sequence[str]) -> None:
    """Re-raise a failed partition's error: a ContractsError as it was raised on the worker, a worker
    process that died (killed, out of memory) as a MiningError naming the partition, anything else
    (a bug) as is."""
    exc = future.exception()
    if isinstance(exc, dd.KilledWorker):
        raise MiningError(
            f"a Dask worker died while mining tool(s) {', '.join(part)} (out of memory? fewer --workers "
            f"leave each more memory): {exc}",
            field="--workers",
        ) from exc
    future.result()


def _import_dask() -> Any:
    """`dask.distributed`, or the error naming the extra to install."""
    try:
        import dask.distributed as dd
    except ImportError as e:
        raise MiningError(DASK_MISSING, field="--engine") from e
    return dd


class _Session:
    """A Dask client, and the local cluster it owns (if any); closes both on exit."""

    def __init__(self, client: Any, cluster: Any) -> None:
        self.client, self.cluster = client, cluster

    def __enter__(self) -> Any:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _client(dd: Any, scheduler: str | None, workers: int | None, parts: int) -> _Session:
    """Connect to `scheduler`, or start a LocalCluster of worker processes sized for `parts`."""
    import logging

    if scheduler is not None:
        try:
            client = dd.Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as e:
            raise MiningError(
                f"cannot reach the Dask scheduler at {scheduler}: {e}", field="--scheduler"
            ) from e
        return _Session(client, None)
    cores = os.cpu_count() or 1
    n = workers if workers is not None else max(1, min(cores, parts))
    threads = max(1, cores // n)
    cluster = dd.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # a free local port: no clash, nothing on other interfaces
        silence_logs=logging.CRITICAL,  # worker errors reach the caller as exceptions
        env={"POLARS_MAX_THREADS": str(threads)},
    )
    try:
        client = dd.Client(cluster)
    except BaseException:
        cluster.close()
        raise
    return _Session(client, cluster)


__all__ = ["DASK_MISSING", "MinePlan", "merge", "mine_dask", "mine_part", "plan"]
