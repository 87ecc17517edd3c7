"""Ingest step 4, commit: the staging folder, the lock, and the switch to the new corpus files.

Why the care: a corpus must never be half-written. A run works in a staging folder inside the corpus
(`.ingest-*`, removed at the end and, after a crash, by the next run) under an exclusive lock
(`.ingest.lock`), so two runs cannot lose each other's appends. At commit, the staged files are moved, or
concatenated after the old ones by a streaming polars sink, into temporary files beside the targets
(`.NAME.tmp`); the
episodes are recomputed over the whole corpus; rejects are old lines then new ones; then everything is
renamed into place and `corpus.json` (validated against its JSON Schema) is written last. An
interrupted run leaves the previous corpus as it was.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import orjson
import polars as pl

from output_contracts import __version__
from output_contracts.errors import TraceError, reading
from output_contracts.jsonutil import file_sha256, sha256_hex, write_json
from output_contracts.schemas import validate
from output_contracts.traces.corpus import (
    CALL_SCHEMA,
    CALLS_FILE,
    CORPUS_FORMAT_VERSION,
    EPISODES_FILE,
    LEAVES_FILE,
    MANIFEST_FILE,
    REJECTS_FILE,
    SCHEMAS,
    TASK_ORDERED_FORMAT_VERSIONS,
)
from output_contracts.traces.ingest.episodes import write_episodes
from output_contracts.traces.ingest.order import SortedRun, file_counts, restage_unsorted, write_sorted
from output_contracts.traces.ingest.run import Run
from output_contracts.traces.ingest.sources import SourceReport
from output_contracts.traces.mining_view import VIEW_FILES, ViewStage, write_staged

REGISTRY_FILE = "tools.json"
STAGING_PREFIX = ".ingest-"
LOCK_FILE = ".ingest.lock"
CORPUS_FILES = (CALLS_FILE, LEAVES_FILE, EPISODES_FILE, REJECTS_FILE, MANIFEST_FILE, *VIEW_FILES)

#: Fields of a `rejects.jsonl` line and their JSON types (`field` and `index` only when known).
REJECT_FIELDS = (
    ("source", "string"),
    ("line", "integer"),
    ("code", "string"),
    ("error", "string"),
    ("raw", "string"),
    ("field", "string"),
    ("index", "integer"),
)


@dataclass(frozen=True)
class IngestReport:
    """What one `ingest` run did; `calls`/`episodes`/`rejects` are totals of the whole corpus after it."""

    corpus: Path
    sources: tuple[SourceReport, ...]
    calls: int
    episodes: int
    rejects: int
    leaves: int = 0
    new_calls: int = 0
    changed: bool = False
    registry: str | None = None


@dataclass(frozen=True)
class RegistryCopy:
    """The tool registry to attach: the bytes to write as `tools.json` and how many tools it has."""

    data: bytes
    tools: int


# ---- the corpus folder -----------------------------------------------------------------------------


def is_leftover(p: Path) -> bool:
    """Leftovers of an interrupted ingest (staging folder, temp files), safe to ignore or remove."""
    return (
        p.name.startswith(STAGING_PREFIX)
        or p.name == LOCK_FILE
        or (p.name.startswith(".") and p.name.endswith(".tmp"))
    )


def lock_corpus(out: Path) -> IO[bytes]:
    """An exclusive lock on the corpus for this run: two ingests into one corpus would lose an append."""
    fh = open(out / LOCK_FILE, "wb")  # noqa: SIM115 (closed by the caller)
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise TraceError(
            "another ingest is writing this corpus; wait for it to finish", code="E_USAGE", source=str(out)
        ) from None
    return fh


def open_stage(out: Path) -> Path:
    """A fresh staging folder in `out`, after removing those of crashed runs."""
    for stale in out.glob(STAGING_PREFIX + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))


def clean_up(out: Path, stage: Path) -> None:
    """Remove the staging folder and any temporary file a failed commit left beside the targets."""
    shutil.rmtree(stage, ignore_errors=True)
    for name in (*CORPUS_FILES, REGISTRY_FILE):
        (out / f".{name}.tmp").unlink(missing_ok=True)


def registry_bytes(path: Path) -> bytes:
    """The registry to copy: the file's bytes, or a folder's tools merged into one canonical document."""
    if path.is_dir():
        tools: list[Any] = []
        for f in sorted(path.glob("*.json")):
            data = orjson.loads(f.read_bytes())
            tools.extend((data.get("tools") or []) if isinstance(data, dict) else data)
        return orjson.dumps({"tools": tools}, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    return path.read_bytes()


def registry_changed(manifest: dict[str, Any] | None, registry: RegistryCopy | None) -> bool:
    """Whether a registry is given that the corpus does not hold yet (by sha256)."""
    if registry is None:
        return False
    old = (manifest or {}).get("registry")
    return old is None or old.get("sha256") != sha256_hex(registry.data)


def unchanged(out: Path, reports: list[SourceReport], manifest: dict[str, Any]) -> IngestReport:
    """The report of a run that changes nothing: the corpus's totals as its manifest has them."""
    counts = manifest["counts"]
    return IngestReport(
        out, tuple(reports), counts["calls"], counts["episodes"], counts["rejects"], counts["leaves"]
    )


