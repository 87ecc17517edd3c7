"""`contracts ingest`: trace files -> the Parquet corpus (DESIGN §2.3); this module runs the steps.

The pipeline, one module a step, and why it is shaped so:

1. **Sources** (`sources`): files, folders (walked recursively for `*.jsonl`, `*.jsonl.gz`,
   `*.json`, `*.json.gz`, `*.traj`, `*.eval`, sorted by path so two runs read in the same order) or `-`
   (stdin, spooled to a file so it can be hashed and read like any file). A source whose sha256 is already in `corpus.json`,
   or that repeats an earlier source of the same run, is skipped: ingest is idempotent.
2. **Reading** (`read`): streamed line by line with a hard cap (`MAX_LINE_BYTES`, 16 MiB) so one
   giant line cannot exhaust memory; a whole-file JSON document (a τ-bench array, an OTLP or τ²-bench
   object) is loaded whole and split into records by its adapter. Every line read is exactly one of ok,
   rejected or blank (`lines = ok + rejects + blank`, checked before anything is written). For `flat`,
   ok lines are calls; for episode formats an ok line is an episode record and calls are counted
   separately, as are calls dropped from a kept episode (a tool call without a result): those go to
   `rejects.jsonl` with their `index`.
3. **Columns** (`columns`, `run`): calls and their leaves are built as column lists and
   flushed every `chunk_rows` calls to a staging folder inside the corpus (calls appended to one Parquet
   file, leaves ordered by task: straight into the final file while chunks come in task order, else as
   Arrow streams: sorted runs), so memory stays bounded.
4. **Commit** (`commit`, `order`): the staged calls become `calls.parquet` (after the old
   calls, by a streaming polars sink, when appending), old and new leaves are merged by task (corpus
   format 2), into temporary files beside the targets,
   then renamed; `corpus.json` is written last. An interrupted run
   leaves the previous corpus as it was (the staging folder of a crashed run is removed by the next one).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import Path
from typing import Any

import orjson

from output_contracts.choices import DEFAULT_CHUNK_ROWS as DEFAULT_CHUNK_ROWS
from output_contracts.errors import TraceError
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import MANIFEST_FILE, Corpus
from output_contracts.traces.formats.detect import get_adapter
from output_contracts.traces.ingest.commit import (
    IngestReport,
    RegistryCopy,
    clean_up,
    commit,
    is_leftover,
    lock_corpus,
    open_stage,
    registry_bytes,
    registry_changed,
    unchanged,
)
from output_contracts.traces.ingest.read import MAX_LINE_BYTES, finish_run, read_source
from output_contracts.traces.ingest.run import Run
from output_contracts.traces.ingest.sources import (
    Source,
    SourceReport,
    already_ingested,
    expand_sources,
    hashed_sources,
    known_sources,
    total_bytes,
)
from output_contracts.traces.tool_registry import load_registry


def ingest(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    format: str = "auto",
    strict: bool = False,
    registry: Path | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress = NULL_PROGRESS,
    allow_empty: bool = False,
) -> IngestReport:
    """Ingest `sources` into the corpus folder `out` (created if needed); see the module docstring.

    Raises `TraceError` for unusable input (missing files, unknown or mixed formats, a bad registry, a
    bad line under `strict`, and — unless `allow_empty` — an input named in `sources` that yields no
    tool call, whatever it was rejected for: never "ok, 0 calls"; see `refuse_empty`); nothing is
    changed in `out` then.
    """
    out = Path(out)
    if format != "auto":
        get_adapter(format)
    if chunk_rows < 1:
        raise TraceError(f"chunk_rows must be >= 1, got {chunk_rows}", code="E_USAGE", field="chunk_rows")
    _check_output(out)
    reg: RegistryCopy | None = None
    if registry is not None:
        n_tools = len(load_registry(registry).tools)
        reg = RegistryCopy(registry_bytes(Path(registry)), n_tools)
    srcs = expand_sources(sources, exclude=out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = lock_corpus(out)
    try:
        return _ingest_locked(out, srcs, format, strict, chunk_rows, progress, reg, allow_empty)
    except BaseException:
        if created and not Corpus.is_corpus(out):
            shutil.rmtree(out, ignore_errors=True)  # a failed first ingest leaves no empty folder behind
        raise
    finally:
        lock.close()


def _check_output(out: Path) -> None:
    """`out` must be absent, a corpus, or a folder holding nothing but an earlier run's leftovers."""
    if out.exists() and not out.is_dir():
        raise TraceError("output exists and is not a folder", code="E_USAGE", source=str(out))
    if out.exists() and not Corpus.is_corpus(out) and any(not is_leftover(p) for p in out.iterdir()):
        raise TraceError(
            f"output folder is not empty and holds no {MANIFEST_FILE}; refusing to write into it",
            code="E_USAGE",
            source=str(out),
        )


