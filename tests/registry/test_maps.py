"""Maps in the registry: `registry infer` writes `additionalProperties` for mined maps, `registry check`
compares entries below a declared map as `~*`, and mining treats a declared map as a map."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from output_contracts.checks.checker import call_violations
from output_contracts.codes.contract_set import ContractSet
from output_contracts.mining import mine
from output_contracts.registry.check import check_registry, declared_patterns
from output_contracts.registry.infer import infer_registry
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.tool_registry import declared_maps, map_value_schema, registry_from_json

T = "get_product_details"
U = "get_user_details"


def _records(seed: int = 11) -> tuple[list[dict[str, Any]], set[str]]:
    """Products with id-keyed variants, and users with nested id-keyed maps (users -> cards)."""
    rng = random.Random(seed)
    recs: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i in range(60):
        variants = {}
        for _ in range(1 + i % 3):
            vid = str(rng.randrange(10**9, 10**10))
            ids.add(vid)
            v: dict[str, Any] = {"price": round(rng.uniform(1, 90), 2), "available": rng.random() < 0.7}
            if i % 2:
                v["color"] = rng.choice(["red", "blue"])
            variants[vid] = v
        recs.append(
            {
                "trace_id": f"p{i}",
                "task_id": f"task-{i % 12:02d}",
                "tool": T,
                "arguments": {"product_id": f"P{i}"},
                "result": {"product_id": f"P{i}", "name": f"Product {i}", "variants": variants},
            }
        )
        uid = f"user_{rng.randrange(10**5, 10**6)}"
        cards = {}
        for _ in range(2):
            cid = f"card_{rng.randrange(10**5, 10**6)}"
            ids.add(cid)
            cards[cid] = {"balance": rng.randint(0, 400), "brand": "visa"}
        ids.add(uid)
        recs.append(
            {
                "trace_id": f"u{i}",
                "task_id": f"task-{i % 12:02d}",
                "tool": U,
                "arguments": {},
                "result": {"users": {uid: {"name": f"N{i}", "cards": cards}}},
            }
        )
    return recs, ids


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, ContractSet, set[str]]:
    recs, ids = _records()
    corpus = corpus_from_records(recs, tmp_path_factory.mktemp("maps") / "corpus")
    cs = mine(corpus)
    assert cs.tools[T].maps == ("/variants",)
    assert cs.tools[U].maps == ("/users", "/users/~*/cards")
    return corpus, cs, ids


def test_infer_writes_additional_properties_at_maps(world: tuple[Corpus, ContractSet, set[str]]) -> None:
    corpus, cs, ids = world
    reg = infer_registry(cs, corpus).registry
    out = reg.tools[T].output
    assert out is not None
    variants = out["properties"]["variants"]
    assert "properties" not in variants
    assert variants["type"] == "object"
    assert variants["additionalProperties"] == {
        "type": "object",
        "properties": {
            "price": {"type": "number", "exclusiveMinimum": 0},
            "available": {"type": "boolean"},
            "color": {"type": "string"},
        },
        "required": ["price", "available"],
    }
    assert out["required"] == ["product_id", "name", "variants"]
    users = reg.tools[U].output
    assert users is not None
    entry = users["properties"]["users"]["additionalProperties"]
    assert entry["required"] == ["name", "cards"]
    cards = entry["properties"]["cards"]
    assert "properties" not in cards
    assert cards["additionalProperties"]["properties"]["balance"] == {"type": "integer", "minimum": 0}
    assert cards["additionalProperties"]["required"] == ["balance", "brand"]
    # no id is a declared field anywhere in the proposal
    text = json.dumps(reg.to_json())
    assert not [i for i in ids if i in text]
    assert schema_errors(reg.to_json(), "tool-registry") == []
    # the proposal declares exactly the mined maps
    assert declared_maps(out) == ["/variants"]
    assert declared_maps(users) == ["/users", "/users/~*/cards"]
    # ... and agrees with the corpus it was inferred from
    assert check_registry(reg, corpus).disagreements == ()


def test_inferred_registry_round_trips_through_mining(world: tuple[Corpus, ContractSet, set[str]]) -> None:
    """Mining again with the inferred registry: the declared maps are the mined ones, and the schema
    rules sit at the same `~*` paths as the mined rules (the two sources merge into one rule)."""
    corpus, cs, _ids = world
    reg = infer_registry(cs, corpus).registry
    again = mine(corpus, registry=reg)
    assert again.tools[T].maps == cs.tools[T].maps
    assert again.tools[U].maps == cs.tools[U].maps
    by = {(r.code, r.paths): r for r in again.all_rules()}
    pos = by[("POSITIVE", ("/variants/~*/price",))]
    assert pos.source == ("mined", "schema")
    req = by[("REQUIRED", ("/users/~*/cards/~*/balance",))]
    assert req.source == ("mined", "schema")


def _declared_registry() -> dict[str, Any]:
    """A hand-written output for the products: a map of variants whose entries declare `price` only."""
    return {
        "tools": [
            {
                "name": T,
                "output": {
                    "type": "object",
                    "required": ["product_id", "variants"],
                    "properties": {
                        "product_id": {"type": "string"},
                        "name": {"type": "string"},
                        "variants": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "required": ["price"],
                                "properties": {
                                    "price": {"type": "number", "exclusiveMinimum": 0},
                                    "available": {"type": "boolean"},
                                },
                            },
                        },
                    },
                },
            }
        ]
    }


def test_check_compares_entries_of_a_declared_map(world: tuple[Corpus, ContractSet, set[str]]) -> None:
    corpus, _cs, _ids = world
    reg = registry_from_json(_declared_registry())
    assert declared_maps(reg.tools[T].output) == ["/variants"]
    assert "/variants/~*/price" in declared_patterns(reg.tools[T].output)
    report = check_registry(reg, corpus)
    got = [(d.tool, d.kind, d.path, d.calls) for d in report.disagreements]
    # `color` is undeclared in the entries: reported once, at the `~*` path (30 calls hold it), never
    # once per id; U is not in the registry
    assert got == [(T, "undeclared", "/variants/~*/color", 30), (U, "unknown_tool", "", 60)]
    n_colors = sum(
        "color" in v for r in _records()[0] if r["tool"] == T for v in r["result"]["variants"].values()
    )
    assert n_colors > 30 and report.disagreements[0].observed == {"string": n_colors}


def test_check_finds_faults_below_a_declared_map(tmp_path: Path) -> None:
    recs, _ids = _records()
    recs = [r for r in recs if r["tool"] == T][:20]
    recs.append(
        {
            "trace_id": "bad",
            "tool": T,
            "arguments": {},
            "result": {
                "product_id": "PX",
                "variants": {"123": {"price": -4}, "456": {"available": True}, "789": {"price": "9.99"}},
            },
        }
    )
    corpus = corpus_from_records(recs, tmp_path / "c")
    report = check_registry(registry_from_json(_declared_registry()), corpus)
    got = sorted((d.kind, d.path, d.calls) for d in report.disagreements)
    assert got == [
        ("bound", "/variants/~*/price", 1),
        ("missing", "/variants/~*/price", 1),
        ("type", "/variants/~*/price", 1),
        ("undeclared", "/variants/~*/color", 10),
    ]
    bound = next(d for d in report.disagreements if d.kind == "bound")
    assert (bound.declared, bound.observed) == ("> 0", -4)


# ---- mining honours a declared map ------------------------------------------------------------------

SETTINGS = ["theme", "language", "timezone"]


def _settings_records(n: int = 90) -> list[dict[str, Any]]:
    """One word key per object, the same three keys in every task: the data alone makes no map."""
    return [
        {
            "trace_id": f"s{i}",
            "task_id": f"task-{i % 15:02d}",
            "tool": "get_settings",
            "arguments": {},
            "result": {"settings": {SETTINGS[i % 3]: {"value": f"v{i % 5}", "level": i % 4}}},
        }
        for i in range(n)
    ]


SETTINGS_REGISTRY: dict[str, Any] = {
    "tools": [
        {
            "name": "get_settings",
            "output": {
                "type": "object",
                "properties": {
                    "settings": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "required": ["value"],
                            "properties": {
                                "value": {"type": "string"},
                                "level": {"type": "integer", "minimum": 0},
                            },
                        },
                    }
                },
            },
        }
    ]
}


def test_mining_treats_a_declared_map_as_a_map(tmp_path: Path) -> None:
    corpus = corpus_from_records(_settings_records(), tmp_path / "c")
    plain = mine(corpus)
    assert plain.tools["get_settings"].maps == ()
    assert any(r.paths == ("/settings/theme/value",) for r in plain.all_rules())

    reg = registry_from_json(SETTINGS_REGISTRY)
    assert (
        map_value_schema(SETTINGS_REGISTRY["tools"][0]["output"]["properties"]["settings"], None) is not None
    )
    cs = mine(corpus, registry=reg)
    tc = cs.tools["get_settings"]
    assert tc.maps == ("/settings",)
    by = {(r.code, r.paths): r for r in tc.rules}
    assert "schema" in by[("REQUIRED", ("/settings/~*/value",))].source
    assert "schema" in by[("TYPE", ("/settings/~*/value",))].source
    assert by[("TYPE", ("/settings/~*/level",))].params == {"kind": "int"}
    nonneg = by[("NONNEG", ("/settings/~*/level",))]
    assert "schema" in nonneg.source and nonneg.support.calls == 90
    assert not any(t in p for r in tc.rules for p in r.paths for t in SETTINGS)
    # the checker reads the declared map too: an entry under a key never seen breaks the entry rules
    vs = call_violations(cs, "get_settings", {}, {"settings": {"font": {"level": -1}}})
    assert sorted((v.code, v.path) for v in vs) == [
        ("NONNEG", "/settings/font/level"),
        ("REQUIRED", "/settings/font/value"),
    ]
    assert schema_errors(cs.to_json(), "contract-set") == []


def test_decisions_below_a_declared_map_start_from_it(tmp_path: Path) -> None:
    """Word keys a registry declares a map of; their entries hold id-keyed maps the data decides."""
    recs = [
        {
            "trace_id": f"g{i}",
            "task_id": f"task-{i % 10:02d}",
            "tool": "get_groups",
            "arguments": {},
            "result": {
                "groups": {
                    ["admins", "staff"][i % 2]: {
                        "members": {f"m_{1000 + 7 * i + j}": {"age": 20 + j} for j in range(2)}
                    }
                }
            },
        }
        for i in range(40)
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    assert mine(corpus).tools["get_groups"].maps == ("/groups/admins/members", "/groups/staff/members")
    reg = registry_from_json(
        {
            "tools": [
                {
                    "name": "get_groups",
                    "output": {
                        "type": "object",
                        "properties": {
                            "groups": {"type": "object", "additionalProperties": {"type": "object"}}
                        },
                    },
                }
            ]
        }
    )
    cs = mine(corpus, registry=reg)
    assert cs.tools["get_groups"].maps == ("/groups", "/groups/~*/members")
    assert any(r.code == "NONNEG" and r.paths == ("/groups/~*/members/~*/age",) for r in cs.all_rules())
