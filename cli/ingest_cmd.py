"""CLI of the ingest work item: `contracts ingest` and `contracts corpus info`.

Thin: parse options, resolve defaults from the project config, call `output_contracts.traces.ingest.ingest` /
`output_contracts.traces.corpus.corpus_info`, render. Data (`--json`) goes to stdout; the progress bar and
summary tables go to stderr (`--plain` TSV to stdout), so `contracts ingest ... --json | jq` composes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from output_contracts.choices import DEFAULT_CHUNK_ROWS, SOURCE_SUFFIXES
from output_contracts.cli.common import (
    AllowEmptyFlag,
    JsonFlag,
    PlainFlag,
    QuietFlag,
    err,
    findings_exit,
    format_option,
    out,
    phase,
    progress_bar,
    registry_option,
)
from output_contracts.cli.settings import resolved
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.settings import Settings, setting
from output_contracts.traces.formats.detect import FormatName as Format

if TYPE_CHECKING:
    from output_contracts.traces.ingest import IngestReport


corpus_app = typer.Typer(
    name="corpus",
    help="Inspect a Parquet corpus made by `contracts ingest`.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _dump(value: Any) -> None:
    out.print(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode(), markup=False)


def _report_json(rep: IngestReport) -> dict[str, Any]:
    return {
        "corpus": str(rep.corpus),
        "changed": rep.changed,
        "new_calls": rep.new_calls,
        "calls": rep.calls,
        "leaves": rep.leaves,
        "episodes": rep.episodes,
        "rejects": rep.rejects,
        "registry": rep.registry,
        "sources": [asdict(s) for s in rep.sources],
    }


def _summary(rep: IngestReport, plain: bool = False) -> None:
    table = Grid(
        [
            Column("source", "path"),
            Column("format", "key"),
            Column("lines", "num"),
            Column("calls", "num"),
            Column("rejects", "num"),
            Column("blank", "num"),
            Column("skipped", "text"),
        ]
    )
    for s in rep.sources:
        rej = f"{s.rejects:,}" if not plain else str(s.rejects)
        if s.dropped_calls:
            rej += f" (+{s.dropped_calls:,} calls)"
        table.add_row(
            s.source,
            s.format,
            s.lines,
            s.calls,
            rej,
            s.blank,
            (s.note or "yes") if s.skipped else "",
            style="red" if s.rejects or s.dropped_calls else None,
        )
    show(out if plain else err, table, plain=plain)
    if plain:
        return
    verb = "wrote" if rep.changed else "unchanged:"
    say(
        err,
        f"{verb} {rep.corpus}: {rep.calls:,} calls, {rep.episodes:,} episodes, {rep.leaves:,} leaves, "
        f"{rep.rejects:,} rejects" + (f" (see {rep.corpus / 'rejects.jsonl'})" if rep.rejects else ""),
        style="red" if rep.rejects else None,
    )


def ingest_command(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="Trace files, folders (recursive: "
            + ", ".join(f"*{x}" for x in SOURCE_SUFFIXES)
            + ") or - for stdin. Default: paths.traces from contracts.toml.",
            show_default=False,
            metavar="SRC",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="Corpus folder (default: paths.corpus from contracts.toml).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        Format,
        format_option(f"Input trace format: {', '.join(f.value for f in Format)}."),
    ] = Format.auto,
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first bad line (exit 2).")] = False,
    registry: Annotated[
        Path | None,
        registry_option("tools.json to validate and copy into the corpus (default: paths.registry)."),
    ] = None,
    chunk_rows: Annotated[
        int, typer.Option("--chunk-rows", min=1, metavar="N", help="Calls per Parquet part (bounds memory).")
    ] = DEFAULT_CHUNK_ROWS,
    allow_empty: AllowEmptyFlag = False,
    quiet: QuietFlag = False,
    as_json: JsonFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Ingest traces into a Parquet corpus (calls, leaves, episodes, rejects, corpus.json).

    Incremental and idempotent: sources already in the corpus (same sha256) are skipped. Bad lines go to
    rejects.jsonl (exit 0) unless --strict (exit 2 at the first). An input (file, folder or -) that yields
    no tool call, even if its every line was rejected, is an error (exit 2) unless --allow-empty: an
    empty file, prose, a registry or a format whose calls the reader does not see never reports "ok, 0
    calls".
    """
    _ingest(resolved(IngestSettings, locals()))


@dataclass(frozen=True, kw_only=True)
class IngestSettings(Settings):
    """`contracts ingest`, resolved: the corpus, sources and registry default to `[paths]`."""

    output: Path = setting("paths.corpus", required="corpus folder (-o)")
    sources: list[str | Path] = setting(
        "paths.traces",
        missing="no trace sources given: pass SRC... or set 'traces' under [paths] in contracts.toml",
    )
    registry: Path | None = setting("paths.registry")
    fmt: Format
    strict: bool
    chunk_rows: int
    allow_empty: bool
    quiet: bool
    as_json: bool
    plain: bool


def _ingest(s: IngestSettings) -> None:
    """Ingest the sources into the corpus folder and report each source (a bar only on a terminal)."""
    from output_contracts.traces.ingest import ingest

    progress: Any = progress_bar(s.quiet or not err.is_terminal, unit="bytes")
    try:
        rep = ingest(
            s.sources,
            s.output,
            format=s.fmt.value,
            strict=s.strict,
            registry=s.registry,
            chunk_rows=s.chunk_rows,
            allow_empty=s.allow_empty,
            progress=progress,
        )
    finally:
        progress.finish()
    if s.as_json:
        _dump(_report_json(rep))
    if s.plain and not s.as_json:  # data on stdout, whatever -q says
        _summary(rep, True)
    elif not s.quiet:
        _summary(rep)


