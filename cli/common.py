"""Shared CLI pieces: consoles, error rendering, exit codes, shared options, config access.

Only `output_contracts.cli` imports typer and rich. stdout carries data; stderr carries text for people.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

# typer >= 0.29 vendors Click as `typer._click` and no longer installs `click` (pyproject pins it)
from typer._click.exceptions import ClickException as _ClickException
from typer._click.exceptions import NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError
from typer.core import TyperArgument, TyperGroup

from output_contracts.config import Config, load_config
from output_contracts.errors import IO_ERRORS, ContractsError, UsageError, io_failure, os_error_of

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class State:
    """Process-wide CLI state set by the root callback."""

    debug: bool = False
    config_file: Path | None = None
    _config: Config | None = None


def config() -> Config:
    """The resolved project configuration (loaded once per invocation)."""
    if State._config is None:
        State._config = load_config(file=State.config_file)
    return State._config


def reset_state() -> None:
    State.debug = False
    State.config_file = None
    State._config = None


class PlainArgument(TyperArgument):
    """A positional argument shown by its metavar alone: `SRC...`, `[CORPUS]` in the usage line and
    `SRC` in the list, never Typer's `{SRC}` or a Python type (`<path>`, `<list[str]>`)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if "[" in name or name.startswith("-"):  # spelled out already: `-- SERVER_CMD [ARGS]...`
            return name
        name += "..." if self.nargs != 1 else ""
        return name if self.required else f"[{name}]"

    def _rich_display_name(self) -> str:
        return self.display_name_raw


def _plain_arguments(cmd: Any) -> None:
    """Every positional argument below `cmd` shown as a `PlainArgument` (the classes differ only in help)."""
    for p in getattr(cmd, "params", ()):
        if type(p) is TyperArgument:
            p.__class__ = PlainArgument
    for sub in (getattr(cmd, "commands", None) or {}).values():
        _plain_arguments(sub)


class ContractsGroup(TyperGroup):
    """Root group: renders every `ContractsError` as one line on stderr and exits 2."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        _plain_arguments(self)

    def make_context(self, *args: Any, **kw: Any) -> Any:
        try:
            return super().make_context(*args, **kw)
        except ClickUsageError as e:  # the root's own options (`contracts --bogus`)
            raise one_line(e) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            renamed_spelling(self, [*ctx._protected_args, *ctx.args])
            return super().invoke(ctx)
        except ClickUsageError as e:
            # Click's three lines (usage, hint, `Error: ...`) as our one `error[E_USAGE]: ...` line
            raise one_line(e) from None
        except ContractsError as e:
            self._render(as_flags(e))
        except (
            BrokenPipeError,
            typer.Exit,
            typer.Abort,
            _ClickException,
        ):
            # the reader of stdout went away (`contracts ... | head`): Click's main stops quietly; Click's
            # own exits (`typer.Exit(1)` for findings) and usage errors are answers, not failures
            raise
        except IO_ERRORS as e:
            # an OS or decompression error no reader wrapped: still one line naming the file, never a
            # traceback (Click would print `Aborted!` for an EOFError from a truncated .gz)
            self._render(io_failure(e))
        except Exception as e:
            inner = os_error_of(e)  # e.g. polars' ComputeError around a failed write
            if inner is not None:
                self._render(io_failure(inner))
            # a Parquet file that does not decode (polars, pyarrow), or one whose damaged page still
            # decodes into bytes a reader then chokes on (orjson on a JSON column): if a corpus this
            # process opened fails its digests, that file is the error; else it is a bug, raised as is
            self._explain_decode_error(e)
            raise
        except BaseException as e:
            # polars' Rust code can panic on damaged Parquet pages: pyo3's PanicException is no Exception
            if type(e).__name__ == "PanicException":
                self._explain_decode_error(e)
            raise

    def _explain_decode_error(self, e: BaseException) -> None:
        """Render the damaged corpus file behind a decode error, when one is found (else return)."""
        from output_contracts.traces.corpus import explain_decode_error

        found = explain_decode_error(e)
        if found is not None:
            self._render(found)

    @staticmethod
    def _render(e: ContractsError) -> None:
        if State.debug:
            traceback.print_exc(file=sys.stderr)
        err.print(e.render(), markup=False, style="red")
        raise typer.Exit(EXIT_USAGE) from None


#: Library settings whose name differs from their command-line flag.
FLAG_OF = {"k": "--folds", "folds": "--folds", "fold": "--fold"}


def as_flags(e: ContractsError) -> ContractsError:
    """The library names settings (`chunk_rows must be >= 1`); on the command line they are flags
    (`--chunk-rows must be >= 1`). A message that starts with its error's `field` gets the flag instead;
    the field itself then says nothing more."""
    f = e.field
    if not f or not f.replace("_", "").isalnum() or not e.message.startswith(f + " "):
        return e
    flag = FLAG_OF.get(f, "--" + f.replace("_", "-"))
    out = type(e)(flag + e.message[len(f) :], code=e.code, source=e.source, line=e.line, field=None)
    return out


class OneLineUsageError(ClickUsageError):
    """A Click usage error shown as our one line, `error[E_USAGE]: message; see 'contracts x --help'`."""

    def show(self, file: Any = None) -> None:
        err.print(f"error[E_USAGE]: {self.message}", markup=False, style="red")


def one_line(e: ClickUsageError) -> ClickUsageError:
    """The one-line form of Click's usage error `e` (help screens for missing arguments stay as they are)."""
    if isinstance(e, (NoArgsIsHelpError, OneLineUsageError)):
        return e
    message = e.format_message().rstrip(".")
    if e.ctx is not None:
        message += f"; see '{e.ctx.command_path} --help'"
    return OneLineUsageError(message, ctx=e.ctx)


