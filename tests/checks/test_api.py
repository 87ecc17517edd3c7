"""The public checking API (`from output_contracts import Checker, Receipt, checked`): docs/api.md's doctests,
its agreement with the stream checker on the sample world, receipts valid against their schemas, and
the tool wrapper's promises (result unchanged, never raising because of contracts)."""

from __future__ import annotations

import asyncio
import doctest
import gzip
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import output_contracts
from output_contracts import Checker, Receipt, Session, checked
from output_contracts.checks.checker import check_lines, load_contracts
from output_contracts.errors import CheckError, ContractsError
from output_contracts.schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "sample-contracts.json"
REGISTRY = REPO / "sample_traces" / "tools.json"
FAULTY = REPO / "sample_traces" / "faulty" / "part-1.jsonl.gz"
BAD = {
    "sku": "SKU-11456",
    "warehouse": "central",
    "on_hand": 10,
    "reserved": 13,
    "available": -3,
    "status": "low_stock",
    "unit_cost": 70.83,
    "bin_location": "C-10-6",
    "last_counted_at": "2026-01-05T01:54:21Z",
}
GOOD = dict(BAD, reserved=7, available=3)


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.load(GOLDEN, registry=REGISTRY)


def test_docs_api_md_doctests_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    res = doctest.testfile(str(REPO / "docs" / "api.md"), module_relative=False, verbose=False)
    assert res.attempted >= 20
    assert res.failed == 0


def test_root_package_exports_are_lazy() -> None:
    """`import output_contracts` imports no subpackage; the API names load on first use."""
    code = (
        "import sys, json, output_contracts\n"
        "before = sorted(m for m in sys.modules if m.startswith('output_contracts.') and m.count('.') == 1)\n"
        "from output_contracts import Checker, checked\n"
        "print(json.dumps([before, Checker.__module__, checked.__module__]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, checker_mod, checked_mod = json.loads(out.stdout)
    # the root package's own modules it needs (errors, canonical JSON, its lazy `__getattr__`), no subpackage
    own = ("output_contracts.errors", "output_contracts.jsonutil", "output_contracts.lazy")
    assert [m for m in before if m not in own] == []
    assert (checker_mod, checked_mod) == ("output_contracts.checks.api", "output_contracts.checks.wrapper")
    assert set(output_contracts.__all__) >= {"Checker", "Receipt", "Session", "checked"}
    with pytest.raises(AttributeError):
        _ = output_contracts.NoSuchName  # type: ignore[attr-defined]


def test_check_gives_a_receipt_with_recovery_tools(checker: Checker) -> None:
    r = checker.check("lookup_inventory", {"sku": "SKU-11456"}, BAD)
    assert isinstance(r, Receipt)
    assert r.codes == ["NONNEG"]
    assert r.recovery_tools == ("lookup_inventory", "query_warehouse", "get_stock_by_sku")
    v = r.violations[0]
    assert (v.path, v.expected, v.observed) == ("/available", ">= 0", -3)
    assert checker.check("lookup_inventory", {"sku": "SKU-11456"}, GOOD) is None
    assert checker.check("no_such_tool", {}, {"x": -1}) is None
    # a JSON string is decoded first, as ingest does
    s = checker.check("lookup_inventory", {"sku": "SKU-11456"}, json.dumps(BAD))
    assert s is not None and s.codes == ["NONNEG"] and s.result == BAD


def test_receipts_validate_against_their_schemas(checker: Checker) -> None:
    r = checker.check("lookup_inventory", {"sku": "SKU-11456"}, BAD)
    assert r is not None
    for enc in ("v1", "v2"):
        doc = r.to_json(encoder=enc)
        assert schema_errors(doc, f"receipt-{enc}") == []
        assert doc["outcome_contract"] == r.outcome_contract(enc)
        assert orjson.loads(r.to_text(enc)) == {"outcome_contract": doc["outcome_contract"]}
    with pytest.raises(CheckError, match="unknown receipt encoder"):
        r.to_json(encoder="v9")


def test_wrap_is_design_section_4(checker: Checker) -> None:
    pair = checker.wrap("lookup_inventory", {"sku": "SKU-11456"}, BAD)
    assert pair["tool_result"] is BAD
    oc = pair["outcome_contract"]
    assert oc["encoder"] == "v2" and oc["binding"] is False and oc["tool"] == "lookup_inventory"
    assert [v["code"] for v in oc["violations"]] == ["NONNEG"]
    assert checker.wrap("lookup_inventory", {"sku": "SKU-11456"}, GOOD) == {
        "tool_result": GOOD,
        "outcome_contract": None,
    }


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ContractsError) as e:
        Checker.load(tmp_path / "missing.json")
    assert "missing.json" in str(e.value.source)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ContractsError):
        Checker.load(bad)
    with pytest.raises(CheckError, match="no fold 9"):
        Checker.load(GOLDEN, fold=9)
    with pytest.raises(CheckError, match="unknown receipt encoder"):
        Checker.load(GOLDEN, encoder="v3")


