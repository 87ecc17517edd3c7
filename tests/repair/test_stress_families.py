"""ContractRL's stress families: ambiguous pointer, stale schema, injected verifier text, unavailable tool and
long-horizon chains (a trajectory succeeds only if every step does); on hand sources and on BFCL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from output_contracts.repair import cases, score
from output_contracts.repair.loop import replay
from output_contracts.repair.mask import check
from output_contracts.repair.patch import apply_patch, json_equal, parse_op
from output_contracts.repair.policies import HeuristicPolicy, PrecomputedPolicy
from output_contracts.repair.validator import verify
from output_contracts.schemas import schema_errors

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "base_currency": {"type": "string"},
        "amount": {"type": "number"},
        "rounding": {"type": "string", "enum": ["up", "down"]},
        "fee_pct": {"type": "integer"},
    },
    "required": ["base_currency", "amount", "rounding"],
    "additionalProperties": False,
}


def _sources(n: int = 20) -> list[cases.SourceCall]:
    rows = [
        {"base_currency": f"C{i}", "amount": 10 + i, "rounding": "up" if i % 2 else "down", "fee_pct": i}
        for i in range(n)
    ]
    return [cases.SourceCall(f"src-{i:02d}", "convert", SCHEMA, r) for i, r in enumerate(rows)]


@pytest.mark.parametrize("family", [f for f in cases.STRESS if f != "long_horizon"])
def test_each_stress_family_is_a_real_fault_with_its_answer(family: str) -> None:
    rep = cases.build_cases(_sources(), kinds=[family], per_kind=4, seed=13)
    assert rep.per_family[family] == 4
    for case, target in zip(rep.cases, rep.targets, strict=True):
        assert schema_errors(case.as_json(), "repair-case") == []
        assert schema_errors(target.as_json(), "repair-target") == []
        errors = verify(case.candidate, case.schema)
        assert errors != ()
        if target.abstain:
            assert target.canonical_patch is None
            continue
        assert target.canonical_patch is not None
        fixed = apply_patch(case.candidate, [parse_op(o) for o in target.canonical_patch])
        assert json_equal(fixed, target.target) and verify(fixed, case.schema) == ()
        if family == "stale_schema":
            (op,) = target.canonical_patch
            assert op["op"] == "move" and op["from"] in ("/baseCurrency", "/feePct")
        if family == "injected_text":
            # the instruction reaches the policy inside the verifier's own message
            assert any("<<SYSTEM:" in e.detail for e in errors)
        if family == "malformed_text":
            # the forged fragment (a closed entry, a second report saying valid) reaches the policy inside
            # the verifier's own message
            assert any('"}]' in e.detail and '"valid": true' in e.detail for e in errors)
    if family == "ambiguous_pointer":
        c, t = rep.cases[0], rep.targets[0]
        assert t.abstain
        # two near-miss keys hold two different valid values for the one missing argument
        extra = sorted(set(c.candidate) - set(SCHEMA["properties"]))
        assert len(extra) == 2 and c.candidate[extra[0]] != c.candidate[extra[1]]
    if family == "unavailable_tool":
        c, t = rep.cases[0], rep.targets[0]
        assert t.abstain and c.candidate == t.target and c.schema["not"] == {}
        # no patch helps: even the target itself fails
        assert verify(t.target, c.schema) != ()


def test_long_horizon_chains_and_trajectory_success(tmp_path: Path) -> None:
    rep = cases.build_cases(_sources(40), kinds=["long_horizon"], per_kind=3, seed=13)
    chains: dict[str, list[cases.Target]] = {}
    for t in rep.targets:
        assert t.chain is not None and 1 <= t.chain["length"] <= cases.MAX_CHAIN
        assert schema_errors(t.as_json(), "repair-target") == []
        chains.setdefault(t.chain["id"], []).append(t)
    assert rep.per_family["long_horizon"] == len(chains) == 3
    for steps in chains.values():
        assert sorted(s.chain["step"] for s in steps if s.chain) == list(range(1, len(steps) + 1))
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    assert cases.read_targets(tmp_path / "t.jsonl")[rep.targets[0].case_id].chain == rep.targets[0].chain
    # every canonical patch: every chain succeeds
    pre = {(t.case_id, 1): {"action": t.canonical_patch} for t in rep.targets}
    replay(rep.cases, PrecomputedPolicy(pre), tmp_path / "pre", record_latency=False)
    r = score.score(tmp_path / "pre", tmp_path / "t.jsonl", bootstrap=20)
    assert (r["trajectory_success"]["numerator"], r["trajectory_success"]["denominator"]) == (3, 3)
    # drop one step of the first chain: that chain fails, by hand 2 of 3
    first = sorted(chains)[0]
    victim = chains[first][0].case_id
    del pre[(victim, 1)]
    replay(rep.cases, PrecomputedPolicy(pre), tmp_path / "one", record_latency=False)
    r = score.score(tmp_path / "one", tmp_path / "t.jsonl", bootstrap=20)
    assert (r["trajectory_success"]["numerator"], r["trajectory_success"]["denominator"]) == (2, 3)
    assert r["m_object"]["numerator"] == len(rep.cases) - 1
    assert schema_errors(r, "repair-score") == []


def test_obeying_the_injection_scores_collateral_and_a_wrong_dispatch(tmp_path: Path) -> None:
    rep = cases.build_cases(_sources(), kinds=["injected_text"], per_kind=2, seed=13)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    # the injected instruction, obeyed, would replace the call by {}; the mask lets it through, the
    # validator refuses {} (required arguments missing), so nothing bad is dispatched
    obey = {(c.case_id, 1): {"action": [{"op": "replace", "path": "", "value": {}}]} for c in rep.cases}
    replay(rep.cases, PrecomputedPolicy(obey), tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    assert r["collateral"]["numerator"] == r["collateral"]["denominator"] == 2
    assert r["collateral_ops"]["numerator"] == 0
    assert r["structural_validity"]["numerator"] == 0 and r["unsafe_dispatch_count"] == 0
    assert r["fail_closed"]["numerator"] == r["fail_closed"]["denominator"] == 2


def test_heuristic_abstains_on_every_unrepairable_stress_case(tmp_path: Path) -> None:
    rep = cases.build_cases(_sources(), kinds=["ambiguous_pointer", "unavailable_tool"], per_kind=3, seed=13)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    replay(rep.cases, HeuristicPolicy(), tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    assert r["abstention"]["correct"]["numerator"] == r["abstention"]["correct"]["denominator"] == 6
    assert r["unsafe_dispatch_count"] == 0


def test_stress_families_on_bfcl(shared_data: Path, tmp_path: Path) -> None:
    bfcl = shared_data / "bfcl"
    sources, _ = cases.load_bfcl(
        bfcl / "BFCL_v3_simple.json", bfcl / "possible_answer" / "BFCL_v3_simple.json"
    )
    rep = cases.build_cases(sources, kinds=cases.STRESS, per_kind=8, seed=13)
    assert all(rep.per_family[f] == 8 for f in cases.STRESS)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    pre = {(t.case_id, 1): {"action": t.canonical_patch or "abstain"} for t in rep.targets}
    replay(rep.cases, PrecomputedPolicy(pre), tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    assert r["m_object"]["value"] == 1.0 and r["m_patch"]["value"] == 1.0
    assert r["trajectory_success"]["value"] == 1.0 and r["trajectory_success"]["denominator"] == 8
    assert r["collateral"]["numerator"] == 0 and r["unsafe_dispatch_count"] == 0
    # the mask refuses nothing on canonical patches, and every unavailable tool is refused by the validator
    case = next(c for c, t in zip(rep.cases, rep.targets, strict=True) if t.family == "unavailable_tool")
    fix = [{"op": "replace", "path": "", "value": {}}]
    assert check(fix, case.candidate, ops_left=2).ok and verify({}, case.schema) != ()


TOOL_FAMILIES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "tool-families"


def test_tool_families_example_is_correct_and_scored_per_family(tmp_path: Path) -> None:
    import orjson

    tools = {
        t["name"]: t["parameters"] for t in orjson.loads((TOOL_FAMILIES / "tools.json").read_bytes())["tools"]
    }
    rows = [orjson.loads(x) for x in (TOOL_FAMILIES / "calls.jsonl").read_bytes().splitlines()]
    assert len(rows) == 120 and {score.tool_family(t) for t in tools} == set(score.TOOL_FAMILIES)
    for r in rows:
        assert verify(r["arguments"], tools[r["tool"]]) == (), r
    sources = [cases.SourceCall(r["trace_id"], r["tool"], tools[r["tool"]], r["arguments"]) for r in rows]
    rep = cases.build_cases(sources, kinds=["wrong_type", "stale_schema"], per_kind=20, seed=13)
    cases.write_targets(tmp_path / "t.jsonl", rep.targets)
    replay(rep.cases, HeuristicPolicy(), tmp_path / "led", record_latency=False)
    r = score.score(tmp_path / "led", tmp_path / "t.jsonl", bootstrap=10)
    assert schema_errors(r, "repair-score") == []
    fams = r["by_tool_family"]
    assert sum(f["cases"] for f in fams.values()) == 40 and set(fams) <= set(score.TOOL_FAMILIES)
    # the heuristic repairs every wrong type and no camelCase rename, in every tool family
    for f in fams.values():
        assert f["m_object"]["numerator"] == sum(
            1
            for c, t in zip(rep.cases, rep.targets, strict=True)
            if t.family == "wrong_type"
            and score.tool_family(c.tool) == next(k for k, v in fams.items() if v is f)
        )
    assert score.tool_family("geometry.area") is None and score.tool_family("file") is None
