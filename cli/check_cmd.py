"""`contracts check` (receipts for trace dumps, for CI) and `contracts codes` (the property codes).

Thin layer: parse options, call `output_contracts.checks.checker`, render with `output_contracts.checks.outputs`.
Exit 0 when no violation, 1 when any, 2 on usage or input errors (rendered by the root group).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from output_contracts import __version__
from output_contracts.choices import MAX_ANNOTATIONS, MAX_SARIF_RESULTS, EncoderName
from output_contracts.cli.ci_options import (
    BaseOpt,
    MaxAnnotationsOpt,
    MaxResultsOpt,
    render_options,
    step_summary,
)
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    AllowEmptyFlag,
    CodeOpt,
    ContractsOpt,
    FormatOpt,
    JsonFlag,
    OutputOpt,
    PlainFlag,
    QuietFlag,
    ToolOpt,
    err,
    fold_option,
    out,
    progress_bar,
)
from output_contracts.cli.settings import resolved
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import TraceError, UsageError
from output_contracts.jsonutil import atomic_write_bytes, canonical_json, chunked_batches
from output_contracts.settings import Settings, setting

if TYPE_CHECKING:
    from output_contracts.checks.checker import Fold
    from output_contracts.checks.outputs import Summary, SummaryBuilder
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.traces.corpus import Corpus


class CheckOutput(StrEnum):
    """`--output-format` of `check` (ruff's names)."""

    jsonl = "jsonl"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    github = "github"


def _parse_fold(value: str | None) -> Fold:
    if value is None:
        return None
    if value == "cross":
        return "cross"
    try:
        f = int(value)
    except ValueError:
        raise UsageError(f"--fold must be a fold number or 'cross', got {value!r}", field="--fold") from None
    if f < 0:
        raise UsageError(f"--fold must be >= 0, got {f}", field="--fold")
    return f


#: Bytes asked of stdin at a time by `_stdin_batches` (one read: it returns what is there, up to this).
READ_CHUNK = 1 << 16


def _stdin_batches(stdin: BinaryIO, before_wait: Callable[[], None]) -> Iterator[list[bytes]]:
    """The lines of `stdin` (each with its newline, the last one as it ends), a read at a time: the
    lines each read completes, as one list (`check_batches` checks them together and answers them all
    before the next read).

    Rule: take whatever is already available (`read1`: at most one read, which returns the bytes
    waiting, up to `READ_CHUNK`), hand out every complete line of it, and call `before_wait` (the CLI
    flushes its output) before each read that may block. So a pipe full of lines costs one read per
    64 KiB rather than one `readline` per line, while an interactive writer that sends one line and
    waits gets that line's receipt before `check -` waits for the next. The bytes of each line are those
    `readline` gives, so the output is the same byte for byte.
    """
    return chunked_batches(getattr(stdin, "read1", stdin.read), before_wait, READ_CHUNK)


def _receipt_stream(
    contracts: ContractSet,
    sources: list[str],
    *,
    fold: Fold,
    tools: list[str] | None,
    codes: list[str] | None,
    encoder: str,
    include_all: bool,
    fmt: str,
    summary: SummaryBuilder,
    stdin: BinaryIO,
    before_wait: Callable[[], None] = lambda: None,
    strict: bool = False,
    progress: Any = None,
    allow_empty: bool = False,
) -> Iterator[dict[str, Any]]:
    """Encoded receipts of every source in order: corpus folders, trace files (ingested to a temporary
    corpus), and `-` (stdin, streamed line by line; `before_wait` runs before each read that may block)."""
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.sources import is_corpus, open_corpus

    files = [s for s in sources if s != "-" and not is_corpus(s)]
    for s in files:
        if not Path(s).exists():
            raise UsageError("no such trace file or corpus folder", source=s, code="E_INPUT")
    selected: dict[str, Any] = {"fold": fold, "tools": tools, "codes": codes}
    with ExitStack() as stack:
        ingested: Corpus | None = None
        if files:  # every trace file into one temporary corpus, checked once (at the first file)
            ingested = stack.enter_context(
                open_corpus(
                    files, format=fmt, strict=strict, prefix="contracts-check-", allow_empty=allow_empty
                )
            )
            summary.rejected_lines += len(ingested.rejects())
        for s in sources:
            if s == "-":
                batches = _stdin_batches(stdin, before_wait)
                yield from _stdin_receipts(
                    contracts,
                    batches,
                    summary,
                    strict,
                    encoder=encoder,
                    include_all=include_all,
                    format=fmt,
                    allow_empty=allow_empty,
                    **selected,
                )
            elif is_corpus(s):
                yield from _corpus_receipts(
                    contracts, Corpus.open(s), summary, encoder, include_all, progress, **selected
                )
            elif ingested is not None and s == files[0]:
                yield from _corpus_receipts(
                    contracts, ingested, summary, encoder, include_all, progress, **selected
                )
            # else: every file went into the one ingested corpus, checked once at the first file


def _stdin_receipts(
    contracts: ContractSet,
    batches: Iterator[list[bytes]],
    summary: SummaryBuilder,
    strict: bool,
    allow_empty: bool = False,
    **options: Any,
) -> Iterator[dict[str, Any]]:
    """Encoded receipts of the lines read from stdin, batch by batch (`check_batches`); rejected lines
    and calls not checked counted in `summary` (`strict`: the first rejected line is an error). Stdin
    that yields no tool call is an error naming `-` and its rejected lines, unless `allow_empty`."""
    from output_contracts.checks.checker import check_batches
    from output_contracts.checks.receipts import encode

    # what is loaded by now (modules, the contract set) lives as long as the process: the cyclic
    # collector, run again and again by the objects each line decodes to, is spared walking it every
    # time (0.94x the CPU of `check -` on 60k lines of the generated world)
    gc.freeze()  # given back to the collector when the stream ends (a caller's process goes on)
    calls = rejected = 0
    try:
        for batch in check_batches(contracts, batches, **options):
            for tool, n in batch.checked.items():
                summary.checked(tool, n)
                calls += n
            for item in batch.items:  # calls with a receipt, calls not checked, bad lines
                if item.kind == "rejected":
                    if strict:
                        raise TraceError(f"unreadable line: {item.reason}", source="-", line=item.line)
                    summary.rejected_lines += 1
                    rejected += 1
                    continue
                calls += 1
                if item.kind == "skipped":
                    summary.skipped_calls += 1
                elif item.receipt is not None:
                    enc = encode(item.receipt)
                    summary.receipt(enc, [v.code for v in item.receipt.violations])
                    yield enc
        # (a call of a tool `--tool` leaves out is not counted by the stream: no verdict then)
        if not calls and not allow_empty and not options.get("tools"):
            what = "" if rejected else ": an empty input, or a format whose calls this reader does not see"
            raise TraceError(
                f"no tool call found ({rejected:,} reject{'' if rejected == 1 else 's'}{what}); "
                "check the path and --format, or pass --allow-empty",
                source="-",
            )
    finally:
        gc.unfreeze()


def _corpus_receipts(
    contracts: ContractSet,
    corpus: Corpus,
    summary: SummaryBuilder,
    encoder: str,
    include_all: bool,
    progress: Any,
    *,
    fold: Fold,
    tools: list[str] | None,
    codes: list[str] | None,
) -> Iterator[dict[str, Any]]:
    """Encoded receipts of a corpus's calls, checked together; the calls checked and skipped counted."""
    from output_contracts.checks.checker import check_corpus, corpus_counts, receipts_from_frame
    from output_contracts.checks.receipts import encode

    counts = corpus_counts(contracts, corpus, tools=tools)
    for tool, n in counts.calls_by_tool.items():
        summary.checked(tool, n)
    summary.skipped_calls += counts.skipped_calls
    kw: dict[str, Any] = {"progress": progress} if progress is not None else {}
    frame = check_corpus(contracts, corpus, fold=fold, tools=tools, codes=codes, **kw)
    for r in receipts_from_frame(
        contracts, corpus, frame, encoder=encoder, include_all=include_all, tools=tools
    ):
        enc = encode(r)
        summary.receipt(enc, [v.code for v in r.violations])
        yield enc


def _print_summary(summary: Any, plain: bool = False, to: Any = err) -> None:
    """The summary on stderr (stdout carries the receipts; `--plain` TSV goes to stdout with -o)."""
    from output_contracts.checks.outputs import summary_lines

    table = Grid([Column("what", "text"), Column("value", "text")], title="contracts check")
    for label, value in summary_lines(summary):
        if plain:  # full values: every unknown tool, digits without separators
            if label == "unknown tool":
                value = f"{summary.unknown_tool_calls} calls not checked ({', '.join(summary.unknown_tools)})"
            label, value = (
                label.strip(),
                value.replace(",", "") if value.replace(",", "").isdigit() else value,
            )
        table.add_row(label, value)
    show(to, table, plain=plain)


CheckSourcesArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="SRC",
        help="Trace files (any supported format), corpus folders, or - for stdin. "
        "Default: paths.corpus from the config.",
        show_default=False,
    ),
]
CheckFoldOpt = Annotated[
    str | None,
    fold_option("Use fold F's checker, or 'cross' (each call by its own task's fold). Default: full set."),
]
CheckEncoderOpt = Annotated[
    EncoderName | None, typer.Option("--encoder", help="Receipt encoder (default: check.encoder, v2).")
]
CheckOutputFormatOpt = Annotated[
    CheckOutput, typer.Option("--output-format", help="Receipts as jsonl, json, sarif, junit or github.")
]
AllFlag = Annotated[
    bool, typer.Option("--all", help="A receipt for every checked call, not only those with violations.")
]
StrictFlag = Annotated[
    bool,
    typer.Option(
        "--strict", help="Exit 2 at the first unreadable input line (default: count them and go on)."
    ),
]
FailOnUnknownToolFlag = Annotated[
    bool,
    typer.Option(
        "--fail-on-unknown-tool",
        help="Exit 1 when calls of a tool the contract set has no rules for were seen (not checked).",
    ),
]


