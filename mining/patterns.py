"""The mining pattern table: every (tool, side, pattern) of the clean calls, with map keys generalized.

One read of the clean leaves counts, per literal pattern, its nodes, object nodes and kinds;
`output_contracts.mining.maps` decides from those which objects are maps (a narrow second read gives task
counts for the few parents only the open-key-set test can decide); the result is the table every rule
class reads patterns from (`pid` -> tool, side, generalized pattern), the literal -> pid table the
leaves are read through, and each tool's map parents. Split from `output_contracts.mining.data`, which reads
the leaves themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from output_contracts.codes.mining_frames import KIND_CODE
from output_contracts.mining import maps as map_keys
from output_contracts.mining.clean import READ_CHUNK_ROWS, clean_calls, leaf_rows, scan_leaves
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.leaves import tp_expr
from output_contracts.traces.mining_view_reader import View
from output_contracts.traces.pointers import is_wild


def pattern_table(
    corpus: Corpus,
    clean: str,
    tools: Sequence[str] | None,
    declared_maps: Mapping[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    """The pattern table mining would use (pid, tool, side, pattern with map keys generalized, wild,
    kinds), from the clean calls of `tools`: what the Dask engine plans its partitions from."""
    _, unclean = clean_calls(corpus, clean, tools, ids=False)
    return patterns_of(corpus, tools, unclean if unclean.height else None, declared_maps)[0]


def patterns_of(
    corpus: Corpus,
    tools: Sequence[str] | None,
    unclean: pl.DataFrame | None,
    declared_maps: Mapping[str, Sequence[str]] | None = None,
    view: View | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, tuple[str, ...]]]:
    """(patterns, literal, maps): the pattern table, the literal-pattern table and the map parents.

    One read of the clean leaves, in chunks of file rows (memory stays bounded), counts per literal
    (tool, side, pattern) its nodes, object nodes and kinds; `output_contracts.mining.maps` decides from those
    which objects are maps (a second, narrow read gives task counts for the few parents only the
    open-key-set test can decide). `patterns`: pid (dense, in tool/side/pattern order over generalized
    patterns), tool, side, pattern, wild. `literal`: tool, side, pattern (literal), pid, wild — the
    join table of `_read_chunk`. `view`: the corpus's mining view, `View.selecting` the same tools and
    calls, read instead of the leaves."""
    if view is not None:
        seen = [_view_counts(view, corpus)]
    else:
        seen = [_leaf_counts(_cleanscan_leaves(corpus, tools, unclean, start)) for start in _chunks(corpus)]
    stats = (
        pl.concat(seen)
        .group_by("tool", "side", "pattern")
        .agg(
            pl.col("n").sum(),
            pl.col("n").filter(pl.col("code") == KIND_CODE["object"]).sum().alias("n_obj"),
            pl.lit(2).pow(pl.col("code").unique()).sum().cast(pl.Int64).alias("kinds"),
        )
        .sort("tool", "side", "pattern")
    )
    declared = {(t, "result"): frozenset(ps) for t, ps in (declared_maps or {}).items() if ps}
    decided = map_keys.decide(stats, declared=declared)
    # Open-key-set candidates need task counts (a narrow second read); a map found that way can make
    # candidates below it, so repeat until no new candidate appears (each round reads only new ones).
    evidence: dict[tuple[str, str, str], map_keys.OpenEvidence] = {}
    cands = map_keys.open_candidates(stats, decided)
    while cands - set(evidence):
        new = cands - set(evidence)
        evidence.update(_open_evidence(corpus, tools, unclean, stats, decided, new, view))
        decided = map_keys.decide(stats, evidence, declared)
        cands = map_keys.open_candidates(stats, decided)
    lit = map_keys.literal_table(stats, decided).join(
        stats.select("tool", "side", "pattern", "kinds"), on=["tool", "side", "pattern"]
    )
    patterns = (
        lit.group_by("tool", "side", pl.col("gpattern").alias("pattern"))
        .agg(pl.col("kinds").bitwise_or())
        .sort("tool", "side", "pattern")
        .with_row_index("pid")
        .with_columns(
            pl.col("pid").cast(pl.UInt32),
            pl.col("pattern").map_elements(is_wild, return_dtype=pl.Boolean).alias("wild"),
        )
    )
    literal = lit.join(
        patterns.select("tool", "side", pl.col("pattern").alias("gpattern"), "pid", "wild"),
        on=["tool", "side", "gpattern"],
        how="left",
    ).select("tool", "side", "pattern", "pid", "wild")
    tool_names = sorted({t for t, _ in decided})
    maps = {t: map_keys.map_paths(decided, t) for t in tool_names}
    return patterns, literal, maps


def _chunks(corpus: Corpus) -> range:
    """Starts of the READ_CHUNK_ROWS-row chunks of file rows the leaves (or the view) are read in."""
    return range(0, max(leaf_rows(corpus), 1), READ_CHUNK_ROWS)


def _leaf_counts(lf: pl.LazyFrame) -> pl.DataFrame:
    """The per-chunk counts of `patterns_of` (tool, side, pattern, code, n) from leaves.parquet: one
    group-by on (pattern, kind) as a single integer key, rows per kind (merged by the caller)."""
    return (
        lf.select(
            (tp_expr() * 8 + pl.col("kind").to_physical().cast(pl.UInt64)).alias("tpk"),
            "tool",
            "side",
            "pattern",
            "kind",
        )
        .group_by("tpk")
        .agg(
            pl.col("tool").first(),
            pl.col("side").first(),
            pl.col("pattern").first(),
            pl.col("kind").first().to_physical().alias("code"),
            pl.len().alias("n"),
        )
        .select(
            pl.col("tool").cast(pl.String),
            pl.col("side").cast(pl.String),
            pl.col("pattern").cast(pl.String),
            pl.col("code").cast(pl.Int64),
            pl.col("n").cast(pl.Int64),
        )
        .collect()
    )


def _view_counts(view: View, corpus: Corpus) -> pl.DataFrame:
    """The per-chunk counts of `patterns_of` (tool, side, pattern, code, n) from the mining view: one
    integer group-by per chunk, the strings joined to the (few) groups."""
    counts = [
        view.scan(start, READ_CHUNK_ROWS)
        .group_by((pl.col("lpat").cast(pl.UInt64) * 8 + pl.col("kind").cast(pl.UInt64)).alias("lk"))
        .agg(pl.len().alias("n"))
        .collect()
        for start in _chunks(corpus)
    ]
    return (
        pl.concat(counts)
        .group_by("lk")
        .agg(pl.col("n").sum())
        .with_columns(
            (pl.col("lk") // 8).cast(pl.UInt32).alias("lpat"), (pl.col("lk") % 8).cast(pl.Int64).alias("code")
        )
        .join(view.lpats, on="lpat")
        .select("tool", "side", "pattern", "code", pl.col("n").cast(pl.Int64))
    )


def _cleanscan_leaves(
    corpus: Corpus, tools: Sequence[str] | None, unclean: pl.DataFrame | None, start: int
) -> pl.LazyFrame:
    """One chunk of file rows of the leaves, restricted to the selected tools' clean calls."""
    lf = scan_leaves(corpus, None).slice(start, READ_CHUNK_ROWS)  # the slice first: a range of file rows
    if tools is not None:
        lf = lf.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    if unclean is not None:
        lf = lf.filter(~pl.col("cid").is_in(unclean["cid"].implode()))
    return lf


