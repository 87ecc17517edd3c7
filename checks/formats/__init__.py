"""The output formats of `contracts check`, one module each (`output_contracts.checks.formats.base` has the
interface); `FORMATS` maps each `--output-format` name to its format."""

from __future__ import annotations

from output_contracts.checks.formats import github, json_document, jsonl, junit, sarif
from output_contracts.checks.formats.base import OutputFormat

FORMATS: dict[str, OutputFormat] = {
    f.name: f for f in (jsonl.FORMAT, json_document.FORMAT, sarif.FORMAT, junit.FORMAT, github.FORMAT)
}
