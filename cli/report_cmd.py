"""`contracts report`: one static HTML page of audits, contract sets, repair scores, diffs and receipts.

Thin layer over `output_contracts.audit.artifacts` (read and recognise each input) and `output_contracts.audit.html`
(draw the page). The page is written atomically; a bad input is one `error[...]` line and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from output_contracts.cli.common import QuietFlag, err, out, output_option, phase
from output_contracts.cli.tables import say
from output_contracts.jsonutil import atomic_write_bytes


def report_command(
    artifacts: Annotated[
        list[Path],
        typer.Argument(
            metavar="ARTIFACT",
            help="Artifact files: audit -o, a contract set, mine --json, repair-score -o, diff --json, "
            "ledger head --json, receipts of check -o (any order; two contract sets are also diffed).",
            show_default=False,
        ),
    ],
    output: Annotated[Path, output_option("The HTML file to write (`-` for stdout).")],
    title: Annotated[
        str, typer.Option("--title", metavar="TEXT", help="The page's title.")
    ] = "contracts report",
    generated_at: Annotated[
        str | None,
        typer.Option(
            "--generated-at",
            metavar="TEXT",
            help="A time (or any text) to print as the page's one timestamp; without it the page has none, "
            "so the same inputs give the same bytes.",
        ),
    ] = None,
    quiet: QuietFlag = False,
) -> None:
    """Write one self-contained HTML page (inline CSS and SVG charts, no network) of the given artifacts."""
    from output_contracts.audit.artifacts import load_artifacts
    from output_contracts.audit.html import render_html

    with phase(quiet, "report"):
        arts = load_artifacts(artifacts)
        page = render_html(arts, title=title, generated_at=generated_at).encode("utf-8")
    if str(output) == "-":
        out.file.write(page.decode("utf-8"))
        out.file.flush()
    else:
        atomic_write_bytes(output, page)
    if not quiet:
        kinds = ", ".join(f"{a.kind.value} {a.name}" for a in arts)
        say(err, f"read {len(arts)} artifacts: {kinds}")
        if str(output) != "-":
            say(err, f"wrote {output}: {len(page):,} bytes, {page.count(b'<svg ')} charts")


def register(app: typer.Typer) -> None:
    """Add `report` to the root app."""
    app.command("report")(report_command)
