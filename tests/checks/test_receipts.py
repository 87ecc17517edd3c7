"""Receipts: the DESIGN §4 shape, both encoders valid against their schemas, recovery tools, size."""

from __future__ import annotations

import math
from typing import Any

import pytest

from output_contracts.checks.checker import check_call
from output_contracts.checks.receipts import (
    GENERIC_WARNING,
    Receipt,
    Violation,
    encode,
    encode_line,
    recovery_plan,
    recovery_tools,
)
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.errors import CheckError
from output_contracts.jsonutil import canonical_json, loads
from output_contracts.schemas import schema_errors

T = "lookup_inventory"


def _rule(code: str, paths: list[str], params: dict[str, Any] | None = None) -> Rule:
    params = params or {}
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(412, 9))


RULES = (
    _rule("NONNEG", ["/available"]),
    _rule("REQUIRED", ["/warehouse"]),
    _rule("TYPE", ["/sku"], {"kind": "string"}),
)
CS = ContractSet(
    params={"k": 1, "seed": 13},
    corpus={},
    tools={T: ToolContracts(rules=RULES, substitutes=("query_warehouse", "get_stock_by_sku"))},
    folds=(FoldChecker(0, tuple(r.id for r in RULES)),),
)


def test_design_example_exact_shape() -> None:
    result = {"sku": "SKU-1042", "available": -3, "warehouse": "east"}
    rc = check_call(CS, T, {"sku": "SKU-1042"}, result)
    assert rc is not None
    enc = encode(rc)
    assert enc["tool_result"] == result and enc["tool_result"] is result  # never copied nor changed
    oc = enc["outcome_contract"]
    assert oc == {
        "encoder": "v2",
        "tool": T,
        "binding": False,
        "violations": [
            {
                "code": "NONNEG",
                "rule": RULES[0].id,
                "path": "/available",
                "expected": ">= 0",
                "observed": -3,
                "present": True,
                "detail": "lookup_inventory returned available=-3; every one of 412 clean results had available >= 0",
            }
        ],
        "recovery_tools": ["lookup_inventory", "query_warehouse", "get_stock_by_sku"],
    }
    assert enc["bytes"] == len(canonical_json(oc))
    assert enc["approx_tokens"] == math.ceil(enc["bytes"] / 4)
    assert schema_errors(enc, "receipt-v2") == []


def test_missing_field_differs_from_present_null() -> None:
    missing = check_call(CS, T, {}, {"sku": "S", "available": 1})
    present_null = check_call(CS, T, {}, {"sku": None, "available": 1, "warehouse": "e"})
    assert missing is not None and present_null is not None
    (m,) = encode(missing)["outcome_contract"]["violations"]
    (p,) = encode(present_null)["outcome_contract"]["violations"]
    assert (m["code"], m["path"], m["observed"], m["present"]) == ("REQUIRED", "/warehouse", None, False)
    assert (p["code"], p["path"], p["observed"], p["present"]) == ("TYPE", "/sku", None, True)
    for rc in (missing, present_null):
        for enc in ("v1", "v2"):
            assert schema_errors(encode(rc, enc), f"receipt-{enc}") == []


def test_v1_is_one_sentence_a_violation() -> None:
    rc = check_call(CS, T, {}, {"sku": 5, "available": -1}, encoder="v1")
    assert rc is not None
    enc = encode(rc)
    assert enc["outcome_contract"]["encoder"] == "v1"
    msgs = [v["message"] for v in enc["outcome_contract"]["violations"]]
    assert len(msgs) == 3
    assert (
        "NONNEG at /available: expected >= 0, observed -1 ("
        in msgs[[v["code"] for v in enc["outcome_contract"]["violations"]].index("NONNEG")]
    )
    assert all(m.endswith(".") and m.count("\n") == 0 for m in msgs)
    assert any("it is missing" in m for m in msgs)
    assert schema_errors(enc, "receipt-v1") == []
    assert schema_errors(enc, "receipt-v2") != []  # the encoders are distinct versions


def test_schema_rejects_a_tampered_receipt() -> None:
    rc = check_call(CS, T, {}, {"sku": "S", "available": -1, "warehouse": "e"})
    assert rc is not None
    enc = encode(rc)
    enc["outcome_contract"]["binding"] = True
    assert any("binding" in e for e in schema_errors(enc, "receipt-v2"))


def test_recovery_tools_visible_set_and_order() -> None:
    assert recovery_tools(CS, T, None) == [T, "query_warehouse", "get_stock_by_sku"]
    assert recovery_tools(CS, T, ["get_stock_by_sku", T]) == [T, "get_stock_by_sku"]
    assert recovery_tools(CS, T, []) == [T]
    assert recovery_tools(CS, "unknown", None) == ["unknown"]
    rc = check_call(
        CS, T, {}, {"sku": "S", "available": -1, "warehouse": "e"}, visible_tools=["query_warehouse"]
    )
    assert rc is not None and rc.recovery_tools == (T, "query_warehouse")