def test_fold_checker_and_from_contracts_agree_with_the_engine() -> None:
    cs = load_contracts(GOLDEN)
    full = Checker.from_contracts(cs)
    f2 = Checker.from_contracts(cs, fold=2)
    assert len(cs.rules_for(2)) < len(cs.rules_for(None))
    r_full = full.check("lookup_inventory", {"sku": "SKU-11456"}, BAD)
    r_f2 = f2.check("lookup_inventory", {"sku": "SKU-11456"}, BAD)
    assert r_full is not None and r_f2 is not None
    # fold 2's checker cites its own (smaller) clean support
    assert r_full.violations[0].detail != r_f2.violations[0].detail
    # without a registry, the contract set's recorded substitutes are offered
    assert r_full.recovery_tools == ("lookup_inventory", "query_warehouse", "get_stock_by_sku")


def _episodes() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for line in gzip.decompress(FAULTY.read_bytes()).splitlines():
        rec = orjson.loads(line)
        out.setdefault(rec["trace_id"], []).append(rec)
    return out


def test_sessions_agree_with_the_stream_checker_on_the_faulty_sample() -> None:
    """Every faulty sample episode through a `Session` (with its tool set) gives the receipts that
    `contracts check -` gives: same calls, codes, paths, observed values and recovery tools."""
    checker = Checker.load(GOLDEN)
    raw = gzip.decompress(FAULTY.read_bytes()).splitlines()
    stream = [
        (
            it.receipt.tool,
            [(v.code, v.path, v.observed) for v in it.receipt.violations],
            it.receipt.recovery_tools,
        )
        for it in check_lines(checker.contracts, raw)
        if it.kind == "call" and it.receipt is not None
    ]
    mine: list[tuple[str, list[tuple[str, str, Any]], tuple[str, ...]]] = []
    for recs in _episodes().values():
        s = checker.session(visible_tools=recs[0].get("tools"))
        for rec in recs:
            if rec.get("status", "ok") != "ok":
                s.failed(rec["tool"], rec["arguments"])
                continue
            r = s.check(rec["tool"], rec["arguments"], rec["result"])
            if r is not None:
                mine.append((r.tool, [(v.code, v.path, v.observed) for v in r.violations], r.recovery_tools))
    assert len(stream) > 100
    assert sorted(map(repr, mine)) == sorted(map(repr, stream))
    assert any(code == "CONSISTENT" for _t, vs, _r in mine for code, _p, _o in vs)


# ---- the wrapper ---------------------------------------------------------------------------------------


def test_wrapper_text_mode_appends_the_receipt(checker: Checker) -> None:
    @checked(checker)
    def lookup_inventory(sku: str) -> dict[str, Any]:
        return BAD if sku == "SKU-11456" else dict(GOOD, sku=sku)

    text = lookup_inventory("SKU-11456")
    body, receipt = text.split("\n\n")
    assert json.loads(body) == BAD
    oc = json.loads(receipt)["outcome_contract"]
    assert [v["code"] for v in oc["violations"]] == ["NONNEG"]
    assert oc["recovery_tools"] == ["lookup_inventory", "query_warehouse", "get_stock_by_sku"]
    assert lookup_inventory(sku="SKU-22222") == json.dumps(
        dict(GOOD, sku="SKU-22222")
    )  # clean: the result's text alone
    assert lookup_inventory.__name__ == "lookup_inventory"


def test_wrapper_string_results_pass_as_they_are(checker: Checker) -> None:
    raw = json.dumps(GOOD, indent=2)

    @checker.wrap_tool(tool="lookup_inventory")
    def tool(**kwargs: Any) -> str:
        return raw

    assert tool(sku="SKU-11456") is raw