def _texts(paths: list[Path]) -> list[str]:
    return [str(p) for p in paths]


@dataclass(frozen=True, kw_only=True)
class CheckSettings(Settings):
    """`contracts check`, resolved: the contract set and sources from `[paths]`, the encoder from
    `check.encoder`."""

    contracts_path: Path = setting("paths.contracts", required="contract set (--contracts)")
    sources: list[str] = setting("paths.corpus", required="trace source (SRC)", many=True, from_config=_texts)
    encoder: str = setting("check.encoder")
    fold: str | None
    code: list[str] | None
    tool: list[str] | None
    input_format: str
    output_format: CheckOutput
    include_all: bool
    output: Path | None
    strict: bool
    allow_empty: bool
    fail_on_unknown_tool: bool
    base: Path | None
    max_results: int
    max_annotations: int
    quiet: bool
    plain: bool

    def check(self) -> None:
        """One stdin, known codes, and an encoder that carries what the output format reports."""
        from output_contracts.checks.receipts import ENCODERS, WITNESS_ENCODERS
        from output_contracts.codes.table import names

        CODES = names()

        if self.sources.count("-") > 1:
            raise UsageError("stdin (-) can be given only once", field="SRC")
        for c in self.codes or ():
            if c not in CODES:
                raise UsageError(f"unknown property code {c!r} (known: {', '.join(CODES)})", field="--code")
        enc = self.encoder
        if enc not in ENCODERS:
            raise UsageError(
                f"check.encoder must be one of {', '.join(ENCODERS)}, got {enc!r}", field="encoder"
            )
        if enc not in WITNESS_ENCODERS and self.output_format.value in ("sarif", "junit", "github"):
            raise UsageError(
                f"--output-format {self.output_format.value} reports violations, which encoder {enc!r} does "
                "not carry (it is for delivering ablation receipts to agents): use jsonl or json",
                field="--encoder",
            )

    @property
    def codes(self) -> list[str] | None:
        """The `--code` filter, sorted and without repeats (None: every code)."""
        return sorted(set(self.code)) if self.code else None

    @property
    def tools(self) -> list[str] | None:
        """The `--tool` filter, sorted and without repeats (None: every tool)."""
        return sorted(set(self.tool)) if self.tool else None


