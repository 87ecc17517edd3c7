"""The clean mining data, read part by part, and its per-fold statistics (DESIGN §3).

Every rule statistic is a *monoid per fold*: counts, sums, min/max, example ids, and distinct counts of
things that belong to exactly one fold (calls, tasks). `by_checker` merges them into the statistics of
every checker at once: the full checker (id -1) is the merge of all folds, fold checker f the merge of
all folds but f. This is why `--folds 5` costs little more than `--folds 1`.

Bounded memory: the same argument splits the corpus further. Tasks are dealt into `parts` task parts
(every call of a task lies in one part), sized so that one part's clean leaves stay under
`PART_ROWS` rows; a statistic computed per (part, fold) and merged over parts is exactly the statistic
per fold, distinct calls and tasks included. The miner reads the parts one at a time (`MiningData.parts`),
so peak memory follows the largest part, not the corpus; a corpus that fits in one part is read once and
kept. A corpus of format 2 keeps its leaves ordered by task, with each row group's task range in
`corpus.json`: a part is then a contiguous run of row groups (cut where no task straddles), read straight
from `leaves.parquet`, each row once. A corpus of format 1 (leaves in ingest order) is dealt into parts
round-robin and its clean leaves written once to a scratch folder, part by part. The one thing not read part by part is a bounded *sample* (`sample_calls`: the first calls of
each tool and fold by call key), from which ECHO and RELATION propose candidates; every candidate is then
counted on every part.

Hot-path shape: leaves never carry strings for tool and pattern. Each distinct (tool, side, pattern)
gets a dense id `pid` (the `patterns` table maps it back), and group-bys run on one UInt64 key built
from (pid, kind class, fold) — measured 5-10× faster than grouping on the categorical columns.

Clean calls (`clean_calls`): status "ok", from episodes with no labelled fault (no call of the trace
carries `fault`, and `episodes.faulty` is not true), and with `clean="reward"` also from episodes whose
reward is 1.0 where a reward exists (a null reward counts as clean: the format has none).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from output_contracts.codes.folds import fold_table
from output_contracts.codes.mining_frames import (
    CLS_ARR,
    CLS_NUM,
    CLS_STR,
    ECHO_SAMPLE_CALLS,
    KIND_CODE,
    SAMPLE_CALLS,
    SCALAR_CLASSES,
    Leaves,
    by_checker,
    first_calls,
    fold_examples,
    low_octave_aggs,
    merged_examples,
)
from output_contracts.errors import MiningError, reading
from output_contracts.mining.clean import READ_CHUNK_ROWS, clean_calls, leaf_rows, scan_leaves
from output_contracts.traces.corpus import Corpus, LeafGroup
from output_contracts.traces.leaves import tp_expr, tp_patterns
from output_contracts.traces.mining_view import WILD_TOKEN
from output_contracts.traces.mining_view_reader import View

_U64 = pl.UInt64

#: Leaf rows (of the whole leaves file, clean or not) per task part; a corpus below it is mined in one
#: part, read once. Smaller parts cost no CPU down to about this size (the bench world at 1M calls, 24M
#: leaf rows: 12M-row parts 58.8 CPU-s and 2.3 GiB peak, 6M 57.1 and 1.5 GiB, 3M 52.7 and 1.15 GiB,
#: 1.5M 53.2 and 1.07 GiB). At 10M calls (235M leaf rows), once no per-corpus table held more than a
#: few bytes a call, the peak was the part: 2,076 MiB with 3M-row parts, 1,595 MiB with 2M.
PART_ROWS = 2_000_000

LEAF_COLUMNS = ("cid", "task", "pid", "side", "path", "code", "cls", "num", "str", "len", "fold")


@dataclass(frozen=True)
class MiningData:
    """The clean calls of a corpus and a way to read their leaves one task part at a time.

    `calls`: cid, task (tid), tool, fold, part — every clean call (call ids stay on disk: see
    `call_ids`). `patterns`: pid -> tool, side, pattern (Strings; map keys written `~*`), `wild` (has a
    wildcard token), `kinds` (OR of `1 << kind code` over its clean nodes). `tasks`:
    task_id (String) -> tid (the `task` of calls and leaves), fold, part. `nparts`: how many task parts;
    `whole`: the leaves, read once, when there is one part; `spill`: a scratch folder holding each
    part's leaves (compact: integer ids, no categoricals) when there are several. Call `close` when done.
    """

    corpus: Corpus
    calls: pl.DataFrame
    patterns: pl.DataFrame
    k: int
    unclean: pl.DataFrame | None  # cids of calls left out (None when every call is clean)
    tools: tuple[str, ...] | None
    tasks: pl.DataFrame
    nparts: int
    whole: Leaves | None
    spill: Path | None = None  # format 1: the parts' leaves, written once by `load` when there are several
    #: format 2: each part's rows of `leaves.parquet` (start, rows), when there are several
    ranges: tuple[tuple[int, int], ...] | None = None
    #: literal (tool, side, pattern) of leaves.parquet -> pid, wild: where map keys are generalized
    #: (`output_contracts.mining.maps`) several literal patterns share one pid. None: same as `patterns`.
    literal: pl.DataFrame | None = None
    #: map parents per tool, in rule-path notation (`output_contracts.mining.maps.map_paths`)
    maps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: format 3: the integer-coded mining view, read instead of `leaves.parquet` ...
    view: View | None = None
    #: ... through these lookup tables (built once by `load`)
    decode: ViewDecode | None = None

    def pids(self, sel: pl.DataFrame) -> list[int]:
        """Pattern ids of the (tool, pattern[, side]) rows of `sel` (side defaults to result)."""
        if "side" not in sel.columns:
            sel = sel.with_columns(pl.lit("result").alias("side"))
        got = self.patterns.join(
            sel.select("tool", "side", "pattern").unique(), on=["tool", "side", "pattern"]
        )
        return sorted(got["pid"].to_list())

    def parts(self) -> Iterator[Leaves]:
        """The clean leaves of each task part in turn (the same in-memory frame when there is one)."""
        if self.whole is not None:
            yield self.whole
            return
        for b in range(self.nparts):
            yield self.part(b)

    def part(self, b: int) -> Leaves:
        """Read the clean leaves of task part `b` (its rows of the corpus, or from the spill folder)."""
        if self.whole is not None:
            return self.whole
        calls = self.calls.filter(pl.col("part") == b).drop("part")
        if self.ranges is not None:
            start, rows = self.ranges[b]
            leaves, n_result = _read_leaves(self, start, start + rows)
            return Leaves(leaves, calls, self.patterns, self.k, n_result)
        assert self.spill is not None
        folder = self.spill / f"part-{b:05d}"
        results = [pl.read_parquet(f) for f in sorted(folder.glob("result-*.parquet"))]
        args = [pl.read_parquet(f) for f in sorted(folder.glob("arg-*.parquet"))]
        n_result = sum(f.height for f in results)
        leaves = pl.concat(results + args, rechunk=False) if results or args else _empty_leaves()
        return Leaves(with_codes(leaves), calls, self.patterns, self.k, n_result)

    def close(self) -> None:
        """Remove the spill folder (if any)."""
        if self.spill is not None:
            shutil.rmtree(self.spill, ignore_errors=True)


def call_ids(corpus: Corpus, cids: pl.Series | Sequence[int]) -> pl.DataFrame:
    """(cid, call_id) of the given call keys, read from `calls.parquet` (mining keeps only the integer
    key in memory: call ids are strings, and only a rule's few example calls need theirs)."""
    wanted = pl.Series("cid", cids, dtype=pl.UInt64).unique()
    return (
        corpus.scan_calls()
        .select("cid", "call_id")
        .filter(pl.col("cid").is_in(wanted.implode()))
        .collect()
        .sort("cid")
    )


def load(
    corpus: Corpus,
    *,
    clean: str,
    k: int,
    seed: int,
    tools: Sequence[str] | None,
    part_rows: int = PART_ROWS,
    declared_maps: Mapping[str, Sequence[str]] | None = None,
) -> MiningData:
    """Prepare the clean mining data: clean calls with their folds, the pattern table, the task parts;
    the leaves themselves are read part by part (`MiningData.parts`), or here when one part holds all.

    Categorical codes are never compared across two reads (they are not stable between queries): tasks
    and patterns get their own dense ids here, and each read maps its codes to them by value.
    `declared_maps`: per tool, result patterns a registry declares as maps (`output_contracts.mining.maps`)."""
    calls, unclean = clean_calls(corpus, clean, tools, ids=False, strings=False)
    if calls.height == 0:
        raise MiningError(
            "no clean calls to mine (every call is an error, faulty or filtered out)",
            source=str(corpus.path),
        )
    # one row per task code (codes and task ids are one to one within this frame), its text cast once
    tasks = (
        calls.select("task", "task_id")
        .unique("task", keep="any")
        .with_columns(pl.col("task_id").cast(pl.String))
        .sort("task_id")
        .with_row_index("tid")
    )
    if k > 1:
        tasks = tasks.join(fold_table(tasks["task_id"], seed, k), on="task_id", how="left")
    else:
        tasks = tasks.with_columns(pl.lit(0, pl.Int32).alias("fold"))
    total = leaf_rows(corpus)
    groups = corpus.leaf_groups()
    ranges: list[Unit] | None = None
    if groups is not None and total > part_rows:
        ranges = plan_parts(_units(corpus, groups, part_rows), part_rows)
        nparts = len(ranges)
        # a task's leaves lie in the one part whose task range holds it
        firsts = pl.Series([r.first_task for r in ranges], dtype=pl.String)
        at = firsts.search_sorted(tasks["task_id"], side="right").cast(pl.Int64) - 1
        tasks = tasks.with_columns(at.clip(0).cast(pl.UInt32).alias("part"))
    else:
        nparts = 1 if groups is not None else max(1, math.ceil(total / max(1, part_rows)))
        # Deal tasks into parts round-robin in task-id order: balanced, and independent of the seed.
        tasks = tasks.with_columns((pl.col("tid") % nparts).cast(pl.UInt32).alias("part"))
    calls = (
        calls.join(tasks.drop("task_id"), on="task", how="left")
        .select("cid", pl.col("tid").alias("task"), pl.col("tool").cast(pl.Categorical), "fold", "part")
        .sort("cid")
    )
    tasks = tasks.drop("task")
    dropped = unclean if unclean.height else None
    from output_contracts.mining.patterns import patterns_of  # the pattern table reads through this module

    view = View.open(corpus)
    if view is not None:
        view = view.selecting(corpus, tools, dropped)
    patterns, literal, maps = patterns_of(corpus, tools, dropped, declared_maps, view)
    data = MiningData(
        corpus,
        calls,
        patterns,
        k,
        dropped,
        tuple(tools) if tools is not None else None,
        tasks,
        nparts,
        None,
        literal=literal,
        maps=maps,
        view=view,
        decode=None
        if view is None
        else ViewDecode.of(view, literal if literal is not None else patterns, tasks),
    )
    if nparts == 1:
        leaves, n_result = _read_leaves(data, 0, total)
        whole = Leaves(leaves, calls.drop("part"), patterns, k, n_result)
        return replace(data, whole=whole)
    if ranges is not None:
        starts = [sum(r.rows for r in ranges[:i]) for i in range(len(ranges))]
        return replace(data, ranges=tuple((st, r.rows) for st, r in zip(starts, ranges, strict=True)))
    spill = Path(tempfile.mkdtemp(prefix="contracts-mine-"))
    try:
        _spill(data, spill)
    except BaseException:
        shutil.rmtree(spill, ignore_errors=True)
        raise
    return replace(data, spill=spill)


@dataclass(frozen=True)
class Unit:
    """Consecutive rows of a format-2 `leaves.parquet` (a row group, a task, or a part) and the first
    and last task they hold."""

    rows: int
    first_task: str
    last_task: str


def plan_parts(units: Sequence[Unit], part_rows: int) -> list[Unit]:
    """Cut consecutive units into parts of at most `part_rows` rows, only where no task straddles the
    cut (the last task of one unit is not the first of the next); a part exceeds `part_rows` only when
    a task (with the rest of its unit) does."""
    parts: list[Unit] = []
    cur: Unit | None = None
    for i, u in enumerate(units):
        if cur is not None and cur.rows + u.rows > part_rows and units[i - 1].last_task != u.first_task:
            parts.append(cur)
            cur = None
        cur = u if cur is None else Unit(cur.rows + u.rows, cur.first_task, u.last_task)
    if cur is not None:
        parts.append(cur)
    return parts


def _units(corpus: Corpus, groups: Sequence[LeafGroup], part_rows: int) -> list[Unit]:
    """What parts are made of: the row groups, as `corpus.json` records them (nothing is read), or,
    when a part is to hold fewer rows than a row group, each task's run of rows (read from the task
    column alone)."""
    if all(g.rows <= part_rows for g in groups):
        return [Unit(g.rows, g.first_task, g.last_task) for g in groups]
    runs = corpus.scan_leaves().select(pl.col("task_id").cast(pl.String).rle()).collect().unnest("task_id")
    return [Unit(n, t, t) for n, t in runs.iter_rows()]


def _spill(data: MiningData, where: Path) -> None:
    """Write every clean leaf, compact, into the folder of its task part: one pass over the corpus,
    after which a part is read without scanning the others (`MiningData.part`)."""
    part_of = dict(zip(data.tasks["tid"].to_list(), data.tasks["part"].to_list(), strict=True))
    for b in range(data.nparts):
        (where / f"part-{b:05d}").mkdir()
    for i, start in enumerate(range(0, max(leaf_rows(data.corpus), 1), READ_CHUNK_ROWS)):
        chunk, _ = _read_chunk(data, start, READ_CHUNK_ROWS)
        chunk = chunk.with_columns(
            pl.col("task").replace_strict(part_of, return_dtype=pl.UInt32).alias("_part")
        )
        for (b, side), frame in chunk.partition_by("_part", "side", as_dict=True, include_key=False).items():
            with reading(where, writing=True):  # the scratch folder of the spilled parts
                frame.with_columns(pl.lit(side, pl.Enum(["arg", "result"])).alias("side")).select(
                    LEAF_COLUMNS
                ).write_parquet(
                    where / f"part-{int(b):05d}" / f"{side}-{i:06d}.parquet",
                    compression="lz4",
                    statistics=False,
                )
        del chunk


def _empty_leaves() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "cid": pl.UInt64,
            "task": pl.UInt32,
            "pid": pl.UInt32,
            "side": pl.Enum(["arg", "result"]),
            "path": pl.String,
            "code": pl.UInt8,
            "cls": pl.UInt8,
            "num": pl.Float64,
            "str": pl.String,
            "len": pl.Int64,
            "fold": pl.Int32,
        }
    )


