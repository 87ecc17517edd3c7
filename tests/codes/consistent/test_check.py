"""CONSISTENT on both checker paths: an entity's field compared with the episode's earlier calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import check_call, check_corpus, check_lines
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.engine.evaluate import episode_memory
from output_contracts.errors import CheckError
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree

GET, UPDATE = "get_booking", "update_booking"


def rule(tool: str, p: str, k: str, n: int = 321) -> Rule:
    return Rule(rule_id(tool, "CONSISTENT", [p, k], {}), tool, "CONSISTENT", (p, k), {}, Support(n, 210))


def contract_set(*rules: Rule) -> ContractSet:
    tools: dict[str, list[Rule]] = {}
    for r in rules:
        tools.setdefault(r.tool, []).append(r)
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={t: ToolContracts(rules=tuple(rs)) for t, rs in tools.items()},
        folds=(FoldChecker(0, tuple(r.id for r in rules)),),
    )


CS = contract_set(rule(GET, "/created_at", "/booking_id"), rule(GET, "/user_id", "/booking_id"))


def booking(bid: str, created: Any, user: str = "u1", **more: Any) -> dict[str, Any]:
    return {"booking_id": bid, "created_at": created, "user_id": user, **more}


def rec(
    trace: str, tool: str, result: Any, status: str = "ok", args: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "trace_id": trace,
        "tool": tool,
        "arguments": args or {"id": "x"},
        "status": status,
    }
    if status == "ok":
        out["result"] = result
    else:
        out["error"] = "timeout"
    return out


def test_a_changed_field_names_the_earlier_call(tmp_path: Path) -> None:
    recs = [
        rec("e1", GET, booking("B1", "2024-05-01T10:00:00")),
        rec("e1", UPDATE, booking("B1", "2024-05-01T10:00:00", seats=2)),  # a write tool: memory only
        rec("e1", GET, booking("B2", "2024-06-01T08:00:00")),  # another entity: not compared
        rec("e1", GET, booking("B1", "2024-05-01T15:00:00")),  # shifted five hours
        rec("e2", GET, booking("B1", "1999-01-01T00:00:00")),  # another episode: nothing earlier
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    df = assert_paths_agree(CS, corpus, batch_calls=1)
    assert df.height == 1
    row = df.row(0, named=True)
    update_id = corpus.scan_calls().filter(pl.col("tool") == UPDATE).collect()["call_id"][0]
    assert (row["code"], row["path"], row["expected"], row["observed"]) == (
        "CONSISTENT",
        "/created_at",
        '"2024-05-01T10:00:00"',
        '"2024-05-01T15:00:00"',
    )
    assert row["detail"] == (
        f'get_booking returned created_at="2024-05-01T15:00:00" for booking_id="B1", but update_booking '
        f'(call {update_id}) returned created_at="2024-05-01T10:00:00" for the same booking_id earlier in this '
        "episode; in every one of 321 clean repeats the value never changed"
    )


def test_check_call_needs_the_episode_memory() -> None:
    first = booking("B1", "2024-05-01T10:00:00")
    later = booking("B1", "2024-05-01T15:00:00")
    assert check_call(CS, GET, {}, later) is None  # alone, a call has no earlier call to disagree with
    memory = episode_memory(CS)
    assert check_call(CS, GET, {}, first, memory=memory, call_id="c1") is None
    assert check_call(CS, "some_other_tool", {}, booking("B9", "x"), memory=memory) is None
    receipt = check_call(CS, GET, {}, later, memory=memory, call_id="c2")
    assert receipt is not None and [v.code for v in receipt.violations] == ["CONSISTENT"]
    assert "(call c1)" in receipt.violations[0].detail


def test_equal_as_echo_compares_and_only_judged_keys(tmp_path: Path) -> None:
    recs = [
        rec("e", GET, booking("B1", 3)),
        rec("e", GET, booking("B1", 3.0)),  # a number by value: the same
        rec("e", GET, booking(7, "a")),  # an integer key ...
        rec("e", GET, booking("7", "b")),  # ... is not the string "7"
        rec("e", GET, booking(True, "a")),  # a boolean is no key
        rec("e", GET, booking(True, "b")),
        rec("e", GET, booking("B3", [1])),  # a list at P is not judged
        rec("e", GET, booking("B3", [2])),
        rec("e", GET, booking("B4", None)),
        rec("e", GET, booking("B4", "null")),  # null is not the string "null"
        rec("e", GET, {"booking_id": "B4"}),  # P absent: not judged
    ]
    df = assert_paths_agree(CS, corpus_from_records(recs, tmp_path / "c"))
    assert df.select("expected", "observed").rows() == [("null", '"null"')]


def test_error_calls_are_no_sighting_and_stream_equals_corpus(tmp_path: Path) -> None:
    recs = [
        rec("e", GET, booking("B1", "t1")),
        rec("e", GET, None, status="error"),
        rec("e", UPDATE, booking("B1", "t2")),  # a write: the memory now holds t2
        rec("e", GET, booking("B1", "t2")),  # agrees with the latest sighting
        rec("e", GET, booking("B1", "t1", user="u2")),  # back to t1, and another user
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    df = check_corpus(CS, corpus_from_records(recs, tmp_path / "c"))
    assert sorted(df.select("path", "expected", "observed").rows()) == [
        ("/created_at", '"t2"', '"t1"'),
        ("/user_id", '"u1"', '"u2"'),
    ]
    items = list(check_lines(CS, path.read_bytes().splitlines()))
    got = sorted(
        (v.path, orjson.dumps(v.expected).decode(), orjson.dumps(v.observed).decode())
        for i in items
        if i.receipt is not None
        for v in i.receipt.violations
    )
    assert got == sorted(df.select("path", "expected", "observed").rows())
    # a tool filter still lets the filtered calls serve as earlier sightings
    only_get = [
        v.path
        for i in check_lines(CS, path.read_bytes().splitlines(), tools=[GET])
        if i.receipt
        for v in i.receipt.violations
    ]
    assert sorted(only_get) == ["/created_at", "/user_id"]


def test_a_call_naming_the_entity_voids_what_was_seen(tmp_path: Path) -> None:
    """A write whose result does not show the entity again (an acknowledgement, an error page, an error
    status) may have changed it: the next read has nothing to be compared with."""
    recs = [
        rec("e1", GET, booking("B1", "t1"), args={"booking_id": "B1"}),
        rec("e1", UPDATE, {"ok": True}, args={"booking_id": "B1", "when": "t2"}),  # names B1, shows nothing
        rec("e1", GET, booking("B1", "t2"), args={"booking_id": "B1"}),  # not judged: B1 was touched
        rec("e1", GET, booking("B1", "t3"), args={"booking_id": "B1"}),  # judged against t2 (its own
        #                                                                  argument names B1: no matter)
        rec("e2", GET, booking("B1", "t1")),
        rec("e2", UPDATE, None, status="error", args={"items": [{"ref": "B1"}]}),  # an error call, nested
        rec("e2", GET, booking("B1", "t2")),  # not judged
        rec("e2", UPDATE, {"ok": True}, args={"booking_id": "B9"}),  # another entity: no touch of B1
        rec("e2", GET, booking("B1", "t3")),  # judged against t2
    ]
    df = assert_paths_agree(CS, corpus_from_records(recs, tmp_path / "c"), batch_calls=1)
    assert sorted(df.select("trace_id", "expected", "observed").rows()) == [
        ("e1", '"t2"', '"t3"'),
        ("e2", '"t2"', '"t3"'),
    ]
    memory = episode_memory(CS)
    memory.record(GET, {}, booking("B1", "t1"))
    memory.record(UPDATE, {"booking_id": "B1"}, None, ok=False)
    assert check_call(CS, GET, {}, booking("B1", "t2"), memory=memory) is None


def test_invalid_places_are_refused() -> None:
    for paths, why in [
        (("/a/*/x", "/a/*/id"), "wildcard"),
        (("/x", "$args/id"), "not a result field"),
        (("/a/x", "/id"), "not fields of the same object"),
        (("/id", "/id"), "the same field"),
    ]:
        bad = Rule(rule_id(GET, "CONSISTENT", list(paths), {}), GET, "CONSISTENT", paths, {}, Support(1, 1))
        with pytest.raises(CheckError, match=why):
            check_call(contract_set(bad), GET, {}, {})


@st.composite
def episodes(draw: Any) -> list[dict[str, Any]]:
    """Random episodes over a few entities, tools, statuses and values (some equal, some not)."""
    out = []
    for t in range(draw(st.integers(1, 3))):
        for _ in range(draw(st.integers(1, 8))):
            tool = draw(st.sampled_from([GET, GET, UPDATE, "other"]))
            status = draw(st.sampled_from(["ok", "ok", "ok", "error"]))
            res = {
                "booking_id": draw(st.sampled_from(["B1", "B2", 1, None])),
                "created_at": draw(st.sampled_from(["t1", "t2", 1, 1.0, None, True, [1]])),
                "user_id": draw(st.sampled_from(["u1", "u2"])),
            }
            if draw(st.booleans()):
                del res["user_id"]
            args = draw(st.sampled_from([{"id": "x"}, {"booking_id": "B1"}, {"q": ["B2", 1]}, {"n": 1}]))
            out.append(rec(f"e{t}", tool, res, status=status, args=args))
    return draw(st.permutations(out))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=episodes())
def test_vectorised_equals_episode_replay(recs: list[dict[str, Any]], tmp_path_factory: Any) -> None:
    corpus = corpus_from_records(recs, tmp_path_factory.mktemp("c"))
    assert_paths_agree(CS, corpus, batch_calls=2)


def test_audit_counts_an_echo_of_a_labelled_call_apart(tmp_path: Path) -> None:
    """An unlabelled read that disagrees with an earlier, labelled (faulty) read is no false alarm: the
    audit leaves it out of the fire rate and counts it as `cross_call_explained`; one that disagrees
    with an unlabelled call stays a fire."""
    from output_contracts.audit.pipeline import audit

    faulty = {"fault": "local_time_as_utc", "fault_path": "/created_at"}
    recs = [
        {**rec("e1", GET, booking("B1", "t1-shifted")), "labels": faulty},
        rec("e1", GET, booking("B1", "t1")),  # right, and disagrees with the faulty call before it
        rec("e2", GET, booking("B2", "t2")),
        rec("e2", GET, booking("B2", "t3")),  # disagrees with an unlabelled call: a fire
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    report, _ = audit(corpus, tmp_path / "ledger", k=1, contracts=CS, bootstrap=0)
    fr = report["fire_rate"]
    assert (fr["numerator"], fr["denominator"], fr["cross_call_explained"]) == (1, 3, 1)
    assert report["detection"]["overall"]["numerator"] == 0  # the faulty call itself has no earlier call
