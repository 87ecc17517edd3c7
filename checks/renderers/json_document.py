"""`json` — one document `{"summary": ..., "receipts": [...]}`, pretty and deterministic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from output_contracts.checks.outputs import Summary
from output_contracts.checks.renderers.renderer import Document, RenderOptions
from output_contracts.jsonutil import pretty_json


class JsonDocument(Document):
    name = "json"

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        return pretty_json({"summary": summary.to_json(), "receipts": list(receipts)})


FORMAT = JsonDocument()
