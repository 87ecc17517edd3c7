"""`contracts registry infer --substitutes`: propose recovery tools from corpus evidence, not names.

A receipt offers recovery tools: the tool itself and its substitutes (DESIGN §4). Registries rarely
declare substitutes, so on real runs (τ-bench, BFCL) recovery retention is 0% out of the box. This
module proposes, for each tool A, tools B that could answer the same need, and says on what evidence.
A proposal A -> B needs all three (counted over the corpus's clean calls: status ok, no fault label,
episode not labelled faulty):

1. **Same entity.** Within one episode a result of A and a result of B carry the same *key value*: a
   string that tools are called with somewhere in the corpus (an argument value: the values that address
   entities, such as reservation or user ids, not prose or timestamps) and that is specific (seen in at
   most `max_task_share` of the corpus's tasks, so airport codes, cabin names and statuses do not link
   everything to everything). Evidence: the episodes where this happens (>= `min_episodes`), the
   distinct values, and the key fields (A's result pattern = B's result pattern) they sit at. Or, the
   **same query**: in >= `min_episodes` episodes A and B were called with the very same non-empty
   arguments, and their results use mostly the same field names (Jaccard of result leaf names >=
   `min_overlap`): two tools answering one question with the same kind of record (two flight searches).
2. **Compatible arguments.** B can be called with what A's call carried: in at least one episode, every
   argument B is always called with got a value that also appears in one A call of that episode (its
   arguments or its result). B without arguments is trivially compatible.
3. **Read-only B** (a recovery call must not change the world). Two calls are *consecutive on an
   entity* when both take the same key value as an argument and no call between them does; their
   results are compared on the result fields both tools are known to have. A difference *blames* the
   second call's tool (the entity changed at it), agreement *clears* it. B is read-only when it was never
   blamed and was cleared at least once (`"by": "evidence"`). When the corpus holds no such comparison
   for B either way, a documented tie-breaker decides, and says so (`"by": "name"`): B's name starts
   with a read verb (`READ_VERBS`). Names never override evidence: a tool blamed once is not read-only,
   whatever it is called.

The proposals are written into the registry as `substitutes_inferred: [{"tool", "evidence"}]`, strongest
first (episodes, then distinct values); `check` and `audit` offer them as recovery tools only where a
tool declares no `substitutes`, and the receipt says `recovery_tools_inferred: true`. They describe the
corpus, not the tools' promises: review them (docs/registry.md judges every proposal on τ-bench airline
and τ²-bench telecom against the tools' descriptions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.tool_registry import Registry

#: The tie-breaker's read verbs (only when the corpus has no re-read evidence about a tool either way).
READ_VERBS = (
    "get",
    "list",
    "search",
    "find",
    "lookup",
    "query",
    "read",
    "fetch",
    "check",
    "show",
    "describe",
)
MIN_EPISODES = 2
MAX_TASK_SHARE = 0.1
MAX_KEYS = 3
MIN_OVERLAP = 0.5


@dataclass(frozen=True)
class ReadOnly:
    """Why a tool is (or is not) taken to be read-only: calls consecutive on an entity that blamed or
    cleared it (`read_only_evidence`)."""

    tool: str
    blamed: int  # its calls whose result differed from the previous call on the same entity
    cleared: int  # its calls whose result agreed with it
    by: str  # "evidence" or "name" (the tie-breaker), or "evidence" with read_only False

    @property
    def read_only(self) -> bool:
        if self.blamed:
            return False
        if self.cleared:
            return True
        return self.by == "name"

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "blamed": self.blamed, "cleared": self.cleared}


@dataclass(frozen=True)
class Substitute:
    """One proposal: `tool` may be recovered with `substitute`, and the evidence for it."""

    tool: str
    substitute: str
    episodes: int
    shared_values: int
    keys: tuple[str, ...]
    arguments: tuple[str, ...]
    fed_episodes: int
    read_only: ReadOnly
    same_query_episodes: int = 0
    field_overlap: float = 0.0

    def evidence(self) -> dict[str, Any]:
        """The registry's `evidence` object (schema `tool-registry`)."""
        return {
            "episodes": self.episodes,
            "shared_values": self.shared_values,
            "keys": list(self.keys),
            "arguments": list(self.arguments),
            "arguments_fed_episodes": self.fed_episodes,
            "same_query_episodes": self.same_query_episodes,
            "field_overlap": self.field_overlap,
            "read_only": self.read_only.to_json(),
        }

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.substitute, "evidence": self.evidence()}


