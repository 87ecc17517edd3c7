"""The ContractRL metric definitions, each checked against a case computed by hand; exact paired tests and
effect sizes; the coverage–risk curve of one run against separate gated runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from output_contracts.repair import cases, metrics, score, stats
from output_contracts.repair.loop import Budgets, replay
from output_contracts.repair.policies import HeuristicPolicy, PrecomputedPolicy
from output_contracts.schemas import schema_errors
from tests.repair.conftest import GOOD, SCHEMA, make_case

# ------------------------------------------------------------------------------------ pure definitions


def test_pointer_relative_collateral_scores_a_full_regeneration() -> None:
    cand = {"sku": "A-1", "qty": "3", "unit": "box", "note": "keep"}
    target = {"sku": "A-1", "qty": 3, "unit": "box", "note": "keep"}
    canon = [{"op": "replace", "path": "/qty", "value": 3}]
    regen = {"sku": "A-1", "qty": 3, "unit": "box"}  # regenerated whole: the optional /note is lost
    ops = [{"op": "replace", "path": "", "value": regen}]
    rp = metrics.repaired_pointers(cand, target, canon)
    assert rp == [("qty",)]
    assert metrics.collateral_leaves(regen, target, rp) == ["/note"]
    assert metrics.op_collateral_leaves(cand, regen, ops) == []  # `replace ""` covers everything
    # a perfect regeneration changes nothing outside /qty: no collateral under either definition
    assert metrics.collateral_leaves(target, target, rp) == []
    # a container replaced whole around the repaired pointer counts as inside it
    assert metrics.collateral_leaves({"a": {"x": 2, "y": 1}}, {"a": {"x": 1, "y": 1}}, [("a", "x")]) == []
    assert metrics.collateral_leaves({"a": {"x": 1}, "b": 2}, {"a": {"x": 1}, "b": 1}, [("a", "x")]) == ["/b"]


def test_repaired_pointers_of_a_move_and_of_an_abstention() -> None:
    canon = [{"op": "move", "from": "/units", "path": "/unit"}]
    assert metrics.repaired_pointers({}, {}, canon) == [("unit",), ("units",)]
    # no canonical patch (the answer is to abstain): the leaves where candidate and target differ
    assert metrics.repaired_pointers({"a": "1", "b": 2}, {"a": 1, "b": 2}, None) == [("a",)]


def _step(action: Any = None, *, gated: bool = False, error: str | None = None) -> dict[str, Any]:
    return {"action": "abstain" if action is None else action, "gated": gated, "policy_error": error}


def test_retries_count_proposals_only() -> None:
    p = [{"op": "remove", "path": "/x"}]
    assert metrics.retries([_step(p), _step(p)]) == 1  # refused, then accepted: a = 2
    assert metrics.retries([_step(p), _step()]) == 0  # a proposal then an abstention: a = 1
    assert metrics.retries([_step()]) is None  # no proposal: not in the denominator
    assert metrics.retries([_step(p, gated=True)]) is None  # a gated patch is an abstention
    assert metrics.retries([_step(error="POLICY_TIMEOUT"), _step(p)]) == 0  # a failure proposes nothing


def test_m_patch_is_ordered() -> None:
    a = [{"op": "replace", "path": "/a", "value": 1}, {"op": "add", "path": "/b", "value": 2}]
    rev = list(reversed(a))
    assert not metrics.ops_equal_ordered(rev, a)
    assert score.ops_match(rev, a)  # the older, commutative M_patch
    assert metrics.ops_equal_ordered([{**a[0], "value": 1.0}, a[1]], a)  # RFC 6902 value equality


def test_unsafe_dispatch_and_rewards() -> None:
    assert metrics.unsafe_dispatch(True, True, {"a": 1}, {"a": 1}, [])  # dispatched an unrepairable case
    assert metrics.unsafe_dispatch(True, False, {"a": "1"}, {"a": 1}, ["/a"])  # changed an immutable path
    assert not metrics.unsafe_dispatch(True, False, {"a": "1", "b": 1}, {"a": "1", "b": 2}, ["/a"])
    assert not metrics.unsafe_dispatch(False, True, {"a": 1}, {"a": 2}, ["/a"])  # nothing went out
    assert metrics.episode_reward(True, True, False, False, 0) == 1.0
    assert metrics.episode_reward(True, True, False, True, 1) == pytest.approx(1 - 0.25 - 0.1)
    assert metrics.episode_reward(False, True, False, False, None) == -1.0
    assert metrics.episode_reward(True, True, True, False, None) == -1.0  # unsafe is never correct
    assert metrics.episode_reward(False, False, False, False, 2) == pytest.approx(-0.2)
    assert metrics.verifiable_reward(False, True, True, 3) == pytest.approx(0.8)
    assert metrics.verifiable_reward(False, True, False, 1) == 0.0
    assert metrics.verifiable_reward(False, False, False, 0) == -1.0
    assert metrics.verifiable_reward(True, False, False, 0) == 0.0


def test_leakage_finds_hidden_values_in_environment_text_only() -> None:
    cand = {"qty": 3, "unit": "box"}
    target = {"sku": "A-1042", "qty": 3, "unit": "box"}
    rp = metrics.repaired_pointers(cand, target, [{"op": "add", "path": "/sku", "value": "A-1042"}])
    sec = metrics.secrets(cand, target, rp, SCHEMA)
    assert sec == ["A-1042"]
    start = {
        "report": [{"code": "E_REQUIRED", "pointer": "/sku", "detail": "required property 'sku' is missing"}]
    }
    clean = [{"report": None, "mask": {"detail": "op 0: bad"}, "detail": "I guess A-1042"}]
    assert (
        metrics.leak(sec, metrics.public_texts(start, clean)) == []
    )  # the policy's own text is not searched
    leaky = [{"report": [{"code": "E_ENUM", "pointer": "/sku", "detail": "expected 'A-1042'"}], "mask": None}]
    assert metrics.leak(sec, metrics.public_texts(start, leaky)) == ["A-1042"]
    # a value the candidate already holds (as text, even inside a longer string) is public, not a secret
    assert metrics.secrets({"p": "[34.0522,-118.2]"}, {"p": [34.0522, -118.2]}, [("p",)]) == []
    assert metrics.secrets({}, {"n": 5}, [("n",)]) == []  # shorter than MIN_SECRET_CHARS


def test_exact_tests_and_effect_sizes_by_hand() -> None:
    assert stats.exact_binomial_two_sided(0, 5) == pytest.approx(2 / 32)
    assert stats.exact_binomial_two_sided(3, 6) == 1.0
    assert stats.exact_binomial_two_sided(0, 0) == 1.0
    t = stats.mcnemar_exact(
        [True] * 3 + [False] * 7 + [True], [False] * 1 + [True] * 2 + [True] * 6 + [False] + [True]
    )
    # discordant: this-only 1 (case 0), other-only 6 (cases 3-8): p = 2 * (1 + 7) / 2^7
    assert (t["this_only"], t["other_only"]) == (1, 6) and t["p"] == pytest.approx(16 / 128)
    s = stats.sign_test([1.0, 2.0, 0.5, 1.0], [0.0, 2.0, 1.0, 0.0])
    assert (s["this_only"], s["other_only"], s["p"]) == (2, 1, 1.0)
    assert stats.cohens_h(1.0, 0.5) == pytest.approx(math.pi / 2, abs=1e-6)
    assert stats.cohens_h(None, 0.5) is None
    assert stats.paired_d([1, 2, 3], [0, 0, 0]) == pytest.approx(2.0)
    assert stats.paired_d([1, 1], [0, 0]) is None  # sd 0


# -------------------------------------------------------------------------------------- through scoring

HAND = [
    make_case({**GOOD, "qty": "3"}, case_id="rc-a"),  # coerced: right
    make_case({"sku": "A-1", "qty": 3, "tags": ["x", "y"]}, case_id="rc-b"),  # default "each": wrong
    make_case({"qty": 3, "unit": "box"}, case_id="rc-c"),  # abstains
    make_case({**GOOD, "qty": "3"}, immutable=("/qty",), case_id="rc-d"),  # refused, then abstains
]
HAND_T = [
    cases.Target("rc-a", "wrong_type", "s", GOOD, [{"op": "replace", "path": "/qty", "value": 3}]),
    cases.Target("rc-b", "missing_required", "s", GOOD, [{"op": "add", "path": "/unit", "value": "box"}]),
    cases.Target("rc-c", "missing_required", "s", GOOD, [{"op": "add", "path": "/sku", "value": "A-1"}]),
    cases.Target("rc-d", "immutable", "s", GOOD, None, True),
]


def test_paper_metrics_on_hand_cases(tmp_path: Path) -> None:
    cases.write_targets(tmp_path / "t.jsonl", HAND_T)
    replay(HAND, HeuristicPolicy(), tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=50)
    assert schema_errors(r, "repair-score") == []

    def nd(m: str) -> tuple[Any, Any]:
        return r[m]["numerator"], r[m]["denominator"]

    # R: rc-a +1, rc-b −1 (dispatched, wrong), rc-c 0 (closed), rc-d +1 (correct abstention)
    assert nd("reward") == (1, 4) and r["reward"]["value"] == 0.25
    # failures: rc-b (open) and rc-c (closed)
    assert nd("fail_closed") == (1, 2)
    assert nd("unsafe_dispatch") == (0, 4) and r["unsafe_dispatch_count"] == 0
    assert nd("collateral") == (0, 2) and nd("collateral_ops") == (0, 2)
    assert nd("retries") == (0, 3) and nd("retries_attempts") == (1, 4)
    # the heuristic reports usage: JSON tokens of its answers, one step per case except rc-d (two)
    assert r["generated_tokens"]["denominator"] == 4 and r["generated_tokens"]["numerator"] > 0
    assert nd("leakage") == (0, 1)  # rc-c's "A-1" is hidden (not in candidate or schema) and not leaked
    assert set(score.PAPER_METRICS) <= set(r["definitions"])


def test_full_regeneration_scores_collateral_through_the_ledger(tmp_path: Path) -> None:
    case = make_case({"sku": "A-1", "qty": "3", "unit": "box", "note": "n"}, case_id="rc-r")
    tgt = cases.Target(
        "rc-r",
        "wrong_type",
        "s",
        {"sku": "A-1", "qty": 3, "unit": "box", "note": "n"},
        [{"op": "replace", "path": "/qty", "value": 3}],
    )
    cases.write_targets(tmp_path / "t.jsonl", [tgt])
    regen = {"sku": "A-1", "qty": 3, "unit": "box"}
    pol = PrecomputedPolicy({("rc-r", 1): {"action": [{"op": "replace", "path": "", "value": regen}]}})
    replay([case], pol, tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    assert (r["collateral"]["numerator"], r["collateral"]["denominator"]) == (1, 1)
    assert r["collateral_ops"]["numerator"] == 0
    assert r["m_patch"]["numerator"] == 0 and r["structural_validity"]["numerator"] == 1
    assert r["reward"]["value"] == -1.25  # a wrong object dispatched (−1) with collateral (−0.25)


def _sources() -> list[cases.SourceCall]:
    rows = [{"sku": f"S-{i}", "qty": i + 1, "unit": "box", "tags": ["a", "b"]} for i in range(10)]
    return [cases.SourceCall(f"src-{i:02d}", "order", SCHEMA, r) for i, r in enumerate(rows)]


def test_coverage_risk_curve_of_one_run_equals_gated_runs(tmp_path: Path) -> None:
    rep = cases.build_cases(_sources(), kinds=cases.FAMILIES, per_kind=3, seed=13)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    replay(rep.cases, HeuristicPolicy(), tmp_path / "one", record_latency=False)
    r = score.score(tmp_path / "one", tmp_path / "t.jsonl", bootstrap=20, with_curve=True)
    assert schema_errors(r, "repair-score") == []
    pts = r["coverage_risk"]["points"]
    assert pts[0]["threshold"] == 0.0 and len(pts) >= 3
    assert pts[0]["answered"] == r["abstention"]["coverage"]["numerator"]
    for p in pts[1:]:
        d = tmp_path / f"g{p['threshold']}"
        replay(
            rep.cases,
            HeuristicPolicy(),
            d,
            budgets=Budgets(abstain_below=p["threshold"]),
            record_latency=False,
        )
        g = score.score(d, tmp_path / "t.jsonl", bootstrap=0)
        assert p["answered"] == g["abstention"]["coverage"]["numerator"]
        assert p["wrong"] == g["abstention"]["risk"]["numerator"]
    # the gated run's own curve starts at its gate
    g = score.score(d, tmp_path / "t.jsonl", bootstrap=0, with_curve=True)
    assert g["coverage_risk"]["points"][0]["threshold"] == pts[-1]["threshold"]
    assert "Coverage–risk" in score.markdown(r)


def test_compare_carries_exact_tests_and_effect_sizes(tmp_path: Path) -> None:
    cases.write_targets(tmp_path / "t.jsonl", HAND_T)
    replay(HAND, HeuristicPolicy(), tmp_path / "heu", record_latency=False)
    pre = {(t.case_id, 1): {"action": t.canonical_patch or "abstain"} for t in HAND_T}
    replay(HAND, PrecomputedPolicy(pre), tmp_path / "pre", record_latency=False)
    r = score.score(tmp_path / "heu", tmp_path / "t.jsonl", bootstrap=50, compare=tmp_path / "pre")
    assert schema_errors(r, "repair-score") == []
    m = r["compare"]["metrics"]["m_object"]
    # heuristic right on rc-a, rc-d; precomputed on rc-a, rc-b, rc-d (its rc-c patch leaves /tags out):
    # one discordant pair, other-only, p = 2 * 1/2 capped at 1; h = 2 asin √0.5 − 2 asin √0.75 = −π/6
    assert m["test"] == {"name": "mcnemar_exact", "pairs": 4, "this_only": 0, "other_only": 1, "p": 1.0}
    assert m["effect"] == {"name": "cohens_h", "value": pytest.approx(-math.pi / 6, abs=1e-6)}
    # R: heuristic [1, −1, 0, 1], precomputed [1, 1, −1.25, 1] (its rc-c object lacks /tags: a wrong
    # dispatch with collateral): rc-c favours this, rc-b the other; d_z of [0, −2, 1.25, 0]
    rw = r["compare"]["metrics"]["reward"]
    assert rw["test"] == {"name": "sign_test_exact", "pairs": 4, "this_only": 1, "other_only": 1, "p": 1.0}
    assert rw["effect"]["name"] == "paired_d" and rw["effect"]["value"] == pytest.approx(
        -0.1875 / math.sqrt((2 * 0.1875**2 + 1.8125**2 + 1.4375**2) / 3), abs=1e-6
    )
    md = score.markdown(r)
    assert "mcnemar_exact 0:1 of 4, p=1" in md


EXECUTOR = Path(__file__).resolve().parents[2] / "docs" / "examples" / "repair-policy" / "executor.py"


def test_semantic_executor_runs_after_the_freeze(tmp_path: Path) -> None:
    import sys

    from output_contracts.repair.executor import Executor

    cs = [
        make_case({**GOOD, "qty": "3"}, case_id="rc-a"),  # repaired exactly
        make_case({"sku": "A-1", "qty": 3, "tags": ["x", "y"]}, case_id="rc-b"),  # fill "BOX " vs "box"
        make_case({**GOOD, "qty": "3"}, immutable=("/qty",), case_id="rc-d"),  # abstain target
    ]
    tg = [HAND_T[0], HAND_T[1], HAND_T[3]]
    cases.write_targets(tmp_path / "t.jsonl", tg)
    pre = {
        ("rc-a", 1): {"action": HAND_T[0].canonical_patch},
        ("rc-b", 1): {
            "action": [
                {"op": "add", "path": "/unit", "value": "box"},
                {"op": "replace", "path": "/sku", "value": "a-1 "},
            ]
        },
        ("rc-d", 1): {"action": "abstain"},
    }
    replay(cs, PrecomputedPolicy(pre), tmp_path / "led", record_latency=False)
    ex = Executor((sys.executable, str(EXECUTOR)))
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10, executor=ex)
    assert schema_errors(r, "repair-score") == []
    # M_object: rc-a and rc-d; semantically rc-b too ("a-1 " means "A-1"); two dispatched cases ran
    assert r["m_object"]["numerator"] == 2
    assert (r["semantic_success"]["numerator"], r["semantic_success"]["denominator"]) == (3, 3)
    assert r["executor"]["calls"] == 2 and r["executor"]["errors"] == {}
    broken = Executor((sys.executable, "-c", "import sys; sys.exit(3)"))
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10, executor=broken)
    assert r["semantic_success"]["numerator"] == 1  # only the correct abstention
    assert r["executor"]["errors"] == {"EXECUTOR_FAILED": 2}
    junk = Executor((sys.executable, "-c", "print('yes')"))
    assert score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=0, executor=junk)["executor"][
        "errors"
    ] == {"EXECUTOR_OUTPUT": 2}
    assert score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=0)["semantic_success"] is None