def _read_leaves(data: MiningData, begin: int, end: int) -> tuple[pl.DataFrame, int]:
    """The clean leaves among file rows [begin, end), with global task and pattern ids, read in chunks
    of READ_CHUNK_ROWS file rows; result-side rows first (so `Leaves.result` is a slice), and their
    count."""
    results, args = [], []
    for start in range(begin, max(end, begin + 1), READ_CHUNK_ROWS):
        chunk, n = _read_chunk(data, start, max(1, min(READ_CHUNK_ROWS, end - start)))
        results.append(chunk.slice(0, n))
        args.append(chunk.slice(n))
        del chunk
    n_result = sum(c.height for c in results)
    return with_codes(pl.concat(results + args, rechunk=False)), n_result


def with_codes(leaves: pl.DataFrame) -> pl.DataFrame:
    """`leaves` with `sc`, a UInt32 code per string (equal strings, equal codes; null for non-strings),
    so that distinct counts and per-value group-bys run on integers. The view's codes are kept as read
    (per corpus); leaves read without a view get codes of this one frame (a single categorical cast):
    such codes are comparable within the frame only."""
    if "sc" in leaves.columns:
        return leaves
    return leaves.with_columns(pl.col("str").cast(pl.Categorical).to_physical().cast(pl.UInt32).alias("sc"))


