"""Inclusion proofs of real ledgers: every entry proves against the frozen root; wrong entries or roots fail."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import LedgerError
from output_contracts.ledger import Ledger, verify
from output_contracts.ledger.proof import PROOF_SCHEMA, check_proof, prove

BODIES = st.dictionaries(
    st.sampled_from(["call_id", "code", "value", "path"]),
    st.one_of(
        st.integers(-(2**66), 2**66), st.text(max_size=8), st.floats(allow_nan=False, allow_infinity=False)
    ),
    max_size=3,
)


@settings(max_examples=10, deadline=None)
@given(bodies=st.lists(BODIES, min_size=1, max_size=16), data=st.data())
def test_every_entry_of_a_random_ledger_proves(bodies: list[dict[str, object]], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "L"
        led = Ledger.create(d, {}, 0, source_revision="r")
        led.append_many(("audit.fire", b) for b in bodies)
        info = led.freeze()
        n = len(bodies)
        for seq in range(n):
            doc = prove(d, seq)
            jsonschema.validate(doc, PROOF_SCHEMA)
            assert (doc["root"], doc["tree_size"], doc["head"]) == (info.root, n, info.head)
            assert check_proof(doc, info.root, size=n).ok
        seq = data.draw(st.integers(0, n - 1))
        doc = prove(d, seq)
        # a wrong root
        assert not check_proof(doc, "0" * 64).ok
        # an edited entry body, kind or claimed position
        edited = json.loads(json.dumps(doc))
        edited["entry"]["body"]["forged"] = True
        res = check_proof(edited, info.root)
        assert not res.ok and "does not match its hash" in res.problems[0]
        moved = json.loads(json.dumps(doc))
        if n > 1:
            moved["seq"] = (seq + 1) % n
            assert not check_proof(moved, info.root).ok
        # another entry's hash swapped in (self-consistent entry, wrong leaf)
        if n > 1:
            other = prove(d, (seq + 1) % n)
            swapped = {**doc, "entry": other["entry"]}
            assert not check_proof(swapped, info.root).ok
        # a wrong anchored size
        assert not check_proof(doc, info.root, size=n + 1).ok


def test_unfrozen_ledger_proves_against_its_current_root(tmp_path: Path) -> None:
    d = tmp_path / "L"
    with Ledger.create(d, {}, 0, source_revision="r") as led:
        for i in range(5):
            led.append("a", {"i": i})
        root = led.root()
    doc = prove(d, 2)
    assert doc["frozen"] is False and doc["root"] == root == verify(d).root
    assert check_proof(doc, root).ok


def test_prove_refuses_bad_requests(tmp_path: Path) -> None:
    d = tmp_path / "L"
    with Ledger.create(d, {}, 0, source_revision="r") as led:
        led.append("a", {})
        led.freeze()
    with pytest.raises(LedgerError, match="no entry 1"):
        prove(d, 1)
    with pytest.raises(LedgerError, match="no such"):
        prove(tmp_path / "nope", 0)
    header = json.loads((d / "ledger.json").read_text())
    header["root"] = "1" * 64
    (d / "ledger.json").write_text(json.dumps(header))
    with pytest.raises(LedgerError, match="does not match"):
        prove(d, 0)
    with pytest.raises(LedgerError, match="not a ledger proof"):
        check_proof({"format": "x"}, None)


def test_cli_prove_and_verify_proof(tmp_path: Path) -> None:
    d = tmp_path / "L"
    led = Ledger.create(d, {}, 0, source_revision="r")
    for i in range(6):
        led.append("audit.fire", {"i": i})
    info = led.freeze()
    runner = CliRunner()
    res = runner.invoke(app, ["ledger", "prove", str(d), "4"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, PROOF_SCHEMA)
    assert doc["entry"]["body"] == {"i": 4} and doc["root"] == info.root
    proof = tmp_path / "p.json"
    proof.write_text(res.stdout)

    ok = runner.invoke(app, ["ledger", "verify-proof", str(proof), "--root", info.root, "--size", "6"])
    assert ok.exit_code == 0 and "ok: entry 4" in ok.stderr and "warning" not in ok.stderr
    unanchored = runner.invoke(app, ["ledger", "verify-proof", str(proof)])
    assert unanchored.exit_code == 0 and "warning: no --root" in unanchored.stderr
    wrong = runner.invoke(app, ["ledger", "verify-proof", str(proof), "--root", "f" * 64])
    assert wrong.exit_code == 1 and "not the anchor root" in wrong.stdout
    js = runner.invoke(app, ["ledger", "verify-proof", str(proof), "--root", "f" * 64, "--json"])
    assert js.exit_code == 1 and json.loads(js.stdout)["ok"] is False
    stdin = runner.invoke(app, ["ledger", "verify-proof", "-", "--root", info.root], input=res.stdout)
    assert stdin.exit_code == 0

    doc["entry"]["body"]["i"] = 5
    proof.write_text(json.dumps(doc))
    forged = runner.invoke(app, ["ledger", "verify-proof", str(proof), "--root", info.root])
    assert forged.exit_code == 1 and "does not match its hash" in forged.stdout

    proof.write_text("{not json")
    assert runner.invoke(app, ["ledger", "verify-proof", str(proof), "--root", info.root]).exit_code == 2
    assert runner.invoke(app, ["ledger", "verify-proof", str(tmp_path / "none.json")]).exit_code == 2
    assert runner.invoke(app, ["ledger", "prove", str(d), "6"]).exit_code == 2
