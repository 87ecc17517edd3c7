"""The `contracts` command: one root Typer app; each command group lives in its own module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from output_contracts import __version__
from output_contracts.cli import (
    audit_cmd,
    check_cmd,
    compare_cmd,
    config_cmd,
    ingest_cmd,
    ledger_cmd,
    mine_cmd,
    plan_cmd,
    proxy_cmd,
    repair_cmd,
    report_cmd,
)
from output_contracts.cli.common import ContractsGroup, State, reset_state

app = typer.Typer(
    cls=ContractsGroup,
    name="contracts",
    help="Offline contract mining and trace auditing for tool-using AI agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,
    # every command and group inherits the short form from the root's context
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"contracts {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="Use this contracts.toml instead of searching upwards.")
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Offline contract mining and trace auditing for tool-using AI agents."""
    reset_state()
    State.debug = debug
    State.config_file = config_file


for module in (
    ingest_cmd,
    mine_cmd,
    check_cmd,
    proxy_cmd,
    audit_cmd,
    compare_cmd,
    repair_cmd,
    ledger_cmd,
    plan_cmd,
    config_cmd,
    report_cmd,
):
    module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