def _read_chunk(data: MiningData, start: int, rows: int) -> tuple[pl.DataFrame, int]:
    """The clean leaves among file rows [start, start + rows) with global ids, the result side's rows
    first (each side in file order), and how many those are."""
    if data.view is not None:
        return _read_view_chunk(data, data.view, start, rows)
    lf = scan_leaves(data.corpus, None).slice(
        start, rows
    )  # the slice comes first: it is a range of file rows
    if data.tools is not None:
        lf = lf.filter(pl.col("tool").cast(pl.String).is_in(list(data.tools)))
    if data.unclean is not None:
        lf = lf.filter(~pl.col("cid").is_in(data.unclean["cid"].implode()))
    code = pl.col("kind").to_physical()
    raw = lf.select(
        "cid",
        pl.col("task_id").to_physical().alias("tcode"),
        tp_expr(),
        "task_id",
        "tool",
        "side",
        "pattern",
        "path",
        code.alias("code"),
        pl.when(code == KIND_CODE["float"]).then(pl.lit(CLS_NUM, pl.UInt8)).otherwise(code).alias("cls"),
        "num",
        "str",
        "len",
    ).collect()
    # Codes are consistent within this one frame: map them to the global ids through small tables,
    # column by column (the untouched columns are shared, not copied).
    tp_pid = tp_patterns(raw).join(
        (data.literal if data.literal is not None else data.patterns).select(
            "tool", "side", "pattern", "pid", "wild"
        ),
        on=["tool", "side", "pattern"],
    )
    t_tid = (
        raw.group_by("tcode")
        .agg(pl.col("task_id").first().cast(pl.String))
        .join(data.tasks.select("task_id", "tid", "fold"), on="task_id")  # only clean tasks
    )
    pid_of = dict(zip(tp_pid["tp"].to_list(), tp_pid["pid"].to_list(), strict=True))
    tid_of = dict(zip(t_tid["tcode"].to_list(), t_tid["tid"].to_list(), strict=True))
    fold_of = dict(zip(t_tid["tcode"].to_list(), t_tid["fold"].to_list(), strict=True))
    wild = tp_pid.filter(pl.col("wild"))["tp"]
    out = raw.select(
        "cid",
        pl.col("tcode").replace_strict(tid_of, default=None, return_dtype=pl.UInt32).alias("task"),
        pl.col("tp").replace_strict(pid_of, default=None, return_dtype=pl.UInt32).alias("pid"),
        "side",
        pl.when(pl.col("tp").is_in(wild.implode())).then(pl.col("path")).alias("path"),
        "code",
        "cls",
        "num",
        "str",
        "len",
        pl.col("tcode").replace_strict(fold_of, default=None, return_dtype=pl.Int32).alias("fold"),
    )
    del raw
    if out["task"].null_count() or out["pid"].null_count():  # leaves of tasks without a clean call
        out = out.filter(pl.col("task").is_not_null() & pl.col("pid").is_not_null())
    is_result = pl.col("side") == "result"
    results = out.filter(is_result)
    return pl.concat([results, out.filter(~is_result)]), results.height


