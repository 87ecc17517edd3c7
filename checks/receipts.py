"""Receipts (DESIGN §4): what the checker appends beside a tool result, and its two versioned encoders.

The checker never changes a tool result. A `Receipt` holds the unchanged result, the violations found
and the recovery tools; `encode` turns it into the JSON an agent (or a CI log) sees:

    {"call_id", "source", "line",
     "tool_result": <unchanged result>,
     "outcome_contract": {"encoder", "tool", "binding": false, "violations": [...], "recovery_tools": [...]},
     "bytes", "approx_tokens"}

Encoder `v2` gives each violation as an explicit witness (`code`, `rule`, `path`, `expected`,
`observed`, `present`, `detail`); encoder `v1` gives one human sentence a violation (`message`) beside
the `code`, `rule` and `path` needed to link it back. Two more exist for ablation experiments, so that
each arm of a run can be handed its receipt from the same contracts: `v2-no-recovery` is the v2
witness without `recovery_tools`, and `generic` is one fixed warning (`GENERIC_WARNING`) with neither
property nor witness nor recovery tools. Each is versioned by the `encoder` field and has a JSON Schema
(`receipt-<encoder>`). Recovery tools taken from inferred substitutes (`contracts registry infer
--substitutes`, used only where the registry declares none) are flagged with
`recovery_tools_inferred: true` by the encoders that list recovery tools.

Size accounting: `bytes` is the length of the canonical JSON (UTF-8) of `outcome_contract` alone — the
text a receipt adds to what the agent already receives — and `approx_tokens = ceil(bytes / 4)`, the
usual rule of thumb for English-like text with BPE tokenizers (JSON punctuation makes real counts
somewhat higher; the figure is for weighing receipts against a reviewer-model pass, not for billing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.choices import EncoderName as EncoderName
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.table import sentence
from output_contracts.codes.violation import Violation
from output_contracts.errors import CheckError
from output_contracts.jsonutil import canonical_json

ENCODERS = tuple(e.value for e in EncoderName)
#: Encoders whose receipts carry the violations (code, path, ...): what CI formats (sarif, junit,
#: github) need to say anything. `generic` carries none by design.
WITNESS_ENCODERS = (EncoderName.v1.value, EncoderName.v2.value, EncoderName.v2_no_recovery.value)
#: The fixed sentence of encoder `generic` (the same for every receipt, whatever broke).
GENERIC_WARNING = (
    "This tool result may be wrong: it does not match what this tool usually returns. "
    "Verify it before relying on it."
)


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
    #: the recovery tools beyond the tool itself come from inferred, not declared, substitutes
    recovery_inferred: bool = False

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
    """The tool itself, then its substitutes that the episode could see, in order (`recovery_plan`)."""
    return recovery_plan(contracts, tool, visible_tools)[0]


def recovery_plan(
    contracts: ContractSet, tool: str, visible_tools: Sequence[str] | None
) -> tuple[list[str], bool]:
    """The recovery tools and whether they come from inferred substitutes.

    The declared substitutes (the registry's `substitutes`) are used when the tool has any; only when it
    declares none are the inferred ones (`substitutes_inferred`, from `contracts registry infer
    --substitutes`) used, and then the second value is True (receipts flag it). `visible_tools=None`
    means the episode's tool set is unknown: every substitute is offered. A substitute equal to the tool
    itself, or listed twice, is offered once; the flag is True only if an inferred one is offered.
    """
    tc = contracts.tools.get(tool)
    subs: tuple[str, ...] = ()
    inferred = False
    if tc is not None:
        subs = tc.substitutes
        if not subs and tc.substitutes_inferred:
            subs, inferred = tc.substitutes_inferred, True
    visible = None if visible_tools is None else set(visible_tools)
    out = [tool]
    for s in subs:
        if s in out:
            continue
        if visible is None or s in visible:
            out.append(s)
    return out, inferred and len(out) > 1


def planned_receipt(
    contracts: ContractSet,
    tool: str,
    result: Any,
    violations: Sequence[Violation],
    visible_tools: Sequence[str] | None,
    *,
    encoder: str = "v2",
    call_id: str | None = None,
    source: str | None = None,
    line: int | None = None,
) -> Receipt:
    """The receipt of one call with its recovery plan (the tool itself, then its substitutes among
    `visible_tools`): the one way every checking path builds it."""
    rec, inferred = recovery_plan(contracts, tool, visible_tools)
    return Receipt(
        tool=tool,
        result=result,
        violations=tuple(violations),
        recovery_tools=tuple(rec),
        call_id=call_id,
        source=source,
        line=line,
        encoder=encoder,
        recovery_inferred=inferred,
    )


def _check_encoder(encoder: str) -> None:
    if encoder not in ENCODERS:
        raise CheckError(
            f"unknown receipt encoder {encoder!r} (known: {', '.join(ENCODERS)})",
            code="E_USAGE",
            field="encoder",
        )


def encode_violation(v: Violation, encoder: str) -> dict[str, Any]:
    """One violation in the given encoder's shape (`generic` has none: it is never called for it)."""
    if encoder == "v1":
        return {"code": v.code, "rule": v.rule, "path": v.path, "message": sentence(v)}
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
    """The receipt as JSON-ready data in the given encoder (default: the receipt's own encoder)."""
    enc = encoder or receipt.encoder
    _check_encoder(enc)
    contract: dict[str, Any] = {"encoder": enc, "tool": receipt.tool, "binding": False}
    if enc == EncoderName.generic:
        # receipts of calls that hold (`check --all`) say so, or the warning would be a false alarm
        contract["warning"] = GENERIC_WARNING if receipt.violations else None
    else:
        wire = "v2" if enc == EncoderName.v2_no_recovery else enc
        contract["violations"] = [
            encode_violation(v, wire) for v in sorted(receipt.violations, key=Violation.sort_key)
        ]
    if enc in ("v1", "v2"):
        contract["recovery_tools"] = list(receipt.recovery_tools)
        if receipt.recovery_inferred:
            contract["recovery_tools_inferred"] = True
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
