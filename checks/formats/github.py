"""`github` — GitHub Actions workflow commands, one `::error file=…,line=…,title=…::message` a violation
(streamed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.checks.formats.base import Streaming, message, violations


def _gh_escape(s: str, *, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def github(receipt: Mapping[str, Any]) -> bytes:
    """GitHub Actions `::error` commands for one receipt's violations (empty when it holds)."""
    out = []
    for _r, v in violations([receipt]):
        props = [f"file={_gh_escape(str(receipt.get('source') or '-'), prop=True)}"]
        if isinstance(receipt.get("line"), int) and receipt["line"] >= 1:
            props.append(f"line={receipt['line']}")
        title = f"{v['code']} {receipt['outcome_contract']['tool']}"
        props.append(f"title={_gh_escape(title, prop=True)}")
        out.append(f"::error {','.join(props)}::{_gh_escape(message(v))}\n")
    return "".join(out).encode("utf-8")


class Github(Streaming):
    name = "github"

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        return github(receipt)


FORMAT = Github()
