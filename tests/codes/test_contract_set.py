"""The contract set artifact: schema-valid, byte-deterministic, seeded folds, round trip."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.table import names
from output_contracts.errors import MiningError, SchemaError
from output_contracts.jsonutil import pretty_json
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.ingest import corpus_from_records
from tests.worlds import world

CODES = names()
LOW = {c: 5 for c in CODES}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    return corpus_from_records(world(11, 160, 12, 0.02), tmp_path_factory.mktemp("cs") / "c")


def test_valid_against_schema_and_round_trip(small, tmp_path: Path) -> None:
    cs = mine(small, folds=3, min_support=LOW)
    data = cs.to_json()
    assert schema_errors(data, "contract-set") == []
    # every code but the rare-event ones, which need 200-300 distinct tasks (this world has 12): LENGTH,
    # RANGE, UNIQUE, CONSISTENT (their tests/codes/<name>/test_mine.py), and CONDITIONAL, whose groups
    # need 30 tasks each (tests/codes/conditional/test_mine.py)
    rare = {"LENGTH", "RANGE", "UNIQUE", "CONSISTENT", "CONDITIONAL"}
    assert {r["code"] for t in data["tools"].values() for r in t["rules"]} == set(CODES) - rare
    cs.save(tmp_path / "c.json")
    again = ContractSet.load(tmp_path / "c.json")
    assert again.to_json() == data
    assert data["params"]["k"] == 3 and data["params"]["min_support"]["DOMAIN"] == 5
    assert data["corpus"]["sha256"] == small.sha256()


def test_byte_identical_across_runs(small, tmp_path: Path) -> None:
    one = pretty_json(mine(small, folds=5, seed=4, min_support=LOW).to_json())
    two = pretty_json(mine(small, folds=5, seed=4, min_support=LOW).to_json())
    assert one == two
    assert pretty_json(mine(small).to_json()) == pretty_json(mine(small).to_json())


def test_seeds_change_fold_assignment(small) -> None:
    a = mine(small, folds=5, seed=1, min_support=LOW)
    b = mine(small, folds=5, seed=2, min_support=LOW)
    tasks = sorted({r["task_id"] for r in world(11, 160, 12, 0.02)})
    assert [a.fold_of(t) for t in tasks] != [b.fold_of(t) for t in tasks]
    assert [fc.support for fc in a.folds] != [fc.support for fc in b.folds]
    assert {r.id for r in a.rules_for(None)} == {r.id for r in b.rules_for(None)}  # full checker: no folds


def test_schema_rejects_a_tampered_set(small, tmp_path: Path) -> None:
    data = mine(small, min_support=LOW).to_json()
    tool = next(iter(data["tools"]))
    data["tools"][tool]["rules"][0]["code"] = "MAYBE"
    (tmp_path / "bad.json").write_bytes(orjson.dumps(data))
    with pytest.raises(SchemaError, match="contract-set"):
        ContractSet.load(tmp_path / "bad.json")


def test_bad_parameters(small) -> None:
    with pytest.raises(MiningError, match="unknown rule class"):
        mine(small, min_support={"SIZE": 3})
    with pytest.raises(MiningError, match="folds"):
        mine(small, folds=0)
    with pytest.raises(MiningError, match="clean"):
        mine(small, clean="perfect")
    with pytest.raises(MiningError, match="max_violation_rate"):
        mine(small, max_violation_rate=1.5)


def test_max_violation_rate_replaces_thresholds(small) -> None:
    """n = 59 is the smallest n with 1 - 0.05^(1/n) <= 0.05: rules need 59 examples then."""
    from output_contracts.codes.mine_params import examples_for_rate, violation_bound

    assert examples_for_rate(0.05) == 59
    assert violation_bound(59) <= 0.05 < violation_bound(58)
    cs = mine(small, max_violation_rate=0.05)
    assert cs.rules_for(None)
    assert all(
        r.max_violation_rate is not None and r.max_violation_rate <= 0.05
        for r in cs.rules_for(None)
        if "mined" in r.source
    )
