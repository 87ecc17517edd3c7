"""The engine: evaluate a contract set's rules on one call, or on every call of a Parquet corpus.

A generic driver over the table of property codes (`output_contracts.codes.table`); every code-specific step
is a method of the code's module. Two entry points with one meaning:

* `find_violations` — vectorised over a corpus. The leaves of the checked calls are read in batches
  and joined once to a table of rule operands on (checker, tool, side, pattern), each code contributing
  its rows (`Check.op_rows`); the per-node codes keep only their breaking hits inside that join
  (`Check.keep`), and each code then finds its violations among its own hits with polars
  (`Check.vectorised`). Python runs per rule and per violation, never per call.
* `call_violations` — one call in plain Python (`Check.find`, or `group` for codes that share
  work across rules), for use inside an agent loop.

A property test holds the two to the same violations on random corpora. Both render a violation's
witness with `witness`, so the text is the same whichever found it. Mining's self-check uses this
engine too (`output_contracts.mining.verify`): mining and the checker stand on the same semantics.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import polars as pl

from output_contracts.codes.contract_set import ContractSet, Rule, split_side
from output_contracts.codes.evaluation import Check, EpisodeMemory, NoMemory
from output_contracts.codes.folds import fold_table
from output_contracts.codes.hits import KIND_BIT, NUMERIC_BITS, OpRow, RuleEntry, display, empty_hits
from output_contracts.codes.nodes import (
    Aliases,
    GroupFinder,
    Nodes,
    Operand,
    PathFinder,
    aliases_of,
    index_nodes,
    resolve,
    side_doc,
)
from output_contracts.codes.table import checks, episode_check, names
from output_contracts.codes.violation import At, Violation
from output_contracts.errors import CheckError
from output_contracts.frames import detach, pack_pair
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.call_texts import CallTexts
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.leaves import SIDE_DTYPE
from output_contracts.traces.mining_view import VIEW_FILE, VIEW_PATTERNS_FILE
from output_contracts.traces.pointers import KINDS, generalize, unfix

Fold = int | None | Literal["cross"]
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)
#: Calls per batch of the corpus checker: bounds its memory (a batch's leaves and their joins). Smaller
#: batches also cost less per leaf row (measured: at 1M calls the audit's flat pass took about 10% less
#: CPU in batches of 100k calls than of 250k).
BATCH_CALLS = 100_000
MapTable = Mapping[str, tuple[frozenset[str], frozenset[str]]]  # tool -> (arg maps, result maps)


def code(rule: Rule) -> Check:
    """The code of a rule, validated: an unknown code or a rule its code cannot evaluate is a CheckError
    (a contract set from a newer miner)."""
    c = checks().get(rule.code)
    if c is None:
        raise CheckError(
            f"rule {rule.id} ({rule.tool} {rule.code}): unknown property code (known: {', '.join(names())})",
            code="E_RULE",
            field=rule.id,
        )
    c.validate(rule)
    return c


def operands(rule: Rule) -> list[Operand]:
    """The (side, pattern) places a rule reads, in the order its code numbers them."""
    return code(rule).operands(rule)


def witness(rule: Rule, path: str, arguments: Any, result: Any) -> Violation:
    """The violation of `rule` at concrete `path` of this call, with its expected/observed witnesses.

    Both evaluations call this once they know *where* a rule is broken, so the rendered values are
    identical whichever found it. `path` is in rule notation (`$args/...` for an argument path). The
    detail cites the rule's clean support; a rule that only the registry declares (source `schema`,
    not mined) cites the declaration instead, since it has no clean calls behind it.
    """
    return render_witness(rule, code(rule), tuple(Operand.of(p) for p in rule.paths), path, arguments, result)


def render_witness(
    rule: Rule, c: Check, ops: tuple[Operand, ...], path: str, arguments: Any, result: Any
) -> Violation:
    """`witness` with the rule's code (validated) and its paths as operands given: what a caller that
    renders many witnesses of the same rules (the compiled checker) keeps instead of recomputing."""
    side, raw = split_side(path)
    _present, observed = resolve(side_doc(side, arguments, result), raw)
    at = At(arguments, result, path, raw, observed, ops)
    return _sourced(rule, c.witness(rule, at))


def _sourced(rule: Rule, v: Violation) -> Violation:
    """A rule only the registry declares cites the declaration instead of clean support."""
    if "mined" not in rule.source:
        head = v.detail.split("; ", 1)[0]
        v = replace(v, detail=f"{head}; the registry declares this in {rule.tool}'s output schema")
    return v


def map_table(contracts: ContractSet) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Map parents (arg side, result side) of every tool that has any."""
    return {
        name: (tc.map_parents("arg"), tc.map_parents("result"))
        for name, tc in contracts.tools.items()
        if tc.maps
    }


# ----------------------------------------------------------------------------------------------------
# One call


@dataclass
class _Compiled:
    contracts: ContractSet
    by_tool: dict[str, list[tuple[Rule, PathFinder]]]  # rules evaluated one by one
    grouped: dict[str, list[tuple[str, GroupFinder]]]  # (code, finder) of rules evaluated in groups
    known: frozenset[str] = frozenset()  # tools with any rule
    episode: dict[str, list[Rule]] = field(default_factory=dict)  # rules judged per episode
    reads_args: frozenset[str] = frozenset()  # tools with a rule that reads the arguments
    maps: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    #: per tool and side, the fixed-index patterns its rules read (`output_contracts.codes.spec.aliases_of`)
    fixed: dict[str, dict[str, Aliases]] = field(default_factory=dict)


