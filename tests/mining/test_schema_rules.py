"""Rules from a registry's declared output schema: zero support needed, merged with mined ones."""

from __future__ import annotations

from pathlib import Path

import orjson

from output_contracts.mining import mine
from output_contracts.mining.schema_rules import declared
from output_contracts.traces.tool_registry import load_registry
from tests.helpers import call, corpus, find

OUTPUT = {
    "type": "object",
    "required": ["sku", "available"],
    "properties": {
        "sku": {"type": "string"},
        "available": {"type": "integer", "minimum": 0},
        "price": {"type": "number", "exclusiveMinimum": 0},
        "status": {"enum": ["in_stock", "out"]},
        "seen_at": {"format": "date-time"},
        "bins": {
            "type": "array",
            "items": {"type": "object", "required": ["bin"], "properties": {"bin": {"type": "string"}}},
        },
        "grade": {"type": "integer"},
    },
}


def _registry(tmp_path: Path) -> Path:
    spec = {
        "name": "inv",
        "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}},
        "output": OUTPUT,
        "substitutes": ["inv2"],
        "immutable": ["/sku"],
    }
    p = tmp_path / "tools.json"
    p.write_bytes(orjson.dumps({"tools": [spec]}))
    return p


def test_declared_walk() -> None:
    got = {
        (c, p, orjson.dumps(params, option=orjson.OPT_SORT_KEYS).decode())
        for c, p, params in declared(OUTPUT)
    }
    assert ("REQUIRED", "/sku", "{}") in got and ("REQUIRED", "/available", "{}") in got
    assert ("NONNEG", "/available", "{}") in got and ("POSITIVE", "/price", "{}") in got
    assert ("DOMAIN", "/status", '{"values":["in_stock","out"]}') in got
    assert ("TYPE", "/seen_at", '{"kind":"string"}') in got
    assert ("TYPE", "/available", '{"kind":"int"}') in got and ("TYPE", "/price", '{"kind":"number"}') in got
    assert ("REQUIRED", "/bins/*/bin", "{}") in got and ("TYPE", "/bins/*/bin", '{"kind":"string"}') in got


def test_schema_rules_need_no_support_and_merge(tmp_path: Path) -> None:
    recs = [
        call(
            f"t{i % 3}",
            "inv",
            {"sku": f"S{i}", "available": i, "grade": 1.5 if i == 2 else 1},
            {"sku": f"S{i}"},
        )
        for i in range(25)
    ]
    c = corpus(tmp_path, recs)
    cs = mine(c, registry=load_registry(_registry(tmp_path)))
    assert cs.tools["inv"].substitutes == ("inv2",) and cs.tools["inv"].immutable == ("/sku",)
    both = find(cs, "REQUIRED", "/sku")
    assert both is not None and both.source == ("mined", "schema")
    only_schema = find(cs, "NONNEG", "/available")  # 25 values < 30: mined alone would not keep it
    assert only_schema is not None and only_schema.source == ("schema",) and only_schema.support.calls == 25
    unseen = find(cs, "POSITIVE", "/price")
    assert unseen is not None and unseen.support.calls == 0
    grade = find(cs, "TYPE", "/grade")  # declared integer, the data holds 1.5: the declaration is dropped
    assert grade is not None and grade.params == {"kind": "number"} and grade.source == ("mined",)
    without = mine(c)
    assert find(without, "NONNEG", "/available") is None


def test_corpus_registry_is_used_by_default(tmp_path: Path) -> None:
    from output_contracts.traces.ingest import ingest

    src = tmp_path / "t.jsonl"
    recs = [call(f"t{i % 3}", "inv", {"sku": f"S{i}", "available": i}, {"sku": f"S{i}"}) for i in range(25)]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    ingest([src], tmp_path / "c", registry=_registry(tmp_path))
    from output_contracts.traces.corpus import Corpus

    cs = mine(Corpus.open(tmp_path / "c"))
    assert find(cs, "NONNEG", "/available") is not None
    assert cs.tools["inv"].substitutes == ("inv2",)


def test_declared_parameters_restrict_echo_candidates(tmp_path: Path) -> None:
    """`note` is echoed but not a declared parameter: with the registry it is not an ECHO candidate."""
    recs = [
        call(f"t{i % 3}", "inv", {"sku": f"S{i}", "note": f"n{i}"}, {"sku": f"S{i}", "note": f"n{i}"})
        for i in range(25)
    ]
    c = corpus(tmp_path, recs)
    assert find(mine(c), "ECHO", "/note", "$args/note") is not None
    with_reg = mine(c, registry=load_registry(_registry(tmp_path)))
    assert find(with_reg, "ECHO", "/note", "$args/note") is None
    assert find(with_reg, "ECHO", "/sku", "$args/sku") is not None