@dataclass(frozen=True)
class ViewDecode:
    """What turns view rows into mining rows, built once per load (each read of a chunk gathers from
    these dense tables: no hashing per row, and nothing recomputed per chunk).

    Per lpat: `pid` (null: a pattern without a clean call), `side`, `fill` (the lpat itself where the
    row's path is its literal pattern: a map key generalized; else null), `pattern` (the literal
    pattern). `task_codes`: the string codes of the clean tasks' ids, sorted, with `task_tids` their
    tids (a row's task code not among them is not a clean task's). Per tid: `fold`."""

    pid: pl.Series
    side: pl.Series
    fill: pl.Series
    pattern: pl.Series
    task_codes: pl.Series
    task_tids: pl.Series
    fold: pl.Series

    @staticmethod
    def of(view: View, table: pl.DataFrame, tasks: pl.DataFrame) -> ViewDecode:
        """From the view, the literal-pattern table (tool, side, pattern, pid, wild) and the tasks."""
        lp = view.lpats.join(
            table.select("tool", "side", "pattern", "pid", "wild"), on=["tool", "side", "pattern"], how="left"
        ).sort("lpat")
        # the path of a wildcard pattern's row: the view's (literal patterns with `*`), else the literal
        # pattern (a map key generalized: the literal pattern is the path); null for other patterns
        fill = lp.select(
            pl.when(pl.col("wild") & pl.col("pattern").str.contains(WILD_TOKEN).not_()).then(pl.col("lpat"))
        ).to_series()
        coded = pl.DataFrame({"code": view.codes(tasks["task_id"]), "tid": tasks["tid"]}).sort("code")
        return ViewDecode(
            lp["pid"],
            lp["side"].cast(pl.Enum(["arg", "result"])),
            fill,
            lp["pattern"],
            coded["code"],
            coded["tid"],
            tasks.sort("tid")["fold"],
        )

    def tids(self, codes: pl.Series) -> pl.Series:
        """The tid of each task code (null: not a clean task's)."""
        if self.task_codes.len() == 0:
            return pl.Series("tid", [None] * codes.len(), pl.UInt32)
        # once per run of equal codes (a part's rows come task by task)
        values = codes.rle().struct.field("value")
        at = self.task_codes.search_sorted(values).clip(0, self.task_codes.len() - 1)
        found = self.task_codes.gather(at) == values
        per_run = pl.select(pl.when(found).then(self.task_tids.gather(at))).to_series()
        return per_run.gather(codes.rle_id()).alias("tid")


