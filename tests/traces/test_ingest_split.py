"""The seams of the split ingest: a folder's document that no adapter claims is skipped by an
explicit decision (not by matching an error message), a named one still fails; the decision agrees
with `detect_records`; the steps compose (sources -> reading -> run -> commit) as `ingest` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.errors import TraceError
from output_contracts.progress import NULL_PROGRESS
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.detect import detect_records
from output_contracts.traces.ingest import ingest
from output_contracts.traces.ingest.commit import commit, open_stage
from output_contracts.traces.ingest.read import _unclaimed, read_source
from output_contracts.traces.ingest.run import Run
from output_contracts.traces.ingest.sources import already_ingested, expand_sources, hashed_sources

CALL = {"trace_id": "t1", "tool": "get", "arguments": {"a": 1}, "result": {"b": 2}}


def test_unclaimed_document_is_skipped_in_a_folder_and_fails_when_named(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_bytes(orjson.dumps(CALL) + b"\n")
    (src / "meta.json").write_bytes(b'[{"name": "run 3", "seed": 7}, {"note": "x"}]')
    rep = ingest([src], tmp_path / "c")
    by = {Path(s.source).name: s for s in rep.sources}
    meta = by["meta.json"]
    why = "not traces: no format claims it; closest are flat (no 'tool' field) and openai-chat (no 'messages' list)"
    assert (meta.skipped, meta.format, meta.note) == (True, "unknown", why)
    assert rep.calls == 1 and not by["a.jsonl"].skipped
    with pytest.raises(TraceError) as e:
        ingest([src / "meta.json"], tmp_path / "d")
    assert (e.value.code, e.value.line) == ("E_FORMAT", 1)
    assert not (tmp_path / "d").exists()


def test_claimed_document_in_a_folder_is_read_not_skipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "calls.json").write_bytes(orjson.dumps([CALL, {**CALL, "trace_id": "t2"}]))
    rep = ingest([src], tmp_path / "c")
    s = rep.sources[0]
    assert (s.skipped, s.format, s.unit, s.lines, s.calls) == (False, "flat", "record", 2, 2)


@pytest.mark.parametrize(
    "records",
    [
        [],
        [{"foo": 1}],
        [{"foo": 1}, {"bar": [2]}],
        [{"foo": 1}, CALL],
        [{"trace_id": "x", "result": 1}],  # plausibly flat
        [{"messages": []}],  # plausibly openai-chat
        [{"resourceSpans": []}, {"foo": 1}],
    ],
)
def test_unclaimed_agrees_with_detect_records(records: list[dict[str, Any]]) -> None:
    numbered = list(enumerate(records, 1))
    try:
        detect_records(numbered, "x.json")
        unknown = False
    except TraceError as e:
        unknown = e.message.startswith("unknown format")
    assert _unclaimed(numbered) is unknown


def test_steps_compose_like_ingest(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"".join(orjson.dumps({**CALL, "step": i}) + b"\n" for i in range(5)) + b"oops\n")
    ingest([f], tmp_path / "whole", chunk_rows=2)

    out = tmp_path / "steps"
    out.mkdir()
    stage = open_stage(out)
    run = Run(out=out, stage=stage, strict=False, chunk_rows=2, progress=NULL_PROGRESS)
    reports = []
    for h in hashed_sources(expand_sources([f]), stage):
        assert already_ingested(h, {}) is None
        reports.append(read_source(run, h, "auto"))
    run.flush()
    run.close_rejects()
    assert run.chunks == 3 and run.n_rejects == 1
    rep = commit(out, run, reports, None, None)
    assert (rep.calls, rep.rejects, rep.changed) == (5, 1, True)
    for name in ("calls.parquet", "leaves.parquet", "episodes.parquet", "rejects.jsonl", "corpus.json"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert Corpus.open(out).manifest()["counts"]["calls"] == 5
