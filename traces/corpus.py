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

from contracts.errors import TraceError
from contracts.traces.leaves import LEAF_SCHEMA

CORPUS_FORMAT_VERSION = 1
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
#: `source` and `line` locate the episode's first record (or first call).
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
}

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    CALLS_FILE: CALL_SCHEMA,
    LEAVES_FILE: LEAF_SCHEMA,
    EPISODES_FILE: EPISODE_SCHEMA,
}


@dataclass(frozen=True)
class Corpus:
    """A corpus folder. Use `Corpus.open` to check it exists and is a corpus."""

    path: Path

    @classmethod
    def open(cls, path: str | Path) -> Corpus:
        """Open an existing corpus folder (it must hold `corpus.json`)."""
        p = Path(path)
        if not (p / MANIFEST_FILE).is_file():
            raise TraceError(
                f"not a corpus folder (no {MANIFEST_FILE}); create one with `contracts ingest`", source=str(p)
            )
        return cls(p)

    @staticmethod
    def is_corpus(path: str | Path) -> bool:
        """True when `path` is a folder holding `corpus.json`."""
        return (Path(path) / MANIFEST_FILE).is_file()

    def manifest(self) -> dict[str, Any]:
        """The parsed `corpus.json`."""
        data: dict[str, Any] = orjson.loads((self.path / MANIFEST_FILE).read_bytes())
        return data

    def sha256(self) -> str:
        """A digest of the corpus content: the sha256 of its sources' digests, in sorted order."""
        from contracts.jsonutil import json_sha256

        return json_sha256(sorted(s["sha256"] for s in self.manifest().get("sources", [])))

    def scan_calls(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path / CALLS_FILE)

    def scan_leaves(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path / LEAVES_FILE)

    def scan_episodes(self) -> pl.LazyFrame:
        return pl.scan_parquet(self.path / EPISODES_FILE)

    def rejects(self) -> list[dict[str, Any]]:
        """Every rejected line recorded in `rejects.jsonl`."""
        f = self.path / REJECTS_FILE
        if not f.exists():
            return []
        return [orjson.loads(line) for line in f.read_bytes().splitlines() if line.strip()]


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the given corpus schema."""
    return pl.DataFrame(schema=schema)
