"""The integer-coded mining view of a corpus (format 3): `view.parquet` and its two dictionaries.

Mining reads every leaf row, but needs none of the strings `leaves.parquet` repeats on every row
(tool, side, pattern, task id, call id): decoding those categoricals and mapping them to dense ids by
value was most of mining's load phase. Ingest therefore writes, beside `leaves.parquet` and in the
same row order (so its row-group task ranges in `corpus.json` index the view too):

- `view.parquet`: one row per leaf — `call` (UInt32: the call's rank among the corpus's `cid`s in
  increasing order, so sorting by `call` is sorting by `cid`), `task` (UInt32: the task id's code in
  `view_strings.parquet`), `lpat` (UInt32: the literal (tool, side, pattern) in
  `view_patterns.parquet`), `kind` (UInt8: the index in `output_contracts.traces.pointers.KINDS`),
  `path` (String, only where the pattern holds a wildcard token `*`: elsewhere the path is the
  pattern),
  `num`, `len` (as in leaves.parquet), `str` (UInt32: the string's code in `view_strings.parquet`,
  null for non-strings);
- `view_strings.parquet`: `str` (String), every distinct string value and task id of the corpus, sorted
  (bytewise), so a code's order is its string's order; the code is the row number;
- `view_patterns.parquet`: `tool`, `side`, `pattern` (Strings), sorted; the `lpat` is the row number.

Codes are stable across reads: they are row numbers of files written once, never a Categorical's
physical codes (which differ between queries). Per-corpus codes, not per-pattern ones: equal strings
have one code wherever they occur, so a code can be compared across patterns (ECHO pairs an argument
with a result, map keys merge several literal patterns into one, pools merge patterns).

Ingest builds the view from the leaf frames it writes (`ViewStage`: each frame coded against its own
small dictionaries as it is written, staged, and mapped to the corpus's codes at commit by
`write_staged`), so the leaves are never read back. The tests hold those bytes to a reference that
builds the view by reading the finished corpus files back (tests/traces/view_reference.py).

Corpora of format 1 and 2 have no view: mining reads `leaves.parquet` as before
(`output_contracts.mining.data`); `contracts ingest` into such a corpus rewrites it at format 3.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from output_contracts.errors import reading
from output_contracts.frames import ExactGroups, detach, write_ipc
from output_contracts.traces.leaves import tp_expr, tp_patterns

VIEW_FILE = "view.parquet"
VIEW_STRINGS_FILE = "view_strings.parquet"
VIEW_PATTERNS_FILE = "view_patterns.parquet"
VIEW_FILES = (VIEW_FILE, VIEW_STRINGS_FILE, VIEW_PATTERNS_FILE)

#: Column order and types of the three files.
VIEW_SCHEMA: dict[str, pl.DataType] = {
    "call": pl.UInt32(),
    "task": pl.UInt32(),
    "lpat": pl.UInt32(),
    "kind": pl.UInt8(),
    "path": pl.String(),
    "num": pl.Float64(),
    "len": pl.Int64(),
    "str": pl.UInt32(),
}
VIEW_STRINGS_SCHEMA: dict[str, pl.DataType] = {"str": pl.String()}
VIEW_PATTERNS_SCHEMA: dict[str, pl.DataType] = {
    "tool": pl.String(),
    "side": pl.String(),
    "pattern": pl.String(),
}
VIEW_SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    VIEW_FILE: VIEW_SCHEMA,
    VIEW_STRINGS_FILE: VIEW_STRINGS_SCHEMA,
    VIEW_PATTERNS_FILE: VIEW_PATTERNS_SCHEMA,
}

#: A pattern holding an array-index wildcard token (`/items/*/price`): its rows keep their path.
WILD_TOKEN = r"(^|/)\*(/|$)"
#: Rows per row group of `view.parquet`.
ROW_GROUP_ROWS = 1_000_000
#: Rows per row group of `view_strings.parquet`.
STRINGS_GROUP_ROWS = 128 * 1024
#: Staged strings (a frame's distinct strings, summed over frames) per value range of the commit's
#: union: the union is built one range at a time, so its memory does not grow with the corpus.
UNION_STRINGS = 2_000_000
#: Every `SAMPLE_EVERY`-th string of a frame's sorted strings is kept to cut the value ranges.
SAMPLE_EVERY = 256


class ViewStage:
    """The view rows of leaf frames in the order they are written to `leaves.parquet`, each coded
    against its own dictionaries (string values and task ids; (tool, side, pattern)), staged as Arrow
    files in `folder`; `write_staged` maps the codes to the corpus's once every frame is known.

    Why: the corpus's dictionaries are known only at commit, when the leaves are on disk; reading them
    back and coding every row by value against the corpus's dictionaries cost ingest a fifth of its
    time. A frame's rows are still in memory when it is written, and its own dictionaries
    are small. Calls and tasks come in runs (a call's leaves are contiguous, the frame is ordered by
    task), so they are staged as runs, not per row; the commit maps small tables and repeats runs."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.rows = 0
        #: per staged frame: its rows file, its call runs file (`cid`, `n`), its strings file (`str`,
        #: sorted and distinct; a local code is a row number), its task runs file (`task`: a local
        #: string code, `n`) and its patterns (`tool`, `side`, `pattern`; a local lpat is a row number)
        self.frames: list[tuple[Path, Path, Path, Path, pl.DataFrame]] = []
        #: every `SAMPLE_EVERY`-th string of each frame's sorted strings: where the union's value
        #: ranges are cut (`_cuts`)
        self.sample: list[pl.Series] = []
        #: the frames' distinct strings, summed
        self.strings = 0

    def add(self, leaves: pl.DataFrame) -> None:
        """Stage the view rows of `leaves` (a frame with the corpus leaf schema, in written order)."""
        if leaves.height == 0:
            return
        # Categorical codes hold within this one frame: (tool, side, pattern) as one integer
        tp = leaves.select(tp_expr()).to_series()
        pats = tp_patterns(leaves.select("tool", "side", "pattern").with_columns(tp))
        calls = leaves.get_column("cid").rle().struct.unnest()
        tasks = leaves.get_column("task_id").rle().struct.unnest()
        task_names = tasks.get_column("value").cast(pl.String).alias("str")
        strings = (
            pl.concat([leaves.select(pl.col("str").drop_nulls()), task_names.to_frame()]).unique().sort("str")
        )
        # detached: the sample's strings would be views pinning the whole frame's strings
        self.sample.append(detach(strings.select(pl.col("str").gather_every(SAMPLE_EVERY)))["str"])
        self.strings += strings.height
        wild = pats.filter(pl.col("pattern").str.contains(WILD_TOKEN)).get_column("tp")
        local = pl.DataFrame(
            [
                tp.replace_strict(pats["tp"], pl.int_range(pats.height, dtype=pl.UInt32, eager=True)).alias(
                    "lpat"
                ),
                leaves["kind"].to_physical().cast(pl.UInt8).alias("kind"),
                leaves.select(pl.when(tp.is_in(wild.implode())).then(pl.col("path")).alias("path"))["path"],
                leaves["num"],
                leaves["len"],
                # a hash join against the frame's dictionary (nulls match nothing: non-strings stay null)
                leaves.select("str")
                .join(strings.with_row_index("code"), on="str", how="left", maintain_order="left")["code"]
                .cast(pl.UInt32)
                .alias("str"),
            ]
        )
        runs = pl.DataFrame([calls["value"].alias("cid"), calls["len"].cast(pl.UInt32).alias("n")])
        # task runs coded against the frame's strings (task ids are among them), spilled with the rows
        task_runs = pl.DataFrame(
            [
                task_names.to_frame()
                .join(strings.with_row_index("code"), on="str", how="left", maintain_order="left")["code"]
                .cast(pl.UInt32)
                .alias("task"),
                tasks["len"].cast(pl.UInt32).alias("n"),
            ]
        )
        k = len(self.frames)
        rows_file, runs_file, tasks_file = (
            self.folder / f"{self.name}-{k:05d}.arrow",
            self.folder / f"{self.name}-runs-{k:05d}.arrow",
            self.folder / f"{self.name}-tasks-{k:05d}.arrow",
        )
        with reading(rows_file, writing=True):
            write_ipc(local, rows_file)
            write_ipc(runs, runs_file)
            write_ipc(task_runs, tasks_file)
        strings_file = self.folder / f"{self.name}-strings-{k:05d}.arrow"
        with reading(strings_file, writing=True):
            write_ipc(strings, strings_file)
        self.frames.append(
            (rows_file, runs_file, strings_file, tasks_file, pats.select("tool", "side", "pattern"))
        )
        self.rows += local.height