_CACHE: dict[tuple[int, int | None], _Compiled] = {}
_NO_MAPS: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def _compiled(contracts: ContractSet, fold: int | None) -> _Compiled:
    """Rules of one checker per tool, validated once and cached per contract set object: a finder per
    rule, or per group of rules for codes that group (`Check.group`)."""
    key = (id(contracts), fold)
    hit = _CACHE.get(key)
    if hit is not None and hit.contracts is contracts:
        return hit
    ranked: dict[str, list[tuple[int, Rule, PathFinder]]] = {}
    per_code: dict[tuple[str, str], list[tuple[int, Rule, Sequence[Operand]]]] = {}
    reads: set[str] = set()
    episode: dict[str, list[Rule]] = {}
    tool_ops: dict[str, list[Operand]] = {}
    for i, r in enumerate(contracts.rules_for(fold)):
        c = code(r)
        if c.per_episode:
            episode.setdefault(r.tool, []).append(r)
            continue
        ops = c.operands(r)
        tool_ops.setdefault(r.tool, []).extend(ops)
        if any(op.side == "arg" for op in ops):
            reads.add(r.tool)
        ranked.setdefault(r.tool, [])
        per_code.setdefault((r.tool, r.code), []).append((i, r, ops))
    grouped: dict[str, list[tuple[str, GroupFinder]]] = {}
    for (tool, name), rules in per_code.items():
        c = checks()[name]
        groups = c.group([(r, ops) for _i, r, ops in rules])
        if groups is None:
            ranked[tool].extend((i, r, c.find(r, ops)) for i, r, ops in rules)
        else:
            grouped.setdefault(tool, []).extend((name, g) for g in groups)
    # one finder per rule in the contract set's rule order, whatever the grouping
    by_tool = {tool: [(r, f) for _i, r, f in sorted(fs, key=lambda x: x[0])] for tool, fs in ranked.items()}
    if len(_CACHE) >= 16:
        _CACHE.clear()
    for tool in episode:
        by_tool.setdefault(tool, [])
    comp = _Compiled(
        contracts,
        by_tool,
        grouped,
        known=frozenset(by_tool),
        reads_args=frozenset(reads),
        maps=map_table(contracts),
        episode=episode,
        fixed={t: a for t, ops in tool_ops.items() if (a := aliases_of(ops))},
    )
    _CACHE[key] = comp
    return comp


def call_violations(
    contracts: ContractSet,
    tool: str,
    arguments: Any,
    result: Any,
    *,
    fold: int | None = None,
    codes: Sequence[str] | None = None,
    memory: EpisodeMemory | None = None,
    call_id: str = "",
) -> list[Violation]:
    """Every violation of checker `fold` on one call, sorted by (rule, path). Unknown tool: none.

    `memory`: the episode so far (`episode_memory`), for the rules judged against earlier calls
    (`Code.per_episode`); the call is then recorded in it (as `call_id`), whatever its tool. Without it
    those rules are not judged."""
    comp = _compiled(contracts, fold)
    if tool not in comp.known:
        if memory is not None:
            memory.record(tool, arguments, result, call_id)
        return []
    nodes: Nodes = {}
    arg_maps, res_maps = comp.maps.get(tool, _NO_MAPS)
    fixed = comp.fixed.get(tool, {})
    if tool in comp.reads_args:
        index_nodes("arg", arguments, nodes, arg_maps, fixed.get("arg"))
    index_nodes("result", result, nodes, res_maps, fixed.get("result"))
    out: list[Violation] = []
    for name, group in comp.grouped.get(tool, ()):
        if codes is None or name in codes:
            out.extend(witness(rule, p, arguments, result) for rule, p in group(nodes))
    for rule, finder in comp.by_tool[tool]:
        if codes is not None and rule.code not in codes:
            continue
        found = finder(nodes)
        if found:
            out.extend(witness(rule, p, arguments, result) for p in sorted(set(found)))
    if memory is not None:
        ep = episode_check()
        if ep is not None and (codes is None or ep.name in codes):
            for rule in comp.episode.get(tool, ()):
                v = ep.judge(rule, memory, result)
                if v is not None:
                    out.append(v)  # always mined
        memory.record(tool, arguments, result, call_id)
    out.sort(key=Violation.sort_key)
    return out


def episode_memory(contracts: ContractSet, fold: int | None = None) -> EpisodeMemory:
    """An empty memory of one episode for checker `fold`: it tracks what the rules of the code judged per
    episode read (`episode_check`)."""
    ep = episode_check()
    if ep is None:
        return NoMemory()
    return ep.memory(r for r in contracts.rules_for(fold) if r.code == ep.name)


def episode_witnesses(
    entries: Sequence[RuleEntry], corpus: Corpus, found: pl.DataFrame, texts: CallTexts | None = None
) -> dict[tuple[int, int], Violation]:
    """The violation of each hit (cid, ridx) in `found` of a rule judged per episode (the corpus pass
    finds those without their witness: the earlier call they contradict)."""
    ep = episode_check()
    if ep is None:
        return {}
    return ep.corpus_witnesses(entries, corpus, found, texts)


