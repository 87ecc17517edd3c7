"""Ingest: trace files -> the Parquet corpus (DESIGN §2.3), one module a step (`api` runs them):
`sources` (files, folders, stdin; idempotence), `read` (lines and documents through the adapters),
`columns` and `run` (calls and leaves as bounded column chunks), `order` (leaves merged by task),
`episodes`, and `commit` (the corpus files written and renamed, `corpus.json` last).

The entry points load on first use, so that importing one step does not import them all."""

from __future__ import annotations

from typing import TYPE_CHECKING

from output_contracts.lazy import lazy_exports

if TYPE_CHECKING:
    from output_contracts.traces.ingest.api import DEFAULT_CHUNK_ROWS as DEFAULT_CHUNK_ROWS
    from output_contracts.traces.ingest.api import IngestReport as IngestReport
    from output_contracts.traces.ingest.api import corpus_from_records as corpus_from_records
    from output_contracts.traces.ingest.api import expand_sources as expand_sources
    from output_contracts.traces.ingest.api import ingest as ingest

_EXPORTS = {
    name: "output_contracts.traces.ingest.api"
    for name in ("DEFAULT_CHUNK_ROWS", "IngestReport", "corpus_from_records", "expand_sources", "ingest")
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