def write_staged(stage: ViewStage, calls: Path, target: Callable[[str], Path]) -> dict[str, dict[str, Any]]:
    """Write the view of the staged frames (the whole `leaves.parquet`, in order) and the corpus calls
    file `calls` to `target(name)` for each of `VIEW_FILES`: the bytes of a view built by reading those
    files back; return the `corpus.json` file entries (rows, columns) of the three."""
    pattern_parts = [f[4] for f in stage.frames] or [pl.DataFrame(schema=VIEW_PATTERNS_SCHEMA)]
    patterns = pl.concat(pattern_parts).unique().sort("tool", "side", "pattern")
    cids = _sorted_cids(calls)
    schema = pl.DataFrame(schema=VIEW_SCHEMA).to_arrow().schema
    lpat_of = patterns.with_row_index("lpat")
    with reading(target(VIEW_STRINGS_FILE), writing=True):
        n_strings, maps = _union(stage, target(VIEW_STRINGS_FILE))
        patterns.write_parquet(target(VIEW_PATTERNS_FILE))
        with maps, pq.ParquetWriter(target(VIEW_FILE), schema, compression="zstd") as w:
            # row groups of exactly ROW_GROUP_ROWS rows, as a view read back from the files has them
            groups = ExactGroups(lambda rows: _write_rows(w, rows, schema), ROW_GROUP_ROWS)
            for k, (rows_file, runs_file, _, tasks_file, local_pats) in enumerate(stage.frames):
                smap = maps.frame(k)
                pmap = local_pats.join(
                    lpat_of, on=["tool", "side", "pattern"], how="left", maintain_order="left"
                )["lpat"]
                local = pl.read_ipc(rows_file)
                runs = pl.read_ipc(runs_file)
                # runs repeated: a call's rank, a task's code
                call = np.repeat(np.searchsorted(cids, runs["cid"].to_numpy()).astype(np.uint32), runs["n"])
                tasks = pl.read_ipc(tasks_file)
                task = np.repeat(smap.gather(tasks["task"]).to_numpy(), tasks["n"])
                groups.add(
                    pl.DataFrame(
                        [
                            pl.Series("call", call, dtype=pl.UInt32),
                            pl.Series("task", task, dtype=pl.UInt32),
                            pmap.gather(local["lpat"]).alias("lpat"),
                            local["kind"],
                            local["path"],
                            local["num"],
                            local["len"],
                            smap.gather(local["str"]).alias("str"),
                        ]
                    )
                )
            groups.close(pl.DataFrame(schema=VIEW_SCHEMA))
    return _entries(stage.rows, n_strings, patterns.height)


