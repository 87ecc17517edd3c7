"""Reading an ingested corpus back, for the producers' format tests (test_<producer>.py here).

Every producer's test ingests its real files by auto-detection twice, through the library and through
the CLI, checks the format both detected, checks that both wrote the same corpus, and compares the calls
read back with values read independently from the raw file. That reading back was written again in each
test file; it is here once, with parameters for what differs between them (the sort order, whether the
trace id is part of a call, which fields of a reject are compared). A test file keeps its own reader only
where it reads something else (and says so). `otlp_spans` is the one raw-file reader here: the OTLP
exports of two producers (OpenLLMetry, OpenInference) are read for their expected values the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import orjson
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import IngestReport, ingest

Call = tuple[str, dict[str, Any], Any, str, str | None]  # tool, arguments, result, status, error
TracedCall = tuple[str, str, dict[str, Any], Any, str, str | None]  # trace, then as Call

T = TypeVar("T")

BY_TRACE = ("trace_id", "step")


def read_traced_calls(corpus: Path, order: Sequence[str] = BY_TRACE) -> list[TracedCall]:
    """The corpus's calls in `order`, each as (trace, tool, arguments, result, status, error), the JSON
    columns decoded."""
    rows = Corpus.open(corpus).scan_calls().sort(*order).collect().iter_rows(named=True)
    return [
        (
            r["trace_id"],
            r["tool"],
            orjson.loads(r["arguments"]),
            None if r["result"] is None else orjson.loads(r["result"]),
            r["status"],
            r["error"],
        )
        for r in rows
    ]


def read_calls(corpus: Path, order: Sequence[str] = BY_TRACE) -> list[Call]:
    """As `read_traced_calls`, without the trace."""
    return [c[1:] for c in read_traced_calls(corpus, order)]


def reject_lines(corpus: Path) -> list[dict[str, Any]]:
    """Every line of the corpus's rejects.jsonl (none when it wrote no such file)."""
    f = corpus / "rejects.jsonl"
    return [orjson.loads(x) for x in f.read_bytes().splitlines()] if f.exists() else []


def read_rejects(corpus: Path, *keys: str) -> list[tuple[Any, ...]]:
    """The `keys` fields of every reject, in file order."""
    return [tuple(r[k] for k in keys) for r in reject_lines(corpus)]


def read_episodes(corpus: Path) -> dict[str, tuple[str, dict[str, Any], int]]:
    """trace id: (task id, labels, number of calls) of every episode."""
    eps = Corpus.open(corpus).scan_episodes().collect().iter_rows(named=True)
    return {
        e["trace_id"]: (e["task_id"], orjson.loads(e["labels"]) if e["labels"] else {}, e["n_calls"])
        for e in eps
    }


class Both(NamedTuple, Generic[T]):
    """What `both` read: the calls (from the library's corpus), that corpus, the library's report."""

    calls: list[T]
    lib: Path
    report: IngestReport


def both(
    srcs: Path | Sequence[Path],
    tmp: Path,
    fmt: str,
    read: Callable[[Path], list[T]],
    *agree: Callable[[Path], object],
) -> Both[T]:
    """Ingest `srcs` by auto-detection through the library (into tmp/lib) and through the CLI (into
    tmp/cli): both must read every source they do not skip as `fmt` and report the same formats, the
    same calls by `read`, the same count of calls and the same value of each of the `agree` readers."""
    srcs = [srcs] if isinstance(srcs, Path) else list(srcs)
    lib, cli = tmp / "lib", tmp / "cli"
    rep = ingest(srcs, lib)
    formats = [s.format for s in rep.sources if not s.skipped]
    assert set(formats) == {fmt}
    r = CliRunner().invoke(app, ["ingest", *map(str, srcs), "-o", str(cli), "--json"])
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert [s["format"] for s in out["sources"] if not s.get("skipped")] == formats
    got = read(lib)
    assert read(cli) == got
    assert out["calls"] == len(got)
    for f in agree:
        assert f(cli) == f(lib)
    return Both(got, lib, rep)


def otlp_spans(src: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON Lines export (one `resourceSpans` document a line), in file order."""
    return [
        sp
        for line in src.read_bytes().splitlines()
        for rs in orjson.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
    ]
