"""Creating, appending, freezing and re-opening ledgers; the header and entry formats and their schemas."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.errors import LedgerError
from output_contracts.jsonutil import canonical_json, json_sha256
from output_contracts.ledger import GENESIS, Entry, Ledger, merkle_root, read_entries, source_revision, verify
from output_contracts.ledger.entry import encode_entry, parse_line
from output_contracts.schemas import schema_errors, validate

from .conftest import CONFIG, body, build

REPO = Path(__file__).resolve().parents[2]


def test_chain_fields_and_hashes(tmp_path: Path) -> None:
    d = tmp_path / "L"
    info = build(d, 5)
    assert info is not None
    lines = (d / "ledger.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""  # every line ends with LF
    header = json.loads((d / "ledger.json").read_bytes())
    bound = (
        "format",
        "version",
        "config",
        "config_sha256",
        "inputs",
        "seed",
    )
    fixed = {k: header[k] for k in (*bound, "hash")}
    # entry 0's prev is the hash of the header's fixed fields: the chain commits to the header
    prev = hashlib.sha256(canonical_json(fixed)).hexdigest()
    assert header["version"] == 2 and header["genesis"] == prev != GENESIS
    hashes = []
    for seq, raw in enumerate(lines[:-1]):
        obj = json.loads(raw)  # the stdlib keeps the 70-bit integers exact
        assert raw == canonical_json(obj)  # each line is canonical JSON
        assert obj["seq"] == seq and obj["prev"] == prev
        without = {k: v for k, v in obj.items() if k != "hash"}
        assert obj["hash"] == hashlib.sha256(canonical_json(without)).hexdigest()
        assert obj["body"] == json.loads(canonical_json(body(seq)))
        validate(obj, "ledger-entry", source=f"ledger.jsonl:{seq + 1}")
        prev = obj["hash"]
        hashes.append(obj["hash"])
    assert info.entries == 5 and info.head == prev and info.root == merkle_root(hashes)


def test_entries_keep_big_integers_and_float_forms(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 3)
    entries = read_entries(d)
    assert [e.body["big"] for e in entries] == [2**70, 2**70 + 1, 2**70 + 2]
    assert entries[0].body["neg"] == 0.0 and str(entries[0].body["neg"]) == "-0.0"
    raw = (d / "ledger.jsonl").read_bytes()
    assert b'"big":1180591620717411303424' in raw and b'"neg":-0.0' in raw and b"1e-7" not in raw
    assert b'"neg":-1.5e-7' in raw  # shortest round-trip float form
    assert "naïve".encode() in raw  # UTF-8, not \u escapes


def test_append_returns_what_is_read_back(tmp_path: Path) -> None:
    with Ledger.create(tmp_path / "L", CONFIG, 7, source_revision="r") as led:
        appended = [led.append("repair.step", body(i)) for i in range(4)]
        appended += led.append_many([("repair.step", body(i)) for i in range(4, 9)])
        assert led.count == 9 and led.head == appended[-1].hash
    assert read_entries(tmp_path / "L") == appended
    assert appended[5] == Entry(5, appended[4].hash, appended[5].hash, "repair.step", appended[5].body)


@settings(max_examples=40, deadline=None)
@given(
    seq=st.integers(0, 2**40),
    kind=st.from_regex(r"\A[a-z][a-z0-9_.:/-]{0,20}\Z"),
    payload=st.dictionaries(
        st.text(max_size=5),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
            max_leaves=8,
        ),
        max_size=4,
    ),
)
def test_encode_entry_is_canonical_json(seq: int, kind: str, payload: dict[str, object]) -> None:
    prev = hashlib.sha256(str(seq).encode()).hexdigest()
    digest, line = encode_entry(seq, prev, kind, canonical_json(payload))
    unhashed = {"seq": seq, "prev": prev, "kind": kind, "body": payload}
    assert digest == hashlib.sha256(canonical_json(unhashed)).hexdigest()
    assert line == canonical_json({**unhashed, "hash": digest}) + b"\n"
    entry, why = parse_line(line[:-1])
    assert entry is not None, why
    assert canonical_json(entry.body) == canonical_json(payload) and entry.hash == digest


def test_header_binds_config_inputs_seed_and_revision(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    (inputs / "sub").mkdir(parents=True)
    (inputs / "a.jsonl").write_bytes(b'{"x":1}\n')
    (inputs / "sub" / "b.jsonl").write_bytes(b"")
    single = tmp_path / "tools.json"
    single.write_bytes(b"{}")
    led = Ledger.create(tmp_path / "L", CONFIG, 99, inputs=[inputs, single, inputs / "a.jsonl"])
    header = orjson.loads((tmp_path / "L" / "ledger.json").read_bytes())
    assert schema_errors(header, "ledger-header") == []
    assert header["config"] == CONFIG and header["config_sha256"] == json_sha256(CONFIG)
    assert header["seed"] == 99 and header["frozen"] is False and header["head"] is None
    assert [i["path"] for i in header["inputs"]] == sorted(
        [(inputs / "a.jsonl").as_posix(), (inputs / "sub" / "b.jsonl").as_posix(), single.as_posix()]
    )
    by_name = {Path(i["path"]).name: i for i in header["inputs"]}
    assert by_name["a.jsonl"] == {
        "path": (inputs / "a.jsonl").as_posix(),
        "sha256": hashlib.sha256(b'{"x":1}\n').hexdigest(),
        "bytes": 8,
    }
    assert by_name["b.jsonl"]["sha256"] == hashlib.sha256(b"").hexdigest()
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    if rev.returncode == 0:  # running from the checkout: the commit is recorded
        assert header["source_revision"] == f"git:{rev.stdout.strip()}" == source_revision()
    else:
        assert header["source_revision"].startswith("contracts ")
    info = led.freeze()
    frozen = orjson.loads((tmp_path / "L" / "ledger.json").read_bytes())
    assert schema_errors(frozen, "ledger-header") == []
    assert (frozen["entries"], frozen["head"], frozen["root"], frozen["frozen"]) == (
        0,
        header["genesis"],  # an empty ledger's head is its genesis, which binds the header
        info.root,
        True,
    )
    assert info.root == hashlib.sha256(b"").hexdigest()
    assert {k: v for k, v in frozen.items() if k not in ("entries", "head", "root", "frozen")} == {
        k: v for k, v in header.items() if k not in ("entries", "head", "root", "frozen")
    }


def test_same_input_same_bytes(tmp_path: Path) -> None:
    build(tmp_path / "a", 6)
    build(tmp_path / "b", 6)
    assert (tmp_path / "a" / "ledger.jsonl").read_bytes() == (tmp_path / "b" / "ledger.jsonl").read_bytes()
    ha = orjson.loads((tmp_path / "a" / "ledger.json").read_bytes())
    hb = orjson.loads((tmp_path / "b" / "ledger.json").read_bytes())
    ha.pop("created_at")
    hb.pop("created_at")
    assert ha == hb  # the one timestamp is created_at


def test_create_refuses_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(LedgerError, match="not empty"):
        Ledger.create(tmp_path / "full", {}, 1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(LedgerError, match="not a folder"):
        Ledger.create(tmp_path / "file", {}, 1)
    with pytest.raises(LedgerError, match="seed"):
        Ledger.create(tmp_path / "s", {}, "13")  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match="config"):
        Ledger.create(tmp_path / "c", {"x": float("nan")}, 1)
    with pytest.raises(LedgerError, match="does not exist") as e:
        Ledger.create(tmp_path / "i", {}, 1, inputs=[tmp_path / "nope.jsonl"])
    assert e.value.field == "inputs"
    assert not (tmp_path / "s").exists() and not (tmp_path / "i").exists()  # nothing half-made
    # an existing empty folder is fine
    (tmp_path / "empty").mkdir()
    Ledger.create(tmp_path / "empty", {}, 1).close()


def test_append_refuses_bad_entries_and_writes_nothing(tmp_path: Path) -> None:
    d = tmp_path / "L"
    with Ledger.create(d, {}, 1, source_revision="r") as led:
        led.append("ok", {"a": 1})
        size = (d / "ledger.jsonl").stat().st_size
        for kind, bad, what in [
            ("ok", [1, 2], "JSON object"),
            ("ok", {"x": float("inf")}, "not JSON"),
            ("ok", {"x": object()}, "not JSON"),
            ("ok", {1: "int key"}, "not JSON"),
            ("", {}, "kind"),
            ("has space", {}, "kind"),
            ("ledger.repair", {}, "reserved"),
        ]:
            with pytest.raises(LedgerError, match=what):
                led.append(kind, bad)  # type: ignore[arg-type]
        with pytest.raises(LedgerError):
            led.append_many([("ok", {"fine": 1}), ("ok", {"x": float("nan")})])
        assert (d / "ledger.jsonl").stat().st_size == size and led.count == 1
    assert verify(d).ok


def test_frozen_and_closed_ledgers_refuse_appends(tmp_path: Path) -> None:
    d = tmp_path / "L"
    led = Ledger.create(d, {}, 1, source_revision="r")
    led.append("a", {})
    led.freeze()
    assert led.frozen and not (d / "ledger.lock").exists()
    with pytest.raises(LedgerError, match="frozen"):
        led.append("a", {})
    with pytest.raises(LedgerError, match="frozen"):
        Ledger.open(d)
    with pytest.raises(LedgerError, match="frozen"):
        led.freeze()
    d2 = tmp_path / "M"
    with Ledger.create(d2, {}, 1, source_revision="r") as led2:
        led2.append("a", {})
    with pytest.raises(LedgerError, match="closed"):
        led2.append("a", {})
    assert not (d2 / "ledger.lock").exists()
    assert not verify(d2).frozen  # the context manager closes, it does not freeze


def test_reopen_continues_the_chain(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 3, frozen=False)
    with Ledger.open(d) as led:
        assert led.count == 3
        e = led.append("audit.fire", {"after": "reopen"})
    entries = read_entries(d)
    assert e.seq == 3 and e.prev == entries[2].hash and entries[3] == e
    led = Ledger.open(d)
    info = led.freeze()
    report = verify(d, require_frozen=True, head=info.head, root=info.root)
    assert report.ok and report.entries == 4


def test_open_refuses_a_broken_ledger(tmp_path: Path) -> None:
    d = tmp_path / "L"
    build(d, 3, frozen=False)
    data = (d / "ledger.jsonl").read_bytes()
    (d / "ledger.jsonl").write_bytes(data.replace(b'"n":1', b'"n":2', 1))
    with pytest.raises(LedgerError, match="EDITED"):
        Ledger.open(d, repair_tail=True)  # repair_tail only ever drops a partial last line
    assert not (d / "ledger.lock").exists()
    with pytest.raises(LedgerError, match="no such"):
        Ledger.open(tmp_path / "nope")
    with pytest.raises(LedgerError, match=r"ledger\.json is missing"):
        Ledger.open(tmp_path)