def _sorted_cids(calls: Path) -> np.ndarray:
    """The distinct `cid`s of the calls file, sorted (a call's `call` is its rank here): sorted in
    place, as a polars unique and sort held three copies of 10M keys at 10M calls."""
    cids = pl.read_parquet(calls, columns=["cid"])["cid"].to_numpy(writable=True)
    cids.sort()
    if cids.size > 1 and bool((cids[1:] == cids[:-1]).any()):
        cids = np.unique(cids)  # a call id seen twice (never, as ingest writes calls): its one rank
    return cids


_STR = pa.schema([("str", pa.large_string())])
_CODE = pa.schema([("code", pa.uint32())])


class _Maps:
    """Per staged frame, the corpus code of each of its strings (by local code), read from the value
    ranges' map files: range `r`'s file holds one batch per frame (the codes of the frame's strings in
    that range, in order), so a frame's map is its batches of every range, concatenated."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [pa.OSFile(str(p), "rb") for p in paths]
        self.readers = [pa.ipc.open_file(f) for f in self.files]

    def frame(self, k: int) -> pl.Series:
        parts = [pl.Series(r.get_batch(k).column(0)) for r in self.readers]
        return pl.concat(parts).rechunk() if len(parts) > 1 else parts[0]

    def __enter__(self) -> _Maps:
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self.files:
            f.close()


def _cuts(stage: ViewStage) -> pl.Series:
    """The strings that cut the union into value ranges of about `UNION_STRINGS` staged strings each
    (sorted, distinct; a range holds the strings from one cut, included, to the next, excluded):
    quantiles of the frames' samples, so they follow the data and are the same on every run."""
    n_ranges = max(1, -(-stage.strings // UNION_STRINGS))
    sample = pl.concat(stage.sample).sort() if stage.sample else pl.Series("str", [], pl.String)
    if n_ranges == 1 or sample.len() == 0:
        return pl.Series("str", [], pl.String)
    at = [sample.len() * i // n_ranges for i in range(1, n_ranges)]
    return sample.gather(at).unique(maintain_order=True)


def _union(stage: ViewStage, target: Path) -> tuple[int, _Maps]:
    """Write the sorted distinct strings of every staged frame (string values and task ids) to
    `target`, in row groups of `STRINGS_GROUP_ROWS`, and return their count and each frame's map from
    local to corpus codes.

    Why in value ranges: the union of a corpus's strings grows with it (14.2M distinct strings at 10M
    calls: about 1.5 GiB to hash, sort and search as one column). Each frame's sorted strings are cut
    at the same strings (`_cuts`) and spilled per range; a range's union is sorted and coded alone (its
    codes start where the previous range's end), and the codes of each frame's slice are spilled as
    that frame's batch of the range's map file. Memory is one range's strings."""
    cuts = _cuts(stage)
    n = cuts.len() + 1
    folder, name = stage.folder, stage.name
    spills = [folder / f"{name}-range-{r:05d}.arrow" for r in range(n)]
    map_paths = [folder / f"{name}-map-{r:05d}.arrow" for r in range(n)]
    # the frames' strings, cut into ranges: one batch per frame in every range file
    with _IpcWriters(spills, _STR) as writers:
        for frame in stage.frames:
            s = pl.read_ipc(frame[2])["str"]
            ends = [0, *s.search_sorted(cuts, side="left").to_list(), s.len()]
            for r, w in enumerate(writers):
                w.write_batch(_batch(s.slice(ends[r], ends[r + 1] - ends[r]), _STR))
    total = 0
    with (
        pq.ParquetWriter(target, _STR, compression="zstd") as out,
        _IpcWriters(map_paths, _CODE) as map_writers,
    ):
        groups = _strings_groups(out)
        for spill, mw in zip(spills, map_writers, strict=True):
            with pa.OSFile(str(spill), "rb") as f:
                reader = pa.ipc.open_file(f)
                sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
                staged = pl.Series("str", reader.read_all().column(0))
            union = staged.unique().sort()
            codes = (union.search_sorted(staged, side="left") + total).cast(pl.UInt32)
            start = 0
            for size in sizes:
                mw.write_batch(_batch(codes.slice(start, size), _CODE))
                start += size
            total += union.len()
            groups.add(union.to_frame())
            spill.unlink()
        groups.close(pl.DataFrame(schema=VIEW_STRINGS_SCHEMA))
    return total, _Maps(map_paths)


def _strings_groups(out: pq.ParquetWriter) -> ExactGroups:
    """`view_strings.parquet`'s row groups (of `STRINGS_GROUP_ROWS` strings) on `out`."""

    def write(strings: pl.DataFrame) -> None:
        batch = _batch(strings.get_column("str"), _STR)
        out.write_table(pa.Table.from_batches([batch]), row_group_size=STRINGS_GROUP_ROWS)

    return ExactGroups(write, STRINGS_GROUP_ROWS)


def write_strings(target: Path, strings: pl.Series) -> None:
    """`view_strings.parquet` of `strings` (sorted, distinct): the bytes `_union` writes (for the
    tests' reference view)."""
    with pq.ParquetWriter(target, _STR, compression="zstd") as out:
        groups = _strings_groups(out)
        groups.add(strings.alias("str").to_frame())
        groups.close(pl.DataFrame(schema=VIEW_STRINGS_SCHEMA))


def _batch(values: pl.Series, schema: pa.Schema) -> pa.RecordBatch:
    """One record batch of `values` (one chunk) under `schema`'s single column."""
    arr = values.rechunk().to_arrow().cast(schema.field(0).type)
    return pa.RecordBatch.from_arrays([arr], schema=schema)


class _IpcWriters:
    """Arrow IPC file writers on `paths` (lz4), closed together."""

    def __init__(self, paths: list[Path], schema: pa.Schema) -> None:
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        self.sinks = [pa.OSFile(str(p), "wb") for p in paths]
        self.writers = [pa.ipc.new_file(s, schema, options=options) for s in self.sinks]

    def __enter__(self) -> list[Any]:
        return self.writers

    def __exit__(self, *exc: object) -> None:
        for w, s in zip(self.writers, self.sinks, strict=True):
            w.close()
            s.close()


def _write_rows(w: pq.ParquetWriter, rows: pl.DataFrame, schema: Any) -> None:
    w.write_table(rows.cast(pl.Schema(VIEW_SCHEMA)).to_arrow().cast(schema), row_group_size=ROW_GROUP_ROWS)


def _entries(rows: int, n_strings: int, n_patterns: int) -> dict[str, dict[str, Any]]:
    """The `corpus.json` entries (rows, columns) of the three view files."""
    return {
        name: {"rows": n, "columns": [{"name": k, "type": str(v)} for k, v in VIEW_SCHEMAS[name].items()]}
        for name, n in ((VIEW_FILE, rows), (VIEW_STRINGS_FILE, n_strings), (VIEW_PATTERNS_FILE, n_patterns))
    }