def test_wrapper_field_and_callback_modes(checker: Checker) -> None:
    @checked(checker, deliver="field")
    def lookup_inventory(sku: str) -> dict[str, Any]:
        return BAD

    out = lookup_inventory("SKU-11456")
    assert out["tool_result"] is BAD and out["outcome_contract"]["violations"][0]["code"] == "NONNEG"
    got: list[Receipt] = []

    def inventory(sku: str, fail: bool = False) -> dict[str, Any]:
        return BAD if fail else GOOD

    wrapped = checker.wrap_tool(inventory, deliver=got.append, tool="lookup_inventory")
    assert wrapped("SKU-11456") is GOOD and got == []
    assert wrapped("SKU-11456", fail=True) is BAD and [r.codes for r in got] == [["NONNEG"]]
    with pytest.raises(CheckError, match="deliver must be"):
        checked(checker, deliver="json")


def test_wrapper_async_tools_stay_async(checker: Checker) -> None:
    got: list[Receipt] = []

    @checked(checker, deliver=got.append)
    async def lookup_inventory(sku: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return BAD

    assert asyncio.iscoroutinefunction(lookup_inventory)

    async def main() -> list[Any]:
        return list(await asyncio.gather(lookup_inventory("SKU-11456"), lookup_inventory(sku="SKU-11456")))

    assert asyncio.run(main()) == [BAD, BAD]
    assert [r.codes for r in got] == [["NONNEG"], ["NONNEG"]]


def test_wrapper_never_breaks_the_call_when_the_checker_fails(
    checker: Checker, caplog: pytest.LogCaptureFixture
) -> None:
    class Boom:
        encoder = "v2"

        def check(self, *a: Any, **k: Any) -> None:
            raise RuntimeError("checker bug")

    @checked(Boom(), deliver="field")  # type: ignore[arg-type]
    def lookup_inventory(sku: str) -> dict[str, Any]:
        return BAD

    with caplog.at_level(logging.WARNING, logger="output_contracts.checks.wrapper"):
        out = lookup_inventory("x")
    assert out == {"tool_result": BAD, "outcome_contract": None}
    assert "checking lookup_inventory failed (checker bug)" in caplog.text

    def explode(_r: Receipt) -> None:
        raise ValueError("callback bug")

    @checked(checker, deliver=explode, tool="lookup_inventory")
    def inventory(sku: str) -> dict[str, Any]:
        return BAD

    with caplog.at_level(logging.WARNING, logger="output_contracts.checks.wrapper"):
        assert inventory("SKU-11456") is BAD
    assert "callback bug" in caplog.text


def test_tool_exceptions_propagate_and_sessions_record_them(checker: Checker) -> None:
    s = checker.session()

    @checked(s, deliver="field")
    def query_warehouse(sku: str, warehouse: str) -> dict[str, Any]:
        raise TimeoutError("upstream down")

    with pytest.raises(TimeoutError, match="upstream down"):
        query_warehouse("SKU-1", "east")
    assert s.calls == 1


def test_session_consistent_and_failed_calls(checker: Checker) -> None:
    stock = {
        "sku": "SKU-10798",
        "warehouse": "east",
        "on_hand": 180,
        "reserved": 0,
        "available": 180,
        "status": "in_stock",
        "unit_cost": 8.12,
        "bin_location": "G-19-9",
        "last_counted_at": "2025-12-19T15:30:41Z",
        "restock_eta": "2025-12-23T20:21:07Z",
    }
    args = {"sku": "SKU-10798", "warehouse": "east"}
    s: Session = checker.session()
    assert s.check("query_warehouse", args, stock) is None
    r = s.check("query_warehouse", args, dict(stock, unit_cost=9.12), call_id="c-2")
    assert r is not None and r.codes == ["CONSISTENT"] and r.call_id == "c-2"
    assert r.violations[0].refers == "call-1"
    # a failed call naming the sku: the earlier sighting is forgotten, nothing to compare with
    s2 = checker.session()
    assert s2.check("query_warehouse", args, stock) is None
    s2.failed("refund_order", {"sku": "SKU-10798"})
    assert s2.check("query_warehouse", args, dict(stock, unit_cost=9.12)) is None
