"""Incident faults (output_contracts.audit.incidents) planted by `inject_records` / `contracts inject`.

Incidents are chosen by the shape of a value alone, never by a tool or field name: each kind's new value
is checked against what the kind says, renaming tools and fields must not move the targets, and a
hypothesis property checks every kind on arbitrary JSON. The bugs it found are regression tests at the end.
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.audit.fault_targets import get_at, set_at, walk
from output_contracts.audit.incidents import (
    BY_KIND,
    CURRENCIES,
    ERROR_ENVELOPE,
    HTML_ERROR_PAGE,
    INCIDENT_KINDS,
    INCIDENTS,
    INT32_MAX,
)
from output_contracts.audit.inject import (
    ALL_KINDS,
    KIND_GROUPS,
    KINDS,
    inject_records,
    parse_kinds,
    read_flat,
)
from output_contracts.cli.app import app
from output_contracts.codes.dates import classify
from output_contracts.errors import UsageError
from output_contracts.jsonutil import canonical_json
from output_contracts.traces.pointers import escape_token, unescape_token

EXPECTED_KINDS = (
    "html_error_page",
    "error_envelope",
    "other_entity",
    "empty_list",
    "duplicate_items",
    "cents_units",
    "unit_x1000",
    "int32_saturation",
    "sentinel_minus_one",
    "sentinel_zero",
    "sentinel_text",
    "epoch_date",
    "date_reformat",
    "timezone_change",
    "local_time_as_utc",
    "enum_case",
    "char_padding",
    "id_case",
    "id_format",
    "mojibake",
    "truncated_string",
    "swapped_fields",
    "wrong_currency",
)
#: Kinds that replace the whole result (their only target is the root, "").
ROOT_KINDS = {"html_error_page", "error_envelope", "other_entity"}
_ZONE = re.compile(r"(Z|[+-]\d{2}:?\d{2})$")
_MDY = re.compile(r"^(\d{2})/(\d{2})/(\d{4})(?: \d{2}:\d{2}(?::\d{2})?)?$")

FIRST = ["Maria", "Jose", "Ana", "Luis", "Elena", "Omar", "Irene", "Paolo", "Sofia", "Hugo", "Nadia", "Tomas"]
CITIES = ["Lisbon", "Madrid", "Oslo", "Porto", "Dublin", "Rome", "Vienna", "Athens", "Quito", "Lima"]
STATUSES = ["pending", "shipped", "in_transit", "delivered"]


def _order(i: int) -> dict[str, Any]:
    return {
        "order_id": f"ORD-{123456 + i}",
        "user_ref": f"#W{174651 + 37 * i:07d}",
        "status": STATUSES[i % len(STATUSES)],
        "currency": "USD" if i % 2 else "EUR",
        "total": round(12.34 + i * 1.01, 2),
        "quantity": 3 + i,
        "created": f"2024-05-{1 + i % 27:02d}",
        "updated_at": f"2024-05-{1 + i % 27:02d}T10:{i % 60:02d}:00Z",
        "ships_at": f"2024-06-{1 + i % 27:02d}T08:15:00+02:00",
        "customer": {
            "name": f"{FIRST[i % len(FIRST)]} Lopez",
            "city": CITIES[i % len(CITIES)],
            "email": f"user{i}@example.com",
        },
        "items": [
            {"sku": f"SKU-{1000 + i}", "price": round(5.5 + i, 2), "qty": 1},
            {"sku": f"SKU-{2000 + i}", "price": round(6.84 + i, 2), "qty": 2},
            {"sku": f"SKU-{3000 + i}", "price": round(0.99 + i, 2), "qty": 3},
        ],
        "tags": ["gift", "express", "fragile"],
    }


def _user(i: int) -> dict[str, Any]:
    return {
        "user_id": f"usr_{9000 + i}x",
        "name": f"{FIRST[(i + 3) % len(FIRST)]} Moreno",
        "tier": ["gold", "silver", "bronze"][i % 3],
        "balance": round(100.25 + i, 2),
        "balance_currency": "GBP",
        "points": 1500 + 10 * i,
        "born": f"19{60 + i:02d}-0{1 + i % 9}-15",
        "last_login": f"2024-07-0{1 + i % 9}T23:{i:02d}:59+02:00",
        "addresses": [
            {"line": f"{i} Rua Augusta", "zip": f"1100-0{i:02d}"},
            {"line": f"{i + 1} Calle Mayor", "zip": f"2800-1{i:02d}"},
        ],
    }


def _flight(i: int) -> dict[str, Any]:
    return {
        "flights": [
            {
                "flight_no": f"HAT{100 + i}",
                "origin": "LIS",
                "destination": "JFK",
                "depart": f"2024-08-{1 + i:02d}T07:45:00Z",
                "price": round(412.5 + i, 2),
                "cabin": "economy",
            },
            {
                "flight_no": f"HAT{200 + i}",
                "origin": "OPO",
                "destination": "EWR",
                "depart": f"2024-08-{2 + i:02d}T09:05:00Z",
                "price": round(398.75 + i, 2),
                "cabin": "business",
            },
        ],
        "count": 2,
        "search_id": f"S-{700 + i}-q",
    }


def corpus(n: int = 12) -> list[dict[str, Any]]:
    """Flat ok calls of three tools whose results hold every value shape the incident kinds target."""
    recs: list[dict[str, Any]] = []
    for i in range(n):
        for step, (tool, res, args) in enumerate(
            [
                ("get_order", _order(i), {"order_id": f"ORD-{123456 + i}"}),
                ("get_user", _user(i), {"user_id": f"usr_{9000 + i}x"}),
                ("search_flights", _flight(i), {"origin": "LIS", "date": f"2024-08-{1 + i:02d}"}),
            ]
        ):
            recs.append(
                {
                    "trace_id": f"tr-{i}",
                    "task_id": f"task-{i}",
                    "step": step,
                    "tool": tool,
                    "arguments": args,
                    "result": res,
                    "status": "ok",
                }
            )
    return recs


def _one(result: Any, tool: str = "t") -> dict[str, Any]:
    return {"trace_id": "tr", "task_id": "task", "step": 0, "tool": tool, "arguments": {}, "result": result}


def _inject_one(result: Any, kind: str, seed: int = 0) -> tuple[dict[str, Any], Any]:
    new, rep = inject_records([_one(result)], kinds=[kind], rate=1.0, seed=seed)
    return new[0], rep


def _canon(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS)


# --- the taxonomy -------------------------------------------------------------------------------------


def test_incident_taxonomy() -> None:
    assert INCIDENT_KINDS == EXPECTED_KINDS
    assert tuple(i.kind for i in INCIDENTS) == INCIDENT_KINDS
    assert set(BY_KIND) == set(INCIDENT_KINDS) and all(BY_KIND[i.kind] is i for i in INCIDENTS)
    assert ALL_KINDS == KINDS + INCIDENT_KINDS and not set(KINDS) & set(INCIDENT_KINDS)
    assert all(i.what.strip() and "\n" not in i.what for i in INCIDENTS)
    assert [i.kind for i in INCIDENTS if i.partner is not None] == ["swapped_fields"]


# --- every kind planted, each with the value it promises ------------------------------------------------


def _check_new_value(kind: str, orig: Any, new: Any) -> None:
    """What `kind` says the node at the fault path becomes."""
    if kind == "html_error_page":
        assert new == HTML_ERROR_PAGE and new.startswith("<!DOCTYPE html>")
    elif kind == "error_envelope":
        assert new == ERROR_ENVELOPE and new["error"]["code"] == 503
    elif kind == "empty_list":
        assert new == [] and isinstance(orig, list) and orig
    elif kind == "duplicate_items":
        assert isinstance(new, list) and len(new) == len(orig) and new != orig
        changed = [j for j in range(len(orig)) if new[j] != orig[j]]
        assert len(changed) == 1 and changed[0] >= 1
        j = changed[0]
        assert new[j] == orig[j - 1] == new[j - 1]
    elif kind == "cents_units":
        assert isinstance(orig, float) and type(new) is int and new == round(orig * 100)
    elif kind == "unit_x1000":
        assert math.isclose(new, orig * 1000) and type(new) is type(orig)
    elif kind == "int32_saturation":
        assert type(orig) is int and new == INT32_MAX == 2_147_483_647
    elif kind == "sentinel_minus_one":
        assert orig > 0 and new == -1
    elif kind == "sentinel_zero":
        assert orig > 0 and new == 0 and type(new) is type(orig)
    elif kind == "sentinel_text":
        assert isinstance(orig, str) and new == "N/A"
    elif kind == "epoch_date":
        assert new.startswith("1970-01-01") and not orig.startswith("1970-01-01")
        # same format: every digit may change, nothing else
        assert re.sub(r"\d", "9", new) == re.sub(r"\d", "9", orig)
        cn, co = classify(new), classify(orig)
        assert cn is not None and co is not None and cn[0] == co[0]
        if "T" in orig:
            assert new[10:19] == "T00:00:00"
    elif kind == "date_reformat":
        m = _MDY.match(new)
        assert m is not None, new
        assert f"{m.group(3)}-{m.group(1)}-{m.group(2)}" == orig[:10]
    elif kind == "timezone_change":
        zo, zn = _ZONE.search(orig), _ZONE.search(new)
        assert zo is not None
        core = orig[: zo.start()]
        assert new.startswith(core) and new != orig
        assert new == core or (zn is not None and new[: zn.start()] == core)
        assert {zo.group(0), zn.group(0) if zn else ""} in ({"Z", "+00:00"}, {zo.group(0), ""})
    elif kind == "local_time_as_utc":
        zo, zn = _ZONE.search(orig), _ZONE.search(new)
        assert (zo.group(0) if zo else "") == (zn.group(0) if zn else "")
        wall_o = datetime.fromisoformat(orig[: zo.start()] if zo else orig)
        wall_n = datetime.fromisoformat(new[: zn.start()] if zn else new)
        assert wall_o - wall_n == timedelta(hours=5)
    elif kind == "enum_case":
        assert re.fullmatch(r"[a-z_]+", orig) and new == orig.upper()
    elif kind == "char_padding":
        assert len(new) == 32 and new.startswith(orig) and new[len(orig) :].strip() == ""
    elif kind == "id_case":
        assert new == orig.swapcase() != orig
    elif kind == "id_format":
        assert new != orig
        assert re.sub(r"[^A-Za-z0-9]", "", new) == re.sub(r"[^A-Za-z0-9]", "", orig)
    elif kind == "mojibake":
        assert "Ã" in new and "Ã" not in orig and len(new) == len(orig) + 1
    elif kind == "truncated_string":
        assert len(orig) >= 6 and new == orig[: len(orig) // 2]
    elif kind == "wrong_currency":
        assert orig in CURRENCIES and new in CURRENCIES and new != orig
    elif kind in ("other_entity", "swapped_fields"):  # checked by the caller
        pass
    else:  # pragma: no cover - a kind this test does not know yet
        raise AssertionError(kind)


# Seeds 1, 3, 4, 6 plant other_entity on the first call of a tool, which then changes nothing
# (test_bug_other_entity_without_another_result); these two do not.
@pytest.mark.parametrize("seed", [2, 7])
def test_every_incident_planted_with_its_value(seed: int) -> None:
    recs = corpus()
    snapshot = copy.deepcopy(recs)
    new, rep = inject_records(recs, kinds=INCIDENT_KINDS, rate=1.0, seed=seed)
    assert recs == snapshot  # the input is not modified
    assert rep.records == rep.eligible == rep.selected == len(recs) == len(new)
    assert rep.no_target == 0 and rep.targeting == "heuristic"
    assert set(rep.injected) == set(INCIDENT_KINDS)
    assert all(n >= 1 for n in rep.injected.values()), rep.injected
    assert max(rep.injected.values()) - min(rep.injected.values()) <= 1  # least-injected-first

    seen: dict[str, list[Any]] = {}
    planted: list[str] = []
    for old, rec in zip(recs, new, strict=True):
        earlier = seen.setdefault(old["tool"], [])
        lab = rec["labels"]
        kind, path = lab["fault"], lab["fault_path"]
        planted.append(kind)
        assert kind in INCIDENT_KINDS
        # only the result changes; the labels say where and what was there
        assert {k: v for k, v in rec.items() if k not in ("result", "labels")} == {
            k: v for k, v in old.items() if k != "result"
        }
        assert rec["arguments"] == old["arguments"]
        assert rec["result"] != old["result"], (kind, path)
        assert lab["original"] == get_at(old["result"], path)
        assert (path == "") == (kind in ROOT_KINDS)
        new_value = get_at(rec["result"], path)
        if kind == "swapped_fields":
            a, b = lab["fault_paths"]
            assert lab["fault_paths"] == sorted([path, a if b == path else b]) and path in (a, b)
            assert a.rpartition("/")[0] == b.rpartition("/")[0]  # two fields of one object
            va, vb = get_at(old["result"], a), get_at(old["result"], b)
            assert isinstance(va, str) and isinstance(vb, str) and va != vb
            assert get_at(rec["result"], a) == vb and get_at(rec["result"], b) == va
            assert set_at(set_at(copy.deepcopy(rec["result"]), a, va), b, vb) == old["result"]
        else:
            assert "fault_paths" not in lab
            assert set(lab) == {"fault", "fault_path", "original"}
            # nothing but the node at the fault path changed
            assert set_at(copy.deepcopy(rec["result"]), path, lab["original"]) == old["result"]
            if kind == "other_entity":
                assert rec["result"] in earlier and rec["result"] != old["result"]
            _check_new_value(kind, lab["original"], new_value)
        earlier.append(old["result"])
    assert set(planted) == set(INCIDENT_KINDS)


def test_target_shapes_on_a_handmade_result() -> None:
    res = _order(0)
    t = {k: BY_KIND[k].targets(res) for k in INCIDENT_KINDS}
    assert t["html_error_page"] == t["error_envelope"] == t["other_entity"] == [""]
    assert set(t["empty_list"]) == set(t["duplicate_items"]) == {"/items", "/tags"}
    assert set(t["cents_units"]) == {"/total", "/items/0/price", "/items/1/price", "/items/2/price"}
    assert set(t["int32_saturation"]) == {"/quantity", "/items/0/qty", "/items/1/qty", "/items/2/qty"}
    assert set(t["sentinel_zero"]) == set(t["sentinel_minus_one"]) == set(t["unit_x1000"])
    assert set(t["epoch_date"]) == set(t["date_reformat"]) == {"/created", "/updated_at", "/ships_at"}
    assert set(t["timezone_change"]) == set(t["local_time_as_utc"]) == {"/updated_at", "/ships_at"}
    assert set(t["id_case"]) == set(t["id_format"])
    assert {"/order_id", "/user_ref", "/items/0/sku"} <= set(t["id_case"])
    assert "/customer/name" not in t["id_case"] and "/created" not in t["id_case"]
    assert {"/status", "/tags/0", "/tags/1", "/tags/2"} <= set(t["enum_case"])
    assert "/customer/name" in t["mojibake"] and "/customer/name" in t["truncated_string"]
    assert t["wrong_currency"] == ["/currency"]
    assert not {"/created", "/updated_at"} & set(t["sentinel_text"] + t["char_padding"])
    # two plain strings of one object, never a date
    assert "/customer/city" in t["swapped_fields"]  # paired in document order with a later field
    for p in t["swapped_fields"]:
        q = BY_KIND["swapped_fields"].partner(res)[p]  # type: ignore[misc]
        parent = get_at(res, p.rpartition("/")[0])
        keys = list(parent)
        assert p.rpartition("/")[0] == q.rpartition("/")[0]
        assert keys.index(p.rpartition("/")[2]) < keys.index(q.rpartition("/")[2])  # document order
        assert isinstance(get_at(res, q), str) and classify(get_at(res, q)) is None
    # a list root is a target of the list kinds and the HTML page, not of the object-only kinds
    lst = [{"a": 1}, {"a": 2}]
    assert BY_KIND["empty_list"].targets(lst) == [""] == BY_KIND["html_error_page"].targets(lst)
    assert BY_KIND["error_envelope"].targets(lst) == [] == BY_KIND["other_entity"].targets(lst)
    assert BY_KIND["error_envelope"].targets({"error": "x"}) == []


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (12.34, "cents_units", 1234),
        (0.29, "cents_units", 29),
        (7, "unit_x1000", 7000),
        (1.5, "unit_x1000", 1500.0),
        (41, "int32_saturation", INT32_MAX),
        (2.5, "sentinel_zero", 0.0),
        ("2024-05-01", "epoch_date", "1970-01-01"),
        ("2024-05-01T10:30:00Z", "epoch_date", "1970-01-01T00:00:00Z"),
        ("2024-05-01T10:30:00+02:00", "epoch_date", "1970-01-01T00:00:00+02:00"),
        ("2024-05-01", "date_reformat", "05/01/2024"),
        ("2024-12-31T23:59:58Z", "date_reformat", "12/31/2024 23:59:58"),
        ("2024-05-01T10:30:00Z", "timezone_change", "2024-05-01T10:30:00+00:00"),
        ("2024-05-01T10:30:00+00:00", "timezone_change", "2024-05-01T10:30:00Z"),
        ("2024-05-01T10:30:00+02:00", "timezone_change", "2024-05-01T10:30:00"),
        ("2024-05-01T03:30:00+02:00", "local_time_as_utc", "2024-04-30T22:30:00+02:00"),
        ("in_transit", "enum_case", "IN_TRANSIT"),
        ("Lisbon", "char_padding", "Lisbon" + " " * 26),
        ("ORD-123456", "id_case", "ord-123456"),
        ("#W0174651", "id_case", "#w0174651"),
        ("ORD-123456", "id_format", "ORD123456"),
        ("#W0174651", "id_format", "W0174651"),
        ("W0174651", "id_format", "W017-4651"),
        ("Maria", "mojibake", "MÃ¡ria"),
        ("Lisbon", "truncated_string", "Lis"),
        ("USD", "wrong_currency", "EUR"),
    ],
)
def test_new_value_examples(value: Any, kind: str, expected: Any) -> None:
    rec, rep = _inject_one({"v": value}, kind)
    assert rep.injected == {kind: 1}
    assert rec["labels"] == {"fault": kind, "fault_path": "/v", "original": value}
    got = rec["result"]["v"]
    assert got == expected and type(got) is type(expected)


def test_swapped_fields_and_duplicate_items_in_place() -> None:
    res = {"id": 1, "person": {"first": "Ana", "last": "Moreno", "born": "1990-01-02", "n": 3}}
    rec, _ = _inject_one(res, "swapped_fields")
    assert rec["labels"]["fault_paths"] == ["/person/first", "/person/last"]
    assert rec["result"] == {
        "id": 1,
        "person": {"first": "Moreno", "last": "Ana", "born": "1990-01-02", "n": 3},
    }
    seen = set()
    for seed in range(12):
        rec, _ = _inject_one({"xs": ["a", "b", "c", "d"]}, "duplicate_items", seed)
        seen.add(tuple(rec["result"]["xs"]))
    assert seen == {("a", "a", "c", "d"), ("a", "b", "b", "d"), ("a", "b", "c", "c")}


def test_no_target_leaves_the_record_unchanged() -> None:
    res = {"ok": True, "note": None, "n": 0, "flag": False}
    new, rep = inject_records([_one(res)], kinds=["cents_units", "mojibake", "empty_list"], rate=1.0, seed=1)
    assert new == [_one(res)] and "labels" not in new[0]
    assert rep.selected == 1 and rep.no_target == 1 and sum(rep.injected.values()) == 0
    # error calls and already-labelled calls are not eligible
    err = {**_one({"v": "Lisbon"}), "status": "error"}
    lab = {**_one({"v": "Lisbon"}), "labels": {"fault": "sign_flip", "fault_path": "/x"}}
    new, rep = inject_records([err, lab], kinds=INCIDENT_KINDS, rate=1.0, seed=1)
    assert new == [err, lab] and rep.eligible == 0


# --- determinism ------------------------------------------------------------------------------------------


def test_deterministic_and_seed_sensitive() -> None:
    recs = corpus(8)
    a, ra = inject_records(recs, kinds=INCIDENT_KINDS, rate=0.6, seed=5)
    b, rb = inject_records(copy.deepcopy(recs), kinds=INCIDENT_KINDS, rate=0.6, seed=5)
    assert _canon(a) == _canon(b) and ra == rb
    c, _ = inject_records(recs, kinds=INCIDENT_KINDS, rate=0.6, seed=6)
    assert _canon(a) != _canon(c)

    def labels(out: list[dict[str, Any]]) -> list[tuple[str, str] | None]:
        return [(r["labels"]["fault"], r["labels"]["fault_path"]) if "labels" in r else None for r in out]

    # at rate 1 every call is faulted whatever the seed, but the kinds and places differ
    full = [inject_records(recs, kinds=INCIDENT_KINDS, rate=1.0, seed=s)[0] for s in (1, 2)]
    assert None not in labels(full[0]) and None not in labels(full[1])
    assert labels(full[0]) != labels(full[1])
    # the kinds argument is normalised: a group and its spelled-out kinds give the same bytes
    d, _ = inject_records(recs, kinds=["incidents"], rate=0.6, seed=5)
    e, _ = inject_records(recs, kinds=list(reversed(INCIDENT_KINDS)), rate=0.6, seed=5)
    assert _canon(d) == _canon(a) == _canon(e)


# --- shape only: renaming tools and fields moves nothing ----------------------------------------------


PREFIX = "f_"


def _rename(v: Any, fn: Any) -> Any:
    if isinstance(v, dict):
        return {fn(k): _rename(x, fn) for k, x in v.items()}
    if isinstance(v, list):
        return [_rename(x, fn) for x in v]
    return v


def _map_path(path: str, fn: Any) -> str:
    """A concrete pointer with every object key renamed by `fn` (array indexes kept)."""
    return "".join("/" + escape_token(fn(unescape_token(t))) for t in path.split("/")[1:]) if path else ""


def _key_paths(doc: Any) -> set[str]:
    """Pointers of every object member (array elements excluded)."""
    out = set()
    for p, _pat, _v in walk(doc):
        if p and isinstance(get_at(doc, p.rpartition("/")[0]), dict):
            out.add(p)
    return out


def _unprefix(k: str) -> str:
    return k[len(PREFIX) :] if k.startswith(PREFIX) else k


def _unpath(path: str, doc: Any) -> str:
    """Map a pointer into the renamed document back (index tokens are never renamed)."""
    toks = path.split("/")[1:] if path else []
    out, node = [], doc
    for tok in toks:
        if isinstance(node, list):
            out.append(tok)
            node = node[int(tok)]
        else:
            key = unescape_token(tok)
            out.append(escape_token(_unprefix(key)))
            node = node[key]
    return "".join("/" + t for t in out)


def _targets(res: Any) -> dict[str, set[tuple[str, str]]]:
    out = {}
    for inc in INCIDENTS:
        pairs = set()
        for p in inc.targets(res):
            q = inc.partner(res)[p] if inc.partner is not None else ""
            pairs.add((p, q))
        out[inc.kind] = pairs
    return out


RENAMED_SAMPLE = [
    _order(3),
    _user(4),
    _flight(5),
    {"a/b": "Lisbon", "c~d": ["ORD-1", "ORD-2"], "": {"x y": 1.25, "é": "2024-01-01T00:00:00Z"}},
]


@pytest.mark.parametrize("res", RENAMED_SAMPLE, ids=["order", "user", "flight", "odd_keys"])
def test_targets_ignore_field_names(res: Any) -> None:
    renamed = _rename(res, lambda k: PREFIX + k)
    before, after = _targets(res), _targets(renamed)
    for kind in INCIDENT_KINDS:
        back = {(_unpath(p, renamed), _unpath(q, renamed) if q else "") for p, q in after[kind]}
        assert back == before[kind], kind
    # ... and renaming to unrelated names (a different sort order) moves no target of a one-node kind
    names = sorted({unescape_token(p.rpartition("/")[2]) for p in _key_paths(res)})
    scramble = {k: f"k{len(names) - i:03d}" for i, k in enumerate(names)}
    inverse = {v: k for k, v in scramble.items()}
    other = _rename(res, scramble.__getitem__)
    moved = _targets(other)
    for kind in INCIDENT_KINDS:
        if kind == "swapped_fields":
            continue  # pairs are formed in key order: see test_bug_swapped_fields_depends_on_key_order
        back = {(_map_path(p, lambda k: inverse.get(k, k)), q) for p, q in moved[kind]}
        assert back == before[kind], kind


def test_inject_ignores_tool_and_field_names() -> None:
    """Renaming every tool and every field (order-preserving) gives the same faults, mapped back."""
    recs = corpus(6)
    renamed = [
        {
            **r,
            "tool": "svc_" + r["tool"].upper(),
            "arguments": _rename(r["arguments"], lambda k: PREFIX + k),
            "result": _rename(r["result"], lambda k: PREFIX + k),
        }
        for r in recs
    ]
    a, ra = inject_records(recs, kinds=INCIDENT_KINDS, rate=0.8, seed=11)
    b, rb = inject_records(renamed, kinds=INCIDENT_KINDS, rate=0.8, seed=11)
    assert ra.injected == rb.injected and ra.no_target == rb.no_target
    for x, y in zip(a, b, strict=True):
        back = {
            **y,
            "tool": y["tool"].removeprefix("svc_").lower(),
            "arguments": _rename(y["arguments"], _unprefix),
            "result": _rename(y["result"], _unprefix),
        }
        if "labels" in y:
            lab = dict(y["labels"])
            src = next(r for r in renamed if r["trace_id"] == y["trace_id"] and r["step"] == y["step"])
            lab["fault_path"] = _unpath(lab["fault_path"], src["result"])
            if "fault_paths" in lab:
                lab["fault_paths"] = [_unpath(p, src["result"]) for p in lab["fault_paths"]]
            lab["original"] = _rename(lab["original"], _unprefix)
            back["labels"] = lab
        assert _canon(back) == _canon(x)


# --- hypothesis: arbitrary JSON -----------------------------------------------------------------------


_dates = st.dates().map(lambda d: d.isoformat())
_zones = st.sampled_from(["Z", "+00:00", "+02:00", "-0530", "+0000", ""])
_datetimes = st.builds(
    lambda dt, sep, z, secs: dt.strftime(f"%Y-%m-%d{sep}%H:%M" + (":%S" if secs else "")) + z,
    st.datetimes(),
    st.sampled_from(["T", "T", " "]),
    _zones,
    st.booleans(),
)
_shaped = st.one_of(
    _dates,
    _datetimes,
    _datetimes,
    st.from_regex(r"[A-Z]{2,4}-[0-9]{3,8}", fullmatch=True),
    st.from_regex(r"#?[A-Za-z][0-9]{5,8}", fullmatch=True),
    st.from_regex(r"[a-z]{2,8}(_[a-z]{2,6})?", fullmatch=True),
    st.sampled_from([*CURRENCIES, "N/A", "Maria Lopez", "1970-01-01", "1970-01-01T00:00:00Z"]),
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.sampled_from([0, 1, -1, INT32_MAX, 2**40])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False).map(float)
    | st.text(max_size=12)
    | _shaped
)
_keys = st.text(alphabet=st.sampled_from("ab~/*0 é_"), max_size=4) | st.sampled_from(["name", "id", "error"])
_json = st.recursive(
    _scalars,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(_keys, ch, max_size=5),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(_json)
def test_property_targets_resolve(result: Any) -> None:
    for inc in INCIDENTS:
        paths = inc.targets(result)
        assert len(set(paths)) == len(paths), inc.kind
        if inc.partner is not None:  # `find_targets` reads a two-node kind's targets off its partners
            assert paths == sorted(inc.partner(result))
        for p in paths:
            get_at(result, p)  # raises when a path does not resolve
            assert p or inc.kind in ROOT_KINDS | {"empty_list", "duplicate_items"}
            if inc.partner is not None:
                q = inc.partner(result)[p]
                assert q != p and isinstance(get_at(result, q), str)


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_json, st.integers(min_value=0, max_value=3))
def test_property_single_record_inject(result: Any, seed: int) -> None:
    rec = _one(result)
    for kind in INCIDENT_KINDS:
        new, rep = inject_records([rec], kinds=[kind], rate=1.0, seed=seed)
        out = new[0]
        assert rec == _one(result)  # input untouched
        if not BY_KIND[kind].targets(result) or BY_KIND[kind].needs_other:
            # one record: other_entity has nothing else to serve
            assert out == rec and rep.no_target == 1, kind
            continue
        assert rep.injected == {kind: 1}
        lab = out["labels"]
        assert lab["fault"] == kind and lab["original"] == get_at(result, lab["fault_path"])
        assert out["arguments"] == rec["arguments"]
        canonical_json(out)  # what `contracts inject` writes must still be JSON
        assert _canon(out["result"]) != _canon(result), (kind, lab)


# --- parse_kinds ----------------------------------------------------------------------------------------


def test_parse_kinds_groups_and_errors() -> None:
    assert set(KIND_GROUPS) == {"all", "basic", "incidents"}
    assert parse_kinds("incidents") == INCIDENT_KINDS
    assert parse_kinds(["incidents"]) == INCIDENT_KINDS
    assert parse_kinds("incidents,basic") == ALL_KINDS == parse_kinds(["basic", "incidents"])
    assert parse_kinds(" mojibake , sign_flip ,mojibake") == ("sign_flip", "mojibake")
    assert parse_kinds("wrong_currency,html_error_page") == ("html_error_page", "wrong_currency")
    assert parse_kinds("incidents,epoch_date") == INCIDENT_KINDS
    assert parse_kinds(",") == ALL_KINDS == parse_kinds([])
    with pytest.raises(UsageError) as e:
        parse_kinds("incidents,zzz,aaa")
    msg = str(e.value)
    assert "unknown fault kind(s) aaa, zzz" in msg
    assert "or a group: all, basic, incidents" in msg and "mojibake" in msg
    assert e.value.field == "kinds"
    with pytest.raises(UsageError, match="unknown fault kind"):
        parse_kinds("Incidents")  # case matters
    with pytest.raises(UsageError, match="unknown fault kind"):
        inject_records(corpus(1), kinds=["bogus"], rate=1.0)


# --- the CLI ----------------------------------------------------------------------------------------------


def _write(recs: list[dict[str, Any]], p: Path) -> None:
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))


def test_cli_inject_incidents(tmp_path: Path) -> None:
    src = tmp_path / "clean.jsonl"
    recs = corpus(10)
    _write(recs, src)
    out = tmp_path / "faulty.jsonl"
    args = ["inject", str(src), "-o", str(out), "--kinds", "incidents", "--rate", "1", "--seed", "3"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    summary = orjson.loads(res.stdout)
    assert set(summary["injected"]) == set(INCIDENT_KINDS) and summary["no_target"] == 0
    got = read_flat([out])
    assert len(got) == len(recs)
    faults = [r["labels"]["fault"] for r in got]
    assert set(faults) == set(INCIDENT_KINDS) and len(faults) == sum(summary["injected"].values())
    # the file is what the library gives for the same seed (CLI and API agree)
    lib, _ = inject_records(recs, kinds=INCIDENT_KINDS, rate=1.0, seed=3)
    assert _canon(got) == _canon(lib)
    # same command, same bytes
    first = out.read_bytes()
    assert CliRunner().invoke(app, args).exit_code == 0 and out.read_bytes() == first


def test_cli_inject_bogus_kind(tmp_path: Path, repo: Path) -> None:
    src = tmp_path / "clean.jsonl"
    _write(corpus(1), src)
    out = tmp_path / "faulty.jsonl"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "inject",
            str(src),
            "-o",
            str(out),
            "--kinds",
            "bogus",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "unknown fault kind(s) bogus" in lines[0] and "all, basic, incidents" in lines[0]
    assert "Traceback" not in p.stderr and not out.exists()


# --- regressions: bugs this file found, fixed ----------------------------------------------------------


def test_bug_duplicate_items_can_change_nothing() -> None:
    for seed in range(10):
        rec, _ = _inject_one({"xs": [1, 2, 2]}, "duplicate_items", seed)
        assert rec["result"] != {"xs": [1, 2, 2]}, (seed, rec["labels"])


def test_bug_other_entity_without_another_result() -> None:
    new, rep = inject_records([_one({"id": "ORD-1"})], kinds=["other_entity"], rate=1.0, seed=0)
    assert "labels" not in new[0] and rep.no_target == 1, new[0]


def test_bug_local_time_as_utc_early_years() -> None:
    rec, _ = _inject_one({"at": "0001-01-01T00:00:00Z"}, "local_time_as_utc")
    assert classify(rec["result"]["at"]) is not None


def test_bug_local_time_as_utc_unpadded_year() -> None:
    """Years before 1001 are not shifted (the result could leave four digits); later ones stay padded."""
    assert BY_KIND["local_time_as_utc"].targets({"at": "0999-03-01T02:00:00Z"}) == []
    rec, _ = _inject_one({"at": "1001-01-01T02:00:00Z"}, "local_time_as_utc")
    assert rec["result"]["at"] == "1000-12-31T21:00:00Z"


def test_bug_space_separated_datetime() -> None:
    v = "2024-05-01 10:30:00Z"
    c = classify(v)
    assert c is not None and c[0] == "aware"
    # the date kinds rewrite the `T` forms only: a space-separated date-time is not one of their targets
    # (it stays a text target: sentinel_text, char_padding, ...)
    for kind in ("epoch_date", "date_reformat", "timezone_change", "local_time_as_utc"):
        assert BY_KIND[kind].targets({"at": v}) == [], kind
    assert BY_KIND["sentinel_text"].targets({"at": v}) == ["/at"]


def test_bug_unit_x1000_overflows_to_infinity() -> None:
    rec, _ = _inject_one({"v": 1e306}, "unit_x1000")
    canonical_json(rec)


def test_bug_swapped_fields_depends_on_key_order() -> None:
    a = {"k1": "A", "k2": "A", "k3": "B"}
    b = {"z1": "A", "y2": "A", "x3": "B"}  # the same object, fields renamed
    rename = {"z1": "k1", "y2": "k2", "x3": "k3"}
    got = {"/" + rename[p[1:]] for p in BY_KIND["swapped_fields"].targets(b)}
    assert got == set(BY_KIND["swapped_fields"].targets(a))  # ['/k1', '/k2'] vs ['/x3']