def _open_evidence(
    corpus: Corpus,
    tools: Sequence[str] | None,
    unclean: pl.DataFrame | None,
    stats: pl.DataFrame,
    decided: Mapping[tuple[str, str], frozenset[str]],
    cands: set[tuple[str, str, str]],
    view: View | None = None,
) -> dict[tuple[str, str, str], map_keys.OpenEvidence]:
    """Distinct tasks of each open-key-set candidate parent and of each of its keys: (literal pattern,
    task) pairs of only those patterns, read in chunks and made unique (from the mining view's integer
    codes when there is one: a task's code stands for its id, one to one)."""
    lit = map_keys.literal_table(stats, decided).with_columns(
        pl.col("gpattern").str.replace(r"/[^/]*$", "").alias("gparent")
    )
    want = pl.DataFrame(
        [(t, s, p) for t, s, p in sorted(cands)], schema=["tool", "side", "cand"], orient="row"
    )
    role = pl.concat(
        [
            lit.join(
                want, left_on=["tool", "side", "gpattern"], right_on=["tool", "side", "cand"]
            ).with_columns(pl.col("gpattern").alias("cand"), pl.lit(True).alias("is_parent")),
            lit.join(want, left_on=["tool", "side", "gparent"], right_on=["tool", "side", "cand"])
            .filter(pl.col("gpattern") != pl.col("gparent"))
            .with_columns(pl.col("gparent").alias("cand"), pl.lit(False).alias("is_parent")),
        ]
    ).select("tool", "side", "pattern", "gpattern", "cand", "is_parent")
    pairs = []
    if view is not None:
        lpats = view.lpats.join(
            role.select("tool", "side", "pattern").unique(), on=["tool", "side", "pattern"]
        )
        for start in _chunks(corpus):
            pairs.append(
                view.scan(start, READ_CHUNK_ROWS)
                .filter(pl.col("lpat").is_in(lpats["lpat"].cast(pl.UInt32).implode()))
                .select("lpat", pl.col("task").alias("task_id"))
                .unique()
                .collect()
            )
        pairs = [pl.concat(pairs).join(lpats, on="lpat").select("tool", "side", "pattern", "task_id")]
    else:
        for start in _chunks(corpus):
            lf = _cleanscan_leaves(corpus, tools, unclean, start)
            pairs.append(
                lf.select(
                    pl.col("tool").cast(pl.String),
                    pl.col("side").cast(pl.String),
                    pl.col("pattern").cast(pl.String),
                    pl.col("task_id").cast(pl.String),
                )
                .join(role.lazy().select("tool", "side", "pattern"), on=["tool", "side", "pattern"])
                .unique()
                .collect()
            )
    got = (
        pl.concat(pairs)
        .join(role, on=["tool", "side", "pattern"])
        .select("tool", "side", "cand", "gpattern", "is_parent", "task_id")
        .unique()
        .group_by("tool", "side", "cand", "gpattern", "is_parent")
        .agg(pl.len().alias("tasks"))
    )
    out: dict[tuple[str, str, str], tuple[int, dict[str, int]]] = {c: (0, {}) for c in cands}
    for tool, side, cand, gpattern, is_parent, tasks in got.sort(
        "tool", "side", "cand", "gpattern"
    ).iter_rows():
        keys = out[(tool, side, cand)][1]
        if is_parent:
            out[(tool, side, cand)] = (int(tasks), keys)
        else:
            keys[gpattern] = int(tasks)
    return dict(out)