def _ingest_locked(
    out: Path,
    srcs: list[Source],
    format: str,
    strict: bool,
    chunk_rows: int,
    progress: Progress,
    registry: RegistryCopy | None,
    allow_empty: bool = False,
) -> IngestReport:
    """Read every source into a staging folder, then commit (or report that nothing changed)."""
    # appending to a damaged corpus would rebuild the missing parts from the new sources only: checked
    # before anything is staged, so a refusal leaves the folder as it was
    manifest = Corpus.open(out).manifest() if Corpus.is_corpus(out) else None
    stage = open_stage(out)
    known = known_sources(manifest)
    run = Run(
        out=out,
        stage=stage,
        strict=strict,
        chunk_rows=chunk_rows,
        progress=progress,
        appending=manifest is not None,
    )
    reports: list[SourceReport] = []
    try:
        progress.start("ingest", total_bytes(srcs))
        for h in hashed_sources(srcs, stage):
            rep = already_ingested(h, known)
            if rep is None:
                rep = read_source(run, h, format)
            if not rep.skipped:
                known[h.sha256] = h.source.name
            reports.append(rep)
        reports = finish_run(run, reports)
        run.flush()
        run.close_rejects()
        progress.finish()
        new_sources = any(not r.skipped for r in reports)
        if not allow_empty:
            refuse_empty(srcs, reports, run.answered_elsewhere)
        if manifest is not None and not new_sources and not registry_changed(manifest, registry):
            return unchanged(out, reports, manifest)
        return commit(out, run, reports, manifest, registry)
    finally:
        run.close_rejects()
        clean_up(out, stage)


def refuse_empty(
    srcs: Sequence[Source], reports: Sequence[SourceReport], answered_elsewhere: Set[str] = frozenset()
) -> None:
    """Every input the user named (a file, a folder, `-`) must yield a tool call, else one error line
    naming the first input that yields none and what it held instead (its rejects, what was skipped).

    Within a folder, a file that yields nothing (metadata, a registry, a file of rejects) is a note of
    the run, not an error, as long as the folder yields a call; a file named on its own yields one or is
    an error. A source whose bytes were already ingested (or read earlier in the run) counts as read, and
    so does one whose calls a later source answered (`answered_elsewhere`: joins across files, the calls
    written with their answers). `reports` are `srcs`' reports, in order."""
    groups: dict[str, list[SourceReport]] = {}
    for src, r in zip(srcs, reports, strict=True):
        groups.setdefault(src.given or src.name, []).append(r)
    empty = [
        (given, reps)
        for given, reps in groups.items()
        if not any(r.calls or r.source in answered_elsewhere or (r.skipped and r.format == "-") for r in reps)
    ]
    if not empty:
        return
    given, reps = empty[0]
    files = f" in {len(reps)} files" if len(reps) > 1 else ""
    rejects = sum(r.rejects for r in reps)
    held = [f"{rejects:,} reject{'' if rejects == 1 else 's'}"]
    dropped = sum(r.dropped_calls for r in reps)
    if dropped:
        held.append(f"{dropped:,} dropped call{'' if dropped == 1 else 's'}")
    skipped = [r for r in reps if r.skipped]
    what = ", ".join(held)
    if skipped:
        first = skipped[0]
        name = f"{first.source}: " if len(reps) > 1 else ""
        what += f"; skipped{f' {len(skipped)}, first' if len(reps) > 1 else ''}: {name}{first.note}"
    elif not rejects and not dropped:
        what += ": an empty input, or a format whose calls this reader does not see"
    more = f"; {len(empty) - 1} more input(s) yield none either" if len(empty) > 1 else ""
    raise TraceError(
        f"no tool call found{files} ({what}){more}; check the path and --format, or pass --allow-empty",
        source=given,
    )


def corpus_from_records(
    records: Iterable[Mapping[str, Any]], out: str | Path, *, name: str = "records.jsonl"
) -> Corpus:
    """Build a corpus from in-memory flat records (for tests and notebooks)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / name
        src.write_bytes(b"".join(orjson.dumps(dict(r)) + b"\n" for r in records))
        ingest([src], out, format="flat")
    return Corpus.open(out)


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "MAX_LINE_BYTES",
    "IngestReport",
    "SourceReport",
    "corpus_from_records",
    "expand_sources",
    "ingest",
]
