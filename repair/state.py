"""The value types of the repair MDP: what a policy sees (`State`) and what it answers (`Action`).

They are their own module so that policies and the loop can both import them without importing each
other. `State.as_json()` is exactly the JSON a `command` policy receives on stdin, and its digest is the
`state_sha256` recorded in every ledger step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contracts.defaults import DEFAULT_SEED
from contracts.repair.cases import Case
from contracts.repair.validator import VerifierError, report_json

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class State:
    """The repair state: current candidate, typed verifier report, immutable history, budgets."""

    case: Case
    candidate: Any
    report: tuple[VerifierError, ...]
    history: tuple[Mapping[str, Any], ...]
    attempt: int
    attempts_left: int
    ops_left: int
    seed: int = DEFAULT_SEED

    def as_json(self) -> dict[str, Any]:
        """The state as a JSON object (the `command` policy protocol, version 1)."""
        return {
            "protocol": PROTOCOL_VERSION,
            "case_id": self.case.case_id,
            "tool": self.case.tool,
            "schema": self.case.schema,
            "candidate": self.candidate,
            "immutable": list(self.case.immutable),
            "cross_field": list(self.case.cross_field),
            "report": report_json(self.report),
            "history": list(self.history),
            "attempt": self.attempt,
            "attempts_left": self.attempts_left,
            "ops_left": self.ops_left,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Action:
    """A policy's answer: an RFC 6902 `patch` (raw JSON, checked by the mask) or abstention.

    `patch is None` means abstain. `error` is set instead when the policy itself failed (`POLICY_TIMEOUT`,
    `POLICY_FAILED`, `POLICY_OUTPUT`): that step is refused like a masked action and uses an attempt.
    `confidence` in [0, 1] is optional; `--abstain-below` gates on it.
    """

    patch: Any = None
    confidence: float | None = None
    error: str | None = None
    detail: str = ""

    @property
    def abstains(self) -> bool:
        return self.error is None and self.patch is None

    @staticmethod
    def abstain(detail: str = "", confidence: float | None = None) -> Action:
        return Action(None, confidence, None, detail)