#: Old option spellings, by command, and what replaced them (one word, one meaning): an old
#: spelling is a one-line usage error that names the new one, never a silent guess.
RENAMED: dict[str, dict[str, str]] = {
    "audit": {
        "--fold": "--folds (the number of folds)",
        "-k": "--folds (the number of folds)",
    },
    "rules": {"--folds": "--by-fold (each rule's fold checkers)"},
    "registry infer": {"--base": "--extend (the registry to extend)"},
}
#: Commands whose `--json` took a file before it became the flag "JSON on stdout".
JSON_WAS_A_PATH = frozenset({"audit", "audit-score", "repair-score"})


def _command_path(group: Any, args: list[str]) -> tuple[str, list[str]]:
    """The subcommand path (`audit`, `ledger show`) at the head of `args`, and the tokens after it."""
    names: list[str] = []
    cmd = group
    rest = list(args)
    while rest and getattr(cmd, "commands", None) is not None and rest[0] in cmd.commands:
        cmd = cmd.commands[rest[0]]
        names.append(rest.pop(0))
    return " ".join(names), rest


def renamed_spelling(group: Any, args: list[str]) -> None:
    """Refuse an old option spelling with a usage error naming its replacement (before Click parses).
    `--json FILE` is told apart from `--json SRC` by the file: an old report path ends in .json (or is
    `-`) and does not exist yet; an existing file after `--json` is a source."""
    name, rest = _command_path(group, args)
    renamed = RENAMED.get(name, {})
    for i, tok in enumerate(rest):
        if tok == "--":
            break
        for old, new in renamed.items():
            short = len(old) == 2 and tok.startswith(old) and not tok.startswith("--")
            if tok == old or tok.startswith(old + "=") or short:
                raise UsageError(f"{old} is now {new}; see 'contracts {name} --help'")
        if name in JSON_WAS_A_PATH and (
            tok.startswith("--json=")
            or (
                tok == "--json"
                and i + 1 < len(rest)
                and (rest[i + 1] == "-" or rest[i + 1].endswith(".json"))
                and not Path(rest[i + 1]).exists()
            )
        ):
            raise UsageError(
                "--json is now a flag (the JSON report on stdout): write it to a file with "
                f"-o/--output FILE; see 'contracts {name} --help'"
            )


def fail(message: str, code: str = "E_USAGE", **kw: Any) -> None:
    """Raise a `ContractsError` (for usage problems detected in the CLI layer)."""
    raise ContractsError(message, code=code, **kw)


def findings_exit(found: bool) -> None:
    """Exit 1 when there were findings; return normally otherwise."""
    if found:
        raise typer.Exit(EXIT_FINDINGS)


class OutputFormat(StrEnum):
    """Shared `--output-format` names (ruff's)."""

    text = "text"
    json = "json"
    jsonl = "jsonl"
    sarif = "sarif"
    junit = "junit"
    github = "github"


# Shared options: each name is declared here once, with the metavar a person reads, so the
# same word means the same thing in every command (tests/cli/test_option_vocabulary.py checks it). A
# command that needs its own help text calls the factory (`contracts_option("...")`); names, type and
# metavar stay the ones below.


def contracts_option(help: str = "Contract set (contracts.json). Default: paths.contracts.") -> Any:
    """`--contracts/-c FILE`: a contract set made by `contracts mine`."""
    return typer.Option("--contracts", "-c", metavar="FILE", help=help, show_default=False)


def registry_option(
    help: str = "Tool registry (tools.json or a folder of them). Default: paths.registry.",
) -> Any:
    """`--registry/-r FILE`: a tools.json (or, where said, a folder of them)."""
    return typer.Option("--registry", "-r", metavar="FILE", help=help, show_default=False)


def folds_option(help: str = "Number of task folds K (1 = no splitting).") -> Any:
    """`--folds K`: the fold COUNT, everywhere."""
    return typer.Option("--folds", min=1, metavar="K", help=help, show_default=False)


def fold_option(help: str = "Use fold F's checker (default: the full set).") -> Any:
    """`--fold F`: one fold's INDEX (0-based), never a count."""
    return typer.Option("--fold", metavar="F", help=help, show_default=False)


def output_option(help: str = "Write to FILE (atomically) instead of stdout.") -> Any:
    """`-o/--output FILE`: where the command's output goes."""
    return typer.Option("--output", "-o", metavar="FILE", help=help, show_default=False)