def _read_view_chunk(data: MiningData, view: View, start: int, rows: int) -> tuple[pl.DataFrame, int]:
    """`_read_chunk` from the mining view: the same rows, in the same order, with the same columns,
    plus `sc`, the string's code (equal strings, equal codes); ids come from small lookup tables
    (`ViewDecode`, built by `load`) instead of decoding strings, call keys and string texts from the
    same rows of `leaves.parquet`. The rows are put result side first, each side in file order."""
    raw = view.read_with_leaves(start, rows)
    dec = data.decode
    assert dec is not None, "load builds the view's lookup tables"
    tid = dec.tids(raw["task"])
    pid = dec.pid.gather(raw["lpat"])
    is_result = dec.side.gather(raw["lpat"]) == "result"
    # one mask per side (the selection's, and tasks and patterns without a clean call) and one filter
    # each: every column is copied once (two sequential filters measured faster than a gather in a new
    # order, and than a filter for the selection followed by the two)
    keep = view.kept(raw)
    if tid.null_count() or pid.null_count():  # leaves of tasks without a clean call
        known = tid.is_not_null() & pid.is_not_null()
        keep = known if keep is None else keep & known
    is_arg = is_result.not_()
    if keep is not None:
        is_result, is_arg = keep & is_result, keep & is_arg
    n_result = int(is_result.sum())
    n_arg = int(is_arg.sum())
    raw = raw.with_columns(tid.alias("_tid"), pid.alias("_pid"))
    if n_result + n_arg < raw.height or (
        n_arg and n_result and is_result.arg_true()[-1] > is_arg.arg_true()[0]
    ):
        raw = pl.concat([raw.filter(is_result), raw.filter(is_arg)])
    else:
        raw = raw.rechunk()
    tid, pid = raw["_tid"], raw["_pid"]
    lpat = raw["lpat"]
    kind = raw["kind"]
    frame = pl.DataFrame(
        {
            "cid": raw["cid"],
            "task": tid,
            "pid": pid,
            "side": dec.side.gather(lpat),
            "path": _fill_paths(raw["path"], dec.fill.gather(lpat), dec.pattern),
            "code": kind,
            "cls": pl.select(
                pl.when(kind == KIND_CODE["float"]).then(pl.lit(CLS_NUM, pl.UInt8)).otherwise(kind)
            ).to_series(),
            "num": raw["num"],
            "str": raw["text"],
            "len": raw["len"],
            "fold": dec.fold.gather(tid),
            "sc": raw["str"],
        }
    )
    return frame, n_result


