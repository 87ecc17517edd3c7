"""`contracts proxy` end to end: a real MCP server subprocess behind the proxy subprocess.

The server is written with the official `mcp` SDK (tests/checks/mcp_sdk_server.py; skipped when the
SDK is not installed) for the main test, and is docs/examples/mcp_inventory_server.py (no dependency,
with switches for slowness, crashes and notifications) for the robustness tests. In-process tests run
`run_proxy` over byte buffers for the delivery options.
"""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks.api import Checker
from output_contracts.checks.proxy import META_KEY, Proxy, ProxyOptions, call_payload, parse_places, run_proxy
from output_contracts.cli.app import app
from output_contracts.errors import CheckError, UsageError

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "sample-contracts.json"
REGISTRY = REPO / "sample_traces" / "tools.json"
PLAIN = REPO / "docs" / "examples" / "mcp_inventory_server.py"
SDK = Path(__file__).with_name("mcp_sdk_server.py")
WAIT = 180.0  # generous: the test machine may be shared

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(id_: int, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


BAD = call(3, "lookup_inventory", sku="SKU-11456")  # available = -3: breaks NONNEG
CLEAN = call(4, "query_warehouse", sku="SKU-11456", warehouse="central")


class Peer:
    """A subprocess spoken to line by line, as an MCP client speaks to a stdio server."""

    def __init__(self, argv: list[str]) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.p = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in iter(self.p.stdout.readline, b""):
            self.lines.put(line)

    def _read_err(self) -> None:
        assert self.p.stderr is not None
        self.stderr = self.p.stderr.read()

    def send(self, msg: Any) -> None:
        assert self.p.stdin is not None
        raw = msg if isinstance(msg, bytes) else orjson.dumps(msg) + b"\n"
        self.p.stdin.write(raw)
        self.p.stdin.flush()

    def recv(self, timeout: float = WAIT) -> bytes:
        return self.lines.get(timeout=timeout)

    def ask(self, msg: Any) -> bytes:
        self.send(msg)
        return self.recv()

    def close(self) -> tuple[int, str]:
        assert self.p.stdin is not None
        self.p.stdin.close()
        rc = self.p.wait(WAIT)
        self._err.join(WAIT)
        return rc, self.stderr.decode()


def proxy_argv(*opts: str, server: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "output_contracts.cli.app",
        "proxy",
        "--contracts",
        str(GOLDEN),
        *opts,
        "--",
        *server,
    ]


def _receipt(line: bytes) -> dict[str, Any]:
    msg = orjson.loads(line)
    blocks = msg["result"]["content"]
    oc: dict[str, Any] = json.loads(blocks[-1]["text"])["outcome_contract"]
    assert msg["result"]["_meta"][META_KEY] == oc
    return oc


def _ingest_and_check(log: Path, tmp: Path) -> tuple[int, str]:
    """The proxy's log read as a corpus: ingest it, then `contracts check` it against the same contracts."""
    r = CliRunner().invoke(app, ["ingest", str(log), "-o", str(tmp / "corpus"), "-q"])
    assert r.exit_code == 0, r.output
    c = CliRunner().invoke(app, ["check", "--contracts", str(GOLDEN), str(tmp / "corpus"), "-q"])
    return c.exit_code, c.stdout


# ---- the real SDK server -------------------------------------------------------------------------------


def test_sdk_server_behind_the_proxy(tmp_path: Path) -> None:
    """The issue's "done when": a real MCP server (official SDK) behind the proxy; the violating result
    comes back with its receipt and recovery tools, clean results byte-identical to a direct connection,
    and the recorded log ingests as a corpus."""
    pytest.importorskip("mcp.server.mcpserver")
    server = [sys.executable, str(SDK)]
    session = [INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, BAD, CLEAN]

    def talk(peer: Peer) -> list[bytes]:
        out = []
        for msg in session:
            peer.send(msg)
            if "id" in msg:
                out.append(peer.recv())
        return out

    direct = Peer(server)
    plain = talk(direct)
    assert direct.close()[0] == 0
    log = tmp_path / "calls.jsonl"
    proxied = Peer(proxy_argv("--log", str(log), "--trace-id", "mcp-e2e", server=server))
    got = talk(proxied)
    rc, err = proxied.close()
    assert rc == 0, err
    assert "proxy: 2 tool calls, 1 with receipts" in err
    # initialize, tools/list and the clean call: the very bytes the server wrote
    assert [got[i] for i in (0, 1, 3)] == [plain[i] for i in (0, 1, 3)]
    # the violating call: the server's result plus one text block and _meta, nothing else changed
    before, after = orjson.loads(plain[2]), orjson.loads(got[2])
    assert after["result"]["content"][:-1] == before["result"]["content"]
    assert after["result"]["structuredContent"] == before["result"]["structuredContent"]
    assert after["result"]["isError"] is False
    keep = ("content", "_meta")
    assert {k: v for k, v in after["result"].items() if k not in keep} == {
        k: v for k, v in before["result"].items() if k not in keep
    }
    oc = _receipt(got[2])
    assert oc["tool"] == "lookup_inventory" and oc["binding"] is False
    assert [(v["code"], v["path"], v["observed"]) for v in oc["violations"]] == [("NONNEG", "/available", -3)]
    # the server lists two tools: of lookup_inventory's substitutes only query_warehouse is offered
    assert oc["recovery_tools"] == ["lookup_inventory", "query_warehouse"]
    # the log: flat trace records, in order, that ingest reads and check finds the same violation in
    recs = [orjson.loads(x) for x in log.read_bytes().splitlines()]
    assert [(r["trace_id"], r["step"], r["tool"], r["status"]) for r in recs] == [
        ("mcp-e2e", 0, "lookup_inventory", "ok"),
        ("mcp-e2e", 1, "query_warehouse", "ok"),
    ]
    assert recs[0]["result"]["available"] == -3 and recs[0]["tools"] == [
        "lookup_inventory",
        "query_warehouse",
    ]
    code, receipts = _ingest_and_check(log, tmp_path)
    assert code == 1
    found = [json.loads(x) for x in receipts.splitlines()]
    assert [
        (r["outcome_contract"]["tool"], [v["code"] for v in r["outcome_contract"]["violations"]])
        for r in found
    ] == [("lookup_inventory", ["NONNEG"])]


# ---- robustness, with the dependency-free server -------------------------------------------------------


def test_malformed_batches_notifications_timeouts_and_enrichment(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    server = [sys.executable, str(PLAIN), "--chatty", "--delay", "query_warehouse=3"]
    peer = Peer(
        proxy_argv(
            "--registry", str(REGISTRY), "--enrich-tools", "--timeout", "1", "--log", str(log), server=server
        )
    )
    assert orjson.loads(peer.ask(INIT))["result"]["serverInfo"]["name"] == "inventory"
    peer.send(INITIALIZED)  # a notification: passed on, never answered
    tools = orjson.loads(peer.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))["result"]["tools"]
    # --enrich-tools: the registry's declared output, an object schema, becomes outputSchema
    assert [t["outputSchema"]["properties"]["available"] for t in tools] == [
        {"type": "integer", "minimum": 0}
    ] * 2
    # a line that is not JSON goes to the server, which answers with a parse error; the proxy goes on
    assert orjson.loads(peer.ask(b"this is not json\n"))["error"]["code"] == -32700
    # a batch: the server's notification first, then one array; the violating element gets its receipt
    peer.send([BAD, {"jsonrpc": "2.0", "id": 5, "method": "ping"}])
    assert orjson.loads(peer.recv())["method"] == "notifications/message"
    batch = orjson.loads(peer.recv())
    assert [m["id"] for m in batch] == [3, 5]
    assert [v["code"] for v in _receipt(orjson.dumps(batch[0]))["violations"]] == ["NONNEG"]
    # a slow server: the proxy answers the request after --timeout, the client can go on
    t0 = time.monotonic()
    peer.send(call(6, "query_warehouse", sku="SKU-11456", warehouse="central"))
    assert orjson.loads(peer.recv())["method"] == "notifications/message"
    timed_out = orjson.loads(peer.recv())
    waited = time.monotonic() - t0
    assert timed_out["id"] == 6 and timed_out["error"]["code"] == -32001, timed_out
    assert "did not answer within 1 s" in timed_out["error"]["message"]
    # the server is single-threaded: a ping sent while it sleeps times out as well ...
    assert orjson.loads(peer.ask({"jsonrpc": "2.0", "id": 7, "method": "ping"}))["error"]["code"] == -32001
    # ... and once it is free, the next request is answered; the late answers to 6 and 7 are dropped
    time.sleep(max(0.0, 3.5 - (time.monotonic() - t0)))
    pong = orjson.loads(peer.ask({"jsonrpc": "2.0", "id": 8, "method": "ping"}))
    assert pong == {"jsonrpc": "2.0", "id": 8, "result": {}}
    rc, err = peer.close()
    assert rc == 0, err
    assert 1 <= waited < 3 or os.getloadavg()[0] > 4  # answered before the server was (unless overloaded)
    recs = [orjson.loads(x) for x in log.read_bytes().splitlines()]
    assert [(r["step"], r["tool"], r["status"]) for r in recs] == [
        (0, "lookup_inventory", "ok"),
        (1, "query_warehouse", "error"),
    ]
    assert "did not answer within 1 s" in recs[1]["error"]


def test_server_crash_is_one_error_line_and_the_log_is_complete(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    server = [sys.executable, str(PLAIN), "--crash-on", "query_warehouse"]
    peer = Peer(proxy_argv("--log", str(log), "--trace-id", "crash", server=server))
    assert _receipt(peer.ask(BAD))["recovery_tools"] == [
        "lookup_inventory",
        "query_warehouse",
        "get_stock_by_sku",
    ]
    answer = orjson.loads(peer.ask(CLEAN))
    assert answer["id"] == 4 and answer["error"]["code"] == -32603
    assert "exited (status 3) before answering" in answer["error"]["message"]
    rc = peer.p.wait(WAIT)
    _, err = peer.close()
    assert rc == 2
    # the server's own stderr passes through; the proxy adds exactly one error line
    assert "inventory server: crashing on query_warehouse as asked" in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error[")]
    assert errors == [
        f"error[E_SERVER]: {sys.executable}: the MCP server exited with status 3 with 1 request unanswered"
    ]
    assert "Traceback" not in err
    recs = [orjson.loads(x) for x in log.read_bytes().splitlines()]
    assert [(r["step"], r["tool"], r["status"]) for r in recs] == [
        (0, "lookup_inventory", "ok"),
        (1, "query_warehouse", "error"),
    ]


def test_bad_command_lines_are_one_error_line(tmp_path: Path) -> None:
    runner = CliRunner()
    cases = {
        "no server command": (["proxy", "--contracts", str(GOLDEN)], "error[E_USAGE]", "no server command"),
        "not found": (
            ["proxy", "--contracts", str(GOLDEN), "--", str(tmp_path / "no-such-server")],
            "error[E_SERVER]",
            "no-such-server: cannot start the MCP server",
        ),
        "bad place": (
            ["proxy", "--contracts", str(GOLDEN), "--receipt-in", "text,body", "--", "true"],
            "error[E_USAGE]",
            "got 'body'",
        ),
        "enrich without registry": (
            ["proxy", "--contracts", str(GOLDEN), "--enrich-tools", "--", "true"],
            "error[E_USAGE]",
            "--enrich-tools needs --registry",
        ),
    }
    for name, (argv, code, text) in cases.items():
        r = runner.invoke(app, argv)
        assert r.exit_code == 2, (name, r.output)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith(code) and text in lines[0], (name, r.stderr)


# ---- in process: delivery options ----------------------------------------------------------------------


def _run(lines: list[Any], options: ProxyOptions, server: list[str] | None = None) -> list[bytes]:
    raw = b"".join(x if isinstance(x, bytes) else orjson.dumps(x) + b"\n" for x in lines)
    out = io.BytesIO()
    checker = Checker.load(GOLDEN, registry=REGISTRY)
    code = run_proxy(checker, server or [sys.executable, str(PLAIN)], io.BytesIO(raw), out, options)
    assert code == 0
    return out.getvalue().splitlines(keepends=True)


def test_receipt_places_and_byte_identity() -> None:
    msgs = [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, BAD, CLEAN]
    direct = subprocess.run(
        [sys.executable, str(PLAIN)],
        input=b"".join(orjson.dumps(m) + b"\n" for m in msgs),
        capture_output=True,
        check=True,
    ).stdout.splitlines(keepends=True)
    for places, text, meta in ((("text",), True, False), (("meta",), False, True), ((), False, False)):
        got = _run(msgs, ProxyOptions(receipt_in=places))
        assert got[0] == direct[0] and got[2] == direct[2]  # tools/list and the clean call: same bytes
        res = orjson.loads(got[1])["result"]
        base = orjson.loads(direct[1])["result"]
        assert len(res["content"]) == len(base["content"]) + int(text)
        assert (META_KEY in res.get("_meta", {})) is meta
        if not (text or meta):
            assert got[1] == direct[1]
    assert parse_places("none") == () and parse_places("text, meta") == ("text", "meta")
    with pytest.raises(UsageError):
        ProxyOptions(receipt_in=("html",))
    with pytest.raises(UsageError):
        ProxyOptions(timeout=0)


def test_call_payload_reads_structured_then_json_text() -> None:
    assert call_payload({"structuredContent": {"a": 1}, "content": [{"type": "text", "text": "{}"}]}) == (
        True,
        {"a": 1},
    )
    assert call_payload(
        {"content": [{"type": "text", "text": "note"}, {"type": "text", "text": '{"a": 2}'}]}
    ) == (
        True,
        {"a": 2},
    )
    assert call_payload({"content": [{"type": "image", "data": "x"}, {"type": "text", "text": "plain"}]}) == (
        False,
        "plain",
    )


def test_error_results_are_not_checked_and_crlf_lines_keep_their_ending() -> None:
    """`isError: true` passes unchanged (its text is not a result to hold to contracts); a changed line
    keeps the line ending the server used."""
    unknown = call(8, "lookup_inventory", sku="SKU-99999")  # the server answers isError: true
    got = _run([unknown, orjson.dumps(BAD) + b"\r\n"], ProxyOptions())
    err = orjson.loads(got[0])
    assert err["result"]["isError"] is True and len(err["result"]["content"]) == 1
    assert got[1].endswith(b"\n") and [v["code"] for v in _receipt(got[1])["violations"]] == ["NONNEG"]


def test_unstartable_server_is_a_check_error(tmp_path: Path) -> None:
    checker = Checker.load(GOLDEN)
    with pytest.raises(CheckError, match="cannot start the MCP server"):
        run_proxy(checker, [str(tmp_path / "nope")], io.BytesIO(b""), io.BytesIO())
    with pytest.raises(UsageError, match="no server command"):
        run_proxy(checker, [], io.BytesIO(b""), io.BytesIO())


# ---- properties of the relay ---------------------------------------------------------------------------

_CHECKER: list[Checker] = []


def _proxy() -> Proxy:
    """A proxy not started (its server never runs): the relay's line handling alone. One checker."""
    if not _CHECKER:
        _CHECKER.append(Checker.load(GOLDEN))
    return Proxy(_CHECKER[0], ["true"], io.BytesIO(), io.BytesIO())


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    msg=st.one_of(
        _json,
        st.fixed_dictionaries(
            {"jsonrpc": st.just("2.0"), "id": st.integers(0, 9) | st.text(max_size=3)},
            optional={"result": _json, "error": _json, "method": st.text(max_size=10), "params": _json},
        ),
    ),
    junk=st.binary(max_size=40),
)
def test_lines_nobody_asked_about_pass_byte_for_byte(msg: Any, junk: bytes) -> None:
    """A server line that answers no tracked `tools/call`/`tools/list` (any JSON, any JSON-RPC response
    to an untracked id, a notification, or bytes that are not JSON) comes out exactly as it went in."""
    p = _proxy()
    p._track({"jsonrpc": "2.0", "id": "tracked", "method": "ping"})  # a request of another method
    for raw in (orjson.dumps(msg) + b"\n", json.dumps(msg, indent=None).encode() + b"\r\n", junk + b"\n"):
        assert p._from_server(raw) == raw


@settings(max_examples=60, deadline=None)
@given(
    available=st.integers(-50, 50), extra=st.dictionaries(st.sampled_from(["x", "y", "z"]), _json, max_size=2)
)
def test_a_tracked_call_changes_only_by_the_receipt(available: int, extra: dict[str, Any]) -> None:
    """For a tracked tools/call: a result that holds comes back byte for byte; one that breaks a rule comes
    back equal to the server's message plus exactly the receipt block and the `_meta` entry."""
    p = _proxy()
    p._track(call(1, "lookup_inventory", sku="SKU-11456"))
    data = {
        "sku": "SKU-11456",
        "warehouse": "central",
        "on_hand": 20 + max(available, 0),
        "reserved": 20 - min(available, 0) if available < 0 else 20,
        "available": available,
        "status": "in_stock" if available > 0 else "out_of_stock",
        "unit_cost": 70.83,
        "bin_location": "C-10-6",
        "last_counted_at": "2026-01-05T01:54:21Z",
    }
    data["on_hand"] = data["reserved"] + available
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": data, **extra}}
    raw = orjson.dumps(msg) + b"\n"
    out = p._from_server(raw)
    assert out is not None
    if available >= 0 and out == raw:
        return
    assert available < 0
    got = orjson.loads(out)
    oc = got["result"]["_meta"].pop(META_KEY)
    assert not got["result"]["_meta"] or "_meta" in extra
    if not got["result"]["_meta"] and "_meta" not in extra:
        del got["result"]["_meta"]
    block = got["result"]["content"].pop()
    assert json.loads(block["text"]) == {"outcome_contract": oc}
    assert "NONNEG" in [v["code"] for v in oc["violations"]]
    assert got == msg


def test_a_client_that_closes_at_once_still_gets_its_answers() -> None:
    """A replayed session closes stdin right after its last request: the shutdown grace period starts
    only once every pending request is answered, so a slow answer is not cut off."""
    slow = [sys.executable, str(PLAIN), "--delay", "query_warehouse=1.5"]
    got = _run([CLEAN], ProxyOptions(grace=0.2), server=slow)
    assert len(got) == 1
    assert orjson.loads(got[0])["result"]["content"][0]["type"] == "text"
