"""The repair MDP and the replay that writes every step to a ledger (DESIGN §6).

One episode per case. The state is the current candidate, the verifier's typed report, the immutable
history (the case's prior patches plus every step so far), and the budgets. Per attempt:

1. the policy proposes an RFC 6902 patch or abstains (`--abstain-below C` turns a patch whose reported
   confidence is below C into an abstention);
2. a policy failure (timeout, crash, unreadable output) is refused with its typed reason;
3. otherwise the action mask (`output_contracts.repair.mask`) simulates the patch and refuses it with a typed
   reason, or yields the patched document;
4. only a masked-through patch is applied and validated (fail-closed `output_contracts.repair.validator`).

Every attempt, refused or not, uses one attempt. The op budget is for the whole episode and counts
mutating ops of applied patches (`test` ops are free). An applied patch that does not validate stays
applied: the next attempt starts from it, so undoing a bad edit is part of the task. The episode ends when
the candidate validates (`accepted`), the policy abstains (`abstained`), or attempts run out
(`exhausted`). A candidate that already validates is `valid_at_start` with no steps.

`replay` never opens a targets file: it reads only the cases (and, for `precomputed`, the patches file).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import output_contracts.repair.mask as mask
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import RepairError
from output_contracts.jsonutil import canonical_json, file_sha256, json_sha256
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.repair.cases import Case
from output_contracts.repair.metrics import verifiable_reward
from output_contracts.repair.policies import Policy
from output_contracts.repair.state import (
    FEEDBACK_VIEWS,
    Action,
    State,
    restrict_history,
    restrict_report,
    usage_problem,
)
from output_contracts.repair.validator import report_json, verify

OUTCOMES = ("accepted", "abstained", "exhausted", "valid_at_start")
KIND_RUN = "repair.run"
KIND_START = "repair.start"
KIND_STEP = "repair.step"
KIND_END = "repair.end"
DEFAULT_MAX_OPS = 2
DEFAULT_MAX_ATTEMPTS = 2
#: Entries buffered before one `append_many` (one write, one fsync). Whole episodes only: a crash can
#: lose the episodes of the last batch, never leave half an episode, and the ledger is unfrozen then.
FLUSH_ENTRIES = 512


@dataclass(frozen=True)
class Protocol:
    """What the policy is shown and asked: the feedback view, whether the allowed-action set is sent with
    the state, and how many extra candidate patches (`samples`) to record per state."""

    feedback: str = "full"
    send_allowed: bool = False
    samples: int = 0

    def __post_init__(self) -> None:
        if self.feedback not in FEEDBACK_VIEWS:
            raise RepairError(
                f"unknown feedback view {self.feedback!r} (known: {', '.join(FEEDBACK_VIEWS)})",
                code="E_USAGE",
                field="feedback",
            )
        if self.samples < 0:
            raise RepairError("samples must be >= 0", code="E_USAGE", field="samples")

    def as_json(self) -> dict[str, Any]:
        return {"feedback": self.feedback, "send_allowed": self.send_allowed, "samples": self.samples}


@dataclass(frozen=True)
class Budgets:
    """Per-episode limits and the confidence gate."""

    max_ops: int = DEFAULT_MAX_OPS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    abstain_below: float | None = None

    def __post_init__(self) -> None:
        if self.max_ops < 1 or self.max_attempts < 1:
            raise RepairError("max_ops and max_attempts must be >= 1", code="E_USAGE", field="max_ops")
        if self.abstain_below is not None and not 0 <= self.abstain_below <= 1:
            raise RepairError("abstain_below must be in [0, 1]", code="E_USAGE", field="abstain_below")


@dataclass(frozen=True)
class Episode:
    """A finished episode: its ledger bodies (start, steps, end) and outcome."""

    case_id: str
    outcome: str
    attempts: int
    final: Any
    accepted: bool
    ops: tuple[dict[str, Any], ...]
    start: dict[str, Any]
    steps: tuple[dict[str, Any], ...]
    end: dict[str, Any]


Clock = Callable[[], float]


def run_episode(
    case: Case,
    policy: Policy,
    budgets: Budgets = Budgets(),
    *,
    seed: int = DEFAULT_SEED,
    clock: Clock | None = time.perf_counter,
    protocol: Protocol = Protocol(),
) -> Episode:
    """Run one case to its end; pure except for the policy and the clock (None records no latency)."""
    candidate = case.candidate
    report = verify(candidate, case.schema, case.cross_field)
    history: list[Mapping[str, Any]] = list(case.history)
    attempts_left, ops_left = budgets.max_attempts, budgets.max_ops
    start = {
        "case_id": case.case_id,
        "tool": case.tool,
        "schema_sha256": json_sha256(case.schema),
        "candidate": candidate,
        "candidate_sha256": json_sha256(candidate),
        "schema": case.schema,
        "immutable": list(case.immutable),
        "report": report_json(report),
        "max_ops": budgets.max_ops,
        "max_attempts": budgets.max_attempts,
    }
    steps: list[dict[str, Any]] = []
    applied: list[dict[str, Any]] = []
    outcome = "valid_at_start" if not report else "exhausted"
    attempt = 0
    while report and attempts_left > 0:
        attempt += 1
        view = protocol.feedback
        allowed = (
            mask.allowed_actions(candidate, immutable=case.immutable, ops_left=ops_left)
            if protocol.send_allowed
            else None
        )
        state = State(
            case,
            candidate,
            restrict_report(report, view),
            restrict_history(history, view),
            attempt,
            attempts_left,
            ops_left,
            seed,
            view,
            allowed,
        )
        t0 = clock() if clock else 0.0
        action = _act(policy, state)
        gated = (
            budgets.abstain_below is not None
            and action.error is None
            and action.patch is not None
            and action.confidence is not None
            and action.confidence < budgets.abstain_below
        )
        body: dict[str, Any] = {
            "case_id": case.case_id,
            "attempt": attempt,
            "state_sha256": json_sha256(state.as_json()),
            "action": "abstain" if action.abstains else action.patch,
            "confidence": action.confidence,
            "gated": gated,
            "policy_error": action.error,
            "detail": action.detail,
            "mask": None,
            "report": None,
            "accepted": False,
            "usage": dict(action.usage) if action.usage is not None else None,
            "samples": _samples(policy, state, candidate, case, ops_left, protocol.samples)
            if protocol.samples
            else None,
        }
        if action.abstains or gated:
            body["action"] = "abstain"
            outcome = "abstained"
        elif action.error is not None:
            body["mask"] = {"ok": False, "reason": action.error, "detail": action.detail, "op_index": None}
            attempts_left -= 1
        else:
            verdict = mask.check(action.patch, candidate, immutable=case.immutable, ops_left=ops_left)
            body["mask"] = verdict.as_json()
            attempts_left -= 1
            if verdict.ok:
                candidate = verdict.result
                ops_left -= verdict.mutating_ops
                applied.extend(o.as_json() for o in verdict.ops if o.op != "test")
                report = verify(candidate, case.schema, case.cross_field)
                body["report"] = report_json(report)
                body["accepted"] = not report
                body["candidate_sha256"] = json_sha256(candidate)
                if not report:
                    outcome = "accepted"
        latency = round((clock() - t0) * 1000, 3) if clock else None
        body["attempts_left"] = attempts_left
        body["ops_left"] = ops_left
        body["latency_ms"] = latency
        steps.append(body)
        history.append(
            {k: body[k] for k in ("attempt", "action", "mask", "report", "accepted", "policy_error")}
        )
        if outcome == "abstained":
            break
    end = {
        "case_id": case.case_id,
        "outcome": outcome,
        "attempts": attempt,
        "final": candidate,
        "final_sha256": json_sha256(candidate),
        "ops": applied,
        "accepted": outcome in ("accepted", "valid_at_start"),
    }
    return Episode(
        case.case_id,
        outcome,
        attempt,
        candidate,
        end["accepted"],
        tuple(applied),
        start,
        tuple(steps),
        end,
    )


def _act(policy: Policy, state: State) -> Action:
    try:
        return _checked(policy.act(state))
    except Exception as e:  # a crashing policy is a failed step, never a crashed replay
        return Action(error="POLICY_FAILED", detail=f"{type(e).__name__}: {e}"[:300])


def _samples(
    policy: Policy, state: State, candidate: Any, case: Case, ops_left: int, g: int
) -> list[dict[str, Any]]:
    """A group of `g` candidate patches for one state, each with its target-free verifiable reward and
    group-relative advantage ((r − mean) / sd, sd the population sd; 0 when every reward is equal).

    Each sample is the policy's answer to the same state with `sample = {index, of}` set; a sample is
    only simulated (mask, then validator on a copy): it never changes the episode.
    """
    out: list[dict[str, Any]] = []
    for k in range(g):
        a = _act(policy, replace(state, sample={"index": k, "of": g}))
        rec: dict[str, Any] = {
            "index": k,
            "action": "abstain" if a.abstains else a.patch,
            "confidence": a.confidence,
            "usage": dict(a.usage) if a.usage is not None else None,
            "policy_error": a.error,
            "mask_reason": None,
            "accepted": False,
        }
        if a.abstains:
            rec["reward"] = verifiable_reward(True, False, False, 0)
        elif a.error is not None:
            rec["mask_reason"] = a.error
            rec["reward"] = verifiable_reward(False, False, False, 0)
        else:
            v = mask.check(a.patch, candidate, immutable=case.immutable, ops_left=ops_left)
            ok = v.ok and not verify(v.result, case.schema, case.cross_field)
            rec["mask_reason"] = v.reason
            rec["accepted"] = ok
            rec["reward"] = verifiable_reward(False, v.ok, ok, v.mutating_ops)
        out.append(rec)
    rewards = [r["reward"] for r in out]
    mean = sum(rewards) / len(rewards)
    sd = (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5
    for r in out:
        r["advantage"] = round((r["reward"] - mean) / sd, 6) if sd > 0 else 0.0
    return out


def _checked(action: Any) -> Action:
    """The policy's answer if it is a well-formed `Action` of JSON values, else a `POLICY_OUTPUT` failure.

    The ledger stores the action verbatim, so a non-JSON patch (NaN, a set) or an out-of-range confidence
    from an in-process policy must become a typed failure here, not an exception at append time.
    """
    if not isinstance(action, Action):
        return Action(error="POLICY_OUTPUT", detail=f"policy returned {type(action).__name__}, not an Action")
    c = action.confidence
    if c is not None and (isinstance(c, bool) or not isinstance(c, int | float) or not 0 <= c <= 1):
        return Action(error="POLICY_OUTPUT", detail=f"confidence must be a number in [0, 1], got {c!r}")
    try:
        canonical_json(action.patch)
    except (TypeError, ValueError) as e:
        return Action(error="POLICY_OUTPUT", detail=f"action is not JSON: {e}"[:300])
    bad = usage_problem(action.usage)
    if bad:
        return Action(error="POLICY_OUTPUT", detail=bad)
    return action


@dataclass(frozen=True)
class ReplaySummary:
    """What `replay` did: outcome counts, ops by type, and the ledger's freeze anchors."""

    cases: int
    outcomes: dict[str, int]
    ops_by_type: dict[str, int]
    steps: int
    refusals: dict[str, int]
    entries: int
    head: str
    root: str
    ledger: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "outcomes": self.outcomes,
            "ops_by_type": self.ops_by_type,
            "steps": self.steps,
            "refusals": self.refusals,
            "ledger": {
                "path": str(self.ledger),
                "entries": self.entries,
                "head": self.head,
                "root": self.root,
            },
        }