def seed_option(help: str = "Random seed (default: mine.seed, 13).") -> Any:
    """`--seed N`."""
    return typer.Option("--seed", metavar="N", help=help, show_default=False)


def bootstrap_option(
    help: str = "Bootstrap resamples (default: audit.bootstrap, 1000; 0 = Wilson only).",
) -> Any:
    """`--bootstrap N`."""
    return typer.Option("--bootstrap", metavar="N", help=help, show_default=False)


def corpus_option(help: str = "Corpus folder (default: paths.corpus).") -> Any:
    """`--corpus DIR`: a corpus made by `contracts ingest`."""
    return typer.Option("--corpus", metavar="DIR", help=help, show_default=False)


def markdown_option(help: str = "Write the Markdown report to FILE.") -> Any:
    """`--markdown FILE`."""
    return typer.Option("--markdown", metavar="FILE", help=help, show_default=False)


def format_option(help: str = "Trace format of trace files and stdin (default: auto-detect).") -> Any:
    """`-f/--format FORMAT`: the INPUT trace format (`--output-format` is the output's)."""
    return typer.Option("--format", "-f", metavar="FORMAT", help=help)


def timeout_option(help: str) -> Any:
    """`--timeout SECONDS`."""
    return typer.Option("--timeout", metavar="SECONDS", help=help)


def ledger_option(help: str) -> Any:
    """`--ledger DIR`: a ledger folder to write."""
    return typer.Option("--ledger", metavar="DIR", help=help, show_default=False)


def tool_option(help: str = "Only calls of this tool (repeatable).") -> Any:
    """`--tool TOOL` (repeatable)."""
    return typer.Option("--tool", metavar="TOOL", help=help, show_default=False)


def code_option(help: str = "Only rules with this property code (repeatable).") -> Any:
    """`--code CODE` (repeatable)."""
    return typer.Option("--code", metavar="CODE", help=help, show_default=False)


ContractsOpt = Annotated[Path | None, contracts_option()]
RegistryOpt = Annotated[Path | None, registry_option()]
FoldOpt = Annotated[str | None, fold_option()]
OutputOpt = Annotated[Path | None, output_option()]
SeedOpt = Annotated[int | None, seed_option()]
BootstrapOpt = Annotated[int | None, bootstrap_option()]
MarkdownOpt = Annotated[Path | None, markdown_option()]
FormatOpt = Annotated[str, format_option()]
ToolOpt = Annotated[list[str] | None, tool_option()]
CodeOpt = Annotated[list[str] | None, code_option()]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietFlag = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress or summary on stderr (data on stdout stays).")
]
#: `--allow-empty`, one definition for every command that reads trace files.
AllowEmptyFlag = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Accept an input that yields no tool call. By default each input named (a file, a folder, "
        "-) must yield one, else exit 2 naming it and its reject count; within a folder, files that "
        "yield none are only noted.",
    ),
]


def json_flag(help: str) -> Any:
    """`--json`: always a flag, "JSON on stdout" (a file is `-o/--output FILE`)."""
    return typer.Option("--json", help=help)


OverwriteFlag = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace an existing ledger in the ledger folder (else it is refused)."),
]


class RichBar:
    """`output_contracts.progress.Progress` rendered as a transient rich bar on stderr.

    `unit="bytes"` shows bytes read (ingest, ledger verify); `unit="items"` shows n/total (calls, cases).
    One bar may hear several tasks in turn (`mine SRC` ingests, then mines): each `start` opens a fresh
    bar, in bytes for the tasks that count bytes whatever the command's unit.
    """

    BYTE_TASKS = frozenset({"ingest"})

    def __init__(self, unit: str = "items") -> None:
        self._unit = unit
        self._bar: Any = None
        self._task: Any = None

    def start(self, task: str, total: int | None) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as _RichProgress

        self.finish()
        in_bytes = self._unit == "bytes" or task in self.BYTE_TASKS
        counter = DownloadColumn() if in_bytes else MofNCompleteColumn()
        self._bar = _RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            counter,
            TimeElapsedColumn(),
            console=err,
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(task, total=total)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, n)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar = None
        self._task = None


def progress_bar(quiet: bool, unit: str = "items") -> Any:
    """A bar on an interactive stderr; the silent `NULL_PROGRESS` for pipes, files, CI logs or --quiet."""
    from output_contracts.progress import NULL_PROGRESS

    return RichBar(unit) if err.is_terminal and not quiet else NULL_PROGRESS


PlainFlag = Annotated[
    bool,
    typer.Option(
        "--plain",
        help="Print the table as tab-separated values: one header line, full values, no colour (for cut, awk).",
    ),
]


@contextmanager
def phase(quiet: bool, task: str) -> Iterator[None]:
    """A transient bar (no total) for the length of one library call that reports no progress of its own."""
    bar = progress_bar(quiet)
    bar.start(task, None)
    try:
        yield
    finally:
        bar.finish()