# ---- the commit ------------------------------------------------------------------------------------


def _sink(frames: list[pl.LazyFrame], schema: Mapping[str, pl.DataType], target: Path) -> int:
    """Stream the concatenation of `frames` into `target` via a temp file + rename; returns rows."""
    tmp = target.with_name(f".{target.name}.tmp")
    if frames:
        lf = pl.concat([f.select(list(schema)) for f in frames], how="vertical")
    else:
        lf = pl.DataFrame(schema=dict(schema)).lazy()
    with reading(target, writing=True):
        lf.sink_parquet(tmp, row_group_size=128 * 1024)
    rows = pl.scan_parquet(tmp).select(pl.len()).collect().item()
    return int(rows)


def _source_entry(r: SourceReport) -> dict[str, Any]:
    d = asdict(r)
    for k in ("skipped", "note"):
        d.pop(k)
    return d


def file_digest(path: Path) -> dict[str, Any]:
    """`{"bytes": size, "sha256": hex}` of a file, read in 1 MiB blocks (what `corpus.json` records)."""
    return {"bytes": path.stat().st_size, "sha256": file_sha256(path)}


def _write_rejects(out: Path, stage: Path, append: bool) -> None:
    """`.rejects.jsonl.tmp`: the corpus's reject lines (when appending), then this run's, synced."""
    with open(out / f".{REJECTS_FILE}.tmp", "wb") as fh:
        for part in ((out / REJECTS_FILE) if append else None, stage / REJECTS_FILE):
            if part is not None and part.exists():
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, fh, 1 << 20)
        fh.flush()
        os.fsync(fh.fileno())


def commit(
    out: Path,
    run: Run,
    reports: list[SourceReport],
    manifest: dict[str, Any] | None,
    registry: RegistryCopy | None,
) -> IngestReport:
    """Write every file to a temp name, rename them into place, and write `corpus.json` last."""
    calls_t, leaves_t, eps_t = out / CALLS_FILE, out / LEAVES_FILE, out / EPISODES_FILE
    old = manifest is not None
    n_calls = _write_calls(calls_t, run, old)
    n_leaves, leaf_groups, view = _write_leaves(leaves_t, run, manifest)
    all_sources = list((manifest or {}).get("sources", [])) + [
        _source_entry(r) for r in reports if not r.skipped
    ]
    order = {s["source"]: i for i, s in enumerate(all_sources)}
    n_episodes = write_episodes(
        eps_t.with_name(f".{EPISODES_FILE}.tmp"),
        run.stage,
        calls_t.with_name(f".{CALLS_FILE}.tmp"),
        eps_t if old and eps_t.exists() else None,
        run.episodes,
        order,
        run.episode_files,
    )
    _write_rejects(out, run.stage, append=old)
    n_rejects = int(((manifest or {}).get("counts") or {}).get("rejects", 0)) + run.n_rejects
    registry_entry = (manifest or {}).get("registry")
    if registry is not None:
        (out / f".{REGISTRY_FILE}.tmp").write_bytes(registry.data)
        registry_entry = {"file": REGISTRY_FILE, "sha256": sha256_hex(registry.data), "tools": registry.tools}
    new_manifest = _manifest(all_sources, n_calls, n_leaves, n_episodes, n_rejects, registry_entry)
    new_manifest["files"][LEAVES_FILE]["row_groups"] = leaf_groups
    assert view.rows == n_leaves, (view.rows, n_leaves)  # the view staged every leaf written
    new_manifest["files"] |= write_staged(
        view, calls_t.with_name(f".{CALLS_FILE}.tmp"), lambda n: out / f".{n}.tmp"
    )
    for name, entry in new_manifest["files"].items():
        entry.update(file_digest(out / f".{name}.tmp"))
    validate(new_manifest, "corpus-manifest", source=str(out / MANIFEST_FILE))
    # the commit: renames, then the manifest
    for name in (CALLS_FILE, LEAVES_FILE, EPISODES_FILE, REJECTS_FILE, *VIEW_FILES) + (
        (REGISTRY_FILE,) if registry is not None else ()
    ):
        os.replace(out / f".{name}.tmp", out / name)
    write_json(out / MANIFEST_FILE, new_manifest)
    return IngestReport(
        corpus=out,
        sources=tuple(reports),
        calls=n_calls,
        episodes=n_episodes,
        rejects=n_rejects,
        leaves=n_leaves,
        new_calls=sum(r.calls for r in reports),
        changed=True,
        registry=REGISTRY_FILE if registry_entry else None,
    )


