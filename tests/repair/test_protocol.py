"""The extended policy protocol: usage, feedback views, `--samples` groups, the allowed-action set, and the
example command policy in docs/examples (run as a real subprocess, no network)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import RepairError
from output_contracts.jsonutil import canonical_json
from output_contracts.ledger import read_entries
from output_contracts.repair import cases, score
from output_contracts.repair.loop import Protocol, replay, run_episode
from output_contracts.repair.mask import allowed_actions
from output_contracts.repair.policies import CommandPolicy, HeuristicPolicy, json_tokens, parse_action
from output_contracts.repair.state import Action, State, restrict_report
from output_contracts.repair.validator import verify
from output_contracts.schemas import schema_errors
from tests.repair.conftest import GOOD, SCHEMA, make_case

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "repair-policy" / "policy.py"


def _steps(ledger: Path) -> list[dict[str, Any]]:
    out = []
    for e in read_entries(ledger):
        assert schema_errors({"kind": e.kind, "body": e.body}, "repair-step") == []
        if e.kind == "repair.step":
            out.append(e.body)
    return out


def test_usage_is_parsed_checked_and_recorded() -> None:
    a = parse_action(b'{"action": "abstain", "usage": {"input_tokens": 10, "output_tokens": 2}}')
    assert a.abstains and a.usage == {"input_tokens": 10, "output_tokens": 2}
    for bad in (b'{"action": "abstain", "usage": {"output_tokens": -1}}', b'{"action": [], "usage": 3}'):
        assert parse_action(bad).error == "POLICY_OUTPUT"
    # the heuristic reports JSON lexical tokens of what it read and wrote
    case = make_case({**GOOD, "qty": "3"})
    ep = run_episode(case, HeuristicPolicy(), clock=None)
    (step,) = ep.steps
    assert (
        step["usage"]["output_tokens"] == json_tokens(step["action"]) == 15
    )  # [ { op : replace , path : /qty , value : 3 } ]


class _Seen:
    """A policy that records the states it is shown and abstains."""

    name = "seen"

    def __init__(self) -> None:
        self.states: list[dict[str, Any]] = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def act(self, state: State) -> Action:
        self.states.append(state.as_json())
        return Action.abstain()


@pytest.mark.parametrize(
    ("view", "fields"),
    [
        ("full", {"code", "pointer", "detail"}),
        ("pointer-only", {"pointer"}),
        ("code-only", {"code"}),
        ("text", {"detail"}),
        ("context-only", None),
    ],
)
def test_feedback_views_restrict_what_the_policy_sees(view: str, fields: set[str] | None) -> None:
    seen = _Seen()
    run_episode(make_case({**GOOD, "qty": "3"}), seen, clock=None, protocol=Protocol(feedback=view))
    (st,) = seen.states
    if fields is None:
        assert st["report"] == []
    else:
        assert [set(e) for e in st["report"]] == [fields]
    assert ("feedback" in st) == (view != "full")


def test_heuristic_under_views_reads_codes_off_the_schema() -> None:
    case = make_case({**GOOD, "qty": "3"})
    outcomes = {
        v: run_episode(case, HeuristicPolicy(), clock=None, protocol=Protocol(feedback=v)).outcome
        for v in ("full", "pointer-only", "code-only", "text", "context-only")
    }
    # with the pointer it infers E_TYPE from the schema; without a pointer it cannot place a fix
    assert outcomes == {
        "full": "accepted",
        "pointer-only": "accepted",
        "code-only": "abstained",
        "text": "abstained",
        "context-only": "abstained",
    }
    r = restrict_report(verify({"qty": "3"}, SCHEMA), "code-only")
    assert {e.pointer for e in r} == {""} and {e.code for e in r} >= {"E_REQUIRED", "E_TYPE"}


def test_allowed_action_set() -> None:
    doc = {"a": 1, "l": [1, 2], "o": {"x": 1}}
    al = allowed_actions(doc, immutable=["/l/1", "/o/x"], ops_left=2)
    # "" (an ancestor of an immutable pointer) is not writable, nor are /l and /o; /l/0 is (replace only)
    assert al["writable"] == ["/a", "/l/0"]
    assert al["add_parents"] == ["", "/o"]  # an add into /l would shift /l/1
    assert al["ops_left"] == 2 and al["immutable"] == ["/l/1", "/o/x"]
    free = allowed_actions({"a": 1}, ops_left=1)
    assert free["writable"] == ["", "/a"] and free["add_parents"] == [""]
    seen = _Seen()
    run_episode(make_case({**GOOD, "qty": "3"}), seen, clock=None, protocol=Protocol(send_allowed=True))
    assert "/qty" in seen.states[0]["allowed"]["writable"]


def test_samples_record_a_group_with_rewards_before_the_freeze(tmp_path: Path) -> None:
    # missing /unit: the heuristic's fills are the default "each", then each enum value ("each", "box")
    case = make_case({"sku": "A-1", "qty": 3})
    replay([case], HeuristicPolicy(), tmp_path / "led", record_latency=False, protocol=Protocol(samples=3))
    (step,) = _steps(tmp_path / "led")
    group = step["samples"]
    assert [g["index"] for g in group] == [0, 1, 2]
    assert [g["action"][0]["value"] for g in group] == ["each", "each", "box"]
    assert [g["reward"] for g in group] == [1.0, 1.0, 1.0] and {g["advantage"] for g in group} == {0.0}
    assert all(g["usage"]["output_tokens"] > 0 for g in group)
    # the samples never change the episode: the applied action is the policy's own answer
    assert step["action"] == [{"op": "add", "path": "/unit", "value": "each"}] and step["accepted"]
    run = next(e for e in read_entries(tmp_path / "led") if e.kind == "repair.run")
    assert run.body["protocol"] == {"feedback": "full", "send_allowed": False, "samples": 3}


def test_sample_rewards_and_advantages_by_hand(tmp_path: Path) -> None:
    class Three:
        name = "three"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name}

        def act(self, state: State) -> Action:
            k = (state.sample or {}).get("index", 0)
            return [
                Action([{"op": "replace", "path": "/qty", "value": 3}], 0.9),  # accepted: 1
                Action([{"op": "remove", "path": "/nope"}], 0.5),  # refused: −1
                Action.abstain(),  # 0
            ][k]

    replay(
        [make_case({**GOOD, "qty": "3"})],
        Three(),
        tmp_path / "led",
        record_latency=False,
        protocol=Protocol(samples=3),
    )
    (step,) = _steps(tmp_path / "led")
    g = step["samples"]
    assert [s["reward"] for s in g] == [1.0, -1.0, 0.0]
    assert [s["mask_reason"] for s in g] == [None, "PATH_NOT_FOUND", None]
    sd = (2 / 3) ** 0.5  # population sd of (1, −1, 0)
    assert [s["advantage"] for s in g] == [round(1 / sd, 6), round(-1 / sd, 6), 0.0]


def test_protocol_rejects_unknown_views() -> None:
    with pytest.raises(RepairError, match="feedback"):
        Protocol(feedback="everything")
    with pytest.raises(RepairError, match="samples"):
        Protocol(samples=-1)


def _example(*args: str) -> CommandPolicy:
    return CommandPolicy((sys.executable, str(EXAMPLE), *args), timeout=30)


def test_example_command_policy_exercises_usage_samples_views_and_allowed(tmp_path: Path) -> None:
    cs = [
        make_case({**GOOD, "qty": "3"}, case_id="rc-a"),
        make_case({"sku": "A-1", "qty": 3, "tags": ["x"]}, case_id="rc-b"),
    ]
    replay(cs, _example(), tmp_path / "led", record_latency=False, protocol=Protocol("pointer-only", True, 2))
    steps = _steps(tmp_path / "led")
    assert [s["accepted"] for s in steps] == [True, True]
    assert all(s["usage"]["input_tokens"] > 0 and s["usage"]["output_tokens"] > 0 for s in steps)
    # rc-b misses /unit (default "each", enum each/box): the two samples take different fills
    b = next(s for s in steps if s["case_id"] == "rc-b")
    assert [x["action"][0]["value"] for x in b["samples"]] == ["each", "each"]
    assert [x["confidence"] for x in b["samples"]] == [0.5, 0.15]
    # text view: the example parses the pointer out of "required property 'unit' is missing"
    ep = run_episode(cs[1], _example(), clock=None, protocol=Protocol("text"))
    assert ep.outcome == "accepted"
    ep = run_episode(cs[0], _example(), clock=None, protocol=Protocol("context-only"))
    assert ep.outcome == "abstained"


def test_example_regeneration_scores_collateral(tmp_path: Path) -> None:
    full = {**GOOD, "note": "keep me"}
    cs = [make_case({**full, "qty": "3"}, case_id="rc-n")]
    cases.write_targets(
        tmp_path / "t.jsonl",
        [cases.Target("rc-n", "wrong_type", "s", full, [{"op": "replace", "path": "/qty", "value": 3}])],
    )
    replay(
        cs,
        _example("--regenerate"),
        tmp_path / "led",
        record_latency=False,
        protocol=Protocol(send_allowed=True),
    )
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    (step,) = _steps(tmp_path / "led")
    assert step["action"][0]["path"] == "" and step["accepted"]
    assert r["collateral"]["numerator"] == 1 and r["collateral_ops"]["numerator"] == 0


def test_cli_replay_with_protocol_options_and_score_curve(tmp_path: Path) -> None:
    rows = [{"sku": f"S-{i}", "qty": i + 1, "unit": "box"} for i in range(6)]
    rep = cases.build_cases(
        [cases.SourceCall(f"s{i}", "order", SCHEMA, r) for i, r in enumerate(rows)],
        kinds=("missing_required", "wrong_type"),
        per_kind=3,
        seed=13,
    )
    cases.write_cases(tmp_path / "c.jsonl", rep.cases)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            *(
                "repair-replay",
                str(tmp_path / "c.jsonl"),
                "--policy",
                "heuristic",
                "--ledger",
                str(tmp_path / "L"),
            ),
            *("--feedback", "pointer-only", "--samples", "2", "--send-allowed", "--no-latency", "-q"),
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        ["repair-replay", str(tmp_path / "c.jsonl"), "--feedback", "bogus", "--ledger", str(tmp_path / "X")],
    )
    assert r.exit_code == 2
    r = runner.invoke(
        app,
        [
            "repair-score",
            str(tmp_path / "L"),
            "--targets",
            str(tmp_path / "t.jsonl"),
            "--coverage-risk",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    rep_json = orjson.loads(r.stdout)
    assert schema_errors(rep_json, "repair-score") == []
    assert rep_json["coverage_risk"]["points"][0]["threshold"] == 0.0
    assert rep_json["generated_tokens"]["denominator"] == 6
    assert canonical_json(rep_json["definitions"]["collateral"]).startswith(b'"cases with a leaf outside')


def test_cli_score_with_executor(tmp_path: Path) -> None:
    cs = [make_case({**GOOD, "qty": "3"}, case_id="rc-a")]
    cases.write_cases(tmp_path / "c.jsonl", cs)
    cases.write_targets(
        tmp_path / "t.jsonl",
        [cases.Target("rc-a", "wrong_type", "s", GOOD, [{"op": "replace", "path": "/qty", "value": 3}])],
    )
    replay(cs, HeuristicPolicy(), tmp_path / "L", record_latency=False)
    ex = f"{sys.executable} {REPO / 'docs' / 'examples' / 'repair-policy' / 'executor.py'}"
    args = ["repair-score", str(tmp_path / "L"), "--targets", str(tmp_path / "t.jsonl")]
    r = CliRunner().invoke(app, [*args, "--executor", ex, "--json"])
    assert r.exit_code == 0, r.output
    rep = orjson.loads(r.stdout)
    assert rep["semantic_success"]["value"] == 1.0 and rep["executor"]["calls"] == 1
    r = CliRunner().invoke(app, [*args, "--executor", ex])
    assert r.exit_code == 0 and "semantic_success" in r.stdout
    r = CliRunner().invoke(app, [*args, "--executor", "  "])
    assert r.exit_code == 2