def _fill_paths(path: pl.Series, fill: pl.Series, patterns: pl.Series) -> pl.Series:
    """`path` with the rows where `fill` holds a literal pattern id set to that pattern (only those
    rows are written: most rows need none)."""
    at = fill.is_not_null().arg_true()
    if at.len() == 0:
        return path
    return path.scatter(at, patterns.gather(fill.gather(at)))


def sample_filter(calls: pl.DataFrame) -> pl.Expr:
    """Which leaves make up the candidate sample: the numbers and arrays (their lengths: RELATION's
    count_of) of the first SAMPLE_CALLS calls per (tool, fold) (RELATION) and the scalars of the first
    ECHO_SAMPLE_CALLS (ECHO). Bounded by the number of tools and folds, not by the corpus."""
    rel = first_calls(calls, SAMPLE_CALLS)["cid"]
    echo = first_calls(calls, ECHO_SAMPLE_CALLS)["cid"]
    return (pl.col("cid").is_in(rel.implode()) & pl.col("cls").is_in([CLS_NUM, CLS_ARR])) | (
        pl.col("cid").is_in(echo.implode()) & pl.col("cls").is_in(SCALAR_CLASSES)
    )


def group_key(cls: bool = True) -> pl.Expr:
    """UInt64 key of (pid, kind class, fold): pid << 16 | cls << 8 | fold."""
    key = pl.col("pid").cast(_U64) * 65536 + pl.col("fold").cast(_U64)
    if cls:
        key = key + pl.col("cls").cast(_U64) * 256
    return key.alias("key")


