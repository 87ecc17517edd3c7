"""Policies: precomputed, the heuristic's rules, the command protocol (no shell, timeouts), confidence gating."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from output_contracts.errors import RepairError
from output_contracts.repair.loop import Budgets, run_episode
from output_contracts.repair.policies import (
    CommandPolicy,
    HeuristicPolicy,
    PrecomputedPolicy,
    lossless_coercion,
    make_policy,
    parse_action,
)
from output_contracts.repair.state import State
from output_contracts.repair.validator import verify
from tests.repair.conftest import GOOD, SCHEMA, make_case


def _state(candidate: Any, **kw: Any) -> State:
    case = make_case(candidate, **kw)
    return State(case, candidate, verify(candidate, SCHEMA), tuple(case.history), 1, 2, 2)


@pytest.mark.parametrize(
    ("value", "sub", "expected"),
    [
        ("5", {"type": "integer"}, (True, 5)),
        ("-12", {"type": "integer"}, (True, -12)),
        ("05", {"type": "integer"}, (False, None)),
        ("1e3", {"type": "integer"}, (False, None)),
        ("2.5", {"type": "number"}, (True, 2.5)),
        ("2.50", {"type": "number"}, (False, None)),
        ("7", {"type": "number"}, (True, 7)),
        ("true", {"type": "boolean"}, (True, True)),
        ("yes", {"type": "boolean"}, (False, None)),
        ("null", {"type": "null"}, (True, None)),
        (5, {"type": "string"}, (True, "5")),
        (["box"], {"type": "string", "enum": ["box"]}, (True, "box")),
        (["crate"], {"type": "string", "enum": ["box"]}, (False, None)),
        ("[1,2]", {"type": "array"}, (True, [1, 2])),
        ('{"a":1}', {"type": "object"}, (True, {"a": 1})),
        ("[1, 2]", {"type": "array"}, (False, None)),  # not the canonical text: not provably lossless
        ({}, {"type": "string"}, (False, None)),
    ],
)
def test_lossless_coercion(value: Any, sub: dict[str, Any], expected: tuple[bool, Any]) -> None:
    assert lossless_coercion(value, sub) == expected


def test_heuristic_rules() -> None:
    h = HeuristicPolicy()
    # wrong type with a lossless reading
    a = h.act(_state({**GOOD, "qty": "3"}))
    assert (a.patch, a.confidence) == ([{"op": "replace", "path": "/qty", "value": 3}], 0.9)
    # missing required with a schema default
    a = h.act(_state({"sku": "A-1", "qty": 3}))
    assert (a.patch, a.confidence) == ([{"op": "add", "path": "/unit", "value": "each"}], 0.6)
    # missing required without default or enum: abstain
    a = h.act(_state({"qty": 3, "unit": "box"}))
    assert a.abstains and "no default" in a.detail
    # a near-miss key holding a valid value: move it
    a = h.act(_state({"sku": "A-1", "qty": 3, "units": "box"}))
    assert a.patch == [{"op": "move", "from": "/units", "path": "/unit"}]
    # an unexplained extra property: abstain rather than delete data
    assert h.act(_state({**GOOD, "colour": "red"})).abstains
    # rollback: the last history patch added the failing path
    hist = ({"attempt": 0, "patch": [{"op": "add", "path": "/note", "value": {}}]},)
    a = h.act(_state({**GOOD, "note": {}}, history=hist))
    assert a.patch == [{"op": "remove", "path": "/note"}]
    # the wrong type also fails the enum at the same pointer: one coercion fixes both
    a = h.act(_state({**GOOD, "unit": ["box"]}))
    assert a.patch == [{"op": "replace", "path": "/unit", "value": "box"}]


def test_heuristic_abstains_after_an_immutable_refusal() -> None:
    case = make_case({**GOOD, "qty": "3"}, immutable=("/qty",))
    ep = run_episode(case, HeuristicPolicy(), Budgets(), clock=None)
    assert ep.outcome == "abstained"
    assert [s["mask"]["reason"] if s["mask"] else s["action"] for s in ep.steps] == [
        "IMMUTABLE_PATH",
        "abstain",
    ]
    assert ep.final == case.candidate


def test_precomputed_missing_entry_abstains() -> None:
    p = PrecomputedPolicy(
        {("rc-test", 1): {"case_id": "rc-test", "attempt": 1, "action": [{"op": "remove", "path": "/x"}]}}
    )
    ep = run_episode(make_case({**GOOD, "qty": "3"}), p, Budgets(), clock=None)
    assert [s["mask"]["reason"] if s["mask"] else s["action"] for s in ep.steps] == [
        "PATH_NOT_FOUND",
        "abstain",
    ]
    assert ep.outcome == "abstained" and "no precomputed action" in ep.steps[1]["detail"]


def test_abstain_below_gates_low_confidence_patches() -> None:
    case = make_case({"sku": "A-1", "qty": 3})  # the heuristic's default-fill has confidence 0.6
    assert run_episode(case, HeuristicPolicy(), Budgets(abstain_below=0.5), clock=None).outcome == "accepted"
    ep = run_episode(case, HeuristicPolicy(), Budgets(abstain_below=0.7), clock=None)
    assert ep.outcome == "abstained" and ep.steps[0]["gated"] is True and ep.final == case.candidate


def _script(tmp_path: Path, body: str) -> str:
    f = tmp_path / "policy.py"
    f.write_text("import json, sys, time\nstate = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {f}"


def test_command_policy_protocol(tmp_path: Path) -> None:
    # the program sees the state on stdin and answers with a patch and a confidence
    cmd = _script(
        tmp_path,
        "err = state['report'][0]\n"
        "print(json.dumps({'action': [{'op': 'replace', 'path': err['pointer'], 'value': int(state['candidate']['qty'])}],"
        " 'confidence': 0.8}))\n",
    )
    ep = run_episode(
        make_case({**GOOD, "qty": "3"}), make_policy("command", command=cmd), Budgets(), clock=None
    )
    assert ep.outcome == "accepted" and ep.final == GOOD and ep.steps[0]["confidence"] == 0.8


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("time.sleep(5)\n", "POLICY_TIMEOUT"),
        ("sys.exit(3)\n", "POLICY_FAILED"),
        ("print('not json')\n", "POLICY_OUTPUT"),
        ("print(json.dumps({'patch': []}))\n", "POLICY_OUTPUT"),
        ("print(json.dumps({'action': 'abstain', 'confidence': 7}))\n", "POLICY_OUTPUT"),
    ],
)
def test_command_policy_failures_are_typed_and_use_an_attempt(tmp_path: Path, body: str, reason: str) -> None:
    # only the sleeping script may run into the timeout: the others get one a loaded machine's Python
    # start-up cannot reach (0.5 s for all of them timed out under load, typed POLICY_TIMEOUT)
    timeout = 0.5 if reason == "POLICY_TIMEOUT" else 60.0
    pol = CommandPolicy.from_string(_script(tmp_path, body), timeout=timeout)
    ep = run_episode(make_case({**GOOD, "qty": "3"}), pol, Budgets(max_attempts=2), clock=None)
    assert ep.outcome == "exhausted" and ep.attempts == 2
    assert [s["mask"]["reason"] for s in ep.steps] == [reason, reason]
    assert all(s["report"] is None for s in ep.steps)  # never reached the validator


def test_command_policy_never_uses_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    # shell syntax in the command string is passed as literal arguments, not interpreted
    pol = CommandPolicy.from_string(f'{sys.executable} -c \'print("\\"abstain\\"")\' ; touch {marker}')
    assert ";" in pol.argv and "touch" in pol.argv
    a = pol.act(_state({**GOOD, "qty": "3"}))
    assert a.abstains
    assert not marker.exists()
    # trace text in the state never reaches argv: the case's strings travel on stdin only
    case_text = "$(touch " + str(marker) + ")"
    a = pol.act(_state({**GOOD, "qty": "3", "sku": case_text}))
    assert not marker.exists()


def test_parse_action_shapes() -> None:
    assert parse_action(b'"abstain"').abstains
    assert parse_action(b'[{"op":"remove","path":"/a"}]').patch == [{"op": "remove", "path": "/a"}]
    assert parse_action(b'{"action": "abstain", "confidence": 0.2}').confidence == 0.2
    assert parse_action(b"3").error == "POLICY_OUTPUT"


def test_make_policy_usage_errors() -> None:
    with pytest.raises(RepairError, match="patches is required"):
        make_policy("precomputed")
    with pytest.raises(RepairError, match="--command"):
        make_policy("command")
    with pytest.raises(RepairError, match="unknown policy"):
        make_policy("oracle")
