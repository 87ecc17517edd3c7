"""The Parquet corpus (DESIGN §2.3): file names, column schemas, and lazy read access.

Readers never load a whole corpus: `scan_*` return polars LazyFrames so callers select the columns
they need and let polars stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow.parquet as pq

from output_contracts.errors import ContractsError, TraceError, reading
from output_contracts.traces.leaves import LEAF_SCHEMA
from output_contracts.traces.mining_view import VIEW_FILES

#: Format 2 orders `leaves.parquet` by task and records each row group's task range (`LeafGroup`);
#: format 3 adds the integer-coded mining view (`output_contracts.traces.mining_view`). Corpora of
#: formats 1 (leaves in ingest order, no index) and 2 (no view) still open, and mining reads them the
#: old way (`Corpus.view` is None).
CORPUS_FORMAT_VERSION = 3
READABLE_FORMAT_VERSIONS = (1, 2, 3)
#: The formats whose `leaves.parquet` is ordered by task (with `row_groups` in `corpus.json`).
TASK_ORDERED_FORMAT_VERSIONS = (2, 3)
#: The corpus format that introduced the mining view: from it on, the view's rows follow `leaves.parquet`.
VIEW_FORMAT = 3
CALLS_FILE = "calls.parquet"
LEAVES_FILE = "leaves.parquet"
EPISODES_FILE = "episodes.parquet"
REJECTS_FILE = "rejects.jsonl"
MANIFEST_FILE = "corpus.json"

STATUS_DTYPE = pl.Enum(["ok", "error"])

#: Column order and types of `calls.parquet`. `arguments`, `result` and `labels` are canonical JSON text;
#: `result` is null for calls with status "error" and no result; `fault` is `labels.fault` (or null);
#: `index` numbers calls within their line/record; `meta` is adapter facts as JSON text (τ²-bench
#: `requestor`, OTel span ids), or null.
CALL_SCHEMA: dict[str, pl.DataType] = {
    "call_id": pl.String(),
    "cid": pl.UInt64(),
    "trace_id": pl.String(),
    "task_id": pl.Categorical(),
    "step": pl.Int64(),
    "tool": pl.Categorical(),
    "status": STATUS_DTYPE,
    "error": pl.String(),
    "arguments": pl.String(),
    "result": pl.String(),
    "started_at": pl.String(),
    "labels": pl.String(),
    "fault": pl.String(),
    "source": pl.String(),
    "line": pl.Int64(),
    "index": pl.Int64(),
    "meta": pl.String(),
}

#: Column order and types of `episodes.parquet`. `tools` is the JSON list of visible tools, or null;
#: `source` and `line` locate the episode's first record (or first call). `trial`, `agent_cost` and
#: `user_cost` are null unless the format records them (τ-bench, τ²-bench); corpora written before they
#: existed lack the three columns, and `Corpus.scan_episodes` adds them as nulls.
EPISODE_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "task_id": pl.Categorical(),
    "n_calls": pl.Int64(),
    "reward": pl.Float64(),
    "labels": pl.String(),
    "faulty": pl.Boolean(),
    "tools": pl.String(),
    "source": pl.String(),
    "line": pl.Int64(),
    "trial": pl.Int64(),
    "agent_cost": pl.Float64(),
    "user_cost": pl.Float64(),
}

#: The episode columns added after the first corpus format: absent from older corpora, read as null.
LATE_EPISODE_COLUMNS: dict[str, pl.DataType] = {
    "trial": pl.Int64(),
    "agent_cost": pl.Float64(),
    "user_cost": pl.Float64(),
}

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    CALLS_FILE: CALL_SCHEMA,
    LEAVES_FILE: LEAF_SCHEMA,
    EPISODES_FILE: EPISODE_SCHEMA,
}


@dataclass(frozen=True)
class LeafGroup:
    """One row group of a format-2 `leaves.parquet`: its rows and the first and last task it holds
    (tasks compared as strings: the file is sorted by `task_id`, stable, so a task's leaves are
    contiguous and keep their ingest order). A task may span several groups."""

    rows: int
    first_task: str
    last_task: str


@dataclass(frozen=True)
class Corpus:
    """A corpus folder. Use `Corpus.open` to check it exists and is a corpus."""

    path: Path

    @classmethod
    def open(cls, path: str | Path) -> Corpus:
        """Open an existing corpus folder (it must hold `corpus.json`), checked cheaply: the manifest
        parses and has this version, and every data file it lists exists with the size it records. A
        damaged corpus is a TraceError naming the damaged file (`contracts corpus verify` also
        recomputes the digests)."""
        p = Path(path)
        if not (p / MANIFEST_FILE).is_file():
            raise TraceError(
                f"not a corpus folder (no {MANIFEST_FILE}); create one with `contracts ingest`", source=str(p)
            )
        corpus = cls(p)
        man = corpus.manifest()
        from output_contracts.schemas import schema_errors

        # corpus.json has no digest of its own: its form is what can be checked (a key flipped by one
        # byte would otherwise surface as a KeyError deep inside a command)
        errs = schema_errors(man, "corpus-manifest")
        if errs:
            raise TraceError(
                f"damaged corpus: does not match its schema: {errs[0]}", source=str(p / MANIFEST_FILE)
            )
        check_files(p, man)
        _remember(p)
        return corpus

    @staticmethod
    def is_corpus(path: str | Path) -> bool:
        """True when `path` is a folder holding `corpus.json`."""
        return (Path(path) / MANIFEST_FILE).is_file()

    def manifest(self) -> dict[str, Any]:
        """The parsed `corpus.json` (a TraceError naming it when it is not a JSON object of this format)."""
        f = self.path / MANIFEST_FILE
        try:
            data = orjson.loads(f.read_bytes())
        except orjson.JSONDecodeError as e:
            raise TraceError(f"damaged corpus: not JSON ({e})", source=str(f)) from None
        if not isinstance(data, dict) or not isinstance(data.get("sources"), list):
            raise TraceError("damaged corpus: not a corpus manifest (no list of sources)", source=str(f))
        if data.get("format_version") not in READABLE_FORMAT_VERSIONS:
            raise TraceError(
                f"corpus format version {data.get('format_version')!r}, this contracts reads "
                f"{' and '.join(map(str, READABLE_FORMAT_VERSIONS))}: re-ingest the sources with this version",
                source=str(f),
            )
        return data

    def leaf_groups(self) -> tuple[LeafGroup, ...] | None:
        """The row groups of `leaves.parquet` with the task range each holds, in file order (the file
        is ordered by task), or None for a corpus of format 1 (leaves in ingest order, no index)."""
        entry = (self.manifest().get("files") or {}).get(LEAVES_FILE) or {}
        groups = entry.get("row_groups")
        if not isinstance(groups, list):
            return None
        return tuple(LeafGroup(int(g["rows"]), str(g["first_task"]), str(g["last_task"])) for g in groups)

    def view(self) -> Path | None:
        """The folder holding the mining view's files (`output_contracts.traces.mining_view`) when
        `corpus.json` lists them at format 3 or later, else None: mining and the checker then read
        `leaves.parquet`. A corpus rewritten at an older format may still list view files whose rows no
        longer follow its leaves: they are not used."""
        man = self.manifest()
        files = man.get("files") or {}
        if int(man.get("format_version", 1)) < VIEW_FORMAT:
            return None
        return self.path if all(name in files for name in VIEW_FILES) else None

    def sha256(self) -> str:
        """A digest of the corpus content: the sha256 of its sources' digests, in sorted order."""
        from output_contracts.jsonutil import json_sha256

        return json_sha256(sorted(s["sha256"] for s in self.manifest().get("sources", [])))

    def scan_calls(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path / CALLS_FILE)

    def scan_leaves(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path / LEAVES_FILE)

    def scan_episodes(self) -> pl.LazyFrame:
        """`episodes.parquet`, with the columns added since the first corpus format (`trial`,
        `agent_cost`, `user_cost`) as nulls when the corpus predates them."""
        lf = pl.scan_parquet(self.path / EPISODES_FILE)
        have = lf.collect_schema().names()
        missing = [pl.lit(None, dtype=t).alias(c) for c, t in LATE_EPISODE_COLUMNS.items() if c not in have]
        return lf.with_columns(missing) if missing else lf

    def rejects(self) -> list[dict[str, Any]]:
        """Every rejected line recorded in `rejects.jsonl`."""
        f = self.path / REJECTS_FILE
        if not f.exists():
            return []
        out = []
        for i, line in enumerate(f.read_bytes().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError as e:
                raise TraceError(f"damaged corpus: not JSON ({e})", source=str(f), line=i) from None
        return out


def check_files(path: Path, manifest: dict[str, Any]) -> None:
    """Every data file of the corpus exists, and has the size `corpus.json` records where it records one
    (corpora written before sizes were recorded are checked for presence only); each Parquet file's
    footer reads, with the row count and columns recorded (the conservation counts: calls, leaves,
    episodes), and rejects.jsonl holds the recorded number of lines. Footers only: cheap at any size;
    `verify_corpus` reads every byte."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise TraceError("damaged corpus: no file list", source=str(path / MANIFEST_FILE))
    for name in (CALLS_FILE, LEAVES_FILE, EPISODES_FILE, *(n for n in VIEW_FILES if n in files)):
        f = path / name
        if not f.is_file():
            raise TraceError(f"damaged corpus: {name} is missing (re-ingest its sources)", source=str(f))
        entry = files.get(name) or {}
        want = entry.get("bytes")
        if isinstance(want, int) and f.stat().st_size != want:
            raise TraceError(
                f"damaged corpus: {name} has {f.stat().st_size:,} bytes, corpus.json records {want:,}",
                source=str(f),
            )
        _check_footer(f, entry)
    rej = (files.get(REJECTS_FILE) or {}).get("rows")
    rejects = path / REJECTS_FILE
    if isinstance(rej, int) and rej > 0 and not rejects.is_file():
        raise TraceError(
            f"damaged corpus: {REJECTS_FILE} is missing ({rej} rejected lines recorded)",
            source=str(rejects),
        )
    if isinstance(rej, int) and rejects.is_file():
        with reading(rejects):
            lines = _count_lines(rejects)
        if lines != rej:
            raise TraceError(
                f"damaged corpus: {REJECTS_FILE} has {lines:,} lines, corpus.json records {rej:,}",
                source=str(rejects),
            )


def _check_footer(f: Path, entry: dict[str, Any]) -> None:
    """The Parquet footer of `f` reads and agrees with `entry` (rows, column names)."""
    groups = entry.get("row_groups")
    try:
        schema = pl.read_parquet_schema(f)
        rows = pl.scan_parquet(f).select(pl.len()).collect().item()  # from the footer's row-group counts
        # pyarrow reads the footer more strictly than polars: a footer polars accepts may still not decode
        meta = pq.ParquetFile(f).metadata if isinstance(groups, list) else None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TraceError(
            f"damaged corpus: {f.name} has no readable Parquet footer ({first})", source=str(f)
        ) from e
    want_rows = entry.get("rows")
    if isinstance(want_rows, int) and rows != want_rows:
        raise TraceError(
            f"damaged corpus: {f.name} has {rows:,} rows, corpus.json records {want_rows:,}", source=str(f)
        )
    cols = entry.get("columns")
    if isinstance(cols, list) and [c.get("name") for c in cols if isinstance(c, dict)] != list(schema):
        raise TraceError(
            f"damaged corpus: {f.name} has other columns than corpus.json records", source=str(f)
        )
    if meta is not None and isinstance(groups, list):  # the task index mining reads parts by
        have = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        if have != [g.get("rows") for g in groups if isinstance(g, dict)]:
            raise TraceError(
                f"damaged corpus: {f.name} has other row groups than corpus.json records", source=str(f)
            )


def _count_lines(p: Path) -> int:
    n = 0
    with p.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


#: Corpora this process opened (most recent last, at most 8): a Parquet file that does not decode shows
#: only later, when a lazy scan is collected, and without its file name; `explain_decode_error` traces it
#: back to the file.
_OPENED: list[Path] = []


def _remember(p: Path) -> None:
    key = p.resolve()
    if key in _OPENED:
        _OPENED.remove(key)
    _OPENED.append(key)
    del _OPENED[:-8]


def explain_decode_error(e: BaseException) -> TraceError | None:
    """The damaged file behind an error escaping a command (polars says what broke, not where; a page
    that decodes into garbage fails later, in whatever reads it): the first problem `verify_corpus`
    finds in the corpora this process opened, most recent first. Run only on that error path, so its
    full read costs nothing otherwise. None when every corpus verifies."""
    for p in reversed(list(_OPENED)):
        try:
            problems = verify_corpus(p)
        except ContractsError:
            continue
        if problems:
            name, _, why = problems[0].partition(": ")
            what = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return TraceError(
                f"damaged corpus: {why}; reading it failed ({what}); `contracts corpus verify` lists "
                "every damaged file",
                source=str(p / name),
            )
    return None


def verify_corpus(path: str | Path) -> list[str]:
    """Recompute every recorded digest and row count of a corpus: the problems found (empty when it is
    intact). Slower than `Corpus.open`'s size check: it reads every byte."""
    from output_contracts.jsonutil import file_sha256

    p = Path(path)
    corpus = Corpus.open(p)  # corpus.json: parsed and checked against its schema there
    problems: list[str] = []
    files = corpus.manifest()["files"]
    for name, entry in sorted(files.items()):
        f = p / name
        if not f.is_file():
            if entry.get("rows"):
                problems.append(f"{name}: missing")
            continue
        want = entry.get("sha256")
        if want is not None and file_sha256(f) != want:
            problems.append(f"{name}: sha256 differs from corpus.json (the file was changed)")
            continue
        if name.endswith(".parquet"):
            try:
                rows = pl.scan_parquet(f).select(pl.len()).collect().item()
                columns = [
                    {"name": k, "type": str(v)} for k, v in pl.scan_parquet(f).collect_schema().items()
                ]
            except Exception as e:
                problems.append(f"{name}: unreadable Parquet ({str(e).splitlines()[0]})")
                continue
            if rows != entry.get("rows"):
                problems.append(f"{name}: {rows} rows, corpus.json records {entry.get('rows')}")
            if "columns" in entry and columns != entry["columns"]:
                problems.append(f"{name}: its columns differ from those corpus.json records")
    return problems


def corpus_info(path: str | Path) -> dict[str, Any]:
    """A JSON-ready summary of a corpus: sources, row counts, tools with call counts, rejects.

    Counts come from the files themselves (lazy scans of a few columns), not only from `corpus.json`,
    so the summary also shows a corpus someone edited by hand as it really is.
    """
    corpus = Corpus.open(path)
    man = corpus.manifest()
    calls = corpus.scan_calls()
    tools = (
        calls.group_by(pl.col("tool").cast(pl.String))
        .agg(
            pl.len().alias("calls"),
            (pl.col("status") == "error").sum().alias("errors"),
            pl.col("trace_id").n_unique().alias("episodes"),
        )
        .sort(["calls", "tool"], descending=[True, False])
        .collect()
    )
    eps = (
        corpus.scan_episodes()
        .select(
            pl.len().alias("episodes"),
            pl.col("reward").is_not_null().sum().alias("with_reward"),
            pl.col("reward").mean().alias("mean_reward"),
            pl.col("faulty").sum().alias("faulty"),
            pl.col("task_id").n_unique().alias("tasks"),
        )
        .collect()
        .row(0, named=True)
    )
    n_calls = calls.select(pl.len()).collect().item()
    n_leaves = corpus.scan_leaves().select(pl.len()).collect().item()
    by_code: dict[str, int] = {}
    rejects = corpus.rejects()
    for r in rejects:
        code = str(r.get("code", "?"))
        by_code[code] = by_code.get(code, 0) + 1
    return {
        "corpus": str(corpus.path),
        "format_version": man.get("format_version"),
        "sha256": corpus.sha256(),
        "sources": [
            {
                k: s.get(k)
                for k in (
                    "source",
                    "format",
                    "sha256",
                    "lines",
                    "calls",
                    "rejects",
                    "blank",
                    "episodes",
                    "dropped_calls",
                )
            }
            for s in man.get("sources", [])
        ],
        "formats": formats_summary(man.get("sources", [])),
        "calls": int(n_calls),
        "leaves": int(n_leaves),
        "episodes": int(eps["episodes"]),
        "tasks": int(eps["tasks"]),
        "episodes_with_reward": int(eps["with_reward"]),
        "mean_reward": None if eps["mean_reward"] is None else round(float(eps["mean_reward"]), 6),
        "faulty_episodes": int(eps["faulty"] or 0),
        "tools": [
            {
                "tool": t["tool"],
                "calls": int(t["calls"]),
                "errors": int(t["errors"]),
                "episodes": int(t["episodes"]),
            }
            for t in tools.iter_rows(named=True)
        ],
        "rejects": {"total": len(rejects), "by_code": dict(sorted(by_code.items()))},
        "registry": man.get("registry"),
    }


def formats_summary(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sources, calls and rejects per input format (rejects = rejected lines or records plus calls
    left out of kept episodes, i.e. every line of `rejects.jsonl` a source produced), by first use."""
    out: dict[str, dict[str, Any]] = {}
    for s in sources:
        f = out.setdefault(str(s.get("format")), {"sources": 0, "calls": 0, "rejects": 0})
        f["sources"] += 1
        f["calls"] += int(s.get("calls", 0))
        f["rejects"] += int(s.get("rejects", 0)) + int(s.get("dropped_calls", 0))
    return [{"format": k, **v} for k, v in out.items()]