# ----------------------------------------------------------------------------------------------------
# A corpus


def rule_entries(
    contracts: ContractSet, fold: Fold, tools: Sequence[str] | None, codes: Sequence[str] | None
) -> list[RuleEntry]:
    """The rules a vectorised pass applies: every rule of checker `fold` (each fold's own checker in
    `"cross"` mode, keyed by fold), restricted to `tools` and `codes`, validated."""
    if fold == "cross":
        if not contracts.folds:
            raise CheckError(
                "cross-fitted checking needs a contract set mined with folds (mine --folds K)", code="E_FOLD"
            )
        have = sorted(fc.fold for fc in contracts.folds)
        if have != list(range(contracts.k)):
            raise CheckError(
                f"contract set declares k = {contracts.k} but has fold checkers {have}", code="E_FOLD"
            )
        pairs: list[tuple[int, int | None]] = [(f, f) for f in have]
    else:
        pairs = [(0, fold)]
    entries: list[RuleEntry] = []
    # a rule id recurs in several fold checkers (only its support differs): its operands are parsed and
    # validated once
    seen: dict[str, tuple[Rule, tuple[Operand, ...]]] = {}
    for k, f in pairs:
        for r in contracts.rules_for(f):
            if tools is not None and r.tool not in tools:
                continue
            if codes is not None and r.code not in codes:
                continue
            hit = seen.get(r.id)
            if hit is not None and (hit[0].code, hit[0].paths, hit[0].params) == (r.code, r.paths, r.params):
                ops = hit[1]
            else:
                ops = tuple(operands(r))
                seen[r.id] = (r, ops)
            entries.append(RuleEntry(len(entries), k, f, r, ops))
    return entries


def checked_calls(
    contracts: ContractSet, corpus: Corpus, fold: Fold, tools: Sequence[str] | None, clean_only: bool
) -> pl.LazyFrame:
    """The calls to check: cid, k (join key), fold, and the metadata the output carries."""
    lf = corpus.scan_calls().filter(pl.col("status") == "ok")
    if tools is not None:
        lf = lf.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    if clean_only:
        faulty = corpus.scan_episodes().filter(pl.col("faulty")).select("trace_id")
        lf = lf.filter(pl.col("fault").is_null()).join(faulty, on="trace_id", how="anti")
    lf = lf.select(
        "cid",
        "call_id",
        "trace_id",
        pl.col("task_id").cast(pl.String),
        pl.col("tool").cast(pl.String),
        "source",
        "line",
    )
    if fold == "cross":
        tasks = lf.select("task_id").unique().collect().to_series()
        ft = fold_table(tasks, contracts.seed, contracts.k)
        lf = lf.join(ft.lazy(), on="task_id", how="left").with_columns(pl.col("fold").alias("k"))
    else:
        lf = lf.with_columns(pl.lit(fold, pl.Int32).alias("fold"), pl.lit(0, pl.Int32).alias("k"))
    return lf


def _by_code(entries: Sequence[RuleEntry]) -> dict[str, list[RuleEntry]]:
    out: dict[str, list[RuleEntry]] = {}
    for e in entries:
        out.setdefault(e.rule.code, []).append(e)
    return out