def _write_calls(target: Path, run: Run, append: bool) -> int:
    """`.calls.parquet.tmp`: this run's staged calls file renamed into place for a new corpus, else the
    old calls then the staged ones, streamed. Returns its rows."""
    staged = run.calls.finish() if run.calls is not None else None
    old = append and target.exists()
    if staged is not None and run.calls is not None and not old:
        os.replace(staged, target.with_name(f".{target.name}.tmp"))
        return run.calls.rows
    frames = ([pl.scan_parquet(target)] if old else []) + ([pl.scan_parquet(staged)] if staged else [])
    return _sink(frames, CALL_SCHEMA, target)


def _write_leaves(
    target: Path, run: Run, manifest: dict[str, Any] | None
) -> tuple[int, list[dict[str, Any]], ViewStage]:
    """`.leaves.parquet.tmp` ordered by task: the file written directly when every chunk came in task
    order into a new corpus, else the merge of the old leaves and this run's sorted runs, in that order
    (within a task, leaves keep ingest order). Returns its rows, its row groups and its staged view."""
    tmp = target.with_name(f".{LEAVES_FILE}.tmp")
    direct = run.direct.finish() if run.direct is not None else None
    old = _old_leaf_runs(target, run.stage, manifest)
    if (
        direct is not None
        and run.direct is not None
        and run.direct.view is not None
        and not old
        and not run.leaf_runs
    ):
        os.replace(direct.path, tmp)
        return sum(g["rows"] for g in run.direct.groups), run.direct.groups, run.direct.view
    view = ViewStage(run.stage, "view-merged")
    rows, groups = write_sorted(old + ([direct] if direct is not None else []) + run.leaf_runs, tmp, view)
    return rows, groups, view


def _old_leaf_runs(leaves: Path, stage: Path, manifest: dict[str, Any] | None) -> list[SortedRun]:
    """The corpus's leaves as sorted runs when appending: the file itself when it is ordered by task
    (format 2), else (format 1) re-sorted into the staging folder in bounded pieces."""
    if manifest is None or not leaves.exists():
        return []
    if manifest.get("format_version") in TASK_ORDERED_FORMAT_VERSIONS:
        return [SortedRun(leaves, file_counts(leaves))]
    return restage_unsorted(leaves, stage)


def _manifest(
    all_sources: list[dict[str, Any]],
    n_calls: int,
    n_leaves: int,
    n_episodes: int,
    n_rejects: int,
    registry_entry: dict[str, Any] | None,
) -> dict[str, Any]:
    """The new `corpus.json`: sources, counts, each file's rows and columns, the registry entry."""
    return {
        "format_version": CORPUS_FORMAT_VERSION,
        "generator": f"contracts {__version__}",
        "sources": all_sources,
        "counts": {
            "sources": len(all_sources),
            "calls": n_calls,
            "leaves": n_leaves,
            "episodes": n_episodes,
            "rejects": n_rejects,
            "dropped_calls": sum(int(s.get("dropped_calls", 0)) for s in all_sources),
        },
        "files": {
            name: {"rows": rows, "columns": [{"name": k, "type": str(v)} for k, v in SCHEMAS[name].items()]}
            for name, rows in ((CALLS_FILE, n_calls), (LEAVES_FILE, n_leaves), (EPISODES_FILE, n_episodes))
        }
        | {REJECTS_FILE: {"rows": n_rejects, "columns": [{"name": k, "type": t} for k, t in REJECT_FIELDS]}},
        "registry": registry_entry,
    }
