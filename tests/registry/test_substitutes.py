"""`registry infer --substitutes`: substitutes proposed from corpus evidence, on a hand-made shop whose
answer is known, through the library and the CLI, into the registry schema, and on into receipts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.checks.checker import check_call
from output_contracts.checks.receipts import encode
from output_contracts.cli.app import app
from output_contracts.mining import mine
from output_contracts.registry.substitutes import infer_substitutes, with_substitutes
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.tool_registry import Registry, ToolSpec, load_registry


def _shop(n: int = 12) -> list[dict[str, Any]]:
    """Per episode: read an order, its customer, cancel the order, read it again; two searches asked the
    same query. Truth: get_order <-> get_customer describe the same entities; cancel_order changes the
    order (so it is no one's substitute); search_a <-> search_b answer one query with the same records;
    `audit_log` (no read verb) is read-only only by evidence, and never shares an entity."""
    recs: list[dict[str, Any]] = []
    for i in range(n):
        t, o, c = f"ep-{i}", f"ORD-{1000 + i}", f"CUST-{500 + i}"
        order = {"order_id": o, "customer_id": c, "status": "open", "total": 10 + i}
        cancelled = {**order, "status": "cancelled"}
        q = {"city": ["Paris", "Rome", "Oslo"][i % 3], "day": f"2026-01-{1 + i % 9:02d}"}
        hits = [{"sku": f"SKU-{i}-{k}", "price": 5 + k, "city": q["city"]} for k in range(2)]
        for step, (tool, args, res) in enumerate(
            [
                ("get_order", {"order_id": o}, order),
                ("get_customer", {"customer_id": c}, {"customer_id": c, "orders": [o], "name": f"Name {i}"}),
                ("cancel_order", {"order_id": o}, cancelled),
                ("get_order", {"order_id": o}, cancelled),
                ("search_a", q, hits),
                ("search_b", q, [{**h, "stock": 3} for h in hits]),
            ]
        ):
            recs.append(
                {
                    "trace_id": t,
                    "task_id": f"task-{i}",
                    "step": step,
                    "tool": tool,
                    "arguments": args,
                    "result": res,
                }
            )
    return recs


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(_shop(), tmp_path_factory.mktemp("shop") / "corpus")


def test_proposals_match_the_known_answer(shop: Corpus) -> None:
    rep = infer_substitutes(shop)
    got = {(s.tool, s.substitute) for s in rep.proposals}
    assert got == {
        ("get_order", "get_customer"),
        ("get_customer", "get_order"),
        ("cancel_order", "get_customer"),
        ("cancel_order", "get_order"),
        ("search_a", "search_b"),
        ("search_b", "search_a"),
    }
    refused = {(t, c): why for t, c, why in rep.refused}
    assert "not read-only: blamed 12 time(s)" in refused[("get_order", "cancel_order")]
    assert rep.read_only["cancel_order"].blamed == 12 and not rep.read_only["cancel_order"].read_only
    # get_order is cleared by the read after the cancel (it agrees with what cancel returned)
    assert rep.read_only["get_order"].to_json() == {"by": "evidence", "blamed": 0, "cleared": 12}
    s = next(p for p in rep.proposals if (p.tool, p.substitute) == ("get_order", "get_customer"))
    ev = s.evidence()
    assert (ev["episodes"], ev["shared_values"], ev["arguments"], ev["arguments_fed_episodes"]) == (
        12,
        24,  # 12 order ids and 12 customer ids
        ["customer_id"],
        12,
    )
    assert "/customer_id = /customer_id" in ev["keys"] and "/order_id = /orders/*" in ev["keys"]
    a = next(p for p in rep.proposals if (p.tool, p.substitute) == ("search_a", "search_b")).evidence()
    assert (a["episodes"], a["same_query_episodes"], a["field_overlap"]) == (0, 12, 0.75)  # 3 of 4 names
    # strongest first per tool: cancel_order's customer and order share 24 values in 12 episodes each
    assert [p.substitute for p in rep.by_tool()["cancel_order"]] == ["get_customer", "get_order"]


def test_too_little_evidence_is_refused(tmp_path: Path) -> None:
    rep = infer_substitutes(corpus_from_records(_shop(1), tmp_path / "one"))
    assert rep.proposals == ()
    assert all("(< 2)" in why for _t, _c, why in rep.refused)


def test_written_registry_validates_and_reaches_receipts(shop: Corpus, tmp_path: Path) -> None:
    names = ["get_order", "get_customer", "cancel_order", "search_a", "search_b"]
    reg = with_substitutes(Registry({n: ToolSpec(n) for n in names}), infer_substitutes(shop))
    assert schema_errors(reg.to_json(), "tool-registry") == []
    (tmp_path / "tools.json").write_bytes(orjson.dumps(reg.to_json()))
    loaded = load_registry(tmp_path / "tools.json")
    assert loaded.get("get_order") is not None
    assert loaded.tools["get_order"].inferred_substitute_names() == ("get_customer",)
    cs = mine(shop, folds=1, seed=13, registry=loaded)
    assert cs.tools["get_order"].substitutes_inferred == ("get_customer",)
    rc = check_call(cs, "get_order", {"order_id": "ORD-1"}, {"order_id": "X", "status": "open"})
    assert rc is not None
    oc = encode(rc)["outcome_contract"]
    assert oc["recovery_tools"] == ["get_order", "get_customer"] and oc["recovery_tools_inferred"] is True
    assert schema_errors(encode(rc), "receipt-v2") == []


def test_cli_writes_substitutes_inferred(shop: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "inferred.json"
    res = CliRunner().invoke(app, ["registry", "infer", str(shop.path), "--substitutes", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(out.read_bytes())
    assert schema_errors(doc, "tool-registry") == []
    by = {t["name"]: [s["tool"] for s in t.get("substitutes_inferred", [])] for t in doc["tools"]}
    assert by["search_a"] == ["search_b"] and by["cancel_order"] == ["get_customer", "get_order"]
    assert "6 substitute(s) proposed for 5 tool(s)" in res.stderr
    # the proposals table: tool, substitute, evidence, what says the substitute is read-only
    assert re.search(r"search_a\s+search_b\s+the same query in 12 episode\(s\)\s+evidence", res.stderr)
    plain = CliRunner().invoke(app, ["registry", "infer", str(shop.path), "-o", str(tmp_path / "p.json")])
    assert plain.exit_code == 0 and b"substitutes_inferred" not in (tmp_path / "p.json").read_bytes()


def test_audit_fire_events_count_and_flag_inferred_recovery_tools(shop: Corpus, tmp_path: Path) -> None:
    from output_contracts.audit.pipeline import fire_events
    from output_contracts.checks.checker import check_corpus

    names = ["get_order", "get_customer", "cancel_order", "search_a", "search_b"]
    reg = with_substitutes(Registry({n: ToolSpec(n) for n in names}), infer_substitutes(shop))
    cs = mine(shop, folds=1, seed=13, registry=reg)
    bad = _shop(2)
    bad[0]["result"] = {"order_id": "ORD-1000", "customer_id": "CUST-500", "status": 7, "total": 10}
    faulty = corpus_from_records(bad, tmp_path / "faulty")
    events = fire_events(cs, faulty, check_corpus(cs, faulty, fold=None), 1)
    ev = next(e for e in events if e["tool"] == "get_order")
    assert ev["recovery_tools"] == 2 and ev["recovery_inferred"] is True
    assert schema_errors(ev, "fire-event") == []
    generic = fire_events(cs, faulty, check_corpus(cs, faulty, fold=None), 1, encoder="generic")
    assert all(e["recovery_tools"] == 0 and "recovery_inferred" not in e for e in generic)  # offers none