def decode_key(df: pl.DataFrame, patterns: pl.DataFrame, cls: bool = True) -> pl.DataFrame:
    """Split a `group_key` column back into pid, cls, fold and add the pattern's tool and pattern."""
    out = df.with_columns(
        (pl.col("key") // 65536).cast(pl.UInt32).alias("pid"),
        (pl.col("key") % 256).cast(pl.Int32).alias("fold"),
    )
    if cls:
        out = out.with_columns(((pl.col("key") // 256) % 256).cast(pl.UInt8).alias("cls"))
    return out.drop("key").join(patterns.select("pid", "tool", "pattern"), on="pid", how="left")


def path_stats_part(part: Leaves) -> pl.DataFrame:
    """Per (tool, pattern, cls, fold) statistics of the RESULT nodes of one task part (see
    `merge_path_stats`)."""
    if part.k > 255:
        raise MiningError(f"at most 255 folds are supported, got {part.k}", field="folds")
    # One group-by over the result rows (a slice, not a copy); a second over the wildcard patterns'
    # rows only, whose calls must be counted distinct. Run one after the other: each holds its own
    # working set.
    res = part.result().lazy().with_columns(group_key())
    wild = part.patterns.filter(pl.col("wild"))["pid"]
    base = (
        res.group_by("key")
        .agg(
            pl.len().alias("n"),
            (pl.col("code") == KIND_CODE["int"]).sum().alias("n_int"),
            pl.col("task").n_unique().alias("tasks"),
            pl.col("num").min().alias("min"),
            pl.col("num").max().alias("max"),
            pl.col("sc").n_unique().alias("ndist"),  # codes: one per distinct string, null for null
            pl.col("len").min().alias("min_len"),
            fold_examples(distinct=False),
        )
        .collect()
    )
    # Strings that start like a date, tested once per distinct string (code) of a date's length, not
    # once per row; the rows holding one are then counted per group on integers (a group without one
    # gets no row here: the left join below gives it n_date 0 and no years).
    sized = res.filter(pl.col("sc").is_not_null() & pl.col("len").is_between(10, 40)).select(
        "key", "sc", "str"
    )
    years = (
        sized.group_by("sc")
        .agg(pl.col("str").first())
        .filter(pl.col("str").str.contains(DATE_LIKE))
        .select("sc", pl.col("str").str.slice(0, 4).cast(pl.Int32, strict=False).alias("year"))
    )
    dates = (
        sized.select("key", "sc")
        .join(years, on="sc")
        .group_by("key")
        .agg(
            pl.len().cast(pl.UInt32).alias("n_date"),
            pl.col("year").min().alias("min_year"),
            pl.col("year").max().alias("max_year"),
        )
        .collect()
    )
    calls = (
        res.filter(pl.col("pid").is_in(wild.implode()))
        .group_by("key")
        .agg(pl.col("cid").n_unique().alias("calls_w"), fold_examples().alias("ex_w"))
        .collect()
    )
    # The lowest two octaves of the whole numbers >= 1 (the sign rule's evidence about 0): each int's
    # octave, the group's least one broadcast, then only the rows in the lowest two are grouped.
    octave = pl.col("num").log(2).floor()
    low = (
        res.filter((pl.col("code") == KIND_CODE["int"]) & (pl.col("num") >= 1))
        .select("key", "task", octave.alias("oct"))
        .with_columns(pl.col("oct").min().over("key").alias("lowbin"))
        .filter(pl.col("oct") <= pl.col("lowbin") + 1)
        .group_by("key")
        .agg(
            pl.col("lowbin").first(),
            pl.col("task").filter(pl.col("oct") == pl.col("lowbin")).n_unique().alias("n_low1"),
            pl.col("task").n_unique().alias("n_low2"),
        )
        .collect()
    )
    out = decode_key(
        base.join(dates, on="key", how="left")
        .with_columns(pl.col("n_date").fill_null(0))
        .select(*base.columns[:6], "n_date", "min_year", "max_year", *base.columns[6:])
        .join(calls, on="key", how="left")
        .join(low, on="key", how="left")
        .with_columns(
            pl.coalesce("calls_w", "n").alias("calls"),
            pl.coalesce("ex_w", "ex").alias("ex"),
        )
        .drop("calls_w", "ex_w"),
        part.patterns,
    )
    # distinct strings: meaningful for the string class only (elsewhere `str` is null)
    return out.with_columns(
        pl.when(pl.col("cls") == CLS_STR).then(pl.col("ndist")).otherwise(0).cast(pl.UInt32).alias("ndist")
    )


#: An ISO-8601 date at the start of a string (DATE_ORDER's candidate test, counted in `path_stats`).
DATE_LIKE = r"^\d{4}-\d{2}-\d{2}"


def merge_path_stats(per_fold: Sequence[pl.DataFrame], k: int) -> pl.DataFrame:
    """Per (tool, pattern, cls, checker) statistics of RESULT nodes, merged from per-(part, fold) ones.

    Columns: n (nodes), n_int (int nodes), calls, tasks (distinct; summed over parts and folds because
    each call and task belongs to one part and one fold), min, max (numbers), lowbin, n_low1, n_low2
    (`low_octave_aggs`), ndist
    (distinct strings:
    the largest part-and-fold count, a lower bound of the checker's used only to screen DOMAIN
    candidates), n_date (strings that start like an ISO date), min_len (the least `len`: elements of an
    array, characters of a string, keys of an object), min_year, max_year (of the strings that start like
    an ISO date), ex (example cids). A pattern without
    wildcards has at most one node per call, so its call count is its node count; distinct calls are
    counted only for wildcard patterns.
    """
    return by_checker(
        pl.concat(per_fold),
        ["tool", "pattern", "cls"],
        [
            pl.col("n").sum(),
            pl.col("n_int").sum(),
            pl.col("calls").sum(),
            pl.col("tasks").sum(),
            pl.col("min").min(),
            pl.col("max").max(),
            *low_octave_aggs(),
            pl.col("ndist").max(),
            pl.col("n_date").sum(),
            pl.col("min_len").min(),
            pl.col("min_year").min(),
            pl.col("max_year").max(),
            merged_examples(),
        ],
        k,
    )
