"""Mining real data in ../shared/data: τ-bench trajectories, τ-bench database records, real schema drift."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.codes.contract_set import ContractSet
from output_contracts.mining import mine
from output_contracts.mining.diff import diff_sets
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from tests.helpers import find
from tests.mining import taudb


def _corpus(records: Iterable[dict[str, Any]], where: Path) -> Corpus:
    src = where.with_suffix(".jsonl")
    taudb.write_jsonl(iter(records), src)
    ingest([src], where)
    return Corpus.open(where)


@pytest.fixture(scope="module")
def tau(shared_data: Path) -> Path:
    return shared_data / "tau_bench"


def test_organic_airline_trajectories(tau: Path, tmp_path: Path) -> None:
    """gpt-4o on τ-bench airline: real calls, real outputs; the registry is the domain's tools.json."""
    ingest(
        [tau / "trajectories" / "gpt-4o-airline.json"],
        tmp_path / "c",
        format="tau-bench",
        registry=tau / "airline" / "tools.json",
    )
    cs = mine(Corpus.open(tmp_path / "c"), folds=5)
    full = cs.rules_for(None)
    assert len(full) > 100
    tools = {r.tool for r in full}
    assert {"get_reservation_details", "get_user_details", "search_direct_flight"} <= tools
    echo = find(cs, "ECHO", "/reservation_id", "$args/reservation_id", tool="get_reservation_details")
    assert echo is not None and echo.support.tasks >= 7
    cabin = find(cs, "DOMAIN", "/cabin", tool="get_reservation_details")
    assert cabin is not None and set(cabin.params["values"]) <= {"basic_economy", "business", "economy"}
    assert find(cs, "POSITIVE", "/flights/*/price", tool="get_reservation_details") is not None
    # Every tool output of τ-bench is JSON text in the trajectory; the adapter decodes objects, so
    # results are objects (not strings) wherever the tool returned a record.
    assert find(cs, "TYPE", "", tool="get_reservation_details").params == {"kind": "object"}  # type: ignore[union-attr]


def test_retail_database_records(tau: Path, tmp_path: Path) -> None:
    cs = mine(_corpus(taudb.retail(tau), tmp_path / "retail"), folds=5)
    orders = orjson.loads((tau / "retail" / "orders.json").read_bytes())
    assert find(cs, "ECHO", "/order_id", "$args/order_id", tool="get_order_details") is not None
    assert find(cs, "ECHO", "/product_id", "$args/product_id", tool="get_product_details") is not None
    price = find(cs, "POSITIVE", "/items/*/price", tool="get_order_details")
    assert price is not None and price.support.calls == len(orders)
    status = find(cs, "DOMAIN", "/status", tool="get_order_details")
    assert status is not None and status.params["values"] == sorted({o["status"] for o in orders.values()})
    assert find(cs, "REQUIRED", "/items/*/price", tool="get_order_details") is not None


def test_airline_database_records(tau: Path, tmp_path: Path) -> None:
    cs = mine(_corpus(taudb.airline(tau), tmp_path / "airline"))
    res = orjson.loads((tau / "airline" / "reservations.json").read_bytes())
    assert (
        find(cs, "ECHO", "/reservation_id", "$args/reservation_id", tool="get_reservation_details")
        is not None
    )
    cabin = find(cs, "DOMAIN", "/cabin", tool="get_reservation_details")
    assert cabin is not None and cabin.params["values"] == sorted({r["cabin"] for r in res.values()})
    assert find(cs, "NONNEG", "/total_baggages", tool="get_reservation_details") is not None
    # nonfree_baggages is 0 in all 2,000 records: a constant gets no sign rule
    assert find(cs, "NONNEG", "/nonfree_baggages", tool="get_reservation_details") is None


def test_real_schema_drift_province_to_state(tau: Path, tmp_path: Path) -> None:
    """The airline users file was migrated from `address.province` to `address.state`; nothing else
    about the records changed, and the contracts' diff says exactly that."""
    old = mine(
        _corpus(taudb.airline_users(tau, tau / "airline" / "legacy_7362a17" / "users.json"), tmp_path / "old")
    )
    new = mine(_corpus(taudb.airline_users(tau, tau / "airline" / "users.json"), tmp_path / "new"))
    d = diff_sets(old, new)
    assert {(r.code, r.paths) for r in d.removed} == {
        ("REQUIRED", ("/address/province",)),
        ("TYPE", ("/address/province",)),
        ("FORMAT", ("/address/province",)),
    }
    assert {(r.code, r.paths) for r in d.added} == {
        ("REQUIRED", ("/address/state",)),
        ("TYPE", ("/address/state",)),
        ("FORMAT", ("/address/state",)),
    }
    assert d.changed == () and d.unchanged > 20
    assert isinstance(old, ContractSet)
