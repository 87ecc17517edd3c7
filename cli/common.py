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

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from output_contracts.config import Config, load_config
from output_contracts.errors import IO_ERRORS, ContractsError, io_failure, os_error_of

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


class ContractsGroup(TyperGroup):
    """Root group: renders every `ContractsError` as one line on stderr and exits 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ContractsError as e:
            self._render(as_flags(e))
        except (
            BrokenPipeError,
            typer.Exit,
            click.exceptions.Exit,
            click.exceptions.ClickException,
            click.exceptions.Abort,
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
FLAG_OF = {"k": "--fold", "folds": "--folds", "fold": "--fold"}


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


JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary on stderr.")]
SeedOption = Annotated[int | None, typer.Option("--seed", help="Random seed (default from config: 13).")]


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
    """A transient bar (no total) around one library call that reports no progress of its own."""
    bar = progress_bar(quiet)
    bar.start(task, None)
    try:
        yield
    finally:
        bar.finish()