def test_encode_line_is_canonical_and_deterministic() -> None:
    v = Violation("NONNEG", "r-1", "/a", ">= 0", -1, True, "d")
    r = Receipt(T, {"b": 1, "a": [2]}, (v,), (T,), call_id="0123456789abcdef", source="x.jsonl", line=3)
    line = encode_line(r)
    assert line.endswith(b"\n") and line == encode_line(r)
    assert loads(line) == encode(r)
    assert line.index(b'"approx_tokens"') < line.index(b'"bytes"')  # sorted keys


def test_unknown_encoder_is_a_usage_error() -> None:
    r = Receipt(T, 1, (), (T,))
    with pytest.raises(CheckError, match="unknown receipt encoder 'v3'"):
        encode(r, "v3")


# ----------------------------------------------------------------------------------------------------
# Ablation encoders: v2-no-recovery and generic


def _faulty_receipt(**kw: Any) -> Receipt:
    rc = check_call(CS, T, {"sku": "S"}, {"sku": 5, "available": -1}, **kw)
    assert rc is not None
    return rc


def test_every_encoder_is_valid_against_its_own_schema_only() -> None:
    rc = _faulty_receipt()
    for enc in ("v1", "v2", "v2-no-recovery", "generic"):
        data = encode(rc, enc)
        assert data["outcome_contract"]["encoder"] == enc
        assert schema_errors(data, f"receipt-{enc}") == [], enc
        others = [o for o in ("v1", "v2", "v2-no-recovery", "generic") if o != enc]
        assert all(schema_errors(data, f"receipt-{o}") != [] for o in others), enc
        assert data["bytes"] == len(canonical_json(data["outcome_contract"]))


def test_v2_no_recovery_is_v2_without_the_list() -> None:
    rc = _faulty_receipt()
    full, ablated = encode(rc, "v2")["outcome_contract"], encode(rc, "v2-no-recovery")["outcome_contract"]
    assert "recovery_tools" not in ablated
    assert full["recovery_tools"] == [T, "query_warehouse", "get_stock_by_sku"]
    assert {k: v for k, v in full.items() if k not in ("recovery_tools", "encoder")} == {
        k: v for k, v in ablated.items() if k != "encoder"
    }
    assert len(ablated["violations"]) == 3  # the same witnesses: NONNEG, REQUIRED, TYPE


def test_generic_is_one_fixed_warning_whatever_broke() -> None:
    a = encode(_faulty_receipt(), "generic")
    b = encode(
        check_call(CS, T, {}, {"sku": "S", "available": -7, "warehouse": "w"}) or Receipt(T, 0, (), (T,)),
        "generic",
    )
    assert (
        a["outcome_contract"]
        == b["outcome_contract"]
        == {
            "encoder": "generic",
            "tool": T,
            "binding": False,
            "warning": GENERIC_WARNING,
        }
    )
    text = canonical_json(a["outcome_contract"]).decode()
    for leak in ("NONNEG", "/available", "-1", "query_warehouse", "412"):
        assert leak not in text
    held = encode(Receipt(T, {"sku": "S"}, (), (T,)), "generic")  # `check --all` on a call that holds
    assert held["outcome_contract"]["warning"] is None and schema_errors(held, "receipt-generic") == []


def test_encoder_chosen_in_check_call() -> None:
    for enc in ("v2-no-recovery", "generic"):
        rc = _faulty_receipt(encoder=enc)
        assert rc.encoder == enc and encode(rc)["outcome_contract"]["encoder"] == enc
        assert schema_errors(encode(rc), f"receipt-{enc}") == []


# ----------------------------------------------------------------------------------------------------
# Inferred substitutes: used only where none are declared, and flagged


def test_inferred_substitutes_only_when_none_declared_and_flagged() -> None:
    inferred = ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={T: ToolContracts(rules=RULES, substitutes_inferred=("get_stock_by_sku",))},
        folds=(FoldChecker(0, tuple(r.id for r in RULES)),),
    )
    assert recovery_plan(inferred, T, None) == ([T, "get_stock_by_sku"], True)
    assert recovery_plan(inferred, T, [T]) == ([T], False)  # not visible: nothing inferred offered
    both = ContractSet(
        params=inferred.params,
        corpus={},
        tools={T: ToolContracts(rules=RULES, substitutes=("query_warehouse",), substitutes_inferred=("x",))},
        folds=inferred.folds,
    )
    assert recovery_plan(both, T, None) == ([T, "query_warehouse"], False)  # declared wins
    rc = check_call(inferred, T, {}, {"sku": "S", "available": -1, "warehouse": "e"})
    assert rc is not None and rc.recovery_inferred
    for enc in ("v1", "v2"):
        oc = encode(rc, enc)["outcome_contract"]
        assert oc["recovery_tools"] == [T, "get_stock_by_sku"] and oc["recovery_tools_inferred"] is True
        assert schema_errors(encode(rc, enc), f"receipt-{enc}") == []
    assert "recovery_tools_inferred" not in encode(_faulty_receipt())["outcome_contract"]
    assert ContractSet.from_json(inferred.to_json()) == inferred
    assert "substitutes_inferred" not in CS.to_json()["tools"][T]  # old sets keep their bytes
    assert schema_errors(inferred.to_json(), "contract-set") == []
