"""The output formats of `contracts check`, one module each (`output_contracts.checks.renderers.renderer` has the
interface); `FORMATS` maps each `--output-format` name to its format."""

from __future__ import annotations

from output_contracts.checks.renderers import github, json_document, jsonl, junit, sarif
from output_contracts.checks.renderers.renderer import OutputFormat

FORMATS: dict[str, OutputFormat] = {
    f.name: f for f in (jsonl.FORMAT, json_document.FORMAT, sarif.FORMAT, junit.FORMAT, github.FORMAT)
}