def check(
    sources: CheckSourcesArg = None,
    contracts_path: ContractsOpt = None,
    fold: CheckFoldOpt = None,
    encoder: CheckEncoderOpt = None,
    code: CodeOpt = None,
    tool: ToolOpt = None,
    input_format: FormatOpt = "auto",
    output_format: CheckOutputFormatOpt = CheckOutput.jsonl,
    include_all: AllFlag = False,
    output: OutputOpt = None,
    strict: StrictFlag = False,
    allow_empty: AllowEmptyFlag = False,
    fail_on_unknown_tool: FailOnUnknownToolFlag = False,
    base: BaseOpt = None,
    max_results: MaxResultsOpt = MAX_SARIF_RESULTS,
    max_annotations: MaxAnnotationsOpt = MAX_ANNOTATIONS,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Check tool calls against a contract set; print receipts (violations) and a summary.

    Exit 0 when every call holds, 1 when any violation is found, 2 on usage or input errors.
    """
    _check(resolved(CheckSettings, locals()))


class _Sink:
    """The open output while receipts stream to stdout or a device: flushed before each read of stdin
    that may block (`_stdin_batches`), so every receipt of the lines read so far is out before
    `check -` waits for more."""

    def __init__(self) -> None:
        self.file: BinaryIO | None = None

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()


def _check(s: CheckSettings) -> None:
    """Check every source, write the receipts in the output format, summarise, exit 1 on findings."""
    from output_contracts.checks.checker import load_contracts
    from output_contracts.checks.outputs import SummaryBuilder
    from output_contracts.checks.renderers import FORMATS, github

    contracts = load_contracts(s.contracts_path)
    summary = SummaryBuilder(frozenset(contracts.tools))
    sink = _Sink()
    stream = _receipt_stream(
        contracts,
        list(s.sources),
        fold=_parse_fold(s.fold),
        tools=s.tools,
        codes=s.codes,
        encoder=s.encoder,
        include_all=s.include_all,
        fmt=s.input_format,
        summary=summary,
        stdin=sys.stdin.buffer,
        before_wait=sink.flush,
        strict=s.strict,
        progress=progress_bar(s.quiet),
        allow_empty=s.allow_empty,
    )
    fmt = FORMATS[s.output_format.value]
    opts = render_options(s.base, s.max_results, s.max_annotations, contracts)
    kept: list[dict[str, Any]] = []

    def chunks() -> Iterator[bytes]:
        if fmt.streaming:
            yield from (fmt.render_one(r) for r in stream)
        else:
            kept.extend(stream)
            yield fmt.render_all(kept, summary.build(), version=__version__, options=opts)

    _write(chunks(), s.output, sink)
    if s.output_format is CheckOutput.github:
        step_summary(github.receipt_annotations(kept, opts), opts, "contracts check")
    _finish(summary.build(), s)


def _write(chunks: Iterator[bytes], output: Path | None, sink: _Sink) -> None:
    """The rendered receipts to `output` (a file, atomically; a device or pipe as it is) or stdout."""
    if output is not None and output.exists() and not output.is_file():
        with open(output, "wb") as sink.file:  # a device or pipe (/dev/stdout, a fifo): no temp+rename
            for chunk in chunks:
                sink.file.write(chunk)
        sink.file = None
    elif output is not None:
        atomic_write_bytes(output, chunks)
    else:
        # buffered, flushed before each read of stdin that may block and at the end
        sink.file = sys.stdout.buffer
        for chunk in chunks:
            if chunk:
                sink.file.write(chunk)
        sink.file.flush()


def _finish(built: Summary, s: CheckSettings) -> None:
    """The summary (on stderr; `--plain` TSV on stdout when the receipts go to a file) and the exit:
    1 on a violation, or on calls of tools without contracts under `--fail-on-unknown-tool`."""
    if s.plain:  # data, printed whatever -q says (on stdout when the receipts go to a file)
        _print_summary(built, True, out if s.output is not None else err)
    elif not s.quiet:
        _print_summary(built)
    if built.calls_with_violations:
        raise typer.Exit(EXIT_FINDINGS)
    if s.fail_on_unknown_tool and built.unknown_tool_calls:
        say(
            err,
            f"FAIL: {built.unknown_tool_calls:,} call(s) of {len(built.unknown_tools)} tool(s) without contracts "
            f"were not checked: {', '.join(built.unknown_tools)} (--fail-on-unknown-tool)",
        )
        raise typer.Exit(EXIT_FINDINGS)


def codes(as_json: JsonFlag = False, quiet: QuietFlag = False, plain: PlainFlag = False) -> None:
    """List every property code with a one-line description and its docs page."""
    from output_contracts.checks.outputs import CODE_INFO

    del quiet  # accepted by every command; codes writes nothing to stderr
    infos = list(CODE_INFO.values())
    if as_json:
        data = [{"code": i.code, "family": i.family, "summary": i.summary, "docs": i.docs} for i in infos]
        sys.stdout.buffer.write(canonical_json(data) + b"\n")
        return
    table = Grid(
        [Column("code", "key"), Column("family", "key"), Column("meaning", "text"), Column("docs", "path")]
    )
    for i in infos:
        table.add_row(i.code, i.family, i.summary, i.docs)
    show(out, table, plain=plain)


def register(app: typer.Typer) -> None:
    """Add `check` and `codes` to the root app."""
    app.command("check")(check)
    app.command("codes")(codes)
