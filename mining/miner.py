"""`mine`: clean traces -> a contract set with a full checker and k fold checkers (DESIGN §3).

Pipeline (`output_contracts.mining.data` explains the parts):
1. `load`: the clean calls, their folds, the pattern table and the task parts;
2. pass one over the parts: per-fold path statistics, the patterns holding numbers, the candidate
   sample; merged into corpus-wide statistics;
3. every rule class plans what to count from those (`plan`);
4. pass two over the parts: every class counts its candidates (`scan`);
5. every class merges its counts per checker and keeps what meets its keep-only-if (`finish`); schema
   rules are added; rules that are the same property (same tool, code, paths, params) merge into one,
   sources united. Every rule is admitted on the scan's own exact counts (zero counterexamples among
   the qualifying rows), so it holds on its checker's clean data by construction; with `verify` every
   checker is also replayed over that data with the shipped checker (`output_contracts.mining.verify`)
   — a rule that fires on the data it was mined from is a bug, so `mine` then raises instead of
   shipping it.
A corpus of one part is read once and both passes use it; memory otherwise follows the largest part.

Which record a rule carries: the support, examples and max_violation_rate of the full checker when the
rule is in it (`in_full`), otherwise those of the lowest fold checker holding it. Each fold checker
lists its rule ids with its own support.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import polars as pl

from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.mine_params import MineParams, RuleSource, violation_bound
from output_contracts.codes.mining_context import MiningContext, RuleClass
from output_contracts.codes.mining_frames import CLS_NUM, FULL, Leaves, cand_frame
from output_contracts.codes.table import miners, subsumed_by
from output_contracts.codes.table import names as code_names
from output_contracts.frames import detach
from output_contracts.mining.data import (
    PART_ROWS,
    MiningData,
    call_ids,
    load,
    merge_path_stats,
    path_stats_part,
    sample_filter,
)
from output_contracts.mining.pools import pools
from output_contracts.mining.schema_rules import SchemaRules
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.tool_registry import Registry, declared_maps, load_registry

REGISTRY_FILE = "tools.json"


def mine(
    corpus: Corpus,
    params: MineParams | None = None,
    *,
    registry: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
    verify: bool = False,
    part_rows: int = PART_ROWS,
    **settings: Any,
) -> ContractSet:
    """Mine the contract set of `corpus` with `params` (a `MineParams`), or with its settings given by
    name for convenience (`mine(corpus, folds=5, seed=13)`: `MineParams.of`): `folds` = k task folds
    (k = 1: only the full checker); `seed` drives the fold assignment; `min_support` overrides per-code
    example thresholds (`{"DOMAIN": 100}`); `max_domain` caps DOMAIN sizes; `clean` is "ok" or "reward";
    `tools` restricts mining to those tools; `max_violation_rate` keeps a rule when its 95% violation
    bound is at most that value, instead of the per-class thresholds.

    `registry` (default: the corpus folder's `tools.json`, if any) gives substitutes, immutables, maps
    and schema rules. `verify` replays every rule through the shipped checker over its own mining data
    and raises if one fires: every class holds there by construction (docs/design.md, "Verification"),
    which the tests prove, so this second pass (about a third of mining's CPU) is off by default and on
    in the tests, `mine --verify` and `audit`. `part_rows` bounds the leaf rows read at once (the output
    does not depend on it).
    """
    params = resolve_params(params, settings)
    if registry is None and (corpus.path / REGISTRY_FILE).is_file():
        registry = load_registry(corpus.path / REGISTRY_FILE)
    data = load(
        corpus,
        clean=params.clean,
        k=params.k,
        seed=params.seed,
        tools=params.tools,
        part_rows=part_rows,
        declared_maps=registry_maps(registry),
    )
    try:
        progress.start("mine", 2 * data.nparts + 2)
        # Pass one: per-(part, fold) path statistics, the patterns holding numbers, the candidate sample.
        per_fold: list[pl.DataFrame] = []
        num_pids: list[pl.Series] = []
        samples: list[pl.DataFrame] = []
        in_sample = sample_filter(data.calls)
        # What is kept from a part is detached from it (output_contracts.frames): a filtered or grouped frame can
        # still hold the part's arrays and string buffers, and memory would grow with the number of parts.
        for part in data.parts():
            per_fold.append(detach(path_stats_part(part)))
            # lazily: only the two columns it reads are filtered, not the whole frame
            num_pids.append(
                part.leaves.lazy()
                .filter(pl.col("cls") == CLS_NUM)
                .select(pl.col("pid").unique())
                .collect()["pid"]
            )
            samples.append(detach(part.leaves.filter(in_sample)))
            del part  # before the next part is read: one part in memory at a time
            progress.advance()
        sample = Leaves(pl.concat(samples).sort("cid", "pid"), data.calls.drop("part"), data.patterns, data.k)
        ctx = MiningContext(
            data=data,
            stats=merge_path_stats(per_fold, data.k),
            params=params,
            registry=registry,
            sample=sample,
            num_pids=pl.concat(num_pids).unique().sort(),
            pools=pools(data.patterns),
        )
        tool_names = _tool_names(data, registry, params)
        classes: list[RuleClass] = miners()
        classes.append(SchemaRules(tool_names))
        plans = [c.plan(ctx) for c in classes]
        progress.advance()
        # Pass two: every class counts its candidates, part by part.
        rows: list[list[Any]] = [[] for _ in classes]
        for part in data.parts():
            for c, plan, acc in zip(classes, plans, rows, strict=True):
                got = c.scan(ctx, part, plan)
                if got is not None:
                    acc.append(detach(got))
                    compact = getattr(c, "compact", None)
                    if compact is not None and len(acc) >= COMPACT_AFTER:
                        acc[:] = [detach(compact(acc))]
            del part, got
            progress.advance()
        frames = [
            c.finish(ctx, plan, acc).with_columns(
                pl.lit("schema" if isinstance(c, SchemaRules) else "mined").alias("source")
            )
            for c, plan, acc in zip(classes, plans, rows, strict=True)
        ]
        cands = drop_subsumed(pl.concat(frames))
        if params.rule_source is not RuleSource.all:
            cands = cands.filter(pl.col("source") == params.rule_source.value)
        cs = assemble(cands, data, registry, params, tool_names)
    finally:
        data.close()
    if verify:
        from output_contracts.mining.verify import assert_holds

        assert_holds(cs, data)
    progress.advance()
    progress.finish()
    return cs


def drop_subsumed(cands: pl.DataFrame) -> pl.DataFrame:
    """Candidate rules (CAND_SCHEMA) without those a candidate of another code at the same place implies
    (`Code.subsumed_by`: the implied rule could never fire first)."""
    place = pl.concat_str(
        pl.col("checker"), pl.col("tool"), pl.col("paths").list.join("\x00"), separator="\x01"
    )
    out = cands.with_columns(place.alias("_place"))
    for code, by in subsumed_by().items():
        implying = out.filter(pl.col("code").is_in(by))["_place"].unique().implode()
        out = out.filter(~((pl.col("code") == code) & pl.col("_place").is_in(implying)))
    return out.drop("_place")


#: Parts after which a rule class that can (`compact`, `output_contracts.codes.mining_context`) merges the
#: rows it has so far into one frame: at 10M calls FORMAT's per-part shape counts were 215 MiB over 82
#: parts when merged at the end.
COMPACT_AFTER = 8


def resolve_params(params: MineParams | None, settings: Mapping[str, Any]) -> MineParams:
    """`params`, or a `MineParams` built from settings given by name: one or the other."""
    if params is not None:
        if settings:
            raise TypeError(f"give MineParams or its settings by name, not both (got {sorted(settings)})")
        return params
    return MineParams.of(**settings)


def registry_maps(registry: Registry | None) -> dict[str, list[str]]:
    """Result maps each tool's declared output schema describes (`output_contracts.traces.tool_registry.declared_maps`)."""
    if registry is None:
        return {}
    out = {}
    for name in registry.names():
        spec = registry.get(name)
        if spec is not None and spec.output is not None:
            found = declared_maps(spec.output)
            if found:
                out[name] = found
    return out


def _tool_names(data: MiningData, registry: Registry | None, params: MineParams) -> list[str]:
    names = set(data.calls["tool"].unique().to_list())
    if registry is not None:
        names |= set(registry.names())
    if params.tools is not None:
        names &= set(params.tools)
    return sorted(names)


def assemble(
    cands: pl.DataFrame,
    data: MiningData,
    registry: Registry | None,
    params: MineParams,
    tool_names: list[str],
) -> ContractSet:
    """Merge same-property candidates, give them ids, and build the ContractSet."""
    keys = ["checker", "tool", "code", "paths", "params"]
    if cands.height:
        merged = (
            cands.group_by(keys)
            .agg(
                pl.col("calls").max(),
                pl.col("tasks").max(),
                pl.col("n").max(),
                pl.col("ex").sort_by("source").first(),
                pl.col("source").unique().sort(),
            )
            .sort("tool", "code", "paths", "params", "checker")
        )
    else:
        merged = cand_frame().with_columns(pl.lit([]).cast(pl.List(pl.String)).alias("source"))
    wanted = merged.select(
        pl.col("ex").list.explode(keep_nulls=False, empty_as_null=False).alias("cid")
    ).unique()
    id_rows = call_ids(data.corpus, wanted["cid"])
    id_of = dict(zip(id_rows["cid"].to_list(), id_rows["call_id"].to_list(), strict=True))
    order = {c: i for i, c in enumerate(code_names())}
    per_rule: dict[str, dict[int, dict[str, Any]]] = {}
    heads: dict[str, tuple[str, str, tuple[str, ...], dict[str, Any]]] = {}
    # a rule has a row per checker holding it: its id (a hash) is made once, at its first row; rows are
    # read column-wise (`iter_rows(named=True)` builds them one value at a time)
    names = merged.columns
    rid_of: dict[tuple[Any, ...], str] = {}
    for values in zip(*(merged.get_column(c).to_list() for c in names), strict=True):
        row = dict(zip(names, values, strict=True))
        head = (row["tool"], row["code"], tuple(row["paths"]), row["params"])
        rid = rid_of.get(head)
        if rid is None:
            p = orjson.loads(row["params"])
            rid = rid_of[head] = rule_id(row["tool"], row["code"], row["paths"], p)
            heads[rid] = (row["tool"], row["code"], head[2], p)
        per_rule.setdefault(rid, {})[row["checker"]] = row
    rules_by_tool: dict[str, list[Rule]] = {t: [] for t in tool_names}
    fold_rules: dict[int, dict[str, Support]] = {f: {} for f in range(params.k)} if params.k > 1 else {}
    for rid, by_checker in per_rule.items():
        tool, code, paths, p = heads[rid]
        in_full = FULL in by_checker
        rep = by_checker[FULL] if in_full else by_checker[min(by_checker)]
        rule = Rule(
            id=rid,
            tool=tool,
            code=code,
            paths=paths,
            params=p,
            support=Support(int(rep["calls"]), int(rep["tasks"])),
            source=tuple(rep["source"]),
            examples=tuple(id_of[c] for c in rep["ex"] if c in id_of),
            max_violation_rate=violation_bound(int(rep["n"])),
            in_full=in_full,
        )
        rules_by_tool.setdefault(tool, []).append(rule)
        for ch, row in by_checker.items():
            if ch != FULL:
                fold_rules[ch][rid] = Support(int(row["calls"]), int(row["tasks"]))

    def sort_key(r: Rule) -> tuple[Any, ...]:
        return (order[r.code], list(r.paths), orjson.dumps(dict(r.params), option=orjson.OPT_SORT_KEYS), r.id)

    tools: dict[str, ToolContracts] = {}
    declared = registry_maps(registry)  # also for declared tools without clean calls
    for name in sorted(rules_by_tool):
        spec = registry.get(name) if registry is not None else None
        tools[name] = ToolContracts(
            rules=tuple(sorted(rules_by_tool[name], key=sort_key)),
            substitutes=tuple(spec.substitutes) if spec else (),
            immutable=tuple(spec.immutable) if spec else (),
            maps=tuple(sorted(set(data.maps.get(name, ())) | set(declared.get(name, ())))),
            substitutes_inferred=spec.inferred_substitute_names() if spec else (),
        )
    rank = {r.id: (r.tool, *sort_key(r)) for tc in tools.values() for r in tc.rules}
    fold_checkers = tuple(
        FoldChecker(
            fold=f, rules=tuple(sorted(sup, key=lambda i: rank[i])), support=dict(sorted(sup.items()))
        )
        for f, sup in sorted(fold_rules.items())
    )
    corpus_info = corpus_summary(data.corpus, data.calls)
    return ContractSet(params=params.to_json(), corpus=corpus_info, tools=tools, folds=fold_checkers)


def corpus_summary(corpus: Corpus, calls: pl.DataFrame) -> dict[str, Any]:
    """The contract set's `corpus` field from the clean calls mined (one function, so that the Dask
    engine, which never holds every call in one place, writes the same summary)."""
    return {"sha256": corpus.sha256(), "clean_calls": calls.height, "tasks": calls["task"].n_unique()}
