"""Replay to a ledger, scoring, refusal of tampered or unfrozen ledgers, and the targets-never-read guarantee."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.errors import RepairError
from output_contracts.ledger import Ledger, read_entries, verify
from output_contracts.repair import cases, score
from output_contracts.repair.loop import Budgets, replay, run_episode
from output_contracts.repair.policies import HeuristicPolicy, PrecomputedPolicy
from output_contracts.repair.state import Action
from output_contracts.schemas import schema_errors
from tests.repair.conftest import GOOD, SCHEMA, make_case


def _sources() -> list[cases.SourceCall]:
    rows = [{"sku": f"S-{i}", "qty": i + 1, "unit": "box", "tags": ["a", "b"]} for i in range(10)]
    return [cases.SourceCall(f"src-{i:02d}", "order", SCHEMA, r) for i, r in enumerate(rows)]


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, Path, cases.BuildReport]:
    rep = cases.build_cases(_sources(), kinds=cases.FAMILIES, per_kind=3, seed=13)
    c, t, p = tmp_path / "cases.jsonl", tmp_path / "targets.jsonl", tmp_path / "patches.jsonl"
    cases.write_cases(c, rep.cases)
    cases.write_targets(t, rep.targets)
    cases.write_patches(p, rep.targets)
    return c, t, p, rep


def test_episode_keeps_an_applied_failing_patch_and_counts_budgets() -> None:
    case = make_case({"qty": "3", "unit": "box"})  # wrong type and a missing sku
    script = [
        [{"op": "replace", "path": "/qty", "value": 3}],  # applied, still invalid (sku missing)
        [
            {"op": "add", "path": "/sku", "value": "A"},
            {"op": "add", "path": "/note", "value": "n"},
        ],  # over budget
    ]

    class Script:
        name = "script"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name}

        def act(self, state: Any) -> Any:
            from output_contracts.repair.state import Action

            return Action(script[state.attempt - 1])

    ep = run_episode(case, Script(), Budgets(max_ops=2, max_attempts=2), clock=None)
    assert ep.outcome == "exhausted"
    s1, s2 = ep.steps
    assert s1["mask"]["ok"] and not s1["accepted"] and s1["ops_left"] == 1
    assert [e["pointer"] for e in s1["report"]] == ["/sku"]
    assert s2["mask"]["reason"] == "OVER_BUDGET" and s2["report"] is None and s2["attempts_left"] == 0
    assert ep.final == {"qty": 3, "unit": "box"}  # the first patch stayed applied
    assert ep.ops == ({"op": "replace", "path": "/qty", "value": 3},)


def test_valid_candidate_needs_no_step() -> None:
    ep = run_episode(make_case(GOOD), HeuristicPolicy(), clock=None)
    assert (ep.outcome, ep.steps, ep.accepted) == ("valid_at_start", (), True)


def test_replay_writes_every_step_freezes_and_never_reads_targets(
    tmp_path: Path, built: tuple[Path, Path, Path, cases.BuildReport]
) -> None:
    c, t, p, rep = built
    hidden = tmp_path / "elsewhere" / "targets.jsonl"
    hidden.parent.mkdir()
    shutil.move(t, hidden)  # the targets file is absent while the replay runs
    summary = replay(cases.read_cases(c), PrecomputedPolicy.from_file(p), tmp_path / "led", inputs=[c, p])
    assert not t.exists()
    assert summary.cases == len(rep.cases) == 21
    # every canonical patch is accepted; the immutable cases abstain
    assert summary.outcomes == {"accepted": 18, "abstained": 3, "exhausted": 0, "valid_at_start": 0}
    v = verify(tmp_path / "led", require_frozen=True)
    assert v.ok and v.frozen and v.entries == summary.entries
    entries = read_entries(tmp_path / "led")
    kinds = [e.kind for e in entries]
    assert kinds[0] == "repair.run" and kinds.count("repair.start") == kinds.count("repair.end") == 21
    assert kinds.count("repair.step") == summary.steps == 21
    for e in entries:
        assert schema_errors({"kind": e.kind, "body": e.body}, "repair-step") == []
    shutil.move(hidden, t)
    report = score.score(tmp_path / "led", t, bootstrap=200)
    assert schema_errors(report, "repair-score") == []
    assert report["m_object"]["value"] == 1.0 and report["m_patch"]["numerator"] == 21
    assert report["abstention"]["correct"] == {
        "value": 1.0,
        "low": 1.0,
        "high": 1.0,
        "numerator": 3,
        "denominator": 3,
    }
    expected: dict[str, int] = {}
    for tg in rep.targets:
        for o in tg.canonical_patch or []:
            expected[o["op"]] = expected.get(o["op"], 0) + 1
    assert report["ops_by_type"] == expected and expected["move"] == 3 and expected["remove"] == 3


def test_replay_is_byte_deterministic_without_latency(
    tmp_path: Path, built: tuple[Path, Path, Path, Any]
) -> None:
    c = built[0]
    for name in ("a", "b"):
        replay(
            cases.read_cases(c), HeuristicPolicy(), tmp_path / name, record_latency=False, source_revision="x"
        )
    assert (tmp_path / "a" / "ledger.jsonl").read_bytes() == (tmp_path / "b" / "ledger.jsonl").read_bytes()


def test_score_refuses_tampered_and_unfrozen(tmp_path: Path, built: tuple[Path, Path, Path, Any]) -> None:
    c, t, p, _ = built
    replay(cases.read_cases(c), PrecomputedPolicy.from_file(p), tmp_path / "led")
    f = tmp_path / "led" / "ledger.jsonl"
    lines = f.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"accepted":true', b'"accepted":false', 1)
    f.write_bytes(b"".join(lines))
    with pytest.raises(score.LedgerRefused, match="does not verify"):
        score.score(tmp_path / "led", t)
    led = Ledger.create(tmp_path / "open", {"x": 1}, 13)
    led.append("repair.run", {"policy": {"name": "x"}})
    led.close()
    with pytest.raises(score.LedgerRefused, match="UNFROZEN"):
        score.score(tmp_path / "open", t)


def test_score_metrics_by_hand(tmp_path: Path) -> None:
    """Heuristic on four hand cases: values, collateral, retries and abstention risk computed by hand."""
    cs = [
        make_case({**GOOD, "qty": "3"}, case_id="rc-a"),  # coerced: right
        make_case(
            {"sku": "A-1", "qty": 3, "tags": ["x", "y"]}, case_id="rc-b"
        ),  # default "each": valid, wrong object
        make_case({"qty": 3, "unit": "box"}, case_id="rc-c"),  # abstains
        make_case({**GOOD, "qty": "3"}, immutable=("/qty",), case_id="rc-d"),  # refused, then abstains
    ]
    tg = [
        cases.Target("rc-a", "wrong_type", "s", GOOD, [{"op": "replace", "path": "/qty", "value": 3}]),
        cases.Target("rc-b", "missing_required", "s", GOOD, [{"op": "add", "path": "/unit", "value": "box"}]),
        cases.Target("rc-c", "missing_required", "s", GOOD, [{"op": "add", "path": "/sku", "value": "A-1"}]),
        cases.Target("rc-d", "immutable", "s", GOOD, None, True),
    ]
    cases.write_targets(tmp_path / "t.jsonl", tg)
    replay(cs, HeuristicPolicy(), tmp_path / "led")
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=100)
    assert (r["structural_validity"]["numerator"], r["structural_validity"]["denominator"]) == (2, 4)
    assert r["m_object"]["numerator"] == 2  # rc-a right, rc-d right by abstaining
    assert r["m_patch"]["numerator"] == 2
    # rc-d used two attempts but proposed once (then abstained): r = a - 1 = 0 over the 3 cases that proposed
    assert (r["retries"]["numerator"], r["retries"]["denominator"]) == (0, 3)
    assert (r["retries_attempts"]["numerator"], r["retries_attempts"]["denominator"]) == (1, 4)
    assert r["abstention"]["rate"]["numerator"] == 2
    # only rc-d's abstention was the right answer; rc-c abstained on a fixable case
    assert (r["abstention"]["correct"]["numerator"], r["abstention"]["correct"]["denominator"]) == (1, 1)
    assert (r["abstention"]["risk"]["numerator"], r["abstention"]["risk"]["denominator"]) == (1, 2)
    assert r["collateral"]["numerator"] == 0 and r["collateral"]["denominator"] == 2
    assert r["by_family"]["missing_required"]["m_object"]["value"] == 0.0
    assert r["latency_p95_ms"]["denominator"] == 5
    low, high = r["structural_validity"]["low"], r["structural_validity"]["high"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    # same seed, same intervals; a different seed moves them
    assert score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=100)["m_object"] == r["m_object"]
    md = score.markdown(r)
    assert "| m_object | 0.500 [" in md and "immutable" in md


def test_collateral_and_commuting_ops() -> None:
    a = [{"op": "replace", "path": "/a", "value": 1}, {"op": "add", "path": "/b", "value": 2}]
    assert score.ops_match(list(reversed(a)), a)
    moves = [{"op": "move", "from": "/x", "path": "/a"}, {"op": "add", "path": "/x", "value": 1}]
    assert not score.ops_match(list(reversed(moves)), moves)
    arr = [{"op": "add", "path": "/l/0", "value": 1}, {"op": "add", "path": "/l/1", "value": 2}]
    assert not score.commute(arr)
    assert score.collateral_paths({"a": 1, "b": 1}, {"a": 2, "b": 2}, [{"op": "replace", "path": "/a"}]) == [
        "/b"
    ]
    assert score.collateral_paths({"a": {"x": 1}}, {"a": {"x": 2}}, [{"op": "replace", "path": "/a"}]) == []


def test_compare_is_paired(tmp_path: Path, built: tuple[Path, Path, Path, Any]) -> None:
    c, t, p, _ = built
    replay(cases.read_cases(c), PrecomputedPolicy.from_file(p), tmp_path / "pre")
    replay(cases.read_cases(c), HeuristicPolicy(), tmp_path / "heu")
    r = score.score(tmp_path / "heu", t, bootstrap=200, compare=tmp_path / "pre")
    d = r["compare"]["metrics"]["m_object"]
    assert r["compare"]["cases"] == 21 and d["other"] == 1.0
    assert d["difference"] == pytest.approx(d["this"] - 1.0)
    assert d["low"] <= d["difference"] <= d["high"] <= 0


def test_score_needs_a_target_for_every_case(tmp_path: Path, built: tuple[Path, Path, Path, Any]) -> None:
    c, t, p, _ = built
    replay(cases.read_cases(c), PrecomputedPolicy.from_file(p), tmp_path / "led")
    lines = t.read_bytes().splitlines(keepends=True)
    t.write_bytes(b"".join(lines[1:]))
    with pytest.raises(RepairError, match="no target"):
        score.score(tmp_path / "led", t)
    assert orjson.loads(lines[0])["case_id"]


def test_batched_ledger_writes_give_the_same_entries(
    tmp_path: Path, built: tuple[Path, Path, Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import output_contracts.repair.loop as loop_mod

    c = built[0]
    replay(
        cases.read_cases(c), HeuristicPolicy(), tmp_path / "one", record_latency=False, source_revision="x"
    )
    monkeypatch.setattr(loop_mod, "FLUSH_ENTRIES", 2)
    replay(
        cases.read_cases(c), HeuristicPolicy(), tmp_path / "many", record_latency=False, source_revision="x"
    )
    assert (tmp_path / "one" / "ledger.jsonl").read_bytes() == (
        tmp_path / "many" / "ledger.jsonl"
    ).read_bytes()


def test_a_crashing_policy_is_a_typed_failure() -> None:
    class Boom:
        name = "boom"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name}

        def act(self, state: Any) -> Any:
            raise KeyError("oops")

    ep = run_episode(make_case({**GOOD, "qty": "3"}), Boom(), Budgets(), clock=None)
    assert ep.outcome == "exhausted"
    assert [(s["mask"]["reason"], s["policy_error"]) for s in ep.steps] == [
        ("POLICY_FAILED", "POLICY_FAILED")
    ] * 2
    assert "KeyError" in ep.steps[0]["detail"]


@pytest.mark.parametrize(
    "answer",
    [
        "not an action",
        Action([{"op": "replace", "path": "/qty", "value": float("nan")}]),
        Action([{"op": "replace", "path": "/qty", "value": {1, 2}}]),
        Action([{"op": "replace", "path": "/qty", "value": 3}], confidence=1.5),
        Action([{"op": "replace", "path": "/qty", "value": 3}], confidence=float("nan")),
    ],
)
def test_malformed_in_process_answers_are_policy_output_failures(tmp_path: Path, answer: Any) -> None:
    class Odd:
        name = "odd"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name}

        def act(self, state: Any) -> Any:
            return answer

    s = replay([make_case({**GOOD, "qty": "3"})], Odd(), tmp_path / "led")
    assert s.refusals == {"POLICY_OUTPUT": 2} and s.outcomes["exhausted"] == 1
    assert verify(tmp_path / "led", require_frozen=True).ok
