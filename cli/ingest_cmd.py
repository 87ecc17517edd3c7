"""CLI of the ingest work item: `contracts ingest` and `contracts corpus info`.

Thin: parse options, resolve defaults from the project config, call `output_contracts.traces.ingest.ingest` /
`output_contracts.traces.corpus.corpus_info`, render. Data (`--json`) goes to stdout; the progress bar and
summary tables go to stderr, so `contracts ingest ... --json | jq` composes.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from output_contracts.cli.common import (
    JsonFlag,
    QuietFlag,
    config,
    err,
    findings_exit,
    format_option,
    out,
    progress_bar,
    registry_option,
    wide,
)
from output_contracts.errors import ConfigError
from output_contracts.traces.corpus import corpus_info, verify_corpus
from output_contracts.traces.formats.detect import FormatName as Format
from output_contracts.traces.ingest import DEFAULT_CHUNK_ROWS, IngestReport, ingest

corpus_app = typer.Typer(
    name="corpus",
    help="Inspect a Parquet corpus made by `contracts ingest`.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _print_table(console: Console, table: Table) -> None:
    """Print on a terminal at its width; to pipes and files at a wide one, so paths are not folded at
    rich's default of 80 columns (a sibling console on the same stream, not a change to the shared one)."""
    wide(console).print(table)


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


def _summary(rep: IngestReport) -> None:
    table = Table(title=None, show_edge=False, header_style="bold")
    for col, just in (
        ("source", "left"),
        ("format", "left"),
        ("lines", "right"),
        ("calls", "right"),
        ("rejects", "right"),
        ("blank", "right"),
        ("skipped", "left"),
    ):
        table.add_column(col, justify=just, overflow="fold", min_width=40 if col == "source" else None)  # type: ignore[arg-type]
    for s in rep.sources:
        rej = f"[red]{s.rejects:,}[/red]" if s.rejects else "0"
        if s.dropped_calls:
            rej += f" [red](+{s.dropped_calls:,} calls)[/red]"
        table.add_row(
            escape(s.source),
            s.format,
            f"{s.lines:,}",
            f"{s.calls:,}",
            rej,
            f"{s.blank:,}",
            escape(s.note or "yes") if s.skipped else "",
        )
    _print_table(err, table)
    rejects = f"[red]{rep.rejects:,} rejects[/red]" if rep.rejects else "0 rejects"
    verb = "wrote" if rep.changed else "unchanged:"
    err.print(
        f"{verb} {escape(str(rep.corpus))}: {rep.calls:,} calls, {rep.episodes:,} episodes, {rep.leaves:,} leaves, {rejects}"
        + (f" (see {rep.corpus / 'rejects.jsonl'})" if rep.rejects else "")
    )


