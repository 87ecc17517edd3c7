"""One output format of `contracts check` per module, behind one interface (`OutputFormat`).

Every format takes encoded receipts (`encode(receipt)` dicts) and, unless it streams, the run's
`Summary`, and returns bytes, so the CLI only looks its format up in `FORMATS` and writes. A streaming
format renders each receipt as it arrives (`render_one`); a document format renders them all at once
with the summary (`render_all`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from contracts.checks.outputs import Summary
from contracts.jsonutil import canonical_str


class OutputFormat(Protocol):
    """A format: its `name` (the `--output-format` value) and whether it streams."""

    name: str
    streaming: bool

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        """One receipt (streaming formats)."""
        ...

    def render_all(self, receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> bytes:
        """Every receipt and the summary (document formats)."""
        ...


class Streaming:
    """Base of the streaming formats: `render_all` is every receipt's `render_one`, in order."""

    streaming = True

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        raise NotImplementedError

    def render_all(self, receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> bytes:
        return b"".join(self.render_one(r) for r in receipts)


class Document:
    """Base of the document formats (they need every receipt and the summary)."""

    streaming = False

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        raise TypeError(f"{type(self).__name__} renders whole documents, not one receipt")


def violations(
    receipts: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    for r in receipts:
        for v in r["outcome_contract"]["violations"]:
            yield r, v


def message(v: Mapping[str, Any]) -> str:
    """The violation's sentence in either encoder (v1 `message`, v2 `detail` + witnesses)."""
    if "message" in v:
        return str(v["message"])
    exp = v["expected"] if isinstance(v["expected"], str) else canonical_str(v["expected"])
    obs = "missing" if not v.get("present", True) else canonical_str(v["observed"])
    return f"{v['code']} at {v['path'] or '(whole result)'}: expected {exp}, observed {obs}. {v['detail']}"