CorpusArg = Annotated[
    Path | None,
    typer.Argument(
        help="Corpus folder (default: paths.corpus from contracts.toml).",
        show_default=False,
        metavar="CORPUS",
    ),
]


@dataclass(frozen=True, kw_only=True)
class CorpusInfoSettings(Settings):
    """`contracts corpus info`, resolved: the corpus defaults to `paths.corpus`."""

    corpus: Path = setting("paths.corpus", required="corpus folder")
    as_json: bool
    quiet: bool  # accepted by every command; info writes nothing to stderr
    plain: bool


def info_command(
    corpus: CorpusArg = None, as_json: JsonFlag = False, quiet: QuietFlag = False, plain: PlainFlag = False
) -> None:
    """Show a corpus: sources, calls, episodes, tools with call counts, rejects."""
    _info(resolved(CorpusInfoSettings, locals()))


def _info(s: CorpusInfoSettings) -> None:
    """The corpus's description as JSON, its tools as TSV (`--plain`), or its tables."""
    from output_contracts.traces.corpus import corpus_info

    info = corpus_info(s.corpus)
    if s.as_json:
        _dump(info)
        return
    tools = Grid(
        [Column("tool", "name"), Column("calls", "num"), Column("errors", "num"), Column("episodes", "num")]
    )
    for t in info["tools"]:
        tools.add_row(t["tool"], t["calls"], t["errors"], t["episodes"])
    if s.plain:
        show(out, tools, plain=True)
        return
    _info_text(info, tools)


def _info_text(info: dict[str, Any], tools: Grid) -> None:
    """`corpus info` for people: the headline, the sources, formats and tools tables, and rejects."""
    say(
        out,
        f"corpus {info['corpus']}: {info['calls']:,} calls, {info['episodes']:,} episodes "
        f"({info['tasks']:,} tasks), {info['leaves']:,} leaves, sha256 {info['sha256'][:16]}…",
    )
    if info["episodes_with_reward"]:
        say(out, f"rewards: {info['episodes_with_reward']:,} episodes, mean {info['mean_reward']:.3f}")
    if info["faulty_episodes"]:
        say(out, f"labelled faulty episodes: {info['faulty_episodes']:,}")
    src = Grid(
        [
            Column("source", "path"),
            Column("format", "key"),
            Column("lines", "num"),
            Column("calls", "num"),
            Column("rejects", "num"),
        ]
    )
    for s in info["sources"]:
        rej = f"{s['rejects']:,}"
        if s.get("dropped_calls"):
            rej += f" (+{s['dropped_calls']:,} calls)"
        bad = s["rejects"] or s.get("dropped_calls")
        src.add_row(s["source"], s["format"], s["lines"], s["calls"], rej, style="red" if bad else None)
    show(out, src)
    if len(info["formats"]) > 1 or any(f["rejects"] for f in info["formats"]):
        fmts = Grid(
            [
                Column("format", "key"),
                Column("sources", "num"),
                Column("calls", "num"),
                Column("rejects", "num"),
            ]
        )
        for f in info["formats"]:
            fmts.add_row(
                f["format"], f["sources"], f["calls"], f["rejects"], style="red" if f["rejects"] else None
            )
        show(out, fmts)
    show(out, tools)
    rej = info["rejects"]
    if rej["total"]:
        codes = ", ".join(f"{k} {v}" for k, v in rej["by_code"].items())
        say(
            out,
            f"rejects: {rej['total']:,} ({codes}); see {Path(info['corpus']) / 'rejects.jsonl'}",
            style="red",
        )
    else:
        say(out, "rejects: 0")
    if info["registry"]:
        say(out, f"registry: tools.json ({info['registry']['tools']} tools)")


@dataclass(frozen=True, kw_only=True)
class CorpusVerifySettings(Settings):
    """`contracts corpus verify`, resolved: the corpus defaults to `paths.corpus`."""

    corpus: Path = setting("paths.corpus", required="corpus folder")
    quiet: bool


def verify_command(corpus: CorpusArg = None, quiet: QuietFlag = False) -> None:
    """Recompute every file digest and row count `corpus.json` records; exit 1 when the corpus was
    changed or damaged."""
    _verify(resolved(CorpusVerifySettings, locals()))


def _verify(s: CorpusVerifySettings) -> None:
    """Check the corpus's recorded digests and row counts; each problem on stderr, exit 1 on any."""
    from output_contracts.traces.corpus import verify_corpus

    with phase(s.quiet, "verify"):
        problems = verify_corpus(s.corpus)
    for p in problems:
        say(err, f"FAILED: {s.corpus}: {p}")
    if not problems:
        say(out, f"ok: {s.corpus}: every recorded digest and row count matches")
    findings_exit(bool(problems))


def register(app: typer.Typer) -> None:
    """Add `ingest` and the `corpus` group to the root app."""
    app.command("ingest")(ingest_command)
    corpus_app.command("info")(info_command)
    corpus_app.command("verify")(verify_command)
    app.add_typer(corpus_app)