def ingest_command(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="Trace files, folders (recursive: *.jsonl, *.jsonl.gz, *.json) or - for stdin. "
            "Default: paths.traces from contracts.toml.",
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
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="Accept sources that hold no tool call (default: exit 2)."),
    ] = False,
    quiet: QuietFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Ingest traces into a Parquet corpus (calls, leaves, episodes, rejects, corpus.json).

    Incremental and idempotent: sources already in the corpus (same sha256) are skipped. Bad lines go to
    rejects.jsonl (exit 0) unless --strict (exit 2 at the first). Sources read that hold no tool call and
    no bad line are an error (exit 2) unless --allow-empty: an empty file, or a format whose calls the
    reader does not see, never reports "ok, 0 calls".
    """
    cfg = config()
    corpus = cfg.require_path("paths.corpus", output, "corpus folder (-o)")
    srcs: list[str | Path] = list(sources) if sources else list(cfg.get("paths.traces") or [])
    if not srcs:
        raise ConfigError(
            "no trace sources given: pass SRC... or set 'traces' under [paths] in contracts.toml",
            code="E_USAGE",
        )
    reg = cfg.path("paths.registry", registry)
    show_bar = not quiet and err.is_terminal
    progress: Any = progress_bar(not show_bar, unit="bytes")
    kwargs: dict[str, Any] = {"progress": progress} if progress is not None else {}
    try:
        rep = ingest(
            srcs,
            corpus,
            format=fmt.value,
            strict=strict,
            registry=reg,
            chunk_rows=chunk_rows,
            allow_empty=allow_empty,
            **kwargs,
        )
    finally:
        if progress is not None:
            progress.finish()
    if as_json:
        _dump(_report_json(rep))
    if not quiet:
        _summary(rep)


def info_command(
    corpus: Annotated[
        Path | None,
        typer.Argument(
            help="Corpus folder (default: paths.corpus from contracts.toml).",
            show_default=False,
            metavar="CORPUS",
        ),
    ] = None,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Show a corpus: sources, calls, episodes, tools with call counts, rejects."""
    del quiet  # accepted everywhere (issue 22); info writes nothing to stderr
    path = config().require_path("paths.corpus", corpus, "corpus folder")
    info = corpus_info(path)
    if as_json:
        _dump(info)
        return
    out.print(
        f"corpus {info['corpus']}: {info['calls']:,} calls, {info['episodes']:,} episodes "
        f"({info['tasks']:,} tasks), {info['leaves']:,} leaves, sha256 {info['sha256'][:16]}…",
        markup=False,
    )
    if info["episodes_with_reward"]:
        out.print(
            f"rewards: {info['episodes_with_reward']:,} episodes, mean {info['mean_reward']:.3f}",
            markup=False,
        )
    if info["faulty_episodes"]:
        out.print(f"labelled faulty episodes: {info['faulty_episodes']:,}", markup=False)
    src = Table(show_edge=False, header_style="bold")
    for col in ("source", "format", "lines", "calls", "rejects"):
        src.add_column(col, justify="left" if col in ("source", "format") else "right", overflow="fold")
    for s in info["sources"]:
        rej = f"[red]{s['rejects']:,}[/red]" if s["rejects"] else "0"
        if s.get("dropped_calls"):
            rej += f" [red](+{s['dropped_calls']:,} calls)[/red]"
        src.add_row(escape(s["source"]), s["format"], f"{s['lines']:,}", f"{s['calls']:,}", rej)
    _print_table(out, src)
    if len(info["formats"]) > 1 or any(f["rejects"] for f in info["formats"]):
        fmts = Table(show_edge=False, header_style="bold")
        for col in ("format", "sources", "calls", "rejects"):
            fmts.add_column(col, justify="left" if col == "format" else "right")
        for f in info["formats"]:
            rej = f"[red]{f['rejects']:,}[/red]" if f["rejects"] else "0"
            fmts.add_row(f["format"], f"{f['sources']:,}", f"{f['calls']:,}", rej)
        _print_table(out, fmts)
    tools = Table(show_edge=False, header_style="bold")
    for col in ("tool", "calls", "errors", "episodes"):
        tools.add_column(col, justify="left" if col == "tool" else "right")
    for t in info["tools"]:
        tools.add_row(escape(t["tool"]), f"{t['calls']:,}", f"{t['errors']:,}", f"{t['episodes']:,}")
    _print_table(out, tools)
    rej = info["rejects"]
    if rej["total"]:
        codes = ", ".join(f"{k} {v}" for k, v in rej["by_code"].items())
        out.print(
            f"[red]rejects: {rej['total']:,}[/red] ({codes}); see {Path(info['corpus']) / 'rejects.jsonl'}"
        )
    else:
        out.print("rejects: 0")
    if info["registry"]:
        out.print(f"registry: tools.json ({info['registry']['tools']} tools)", markup=False)


def verify_command(
    corpus: Annotated[
        Path | None,
        typer.Argument(
            help="Corpus folder (default: paths.corpus from contracts.toml).",
            show_default=False,
            metavar="CORPUS",
        ),
    ] = None,
    quiet: QuietFlag = False,
) -> None:
    """Recompute every file digest and row count `corpus.json` records; exit 1 when the corpus was
    changed or damaged."""
    path = config().require_path("paths.corpus", corpus, "corpus folder")
    problems = verify_corpus(path)
    del quiet  # accepted everywhere (issue 22): findings are printed with -q too
    for p in problems:
        err.print(f"FAILED: {path}: {p}", markup=False)
    if not problems:
        out.print(f"ok: {path}: every recorded digest and row count matches", markup=False)
    findings_exit(bool(problems))


def register(app: typer.Typer) -> None:
    """Add `ingest` and the `corpus` group to the root app."""
    app.command("ingest")(ingest_command)
    corpus_app.command("info")(info_command)
    corpus_app.command("verify")(verify_command)
    app.add_typer(corpus_app)
