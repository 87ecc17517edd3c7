"""`contracts proxy`: an MCP stdio proxy that appends receipts to tool results (docs/proxy.md).

Thin layer: parse options, load the checker, hand stdin/stdout to `output_contracts.checks.proxy`. stdout is
the MCP channel and carries nothing else; warnings and the closing summary go to stderr, beside the
server's own stderr. Exit 0 when the client closed the connection and the server exited cleanly; 2 when
the server cannot start or dies while the client is connected (one `error[E_SERVER]` line).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from output_contracts.choices import RECEIPT_PLACES, EncoderName
from output_contracts.cli.common import (
    ContractsOpt,
    FoldOpt,
    QuietFlag,
    config,
    err,
    registry_option,
    timeout_option,
)
from output_contracts.cli.tables import say
from output_contracts.errors import UsageError


def _fold_index(value: str | None) -> int | None:
    """`--fold F` as a fold index (the proxy checks one call at a time: no 'cross')."""
    if value is None:
        return None
    if not value.isdigit():
        raise UsageError(f"--fold must be a fold number (0, 1, ...), got {value!r}", field="--fold")
    return int(value)


def proxy(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The MCP server to run behind the proxy, after `--`: SERVER_CMD [ARGS...].",
            metavar="-- SERVER_CMD [ARGS]...",
            show_default=False,
        ),
    ] = None,
    contracts_path: ContractsOpt = None,
    registry: Annotated[
        Path | None, registry_option("tools.json: substitutes offered as recovery tools, outputSchema.")
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(
            "--log",
            metavar="FILE",
            help="Append every tool call to FILE as flat trace records (for `contracts ingest`).",
        ),
    ] = None,
    receipt_in: Annotated[
        str,
        typer.Option(
            "--receipt-in", metavar="PLACES", help="Where receipts go: text, meta, text,meta or none."
        ),
    ] = ",".join(RECEIPT_PLACES),
    timeout: Annotated[
        float | None,
        timeout_option("Answer a request the server has not answered in SECONDS with an error."),
    ] = None,
    enrich_tools: Annotated[
        bool,
        typer.Option(
            "--enrich-tools", help="Add the registry's declared output as outputSchema to tools/list."
        ),
    ] = False,
    fold: FoldOpt = None,
    encoder: Annotated[EncoderName, typer.Option("--encoder", help="Receipt encoder.")] = EncoderName.v2,
    trace_id: Annotated[
        str | None,
        typer.Option(
            "--trace-id", metavar="ID", help="trace_id of the logged calls (default: mcp-<time>-<pid>)."
        ),
    ] = None,
    quiet: QuietFlag = False,
) -> None:
    """Run an MCP server behind a proxy that checks every tools/call result and appends receipts.

    Messages pass through unchanged in both directions; a result that breaks a mined contract gets its
    receipt as an extra text content block and/or under _meta. Example:
    contracts proxy --contracts contracts.json --log calls.jsonl -- python server.py
    """
    from output_contracts.checks.api import Checker
    from output_contracts.checks.proxy import Proxy, ProxyOptions, parse_places

    if not command:
        raise UsageError(
            "no server command: contracts proxy --contracts K -- SERVER_CMD [ARGS...]", field="SERVER_CMD"
        )
    if enrich_tools and registry is None:
        raise UsageError("--enrich-tools needs --registry (the declared outputs)", field="--enrich-tools")
    cpath = config().require_path("paths.contracts", contracts_path, "contract set (--contracts)")
    options = ProxyOptions(
        receipt_in=parse_places(receipt_in),
        log=log,
        timeout=timeout,
        enrich_tools=enrich_tools,
        trace_id=trace_id,
    )
    checker = Checker.load(cpath, registry=registry, fold=_fold_index(fold), encoder=encoder.value)
    p = Proxy(
        checker,
        command,
        sys.stdin.buffer,
        sys.stdout.buffer,
        options,
        warn=lambda m: err.print(f"warning: {m}", markup=False),
    )
    p.run()
    if not quiet:
        where = f"; logged to {log} as trace {p.trace_id}" if log is not None else ""
        say(err, f"proxy: {p.calls} tool calls, {p.receipts} with receipts{where}")


def register(app: typer.Typer) -> None:
    """Add `proxy` to the root app."""
    app.command("proxy")(proxy)
