"""The value types of the repair MDP: what a policy sees (`State`) and what it answers (`Action`).

They are their own module so that policies and the loop can both import them without importing each
other. `State.as_json()` is exactly the JSON a `command` policy receives on stdin, and its digest is the
`state_sha256` recorded in every ledger step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from output_contracts.choices import FeedbackView as FeedbackView
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.repair.cases import Case
from output_contracts.repair.validator import VerifierError, report_json

PROTOCOL_VERSION = 1
#: Feedback views (`--feedback`): which parts of each verifier error a policy is shown.
#: full — code, pointer and text; pointer-only — the pointer; code-only — the code; text — the message
#: text; context-only — no report at all (schema, candidate, history and budgets only).
FEEDBACK_VIEWS = tuple(v.value for v in FeedbackView)


_VISIBLE = {
    "full": ("code", "pointer", "detail"),
    "pointer-only": ("pointer",),
    "code-only": ("code",),
    "text": ("detail",),
    "context-only": (),
}


def restrict_report(report: Sequence[VerifierError], view: str) -> tuple[VerifierError, ...]:
    """The report as `view` shows it: hidden fields become empty strings (context-only: no errors)."""
    keep = _VISIBLE[view]
    if not keep:
        return ()
    return tuple(
        VerifierError(
            e.pointer if "pointer" in keep else "",
            e.code if "code" in keep else "",
            e.detail if "detail" in keep else "",
        )
        for e in report
    )


def _report_view(report: Any, view: str) -> Any:
    if not isinstance(report, list):
        return report
    keep = _VISIBLE[view]
    return [{k: v for k, v in e.items() if k in keep} for e in report if isinstance(e, Mapping) and keep]


def restrict_history(history: Sequence[Mapping[str, Any]], view: str) -> tuple[Mapping[str, Any], ...]:
    """History entries with their verifier reports restricted to `view` (patches and mask verdicts stay)."""
    if view == "full":
        return tuple(history)
    return tuple({**h, "report": _report_view(h["report"], view)} if "report" in h else h for h in history)


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
    feedback: str = "full"
    allowed: Mapping[str, Any] | None = None
    sample: Mapping[str, int] | None = None

    def as_json(self) -> dict[str, Any]:
        """The state as a JSON object (the `command` policy protocol, version 1).

        `report` and `history` are already restricted to the feedback view (the loop builds the state that
        way); `report` entries carry only the fields the view shows. `feedback` names the view; `allowed`
        (with `--send-allowed`) is the action set the mask will accept; `sample` (`{"index", "of"}`) is set
        when the loop asks for one of a `--samples` group rather than for the action it applies.
        """
        keep = _VISIBLE[self.feedback]
        extra: dict[str, Any] = {}
        if self.feedback != "full":
            extra["feedback"] = self.feedback
        if self.allowed is not None:
            extra["allowed"] = dict(self.allowed)
        if self.sample is not None:
            extra["sample"] = dict(self.sample)
        return extra | {
            "protocol": PROTOCOL_VERSION,
            "case_id": self.case.case_id,
            "tool": self.case.tool,
            "schema": self.case.schema,
            "candidate": self.candidate,
            "immutable": list(self.case.immutable),
            "cross_field": list(self.case.cross_field),
            "report": [{k: v for k, v in e.items() if k in keep} for e in report_json(self.report)],
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
    `confidence` in [0, 1] is optional; `--abstain-below` gates on it. `usage` is what the policy
    reports it spent (`{"input_tokens", "output_tokens"}`, non-negative integers), recorded per step.
    """

    patch: Any = None
    confidence: float | None = None
    error: str | None = None
    detail: str = ""
    usage: Mapping[str, int] | None = None

    @property
    def abstains(self) -> bool:
        return self.error is None and self.patch is None

    @staticmethod
    def abstain(
        detail: str = "", confidence: float | None = None, usage: Mapping[str, int] | None = None
    ) -> Action:
        return Action(None, confidence, None, detail, usage)


def usage_problem(usage: Any) -> str | None:
    """Why `usage` is not `{"input_tokens"?: n, "output_tokens"?: n}` of non-negative integers, or None."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping) or not set(usage) <= {"input_tokens", "output_tokens"}:
        return 'usage must be an object with "input_tokens" and/or "output_tokens"'
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in usage.values()):
        return "usage token counts must be non-negative integers"
    return None
