"""`jsonl` — one receipt a line, canonical JSON (streamed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from output_contracts.checks.renderers.renderer import Streaming
from output_contracts.jsonutil import canonical_json


class Jsonl(Streaming):
    name = "jsonl"

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        """One receipt as a canonical JSON line."""
        return canonical_json(receipt) + b"\n"


FORMAT = Jsonl()