def replay(
    cases: Sequence[Case],
    policy: Policy,
    ledger_dir: str | Path,
    *,
    budgets: Budgets = Budgets(),
    seed: int = DEFAULT_SEED,
    inputs: Sequence[str | Path] = (),
    record_latency: bool = True,
    progress: Progress = NULL_PROGRESS,
    source_revision: str | None = None,
    protocol: Protocol = Protocol(),
) -> ReplaySummary:
    """Run every case with `policy`, write each step to a new ledger at `ledger_dir`, and freeze it.

    The ledger's config binds the policy description, budgets and seed; `inputs` (the cases file and, for
    `precomputed`, the patches file — never targets) are hashed into its header. Entries: one
    `repair.run`, then per case `repair.start`, one `repair.step` per attempt, `repair.end`.
    """
    from output_contracts.ledger import Ledger

    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise RepairError("case ids are not unique", field="case_id")
    config = {
        "command": "repair-replay",
        "policy": policy.describe(),
        "max_ops": budgets.max_ops,
        "max_attempts": budgets.max_attempts,
        "abstain_below": budgets.abstain_below,
        "record_latency": record_latency,
        "protocol": protocol.as_json(),
    }
    inputs_digest = {Path(p).name: file_sha256(p) for p in inputs}
    led = Ledger.create(ledger_dir, config, seed, source_revision=source_revision, inputs=list(inputs))
    outcomes = dict.fromkeys(OUTCOMES, 0)
    ops_by_type: dict[str, int] = {}
    refusals: dict[str, int] = {}
    n_steps = 0
    try:
        led.append(
            KIND_RUN,
            {
                **config,
                "seed": seed,
                "cases": len(cases),
                "cases_sha256": hashlib.sha256(b"".join(i.encode() + b"\n" for i in ids)).hexdigest(),
                "inputs": inputs_digest,
            },
        )
        progress.start("repair", len(cases))
        clock: Clock | None = time.perf_counter if record_latency else None
        pending: list[tuple[str, dict[str, Any]]] = []
        for case in cases:
            ep = run_episode(case, policy, budgets, seed=seed, clock=clock, protocol=protocol)
            pending += [(KIND_START, ep.start), *((KIND_STEP, s) for s in ep.steps), (KIND_END, ep.end)]
            if len(pending) >= FLUSH_ENTRIES:
                led.append_many(pending)
                pending = []
            outcomes[ep.outcome] += 1
            n_steps += len(ep.steps)
            for o in ep.ops:
                ops_by_type[o["op"]] = ops_by_type.get(o["op"], 0) + 1
            for s in ep.steps:
                m = s.get("mask")
                if m and not m["ok"]:
                    refusals[m["reason"]] = refusals.get(m["reason"], 0) + 1
            progress.advance()
        if pending:
            led.append_many(pending)
        info = led.freeze()
    finally:
        progress.finish()
        led.close()
    return ReplaySummary(
        len(cases),
        outcomes,
        dict(sorted(ops_by_type.items())),
        n_steps,
        dict(sorted(refusals.items())),
        info.entries,
        info.head,
        info.root,
        Path(ledger_dir),
    )
