"""The options of the CI output formats (SARIF, JUnit, GitHub annotations) that `check`, `audit` and
`plan-check` share, declared once: `--base` (paths relative to it), `--max-results` (SARIF cap),
`--max-annotations` (GitHub cap), and the job summary the annotations left out go to."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from output_contracts.errors import UsageError

if TYPE_CHECKING:  # the formats load polars and pyarrow: imported by the functions that use them
    from output_contracts.checks.renderers import github
    from output_contracts.checks.renderers.renderer import RenderOptions
    from output_contracts.codes.contract_set import ContractSet

BaseOpt = Annotated[
    Path | None,
    typer.Option(
        "--base",
        help="Write SARIF/annotation/JUnit paths relative to DIR (default: the working directory).",
        metavar="DIR",
    ),
]
MaxResultsOpt = Annotated[
    int,
    typer.Option(
        "--max-results",
        min=0,
        help="SARIF: keep at most N results, the most severe (GitHub code scanning takes 25,000 a run).",
        metavar="N",
    ),
]
MaxAnnotationsOpt = Annotated[
    int,
    typer.Option(
        "--max-annotations",
        min=0,
        help="github: print at most N annotations (GitHub shows 10 a step); the rest go to the job summary.",
        metavar="N",
    ),
]


def render_options(
    base: Path | None, max_results: int, max_annotations: int, contracts: ContractSet | None
) -> RenderOptions:
    """The document formats' options: relative paths, caps and each rule's level."""
    from output_contracts.checks.renderers.locations import Locator
    from output_contracts.checks.renderers.renderer import RenderOptions, rule_levels

    if base is not None and not base.is_dir():
        raise UsageError("--base must be an existing folder", source=str(base), field="--base")
    return RenderOptions(
        locator=Locator(base),
        max_results=max_results,
        max_annotations=max_annotations,
        levels=rule_levels(contracts) if contracts is not None else {},
    )


def append_step_summary(markdown: str) -> None:
    """Append Markdown to the job summary, `$GITHUB_STEP_SUMMARY`, when it is set (and there is any)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path and markdown:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(markdown)


def step_summary(items: list[github.Annotation], opts: RenderOptions, title: str) -> None:
    """Append the annotations left out of the log to the job summary (when it is set)."""
    from output_contracts.checks.renderers import github

    append_step_summary(github.step_summary(items, limit=opts.max_annotations, title=title))
