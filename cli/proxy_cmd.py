"""`contracts proxy`: an MCP stdio proxy that appends receipts to tool results (docs/proxy.md).

Thin layer: parse options, load the checker, hand stdin/stdout to `output_contracts.checks.proxy`. stdout is
the MCP channel and carries nothing else; warnings and the closing summary go to stderr, beside the
server's own stderr. Exit 0 when the client closed the connection and the server exited cleanly; 2 when
the server cannot start or dies while the client is connected (one `error[E_SERVER]` line).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from output_contracts.choices import RECEIPT_PLACES, EncoderName
from output_contracts.cli.common import (
    ContractsOpt,
    FoldOpt,
    QuietFlag,
    err,
    registry_option,
    timeout_option,
)
from output_contracts.cli.settings import resolved
from output_contracts.cli.tables import say
from output_contracts.errors import UsageError
from output_contracts.settings import Settings, setting


def _fold_index(value: str | None) -> int | None:
    """`--fold F` as a fold index (the proxy checks one call at a time: no 'cross')."""
    if value is None:
        return None
    if not value.isdigit():
        raise UsageError(f"--fold must be a fold number (0, 1, ...), got {value!r}", field="--fold")
    return int(value)


ServerCommandArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="The MCP server to run behind the proxy, after `--`: SERVER_CMD [ARGS...].",
        metavar="-- SERVER_CMD [ARGS]...",
        show_default=False,
    ),
]
ProxyRegistryOpt = Annotated[
    Path | None, registry_option("tools.json: substitutes offered as recovery tools, outputSchema.")
]
LogOpt = Annotated[
    Path | None,
    typer.Option(
        "--log",
        metavar="FILE",
        help="Append every tool call to FILE as flat trace records (for `contracts ingest`).",
    ),
]
ReceiptInOpt = Annotated[
    str,
    typer.Option("--receipt-in", metavar="PLACES", help="Where receipts go: text, meta, text,meta or none."),
]
ProxyTimeoutOpt = Annotated[
    float | None,
    timeout_option("Answer a request the server has not answered in SECONDS with an error."),
]
EnrichToolsFlag = Annotated[
    bool,
    typer.Option("--enrich-tools", help="Add the registry's declared output as outputSchema to tools/list."),
]
ProxyEncoderOpt = Annotated[EncoderName, typer.Option("--encoder", help="Receipt encoder.")]
TraceIdOpt = Annotated[
    str | None,
    typer.Option(
        "--trace-id", metavar="ID", help="trace_id of the logged calls (default: mcp-<time>-<pid>)."
    ),
]


@dataclass(frozen=True, kw_only=True)
class ProxySettings(Settings):
    """`contracts proxy`, resolved: the contract set defaults to `paths.contracts`."""

    contracts_path: Path = setting("paths.contracts", required="contract set (--contracts)")
    command: list[str] | None
    registry: Path | None
    log: Path | None
    receipt_in: str
    timeout: float | None
    enrich_tools: bool
    fold: str | None
    encoder: EncoderName
    trace_id: str | None
    quiet: bool

    def check_given(self) -> None:
        """A server command to run, and a registry for `--enrich-tools`."""
        if not self.command:
            raise UsageError(
                "no server command: contracts proxy --contracts K -- SERVER_CMD [ARGS...]", field="SERVER_CMD"
            )
        if self.enrich_tools and self.registry is None:
            raise UsageError("--enrich-tools needs --registry (the declared outputs)", field="--enrich-tools")


def proxy(
    command: ServerCommandArg = None,
    contracts_path: ContractsOpt = None,
    registry: ProxyRegistryOpt = None,
    log: LogOpt = None,
    receipt_in: ReceiptInOpt = ",".join(RECEIPT_PLACES),
    timeout: ProxyTimeoutOpt = None,
    enrich_tools: EnrichToolsFlag = False,
    fold: FoldOpt = None,
    encoder: ProxyEncoderOpt = EncoderName.v2,
    trace_id: TraceIdOpt = None,
    quiet: QuietFlag = False,
) -> None:
    """Run an MCP server behind a proxy that checks every tools/call result and appends receipts.

    Messages pass through unchanged in both directions; a result that breaks a mined contract gets its
    receipt as an extra text content block and/or under _meta. Example:
    contracts proxy --contracts contracts.json --log calls.jsonl -- python server.py
    """
    _proxy(resolved(ProxySettings, locals()))


def _proxy(s: ProxySettings) -> None:
    """Serve until the client closes the connection; then say how many calls got receipts."""
    from output_contracts.checks.api import Checker
    from output_contracts.checks.proxy import Proxy, ProxyOptions, parse_places

    assert s.command  # `check_given` refused a missing one
    options = ProxyOptions(
        receipt_in=parse_places(s.receipt_in),
        log=s.log,
        timeout=s.timeout,
        enrich_tools=s.enrich_tools,
        trace_id=s.trace_id,
    )
    checker = Checker.load(
        s.contracts_path, registry=s.registry, fold=_fold_index(s.fold), encoder=s.encoder.value
    )
    p = Proxy(
        checker,
        s.command,
        sys.stdin.buffer,
        sys.stdout.buffer,
        options,
        warn=lambda m: err.print(f"warning: {m}", markup=False),
    )
    p.run()
    if not s.quiet:
        where = f"; logged to {s.log} as trace {p.trace_id}" if s.log is not None else ""
        say(err, f"proxy: {p.calls} tool calls, {p.receipts} with receipts{where}")


def register(app: typer.Typer) -> None:
    """Add `proxy` to the root app."""
    app.command("proxy")(proxy)
