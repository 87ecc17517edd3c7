"""`contracts ingest`: trace files -> the Parquet corpus (DESIGN §2.3).

INTERIM VERSION (skeleton): flat JSONL only, whole corpus rewritten each run. The ingest work item
replaces the internals (adapters, auto-detection, incremental appends, chunking, rejects) while keeping
the public signatures `ingest`, `corpus_from_records`, `IngestReport`, `SourceReport`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from contracts.errors import TraceError
from contracts.jsonutil import canonical_str, file_sha256, write_json
from contracts.progress import NULL_PROGRESS, Progress
from contracts.traces.corpus import (
    CALL_SCHEMA,
    CALLS_FILE,
    CORPUS_FORMAT_VERSION,
    EPISODE_SCHEMA,
    EPISODES_FILE,
    LEAVES_FILE,
    MANIFEST_FILE,
    REJECTS_FILE,
    Corpus,
)
from contracts.traces.leaves import LEAF_SCHEMA, flatten
from contracts.traces.model import ToolCall, call_id_int, make_call_id


@dataclass(frozen=True)
class SourceReport:
    """Accounting for one source: lines read = calls + rejects + blank (nothing is lost)."""

    source: str
    sha256: str
    format: str
    lines: int
    calls: int
    rejects: int
    blank: int
    skipped: bool = False


@dataclass(frozen=True)
class IngestReport:
    """What one `ingest` run did."""

    corpus: Path
    sources: tuple[SourceReport, ...]
    calls: int
    episodes: int
    rejects: int


def _flat_call(rec: Any, source: str, sha: str, line: int) -> ToolCall:
    if not isinstance(rec, dict):
        raise TraceError("record is not a JSON object", source=source, line=line)
    for key in ("trace_id", "tool"):
        if not isinstance(rec.get(key), str):
            raise TraceError(f"missing or non-string '{key}'", source=source, line=line, field=key)
    if not isinstance(rec.get("arguments"), dict):
        raise TraceError("'arguments' is not an object", source=source, line=line, field="arguments")
    status = rec.get("status", "ok")
    if status not in ("ok", "error"):
        raise TraceError(
            f"'status' must be 'ok' or 'error', got {status!r}", source=source, line=line, field="status"
        )
    if status == "ok" and "result" not in rec:
        raise TraceError(
            "missing 'result' (required unless status is 'error')", source=source, line=line, field="result"
        )
    return ToolCall(
        trace_id=rec["trace_id"],
        tool=rec["tool"],
        arguments=rec["arguments"],
        result=rec.get("result"),
        status=status,
        error=rec.get("error"),
        task_id=rec.get("task_id"),
        step=rec.get("step"),
        started_at=rec.get("started_at"),
        labels=rec.get("labels") or {},
        source=source,
        line=line,
    )


def ingest(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    format: str = "auto",
    strict: bool = False,
    registry: Path | None = None,
    chunk_rows: int = 100_000,
    progress: Progress = NULL_PROGRESS,
) -> IngestReport:
    """Ingest flat JSONL `sources` into the corpus folder `out` (interim: flat only, full rewrite)."""
    out = Path(out)
    calls: list[ToolCall] = []
    reports = []
    rejects: list[dict[str, Any]] = []
    for src in sources:
        p = Path(src)
        sha = file_sha256(p)
        n_lines = n_calls = n_rej = n_blank = 0
        with open(p, "rb") as fh:
            for i, raw in enumerate(fh, start=1):
                n_lines += 1
                if not raw.strip():
                    n_blank += 1
                    continue
                try:
                    rec = orjson.loads(raw)
                    call = _flat_call(rec, str(p), sha, i)
                except (orjson.JSONDecodeError, TraceError) as e:
                    if strict:
                        if isinstance(e, TraceError):
                            raise
                        raise TraceError(f"invalid JSON: {e}", source=str(p), line=i) from e
                    n_rej += 1
                    rejects.append(
                        {
                            "source": str(p),
                            "line": i,
                            "error": str(e),
                            "raw": raw[:4096].decode("utf-8", "replace"),
                        }
                    )
                    continue
                calls.append(call)
                n_calls += 1
        reports.append(SourceReport(str(p), sha, "flat", n_lines, n_calls, n_rej, n_blank))
    _write(out, calls, reports, rejects)
    episodes = len({c.trace_id for c in calls})
    return IngestReport(out, tuple(reports), len(calls), episodes, len(rejects))


def _write(
    out: Path, calls: list[ToolCall], reports: list[SourceReport], rejects: list[dict[str, Any]]
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shas = {r.source: r.sha256 for r in reports}
    call_rows: dict[str, list[Any]] = {k: [] for k in CALL_SCHEMA}
    leaf_rows: dict[str, list[Any]] = {k: [] for k in LEAF_SCHEMA}
    steps: dict[str, int] = {}
    for c in calls:
        cid_s = make_call_id(shas[c.source], c.line, c.index)
        cid = call_id_int(cid_s)
        step = c.step if c.step is not None else steps.get(c.trace_id, 0)
        steps[c.trace_id] = step + 1
        row = {
            "call_id": cid_s,
            "cid": cid,
            "trace_id": c.trace_id,
            "task_id": c.task,
            "step": step,
            "tool": c.tool,
            "status": c.status,
            "error": c.error,
            "arguments": canonical_str(c.arguments),
            "result": None if (c.status == "error" and c.result is None) else canonical_str(c.result),
            "started_at": c.started_at,
            "labels": canonical_str(c.labels),
            "fault": c.fault,
            "source": c.source,
            "line": c.line,
            "index": c.index,
        }
        for k, v in row.items():
            call_rows[k].append(v)
        sides: list[tuple[str, Any]] = [("arg", c.arguments)]
        if not (c.status == "error" and c.result is None):
            sides.append(("result", c.result))
        for side, doc in sides:
            for path, pattern, kind, num, s, ln in flatten(doc):
                for k, v in (
                    ("call_id", cid_s),
                    ("cid", cid),
                    ("tool", c.tool),
                    ("task_id", c.task),
                    ("side", side),
                    ("path", path),
                    ("pattern", pattern),
                    ("kind", kind),
                    ("num", num),
                    ("str", s),
                    ("len", ln),
                ):
                    leaf_rows[k].append(v)
    calls_df = pl.DataFrame(call_rows, schema=CALL_SCHEMA)
    leaves_df = pl.DataFrame(leaf_rows, schema=LEAF_SCHEMA)
    episodes_df = (
        calls_df.group_by("trace_id", maintain_order=True)
        .agg(
            pl.col("task_id").first(),
            pl.len().cast(pl.Int64).alias("n_calls"),
            pl.col("fault").is_not_null().any().alias("faulty"),
            pl.col("source").first(),
        )
        .with_columns(
            pl.lit(None, pl.Float64).alias("reward"),
            pl.lit("{}").alias("labels"),
            pl.lit(None, pl.String).alias("tools"),
        )
        .select(list(EPISODE_SCHEMA))
        .cast(EPISODE_SCHEMA)  # type: ignore[arg-type]
    )
    calls_df.write_parquet(out / CALLS_FILE)
    leaves_df.write_parquet(out / LEAVES_FILE)
    episodes_df.write_parquet(out / EPISODES_FILE)
    (out / REJECTS_FILE).write_bytes(
        b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rejects)
    )
    write_json(
        out / MANIFEST_FILE,
        {
            "format_version": CORPUS_FORMAT_VERSION,
            "sources": [r.__dict__ for r in reports],
            "counts": {
                "calls": calls_df.height,
                "leaves": leaves_df.height,
                "episodes": episodes_df.height,
                "rejects": len(rejects),
            },
        },
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