def _op_tables(entries: Sequence[RuleEntry]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(operands, lean operands) of every code's rules (`Check.op_rows`): the tables the batch's
    leaves are joined to. `cls` and `tmask` are what the per-node prefilter reads."""
    main: list[tuple[Any, ...]] = []
    lean: list[tuple[Any, ...]] = []
    ridx_rule = {e.ridx: e.rule for e in entries}
    for name, es in _by_code(entries).items():
        c = checks()[name]
        for row in c.op_rows(es):
            if row.lean:
                lean.append((row.k, row.tool, row.side, row.pattern, row.ridx, row.aux, name))
            else:
                is_rule_row = c.node_class and row.ridx in ridx_rule and ridx_rule[row.ridx].code == name
                mask = c.node_mask(ridx_rule[row.ridx]) if is_rule_row else 0
                lo, hi = c.node_bounds(ridx_rule[row.ridx]) if is_rule_row else (None, None)
                main.append(
                    (
                        row.k,
                        row.tool,
                        row.side,
                        row.pattern,
                        row.ridx,
                        row.op,
                        name,
                        c.node_class,
                        mask,
                        lo,
                        hi,
                    )
                )
    keys = {"k": pl.Int32, "tool": pl.String, "side": pl.String, "pattern": pl.String, "ridx": pl.UInt32}
    ops = pl.DataFrame(
        main,
        schema={
            **keys,
            "op": pl.UInt8,
            "code": pl.String,
            "cls": pl.UInt8,
            "tmask": pl.UInt8,
            "lo": pl.Float64,
            "hi": pl.Float64,
        },
        orient="row",
    )
    lean_ops = pl.DataFrame(lean, schema={**keys, "aux": pl.UInt32, "code": pl.String}, orient="row")
    return ops, lean_ops


def _kind_bit(kind_dtype: pl.DataType) -> pl.Expr:
    """The KIND_BIT of each leaf's kind (from the Enum's physical code when it is the corpus's own: a
    gather from the seven bits, several times cheaper than a power per leaf)."""
    if kind_dtype == pl.Enum(list(KINDS)):
        bits = pl.Series([KIND_BIT[k] for k in KINDS], dtype=pl.UInt8)
        return pl.lit(bits).gather(pl.col("kind").to_physical())
    return pl.col("kind").cast(pl.String).replace_strict(KIND_BIT, default=0, return_dtype=pl.UInt8)


def generalize_patterns(leaves: FrameT, maps: MapTable) -> FrameT:
    """`leaves` with each literal `pattern` rewritten the way the miner wrote it: keys below a tool's map
    parents (arg side, result side) as `~*`. Only the distinct patterns of tools with maps go through
    Python; a lazy frame stays lazy (its distinct patterns are read once)."""
    if not maps:
        return leaves
    lf = leaves.lazy()
    schema = lf.collect_schema()
    distinct = (
        lf.select("tool", "side", "pattern")
        .filter(pl.col("tool").cast(pl.String).is_in(list(maps)))
        .unique()
        .select(
            pl.col("tool").cast(pl.String), pl.col("side").cast(pl.String), pl.col("pattern").cast(pl.String)
        )
        .collect()
    )
    rows = []
    for tool, side, pattern in distinct.iter_rows():
        g = generalize(pattern, maps[tool][0 if side == "arg" else 1])
        if g != pattern:
            rows.append((tool, side, pattern, g))
    if not rows:
        return leaves
    table = pl.DataFrame(rows, schema=["tool", "side", "pattern", "gpattern"], orient="row").with_columns(
        pl.col("tool").cast(schema["tool"]),
        pl.col("side").cast(schema["side"]),
        pl.col("pattern").cast(schema["pattern"]),
        pl.col("gpattern").cast(schema["pattern"]),
    )
    out = (
        lf.join(table.lazy(), on=["tool", "side", "pattern"], how="left")
        .with_columns(pl.coalesce("gpattern", "pattern").alias("pattern"))
        .select(schema.names())
    )
    return out if isinstance(leaves, pl.LazyFrame) else out.collect()


def with_fixed(leaves: pl.DataFrame, wanted: pl.DataFrame) -> pl.DataFrame:
    """`leaves` plus, for every fixed-index pattern among the operand patterns `wanted` (tool, side,
    pattern: `/payment_history/*0/amount`), a copy of each leaf of its leaf pattern (`/payment_history/*/
    amount`) whose concrete indexes match, under the fixed pattern: the corpus side of `index_nodes`'
    aliases, so that every code reads a fixed-index operand as it reads any other."""
    rows = []
    for tool, side, pattern in wanted.unique().iter_rows():
        op = Operand.of(pattern)
        if op.fixed:
            rows.append(
                (
                    tool,
                    side,
                    unfix(pattern),
                    pattern,
                    [i for i, _ in op.fixed],
                    "/".join(n for _, n in op.fixed),
                )
            )
    if not rows:
        return leaves
    schema = leaves.schema
    table = pl.DataFrame(
        rows,
        schema={
            "tool": pl.String,
            "side": pl.String,
            "pattern": pl.String,
            "alias": pl.String,
            "pos": pl.List(pl.Int64),
            "want": pl.String,
        },
        orient="row",
    )
    keyed = leaves.with_columns(
        pl.col("tool").cast(pl.String).alias("_t"),
        pl.col("side").cast(pl.String).alias("_s"),
        pl.col("pattern").cast(pl.String).alias("_p"),
    )
    extra = (
        keyed.join(table.rename({"tool": "_t", "side": "_s", "pattern": "_p"}), on=["_t", "_s", "_p"])
        .filter(pl.col("path").str.split("/").list.gather(pl.col("pos")).list.join("/") == pl.col("want"))
        .with_columns(pl.col("alias").cast(schema["pattern"]).alias("pattern"))
        .select(schema.names())
    )
    return pl.concat([leaves, extra]) if extra.height else leaves


#: Below this many distinct tools in the global categories, a leaf's (tool, side, pattern) fits one
#: UInt64 made of its physical codes (`_literal_key`); past it the batch joins on the three columns.
_KEY_TOOLS = 2**31


def _literal_key() -> pl.Expr:
    """A leaf's literal (tool, side, pattern) as one integer, from the frame's own physical codes
    (Categorical tool and pattern, Enum side): a key to join on, never written anywhere."""
    return (
        pl.col("tool").to_physical().cast(pl.UInt64) * (2**33)
        + pl.col("side").to_physical().cast(pl.UInt64) * (2**32)
        + pl.col("pattern").to_physical().cast(pl.UInt64)
    )


def _pattern_ids(
    raw: pl.DataFrame, wanted: pl.DataFrame, maps: MapTable
) -> tuple[pl.DataFrame, dict[tuple[str, str, str], int]] | None:
    """The leaves of a batch keyed by a dense pattern id `pid` (no tool, side, pattern columns), and the
    ids of the (tool, side, pattern) the rule operands read; None when the leaves' columns are not the
    corpus's own Categorical/Enum (an old corpus: the caller joins on the columns).

    What `with_fixed(generalize_patterns(raw, maps), wanted)` gives, joined on one integer instead of
    three strings: each distinct literal pattern of the batch is generalized once in Python (map keys as
    `~*`); a leaf under a fixed-index operand's leaf pattern is copied under the fixed pattern's id when
    its concrete indexes match (`index_nodes`' aliases)."""
    schema = raw.schema
    if not (
        isinstance(schema["tool"], pl.Categorical)
        and isinstance(schema["pattern"], pl.Categorical)
        and schema["side"] == SIDE_DTYPE
    ):
        return None
    if raw.height and (raw.get_column("tool").to_physical().max() or 0) >= _KEY_TOOLS:  # type: ignore[operator]
        return None
    raw = raw.with_columns(_literal_key().alias("_lit"))
    lits = (
        raw.select("_lit", "tool", "side", "pattern")
        .unique(subset="_lit")
        .select(
            "_lit",
            pl.col("tool").cast(pl.String),
            pl.col("side").cast(pl.String),
            pl.col("pattern").cast(pl.String),
        )
    )
    ids: dict[tuple[str, str, str], int] = {}
    pid = []
    for tool, side, pattern in lits.select("tool", "side", "pattern").iter_rows():
        if tool in maps:
            pattern = generalize(pattern, maps[tool][0 if side == "arg" else 1])
        pid.append(ids.setdefault((tool, side, pattern), len(ids)))
    # a replace, not a join: the leaves keep their order and no column is gathered
    batch = raw.with_columns(
        pl.col("_lit")
        .replace_strict(lits.get_column("_lit"), pl.Series(pid, dtype=pl.UInt32), return_dtype=pl.UInt32)
        .alias("pid")
    ).drop("tool", "side", "pattern", "_lit")
    return _with_aliases(batch, wanted, ids), ids


def _with_aliases(
    batch: pl.DataFrame, wanted: pl.DataFrame, ids: dict[tuple[str, str, str], int]
) -> pl.DataFrame:
    """`batch` (keyed by `pid`) plus, for every fixed-index operand pattern among `wanted` whose leaf
    pattern has an id, a copy of each leaf of that id whose concrete indexes match, under a new id for
    the fixed pattern (added to `ids`): `index_nodes`' aliases."""
    aliases = []
    for tool, side, pattern in wanted.unique().iter_rows():
        op = Operand.of(pattern)
        base = ids.get((tool, side, unfix(pattern)))
        if op.fixed and base is not None:
            alias = ids.setdefault((tool, side, pattern), len(ids))
            aliases.append((base, alias, [i for i, _ in op.fixed], "/".join(n for _, n in op.fixed)))
    if aliases:
        table = pl.DataFrame(
            aliases,
            schema={"pid": pl.UInt32, "alias": pl.UInt32, "pos": pl.List(pl.Int64), "want": pl.String},
            orient="row",
        )
        extra = (
            batch.filter(pl.col("pid").is_in(table.get_column("pid").implode()))
            .join(table, on="pid")
            .filter(pl.col("path").str.split("/").list.gather(pl.col("pos")).list.join("/") == pl.col("want"))
            .with_columns(pl.col("alias").alias("pid"))
            .select(batch.columns)
        )
        if extra.height:
            batch = pl.concat([batch, extra])
    return batch


@dataclass(frozen=True)
class ViewKeys:
    """The mining view's literal patterns numbered for the checker: `pid` (indexed by the view's `lpat`)
    is the dense id of the (tool, side, pattern) the miner would have written (map keys generalized),
    `ids` the same ids by pattern. A batch then takes its leaves' pattern ids by one gather of the
    view's `lpat` column for the same rows, instead of reading, hashing and generalizing the leaves'
    tool, side and pattern (`_pattern_ids`)."""

    view: Path
    pid: pl.Series
    ids: Mapping[tuple[str, str, str], int]


def view_keys(corpus: Corpus, maps: MapTable) -> ViewKeys | None:
    """`ViewKeys` of a corpus whose view rows follow its leaves (format 3 on), else None (the caller
    reads the leaves' own pattern columns)."""
    folder = corpus.view()
    if folder is None:
        return None
    view = folder / VIEW_FILE
    n_view = pl.scan_parquet(view).select(pl.len()).collect().item()
    if n_view != corpus.scan_leaves().select(pl.len()).collect().item():
        return None
    ids: dict[tuple[str, str, str], int] = {}
    pid = []
    for tool, side, pattern in (
        pl.read_parquet(folder / VIEW_PATTERNS_FILE).select("tool", "side", "pattern").iter_rows()
    ):
        if tool in maps:
            pattern = generalize(pattern, maps[tool][0 if side == "arg" else 1])
        pid.append(ids.setdefault((tool, side, pattern), len(ids)))
    return ViewKeys(view, pl.Series("pid", pid, dtype=pl.UInt32), ids)


def _packed_key() -> pl.Expr:
    """A row's checker key `k` and pattern id `pid` as one UInt64 (`kp`), the key a cross-fitted
    batch joins its leaves to the operands on."""
    return pack_pair("k", "pid").alias("kp")


def _with_pid(ops: pl.DataFrame, ids: Mapping[tuple[str, str, str], int]) -> pl.DataFrame:
    """An operand table (String tool, side, pattern) keyed by `_pattern_ids`' ids instead; operands at a
    pattern no leaf of the batch has are dropped (they match nothing)."""
    table = pl.DataFrame(
        [(t, s, p, i) for (t, s, p), i in ids.items()],
        schema={"tool": pl.String, "side": pl.String, "pattern": pl.String, "pid": pl.UInt32},
        orient="row",
    )
    return ops.join(table, on=["tool", "side", "pattern"]).drop("tool", "side", "pattern")


def _by_code_rows(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The rows of each `code` of an operand table, in their order (what a filter on `code` gives)."""
    return {str(key[0]): part for key, part in frame.partition_by("code", as_dict=True).items()}


def _enveloped(
    leaves: pl.LazyFrame,
    table: pl.DataFrame,
    tmasks: tuple[int, ...],
    probe: Callable[[pl.LazyFrame, pl.DataFrame], pl.LazyFrame],
    n_ids: int,
) -> pl.LazyFrame:
    """The leaves (keyed by `pid`) joined to the operand rows of `table`, where the rows with a `tmask`
    in `tmasks` meet only the numeric leaves outside their pattern's envelope: `|num|` above the least
    `hi` of the pattern's rows, or `num` between 0 and the greatest `lo`. A leaf within it breaks none
    of those rows (`Check.envelope_tmasks`: such a row breaks only above `hi` or strictly between 0 and
    `lo`), so the join keeps every hit the code's `keep` would keep, and no
    longer copies the many leaves that hold. The envelope is read by position from two arrays indexed
    by pattern id (`n_ids` of them: no hash join per leaf). The other rows meet the leaves through
    `probe`."""
    bounded = pl.col("tmask").is_in(list(tmasks))
    rows, rest = table.filter(bounded), table.filter(~bounded)
    parts = [] if rest.height == 0 else [probe(leaves, rest)]
    if rows.height:
        env = rows.group_by("pid").agg(
            pl.col("hi").fill_null(math.inf).min().alias("hi"), pl.col("lo").fill_null(0.0).max().alias("lo")
        )
        # a pattern without rows reads an envelope no number leaves (its leaves meet no row anyway)
        hi = np.full(n_ids, math.inf)
        lo = np.zeros(n_ids)
        at = env.get_column("pid").to_numpy()
        hi[at] = env.get_column("hi").to_numpy()
        lo[at] = env.get_column("lo").to_numpy()
        pid = pl.col("pid")
        num = pl.col("num")
        outside = ((pl.col("kbit") & NUMERIC_BITS) != 0) & (
            (num.abs() > pl.lit(pl.Series(hi)).gather(pid))
            | ((num > 0) & (num < pl.lit(pl.Series(lo)).gather(pid)))
        )
        parts.append(leaves.filter(outside).join(rows.lazy(), on="pid"))
    return parts[0] if len(parts) == 1 else pl.concat(parts)


def _find_batch(
    entries: Sequence[RuleEntry],
    corpus: Corpus,
    calls: pl.LazyFrame,
    ops: pl.DataFrame,
    lean_ops: pl.DataFrame,
    batch_leaves: pl.LazyFrame,
    maps: MapTable,
    one_k: bool = False,
    view: tuple[ViewKeys, int, int | None] | None = None,
) -> pl.DataFrame:
    """Violations (cid, ridx, path, present) among one batch of calls: the checked `calls` whose
    leaves are `batch_leaves` (the corpus's leaves, restricted to whole calls).

    `view`: the corpus's `ViewKeys` and the rows [lo, hi) of `leaves.parquet` that `batch_leaves` is:
    the leaves' pattern ids then come from the view's `lpat` of the same rows (`ViewKeys`).

    The leaves of the batch are read once and joined to the rule operands (`ops`, `lean_ops`: String
    tool, side, pattern) — on a dense pattern id (`_pattern_ids`), or on the three columns for an old
    corpus — the per-node codes keeping only their breaking hits inside that join, and apart to the lean
    operands keeping only ids. Each code then reads its own rows (a filter on `code`) and only the
    columns it needs. `one_k`: every call has checker key `k` 0 (not a cross-fitted pass), so `k` is a
    constant and the leaves meet the operands on the pattern id alone; the leaves of unchecked calls
    are then kept, and their violations are the caller's to drop (`find_violations`).
    """
    kbit = _kind_bit(batch_leaves.collect_schema()["kind"])
    if view is not None:
        # the pattern id of each row gathered from the view's `lpat` of the same rows, before any filter
        vk, lo, hi = view
        # and each string's key `skey` is its view code (HIT_COLS)
        coded = (
            pl.scan_parquet(vk.view)
            .slice(lo, None if hi is None else hi - lo)
            .select("lpat", "str")
            .collect()
        )
        part = batch_leaves.select("cid", "path", "kind", "num", "str", "len").collect()
        part = part.with_columns(
            vk.pid.gather(coded.get_column("lpat")), coded.get_column("str").alias("skey")
        )
        lf = part.lazy()
    else:
        lf = batch_leaves.select(
            "cid", "tool", "side", "path", "pattern", "kind", "num", "str", pl.col("str").alias("skey"), "len"
        )
    if one_k:
        # The leaves of calls not checked (a failed call, a faulty one under `clean_only`) are kept: every
        # code of this pass judges a call by its own leaves alone, so their violations are dropped at
        # the end instead (a test of the few violations against the checked ids, not a copy of every
        # leaf column; a leaf of a tool without rules meets no operand row).
        lf = lf.with_columns(pl.lit(0, pl.Int32).alias("k"))
    else:
        # a left join in the leaves' order, then the unchecked calls dropped: cheaper than an inner
        # join, which gathers every column in hash order
        lf = lf.join(calls.select("cid", "k"), on="cid", how="left", maintain_order="left").filter(
            pl.col("k").is_not_null()
        )
    raw = lf.collect()
    wanted = pl.concat([ops.select("tool", "side", "pattern"), lean_ops.select("tool", "side", "pattern")])
    if view is not None:
        ids = dict(view[0].ids)
        # the columns in the order `_pattern_ids` gives them
        raw = raw.select(pl.exclude("pid"), "pid")
        keyed: tuple[pl.DataFrame, dict[tuple[str, str, str], int]] | None = (
            _with_aliases(raw, wanted, ids),
            ids,
        )
    else:
        keyed = _pattern_ids(raw, wanted, maps)
    prefilter = keyed is not None
    if keyed is not None:
        frame, ids = keyed
        ops, lean_ops = _with_pid(ops, ids), _with_pid(lean_ops, ids)
        # One integer key: the pattern id alone when every call has checker key 0, else the checker
        # key and the pattern id packed into one UInt64 (a join on one integer column is cheaper
        # than on two).
        if one_k:
            ops, lean_ops = ops.drop("k"), lean_ops.drop("k")
            keys = ["pid"]
        else:
            frame = frame.with_columns(_packed_key())
            ops, lean_ops = (t.with_columns(_packed_key()).drop("k", "pid") for t in (ops, lean_ops))
            keys = ["kp"]
        batch = frame.lazy()
    else:
        ops, lean_ops = (
            t.with_columns(
                pl.col("tool").cast(pl.Categorical()),
                pl.col("pattern").cast(pl.Categorical()),
                pl.col("side").cast(SIDE_DTYPE),
            )
            for t in (ops, lean_ops)
        )
        batch = with_fixed(generalize_patterns(raw, maps), wanted).lazy()
        keys = ["k", "tool", "side", "pattern"]
    # One join per code, each to that code's operand rows only: every code gets its own hits without a
    # shared frame of all hits to split (gathering each hit's columns twice), and a per-node code's
    # prefilter reads only its own rows.
    by_code = _by_code(entries)
    names = list(by_code)
    code_ops = _by_code_rows(ops)
    code_lean_ops = _by_code_rows(lean_ops)
    # On the pattern id alone (every call has checker key 0), ids are dense (`n_ids` of them): a
    # table indexed by pattern id is read by position.
    dense = prefilter and one_k
    n_ids = len(ids) if dense else 0
    leaves_k = batch.with_columns(kbit.alias("kbit"))

    def probe(frame: pl.LazyFrame, table: pl.DataFrame) -> pl.LazyFrame:
        """`frame` joined to an operand table; on the integer key, the leaves no row of the table names
        are dropped first by a filter (cheaper than letting the join probe them)."""
        if prefilter:
            frame = frame.filter(pl.col(keys[0]).is_in(table.get_column(keys[0]).unique().implode()))
        return frame.join(table.lazy(), on=keys)

    joins = []
    for name in names:
        c = checks()[name]
        table = code_ops.get(name, ops.clear())
        if prefilter and c.keep_by_kind:
            # judged once per distinct (pattern id, kind) of the batch: only the leaves of the breaking
            # pairs meet the operand rows (a TYPE rule names nearly every pattern and breaks on few)
            pair = pl.col(keys[0]).cast(pl.UInt64) * 256 + pl.col("kbit").cast(pl.UInt64)
            breaking = (
                leaves_k.select(keys[0], "kbit")
                .unique()
                .join(table.lazy(), on=keys)
                .filter(c.keep())
                .select(pair.alias("_pair"))
                .unique()
                .collect()
                .get_column("_pair")
            )
            h = leaves_k.filter(pair.is_in(breaking.implode())).join(table.lazy(), on=keys)
        elif dense and c.envelope_tmasks and table.height:
            h = _enveloped(leaves_k, table, c.envelope_tmasks, probe, n_ids)
        else:
            h = probe(leaves_k, table)
        if c.node_class:
            h = h.filter(c.keep())
        joins.append(h.select(c.hit_cols))
        # only REQUIRED has lean rows: the other codes' joins would probe every leaf for nothing
        lean = (
            probe(batch.select("cid", *keys), code_lean_ops[name])
            if name in code_lean_ops
            else batch.clear().select("cid", *keys).join(lean_ops.clear().lazy(), on=keys)
        )
        joins.append(lean.select("cid", "ridx", "aux"))
    # the joins by the in-memory engine: on these plans (a filter, a join, a select of one batch held in
    # memory) it does about 6% less work for the whole pass than the streaming default (instructions
    # counted under valgrind, 100k calls); the codes' plans below stay on the default, which is cheaper
    # for them
    frames = pl.collect_all(joins, engine="in-memory")
    plans = []
    for i, name in enumerate(names):
        es = by_code[name]
        c = checks()[name]
        found = c.vectorised(es, frames[2 * i].lazy(), frames[2 * i + 1].lazy())
        if c.node_class:
            # a per-node code reports its one operand's paths: argument paths in rule notation
            found = display(es, found, 0)
        plans.append(found.select("cid", "ridx", "path", "present"))
    if not plans:
        return empty_hits().collect()
    return pl.concat(pl.collect_all(plans))


def leaf_slices(
    corpus: Corpus, n_batches: int, view: Path | None = None
) -> list[tuple[int, int | None]] | None:
    """`n_batches` row ranges [lo, hi) of `leaves.parquet` of about equal size, each cut where a call's
    leaves begin; None when some call's leaves are not contiguous in the file (then the caller batches
    by call-id range) or there are none.

    Ingest writes a call's leaves together, so a batch can read a range of rows, whose row groups the
    reader skips to, instead of decoding every row group to keep the calls of a call-id range (at 1M
    calls in 4 batches, 0.56 against 1.2 CPU-s a batch). A batch holds whole calls, which is all the
    per-call codes need; which calls share a batch changes nothing in the output.

    `view`: the corpus's `view.parquet` when its rows follow the leaves' (`ViewKeys`): its `call` (a
    call's rank among the cids, UInt32) is read instead of the leaves' `cid` (UInt64), the same cuts at
    half the bytes."""
    if view is None:
        cid = corpus.scan_leaves().select("cid").collect().get_column("cid")
    else:
        cid = pl.scan_parquet(view).select("call").collect().get_column("call")
    n = cid.len()
    if n == 0:
        return None
    starts = (cid != cid.shift(1)).fill_null(True)
    first = cid.filter(starts)
    if first.n_unique() != first.len():
        return None  # a call's leaves in two runs: not cut between calls
    pos = starts.arg_true()
    cuts = [0]
    for i in range(1, n_batches):
        j = int(pos.search_sorted(n * i // n_batches))
        cuts.append(int(pos[j]) if j < pos.len() else n)
    cuts.append(n)
    return [(lo, hi) for lo, hi in itertools.pairwise(cuts) if hi > lo]


def find_violations(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    clean_only: bool = False,
    batch_calls: int = BATCH_CALLS,
    progress: Progress = NULL_PROGRESS,
) -> tuple[pl.DataFrame, list[RuleEntry], pl.LazyFrame]:
    """The vectorised core: (cid, ridx, path, present) of every violation, the rule entries, the calls.

    Calls are checked in batches of about `batch_calls` calls' worth of leaf rows (`leaf_slices`; by
    call-id range when a call's leaves are not contiguous), so peak memory is bounded by the batch,
    not the corpus; each batch re-reads only its rows of `leaves.parquet`.
    """
    entries = rule_entries(contracts, fold, tools, codes)
    calls = checked_calls(contracts, corpus, fold, tools, clean_only)
    if not entries:
        return empty_hits().collect(), entries, calls
    ops, lean_ops = _op_tables(entries)
    maps = map_table(contracts)
    n_calls = calls.select(pl.len()).collect().item()
    n_batches = max(1, -(-n_calls // max(1, batch_calls)))
    found_parts = []
    progress.start("checking calls", n_calls)
    one_k = fold != "cross"
    vk = view_keys(corpus, maps)
    slices = leaf_slices(corpus, n_batches, None if vk is None else vk.view) if n_batches > 1 else [(0, None)]
    if slices is None:
        vk = None
    if slices is not None:
        # Batches are row ranges of `leaves.parquet` cut between calls: each reads its own row groups.
        n_rows = slices[-1][1] or 0
        for lo, hi in slices:
            leaves = corpus.scan_leaves()
            if hi is not None:
                leaves = leaves.slice(lo, hi - lo)
            # detach: a batch's few violations must not pin the arrays and strings of its leaves (output_contracts.frames).
            found_parts.append(
                detach(
                    _find_batch(
                        entries,
                        corpus,
                        calls,
                        ops,
                        lean_ops,
                        leaves,
                        maps,
                        one_k,
                        None if vk is None else (vk, lo, hi),
                    )
                )
            )
            progress.advance(n_calls if hi is None else n_calls * hi // n_rows - n_calls * lo // n_rows)
    else:
        edges = [(2**64 * i) // n_batches for i in range(n_batches + 1)]
        for lo, hi in itertools.pairwise(edges):
            # Call ids are hashes, uniform over u64: equal ranges are batches of about `batch_calls` calls.
            in_batch = pl.col("cid") >= pl.lit(lo, pl.UInt64)
            if hi < 2**64:
                in_batch = in_batch & (pl.col("cid") < pl.lit(hi, pl.UInt64))
            leaves = corpus.scan_leaves().filter(in_batch)
            found_parts.append(
                detach(
                    _find_batch(entries, corpus, calls.filter(in_batch), ops, lean_ops, leaves, maps, one_k)
                )
            )
            progress.advance(
                n_calls // n_batches if hi < 2**64 else n_calls - (n_calls // n_batches) * (n_batches - 1)
            )
    progress.finish()
    if one_k:
        # the violations of calls that are not checked, whose leaves the batches kept (`_find_batch`)
        checked = calls.select("cid").collect().get_column("cid").implode()
        found_parts = [pl.concat(found_parts).filter(pl.col("cid").is_in(checked))]
    # the code judged per episode compares calls with earlier ones of their episode: one pass over whole
    # episodes, which the call-id batches above would split
    ep = episode_check()
    if ep is not None:
        found_parts.append(ep.corpus_violations(entries, corpus, calls))
    found = pl.concat(found_parts).unique()
    return found, entries, calls


__all__ = [
    "BATCH_CALLS",
    "Fold",
    "OpRow",
    "RuleEntry",
    "call_violations",
    "checked_calls",
    "code",
    "episode_memory",
    "episode_witnesses",
    "find_violations",
    "generalize_patterns",
    "map_table",
    "operands",
    "rule_entries",
    "witness",
]
