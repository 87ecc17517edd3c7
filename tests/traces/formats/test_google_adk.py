"""The `google-adk` adapter on sessions the unmodified google-adk 2.15.0 wrote (see the fixture folder's
`generate.py`), camelCase and snake_case, from a model that gave call ids and one that gave none.

Each file is ingested by auto-detection through the library and the CLI; the calls are compared with
values read here from the raw session (functionCall parts joined to functionResponse parts by id, the
error event to the call it ended). Edited copies check the join by name when there are no ids, and each
reject; a hypothesis test generates id-less sessions and checks the join by name and order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext
from output_contracts.traces.formats.detect import best_match
from output_contracts.traces.formats.google_adk import GoogleAdkAdapter
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls

DATA = Path(__file__).resolve().parents[1] / "data" / "formats" / "google_adk"
FIXTURES = [
    "session-camel-ids.json",
    "session-camel-noids.json",
    "session-snake-ids.json",
    "session-snake-noids.json",
]
Call = tuple[str, dict[str, Any], Any, str, str | None]


def _rejects(path: Path) -> list[tuple[str, int]]:
    # its own reader: the event `index` a reject names, which not every reject has (-1 there)
    f = path / "rejects.jsonl"
    if not f.exists():
        return []
    return [(r["code"], r.get("index", -1)) for r in map(orjson.loads, f.read_bytes().splitlines())]


def _both(src: Path, tmp: Path) -> tuple[list[Call], list[tuple[str, int]]]:
    got = both(src, tmp, "google-adk", read_calls, _rejects)
    return got.calls, _rejects(got.lib)


def _k(d: dict[str, Any], camel: str, snake: str) -> Any:
    return d.get(camel, d.get(snake))


def _expected(session: dict[str, Any]) -> list[Call]:
    """Calls read from the raw session: parts joined by id; the error event answers the last call."""
    calls: list[dict[str, Any]] = []
    answers: dict[str, Any] = {}
    error_event: dict[str, Any] | None = None
    for e in session["events"]:
        if e.get("content") is None:
            error_event = e
            continue
        for p in e["content"]["parts"]:
            if _k(p, "functionCall", "function_call"):
                calls.append(_k(p, "functionCall", "function_call"))
            if _k(p, "functionResponse", "function_response"):
                fr = _k(p, "functionResponse", "function_response")
                answers[fr["id"]] = fr["response"]
    out: list[Call] = []
    for c in calls:
        if c["id"] not in answers:
            assert error_event is not None and c is calls[-1]
            out.append(
                (c["name"], c["args"], None, "error", _k(error_event, "errorMessage", "error_message"))
            )
            continue
        resp = answers[c["id"]]
        if "error" in resp:
            out.append((c["name"], c["args"], None, "error", resp["error"]))
        elif resp.get("status") == "error":
            out.append((c["name"], c["args"], None, "error", resp["error_message"]))
        else:
            out.append(
                (c["name"], c["args"], resp["result"] if list(resp) == ["result"] else resp, "ok", None)
            )
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_read_exactly(name: str, tmp_path: Path) -> None:
    src = DATA / name
    calls, rejects = _both(src, tmp_path)
    assert calls == _expected(json.loads(src.read_text()))
    assert rejects == []


def test_fixture_values(tmp_path: Path) -> None:
    calls, _ = _both(DATA / "session-camel-ids.json", tmp_path)
    assert [c[:4] for c in calls] == [
        ("get_weather", {"city": "Paris"}, "Sunny, 21 C in Paris", "ok"),
        ("lookup_order", {"order_id": "B-7"}, None, "error"),
        ("get_forecast", {"city": "Paris"}, None, "error"),
        ("convert_currency", {"amount": 40, "to": "CHF"}, None, "error"),
    ]
    assert calls[1][4] == "no order B-7"
    assert calls[2][4] is not None and calls[2][4].startswith("Invoking `get_forecast()` failed")
    assert calls[3][4] == "'CHF'"
    meta = Corpus.open(tmp_path / "lib").scan_calls().select("meta").collect()["meta"].to_list()
    assert orjson.loads(meta[3])["error_type"] == "KeyError"


def test_detection_and_lacks() -> None:
    for name in FIXTURES:
        doc = json.loads((DATA / name).read_text())
        assert best_match(doc) == ("google-adk", 2)
        assert GoogleAdkAdapter().lacks(doc) is None
    assert GoogleAdkAdapter().lacks({"events": []}) is not None


def _strip_ids(session: dict[str, Any]) -> dict[str, Any]:
    for e in session["events"]:
        for p in (e.get("content") or {}).get("parts") or []:
            for key in ("functionCall", "functionResponse"):
                if p.get(key):
                    p[key]["id"] = None
    return session


def test_join_by_name_without_ids(tmp_path: Path) -> None:
    """The same session with every id removed (as a model and an ADK that write none): same calls."""
    doc = _strip_ids(json.loads((DATA / "session-camel-ids.json").read_text()))
    src = tmp_path / "noids.json"
    src.write_bytes(orjson.dumps(doc))
    calls, rejects = _both(src, tmp_path / "o")
    assert calls == _calls_of(DATA / "session-camel-ids.json", tmp_path / "ref")
    assert rejects == []


def _calls_of(src: Path, out: Path) -> list[Call]:
    ingest([src], out)
    return read_calls(out)


def test_rejects(tmp_path: Path) -> None:
    """A response for an unknown id, a second response, a call with no answer and no error event."""
    doc = json.loads((DATA / "session-camel-ids.json").read_text())
    events = doc["events"]
    responses = events[2]["content"]["parts"]
    responses[0]["functionResponse"]["id"] = "nope"  # get_weather now unanswered, and an orphan
    responses.append(json.loads(json.dumps(responses[1])))  # lookup_order answered twice
    del events[-1]  # no error event: convert_currency unanswered
    src = tmp_path / "edited.json"
    src.write_bytes(orjson.dumps(doc))
    calls, rejects = _both(src, tmp_path)
    assert [c[0] for c in calls] == ["lookup_order", "get_forecast"]
    assert sorted(code for code, _ in rejects) == [
        "R_DUPLICATE_RESULT",
        "R_ORPHAN_RESULT",
        "R_UNMATCHED",
        "R_UNMATCHED",
    ]


def test_text_only_session_is_no_calls(tmp_path: Path) -> None:
    doc = json.loads((DATA / "session-snake-ids.json").read_text())
    doc["events"] = [
        doc["events"][0],
        {**doc["events"][1], "content": {"role": "model", "parts": [{"text": "hi"}]}},
    ]
    src = tmp_path / "text.json"
    src.write_bytes(orjson.dumps(doc))
    rep = ingest([src], tmp_path / "o", allow_empty=True)
    assert rep.sources[0].format == "google-adk"
    assert _rejects(tmp_path / "o")[0][0] == "R_NO_CALLS"


# ---- property: id-less sessions join by name and order ------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f", "g"]), st.booleans(), st.integers(0, 9)), max_size=12))
def test_join_by_name_property(items: list[tuple[str, bool, int]]) -> None:
    events: list[dict[str, Any]] = []
    waiting: dict[str, list[int]] = {"f": [], "g": []}
    expect: list[tuple[int, int]] = []  # (call order, value answered)
    orphans = 0
    n = 0
    for name, is_call, value in items:
        if is_call:
            part = {"functionCall": {"name": name, "args": {"n": n}}}
            waiting[name].append(n)
            n += 1
        else:
            part = {"functionResponse": {"name": name, "response": {"v": value}}}
            if waiting[name]:
                expect.append((waiting[name].pop(0), value))
            else:
                orphans += 1
        events.append({"author": "a", "invocationId": "i", "content": {"role": "model", "parts": [part]}})
    session = {"id": "s", "appName": "app", "userId": "u", "events": events}
    if n == 0 and orphans == 0:
        return
    parsed = GoogleAdkAdapter().parse(session, RecordContext("s.json", "0" * 64, 1))
    got = sorted((c.arguments["n"], c.result["v"]) for c in parsed.calls)
    assert got == sorted(expect)
    codes = sorted(d.code for d in parsed.dropped)
    unanswered = sum(len(v) for v in waiting.values())
    assert codes == sorted(["R_ORPHAN_RESULT"] * orphans + ["R_UNMATCHED"] * unanswered)