@dataclass(frozen=True)
class SubstituteReport:
    """Every proposal, and every candidate pair that shared an entity but was refused (and why)."""

    proposals: tuple[Substitute, ...]
    refused: tuple[tuple[str, str, str], ...]  # (tool, candidate, reason)
    read_only: Mapping[str, ReadOnly]

    def by_tool(self) -> dict[str, list[Substitute]]:
        out: dict[str, list[Substitute]] = {}
        for s in self.proposals:
            out.setdefault(s.tool, []).append(s)
        return out


def _clean_calls(corpus: Corpus) -> pl.LazyFrame:
    """Calls mining counts as clean: status ok, no fault label, episode not labelled faulty."""
    clean_traces = corpus.scan_episodes().filter(~pl.col("faulty").fill_null(False)).select("trace_id")
    return (
        corpus.scan_calls()
        .filter((pl.col("status") == "ok") & pl.col("fault").is_null())
        .join(clean_traces, on="trace_id", how="semi")
        .select("cid", "trace_id", "step", pl.col("tool").cast(pl.String), "arguments", "result")
    )


def _string_leaves(corpus: Corpus, calls: pl.LazyFrame) -> pl.DataFrame:
    """Every string leaf of the clean calls: `cid, trace_id, task_id, tool, side, pattern, value`."""
    return (
        corpus.scan_leaves()
        .filter(pl.col("kind") == "string")
        .select(
            "cid",
            pl.col("task_id").cast(pl.String),
            pl.col("side").cast(pl.String),
            pl.col("pattern").cast(pl.String),
            pl.col("str").alias("value"),
        )
        .join(calls.select("cid", "trace_id", "tool"), on="cid", how="inner")
        .collect()
    )


def _keys(leaves: pl.DataFrame, max_task_share: float) -> pl.DataFrame:
    """Key values: strings some call takes as an argument, seen in few tasks (`max_task_share`)."""
    n_tasks = max(leaves.get_column("task_id").n_unique(), 1)
    limit = max(1, int(n_tasks * max_task_share))
    args = leaves.filter(pl.col("side") == "arg").select("value").unique()
    return (
        leaves.group_by("value")
        .agg(pl.col("task_id").n_unique().alias("tasks"))
        .filter(pl.col("tasks") <= limit)
        .join(args, on="value", how="semi")
        .select("value")
    )


