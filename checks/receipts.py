"""Receipts (DESIGN §4): what the checker appends beside a tool result, and its two versioned encoders.

The checker never changes a tool result. A `Receipt` holds the unchanged result, the violations found
and the recovery tools; `encode` turns it into the JSON an agent (or a CI log) sees:

    {"call_id", "source", "line",
     "tool_result": <unchanged result>,
     "outcome_contract": {"encoder", "tool", "binding": false, "violations": [...], "recovery_tools": [...]},
     "bytes", "approx_tokens"}

Encoder `v2` gives each violation as an explicit witness (`code`, `rule`, `path`, `expected`,
`observed`, `present`, `detail`); encoder `v1` gives one human sentence a violation (`message`) beside
the `code`, `rule` and `path` needed to link it back. Both are versioned by the `encoder` field and
have JSON Schemas (`receipt-v1`, `receipt-v2`).

Size accounting: `bytes` is the length of the canonical JSON (UTF-8) of `outcome_contract` alone — the
text a receipt adds to what the agent already receives — and `approx_tokens = ceil(bytes / 4)`, the
usual rule of thumb for English-like text with BPE tokenizers (JSON punctuation makes real counts
somewhat higher; the figure is for weighing receipts against a reviewer-model pass, not for billing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from contracts.errors import CheckError
from contracts.jsonutil import canonical_json
from contracts.rules.base import Violation
from contracts.rules.model import ContractSet


class EncoderName(StrEnum):
    """The receipt encoders (`--encoder`): `v1` one sentence a violation, `v2` explicit witnesses."""

    v1 = "v1"
    v2 = "v2"


ENCODERS = tuple(e.value for e in EncoderName)


@dataclass(frozen=True)
class Receipt:
    """The checker's verdict on one call: the unchanged result plus its violations and recovery tools."""

    tool: str
    result: Any
    violations: tuple[Violation, ...]
    recovery_tools: tuple[str, ...]
    call_id: str | None = None
    source: str | None = None
    line: int | None = None
    encoder: str = "v2"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def codes(self) -> list[str]:
        """Distinct property codes of the violations, sorted."""
        return sorted({v.code for v in self.violations})

    def to_json(self, encoder: str | None = None) -> dict[str, Any]:
        """The receipt as JSON-ready data in encoder `v1` or `v2` (default: its own): `encode`, the shape
        the `receipt-v1` / `receipt-v2` schemas describe."""
        return encode(self, encoder)

    def outcome_contract(self, encoder: str | None = None) -> dict[str, Any]:
        """Only the part an agent is shown beside the unchanged result (DESIGN §4's `outcome_contract`)."""
        contract: dict[str, Any] = encode(self, encoder)["outcome_contract"]
        return contract

    def to_text(self, encoder: str | None = None) -> str:
        """`{"outcome_contract": ...}` as one line of canonical JSON: the text block appended for a model."""
        return canonical_json({"outcome_contract": self.outcome_contract(encoder)}).decode("utf-8")


def recovery_tools(contracts: ContractSet, tool: str, visible_tools: Sequence[str] | None) -> list[str]:
    """The tool itself, then its declared substitutes that the episode could see, in declared order.

    `visible_tools=None` means the episode's tool set is unknown: every declared substitute is offered.
    A substitute equal to the tool itself, or listed twice, is offered once.
    """
    tc = contracts.tools.get(tool)
    subs = tc.substitutes if tc is not None else ()
    visible = None if visible_tools is None else set(visible_tools)
    out = [tool]
    for s in subs:
        if s in out:
            continue
        if visible is None or s in visible:
            out.append(s)
    return out


def _check_encoder(encoder: str) -> None:
    if encoder not in ENCODERS:
        raise CheckError(
            f"unknown receipt encoder {encoder!r} (known: {', '.join(ENCODERS)})",
            code="E_USAGE",
            field="encoder",
        )


def encode_violation(v: Violation, encoder: str) -> dict[str, Any]:
    """One violation in the given encoder's shape."""
    if encoder == "v1":
        return {"code": v.code, "rule": v.rule, "path": v.path, "message": v.sentence()}
    return {
        "code": v.code,
        "rule": v.rule,
        "path": v.path,
        "expected": v.expected,
        "observed": v.observed,
        "present": v.present,
        "detail": v.detail,
    }


def encode(receipt: Receipt, encoder: str | None = None) -> dict[str, Any]:
    """The receipt as JSON-ready data in encoder `v1` or `v2` (default: the receipt's own encoder)."""
    enc = encoder or receipt.encoder
    _check_encoder(enc)
    contract = {
        "encoder": enc,
        "tool": receipt.tool,
        "binding": False,
        "violations": [encode_violation(v, enc) for v in sorted(receipt.violations, key=Violation.sort_key)],
        "recovery_tools": list(receipt.recovery_tools),
    }
    size = len(canonical_json(contract))
    return {
        "call_id": receipt.call_id,
        "source": receipt.source,
        "line": receipt.line,
        "tool_result": receipt.result,
        "outcome_contract": contract,
        "bytes": size,
        "approx_tokens": approx_tokens(size),
    }


def approx_tokens(n_bytes: int) -> int:
    """`ceil(bytes / 4)`: the documented token estimate (see the module docstring)."""
    return math.ceil(n_bytes / 4)


def encode_line(receipt: Receipt, encoder: str | None = None) -> bytes:
    """One receipt as a canonical JSON line (JSONL output)."""
    return canonical_json(encode(receipt, encoder)) + b"\n"