def _shared(leaves: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """Per ordered pair (tool, candidate): episodes and values where both results carry a key value,
    and the key fields most often involved."""
    res = (
        leaves.filter(pl.col("side") == "result")
        .join(keys, on="value", how="semi")
        .select("trace_id", "tool", "pattern", "value")
        .unique()
    )
    pairs = (
        res.join(res, on=["trace_id", "value"], suffix="_b")
        .filter(pl.col("tool") != pl.col("tool_b"))
        .rename({"tool_b": "candidate"})
    )
    counts = pairs.group_by("tool", "candidate").agg(
        pl.col("trace_id").n_unique().alias("episodes"), pl.col("value").n_unique().alias("shared_values")
    )
    fields = (
        pairs.with_columns((pl.col("pattern") + " = " + pl.col("pattern_b")).alias("key"))
        .group_by("tool", "candidate", "key")
        .agg(pl.col("trace_id").n_unique().alias("n"))
        .sort(["tool", "candidate", "n", "key"], descending=[False, False, True, False])
        .group_by("tool", "candidate", maintain_order=True)
        .agg(pl.col("key").head(MAX_KEYS).alias("keys"))
    )
    return counts.join(fields, on=["tool", "candidate"], how="left")


def _same_query(corpus: Corpus, calls: pl.DataFrame, min_overlap: float) -> pl.DataFrame:
    """Per ordered pair (tool, candidate): episodes in which both were called with the very same
    (non-empty) arguments, for pairs whose results use mostly the same field names (Jaccard of the
    result leaf names >= `min_overlap`): two tools answering one query with the same kind of record."""
    q = calls.filter(pl.col("arguments") != "{}").select("trace_id", "tool", "arguments").unique()
    pairs = (
        q.join(q, on=["trace_id", "arguments"], suffix="_b")
        .filter(pl.col("tool") != pl.col("tool_b"))
        .group_by("tool", pl.col("tool_b").alias("candidate"))
        .agg(pl.col("trace_id").n_unique().alias("same_query_episodes"))
    )
    names = (
        corpus.scan_leaves()
        .filter(pl.col("side") == "result")
        .join(calls.lazy().select("cid"), on="cid", how="semi")
        .select(
            pl.col("tool").cast(pl.String),
            pl.col("pattern").cast(pl.String).str.split("/").list.last().alias("name"),
        )
        .filter(~pl.col("name").is_in(["*", "", "~*"]))
        .unique()
        .collect()
    )
    inter = (
        names.join(names, on="name", suffix="_b")
        .group_by("tool", pl.col("tool_b").alias("candidate"))
        .agg(pl.len().alias("inter"))
    )
    size = names.group_by("tool").agg(pl.len().alias("n"))
    overlap = (
        inter.join(size, on="tool")
        .join(size.rename({"tool": "candidate", "n": "n_b"}), on="candidate")
        .with_columns(
            (pl.col("inter") / (pl.col("n") + pl.col("n_b") - pl.col("inter"))).alias("field_overlap")
        )
        .select("tool", "candidate", "field_overlap")
    )
    return pairs.join(overlap, on=["tool", "candidate"], how="inner").filter(
        pl.col("field_overlap") >= min_overlap
    )


def _fed(leaves: pl.DataFrame, calls: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per ordered pair (tool, candidate): the candidate's always-present arguments, and the episodes in
    which one candidate call got every one of them from values of one call of the tool."""
    arg_top = leaves.filter(pl.col("side") == "arg").with_columns(
        pl.col("pattern").str.split("/").list.get(1, null_on_oob=True).alias("arg")
    )
    n_calls = calls.group_by("tool").agg(pl.len().alias("n_calls"))
    required = (
        arg_top.filter(pl.col("arg").is_not_null())
        .group_by("tool", "arg")
        .agg(pl.col("cid").n_unique().alias("with"))
        .join(n_calls, on="tool")
        .filter(pl.col("with") == pl.col("n_calls"))
        .group_by("tool")
        .agg(pl.col("arg").sort().alias("args"), pl.len().alias("n_args"))
    )
    # a candidate call's argument value found among the leaf values of a call of another tool
    cand = arg_top.filter(pl.col("arg").is_not_null()).join(
        required.explode("args").rename({"args": "arg"}).select("tool", "arg"), on=["tool", "arg"], how="semi"
    )
    src = leaves.select(
        "trace_id", pl.col("cid").alias("src_cid"), pl.col("tool").alias("src"), "value"
    ).unique()
    hit = (
        cand.join(src, on=["trace_id", "value"])
        .filter(pl.col("src") != pl.col("tool"))
        .group_by("src", "tool", "cid", "src_cid", "trace_id")
        .agg(pl.col("arg").n_unique().alias("fed"))
        .join(required.select("tool", "n_args"), on="tool")
        .filter(pl.col("fed") == pl.col("n_args"))
        .group_by("src", "tool")
        .agg(pl.col("trace_id").n_unique().alias("fed_episodes"))
        .rename({"src": "tool", "tool": "candidate"})
    )
    return hit, required


def _value_text() -> pl.Expr:
    """A leaf's value as text, whatever its kind (strings and numbers as themselves, others by kind)."""
    return (
        pl.when(pl.col("kind") == "string")
        .then(pl.lit("s:") + pl.col("str"))
        .when(pl.col("kind").is_in(["int", "float"]))
        .then(pl.lit("n:") + pl.col("num").cast(pl.String))
        .otherwise(pl.lit("k:") + pl.col("kind").cast(pl.String))
    )


def read_only_evidence(
    corpus: Corpus, calls: pl.DataFrame, leaves: pl.DataFrame, keys: pl.DataFrame
) -> dict[str, ReadOnly]:
    """Every tool's evidence (blamed, cleared) and the verdict's basis (see the module docstring).

    Two calls are *consecutive on an entity* when both take the same key value as an argument and no call
    between them does. Their results are compared on the result fields both tools are known to have
    (patterns seen in results of both anywhere in the corpus): a difference blames the second call's
    tool (the entity changed at it), agreement on >= 1 field clears it."""
    tools = sorted(set(calls.get_column("tool").to_list()))
    named = (
        leaves.filter(pl.col("side") == "arg")
        .join(keys, on="value", how="semi")
        .select("trace_id", "cid", "value")
        .unique()
        .join(calls.select("cid", "step", "tool"), on="cid")
        .sort("trace_id", "value", "step", "cid")
        .with_columns(
            pl.col("cid").shift(1).over("trace_id", "value").alias("prev_cid"),
            pl.col("tool").shift(1).over("trace_id", "value").alias("prev_tool"),
        )
        .filter(pl.col("prev_cid").is_not_null())
        .select("cid", "tool", "prev_cid", "prev_tool")
        .unique()
    )
    if named.is_empty():
        per: dict[str, tuple[int, int]] = {}
    else:
        cids = pl.concat([named.get_column("cid"), named.get_column("prev_cid")]).unique()
        res = (
            corpus.scan_leaves()
            .filter((pl.col("side") == "result") & pl.col("cid").is_in(cids.implode()))
            .select(
                "cid",
                pl.col("tool").cast(pl.String),
                pl.col("pattern").cast(pl.String),
                "path",
                _value_text().alias("v"),
            )
            .collect()
        )
        shapes = (
            corpus.scan_leaves()
            .filter(pl.col("side") == "result")
            .select(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String))
            .unique()
            .collect()
        )
        common = (
            shapes.join(shapes, on="pattern", suffix="_p")
            .rename({"tool_p": "prev_tool"})
            .join(named.select("tool", "prev_tool").unique(), on=["tool", "prev_tool"], how="semi")
        )
        # each pair's leaves at the common patterns, from both sides, as (path, value) sets
        cur = named.join(common, on=["tool", "prev_tool"]).join(
            res.select("cid", "pattern", "path", "v"), on=["cid", "pattern"]
        )
        old = named.join(common, on=["tool", "prev_tool"]).join(
            res.select(pl.col("cid").alias("prev_cid"), "pattern", "path", "v"), on=["prev_cid", "pattern"]
        )
        sides = pl.concat(
            [
                cur.select("cid", "prev_cid", "tool", "path", "v", pl.lit(1).alias("side")),
                old.select("cid", "prev_cid", "tool", "path", "v", pl.lit(2).alias("side")),
            ]
        ).unique()
        verdict = (
            sides.group_by("cid", "prev_cid", "tool", "path", "v")
            .agg(pl.col("side").n_unique().alias("both"))
            .group_by("cid", "prev_cid", "tool")
            .agg((pl.col("both") < 2).any().alias("changed"))
        )
        counts = verdict.group_by("tool").agg(
            pl.col("changed").sum().alias("blamed"), (~pl.col("changed")).sum().alias("cleared")
        )
        per = {t: (int(b), int(c)) for t, b, c in counts.iter_rows()}
    out = {}
    for t in tools:
        b, c = per.get(t, (0, 0))
        by = "evidence" if (b or c) else ("name" if _read_verb(t) else "none")
        out[t] = ReadOnly(t, b, c, by)
    return out


def with_substitutes(registry: Registry, report: SubstituteReport) -> Registry:
    """The registry with each tool's proposals as `substitutes_inferred` (tools it lacks are skipped:
    a proposal names a tool of the corpus, and `registry infer` declares every tool of the corpus)."""
    by_tool = report.by_tool()
    specs = {
        name: replace(spec, substitutes_inferred=tuple(s.to_json() for s in by_tool.get(name, ())))
        for name, spec in registry.tools.items()
    }
    return Registry(tools=specs, source=registry.source)


def _read_verb(name: str) -> bool:
    first = name.replace("-", "_").split("_")[0].lower()
    return first in READ_VERBS


def infer_substitutes(
    corpus: Corpus,
    *,
    min_episodes: int = MIN_EPISODES,
    max_task_share: float = MAX_TASK_SHARE,
    min_overlap: float = MIN_OVERLAP,
) -> SubstituteReport:
    """Proposals A -> B meeting the three criteria of the module docstring, strongest first per tool."""
    lazy = _clean_calls(corpus)
    calls = lazy.collect()
    leaves = _string_leaves(corpus, lazy)
    keys = _keys(leaves, max_task_share)
    shared = _shared(leaves, keys)
    same = _same_query(corpus, calls, min_overlap)
    fed, required = _fed(leaves, calls)
    ro = read_only_evidence(corpus, calls, leaves, keys)
    req = {t: tuple(a) for t, a, _n in required.iter_rows()}
    table = (
        shared.join(same, on=["tool", "candidate"], how="full", coalesce=True)
        .join(fed, on=["tool", "candidate"], how="left")
        .with_columns(
            pl.col("episodes", "shared_values", "same_query_episodes", "fed_episodes").fill_null(0),
            pl.col("field_overlap").fill_null(0.0),
        )
        .with_columns(pl.max_horizontal("episodes", "same_query_episodes").alias("strength"))
        .sort(["tool", "strength", "shared_values", "candidate"], descending=[False, True, True, False])
    )
    proposals: list[Substitute] = []
    refused: list[tuple[str, str, str]] = []
    for tool, cand, eps, vals, keys, fed_eps, sq_eps, overlap in table.select(
        "tool",
        "candidate",
        "episodes",
        "shared_values",
        "keys",
        "fed_episodes",
        "same_query_episodes",
        "field_overlap",
    ).iter_rows():
        r = ro[cand]
        needs = req.get(cand, ())
        if sq_eps >= min_episodes:
            fed_eps = max(fed_eps, sq_eps)  # called with the tool's own arguments: fed by construction
        if eps < min_episodes and sq_eps < min_episodes:
            refused.append(
                (
                    tool,
                    cand,
                    f"shares an entity in {eps} and a query in {sq_eps} episode(s) (< {min_episodes})",
                )
            )
        elif needs and not fed_eps:
            refused.append(
                (tool, cand, f"its arguments ({', '.join(needs)}) were never fed from {tool}'s calls")
            )
        elif not r.read_only:
            why = (
                f"not read-only: blamed {r.blamed} time(s) (its result differed from the previous call on the entity)"
                if r.blamed
                else "no re-read evidence and no read verb in its name"
            )
            refused.append((tool, cand, why))
        else:
            proposals.append(
                Substitute(
                    tool,
                    cand,
                    eps,
                    vals,
                    tuple(keys or ()),
                    needs,
                    fed_eps if needs else 0,
                    r,
                    sq_eps,
                    round(float(overlap), 3),
                )
            )
    return SubstituteReport(tuple(proposals), tuple(refused), ro)
