"""An MCP stdio proxy that checks every `tools/call` result against mined contracts (docs/proxy.md).

    client (stdin/stdout) <-> Proxy <-> MCP server (a subprocess: its stdin/stdout; stderr inherited)

MCP's stdio transport is newline-delimited JSON-RPC 2.0: one message a line, in both directions. The
proxy relays every line unchanged, in order, and changes only three kinds of server message:

* the response to a `tools/call` whose result breaks a rule of the called tool: the receipt is appended
  as an extra `text` content block (`{"outcome_contract": ...}`, one line of canonical JSON) and/or under
  `result._meta["contracts/outcome_contract"]` (`receipt_in`); `isError`, `structuredContent` and every
  other field stay as they were. The result checked is `structuredContent` when present, else the first
  text content block that holds JSON; a result with `isError: true`, or text that is not JSON, is not
  checked. A clean result's line is written back byte for byte (no message is re-serialised unless it
  changes);
* the response to `tools/list`, with `enrich_tools`: tools that declare no `outputSchema` get the
  registry's declared `output` when it is an object schema (what MCP allows there);
* a response that arrives after the proxy answered its request with a timeout error: dropped (the client
  has had its one answer).

Requests are matched to responses by JSON-RPC id (client ids only: requests the server sends the client,
such as sampling, pass through untouched, as do notifications and their answers). Batches (JSON arrays,
in MCP 2025-03-26 only) are handled element by element. A line that is not JSON is passed on as it is,
in either direction: the receiving side answers it as JSON-RPC says (a parse error), and the proxy
stays a transparent pipe.

The proxy answers for the server only when the server cannot: a request unanswered after `timeout`
seconds gets a JSON-RPC error (code -32001) and the server a `notifications/cancelled`; when the server
exits while requests are pending, each gets an error (code -32603) before the proxy stops with a
`CheckError` naming the command and exit status.

One proxy run is one episode: one `Session` (cross-call rules judged across its calls; recovery tools
limited to the tools the server listed), and with `log` one trace: every call is written, as soon as it
completes, as a flat trace record (DESIGN §2.1; `trace_id` per run, `step` in request order), flushed
per line, so `contracts ingest LOG` reads it as a corpus even while the proxy runs.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from output_contracts.checks.api import Checker, Session
from output_contracts.choices import RECEIPT_PLACES as RECEIPT_PLACES
from output_contracts.errors import CheckError, UsageError
from output_contracts.jsonutil import chunked_lines
from output_contracts.traces.tool_registry import schema_types

META_KEY = "contracts/outcome_contract"
TIMEOUT_CODE = -32001  # the MCP SDKs' "request timeout"
SERVER_GONE_CODE = -32603  # JSON-RPC internal error
_DROP = object()


@dataclass(frozen=True)
class ProxyOptions:
    """How the proxy delivers receipts and what else it does (see the module docstring)."""

    receipt_in: tuple[str, ...] = RECEIPT_PLACES
    log: Path | None = None
    timeout: float | None = None
    enrich_tools: bool = False
    trace_id: str | None = None
    #: seconds the server gets to exit once the client has closed its end, before SIGTERM (then SIGKILL)
    grace: float = 5.0

    def __post_init__(self) -> None:
        bad = [p for p in self.receipt_in if p not in RECEIPT_PLACES]
        if bad:
            raise UsageError(
                f"receipt places must be among {', '.join(RECEIPT_PLACES)} (or none), got {bad[0]!r}",
                field="receipt_in",
            )
        if self.timeout is not None and not self.timeout > 0:
            raise UsageError(f"timeout must be > 0 seconds, got {self.timeout}", field="timeout")


def parse_places(text: str) -> tuple[str, ...]:
    """`"text,meta"` -> ("text", "meta"); `"none"` -> ()."""
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    return () if parts == ("none",) else parts


@dataclass
class _Pending:
    """A client request the server has not answered yet."""

    id: Any
    method: str
    tool: str | None
    arguments: Any
    step: int
    started_at: str
    deadline: float | None
    cursor: bool = False


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _key(id_: Any) -> bytes:
    return orjson.dumps(id_)


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _field(d: dict[str, Any], key: str, kind: type[Any]) -> Any:
    """`d[key]` when it is of `kind`, else an empty one (messages from the wire are not trusted)."""
    v = d.get(key)
    return v if isinstance(v, kind) else kind()


def _eol(raw: bytes) -> bytes:
    return b"\r\n" if raw.endswith(b"\r\n") else b"\n"


def read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream as they arrive. A real file descriptor is read with `os.read`, not
    through its buffered reader: a daemon thread blocked inside a `BufferedReader` makes the interpreter
    abort at exit (it cannot take the reader's lock), and the proxy must be able to exit while the
    client is still connected (when the server dies)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        yield from iter(stream.readline, b"")
        return
    yield from chunked_lines(lambda n: os.read(fd, n))


def call_payload(result: dict[str, Any]) -> tuple[bool, Any]:
    """What a `tools/call` result says, as the checker reads it: `structuredContent`, else the first text
    block holding a JSON object or array; (False, text) when there is no JSON to check."""
    if "structuredContent" in result:
        return True, result["structuredContent"]
    texts = [
        b.get("text") for b in result.get("content") or () if isinstance(b, dict) and b.get("type") == "text"
    ]
    for t in texts:
        if isinstance(t, str) and t.lstrip()[:1] in ("{", "["):
            try:
                return True, orjson.loads(t)
            except orjson.JSONDecodeError:
                continue
    return False, "\n".join(t for t in texts if isinstance(t, str))


class Proxy:
    """One proxy run: `run()` starts the server, relays until either side ends, and returns the exit code."""

    def __init__(
        self,
        checker: Checker,
        command: Sequence[str],
        client_in: IO[bytes],
        client_out: IO[bytes],
        options: ProxyOptions | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if not command:
            raise UsageError("no server command: contracts proxy --contracts K -- SERVER_CMD [ARGS...]")
        self.checker = checker
        self.command = list(command)
        self.options = options or ProxyOptions()
        self.client_in = client_in
        self.client_out = client_out
        self.session: Session = checker.session()
        self.trace_id = self.options.trace_id or f"mcp-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{os.getpid()}"
        self._pending: dict[bytes, _Pending] = {}
        self._timed_out: set[bytes] = set()
        self._tools: list[str] = []
        self._steps = 0
        self._lock = threading.Lock()  # pending, steps, tools, log
        self._out_lock = threading.Lock()  # writes to the client
        self._in_lock = threading.Lock()  # writes to the server
        self._client_closed = threading.Event()
        self._done = threading.Event()
        self._log: IO[bytes] | None = None
        self._server: subprocess.Popen[bytes] | None = None
        self.warnings: list[str] = []
        self._warn = warn
        #: tool calls answered (by the server or, on timeout or exit, by the proxy) and receipts appended
        self.calls = 0
        self.receipts = 0

    def warn(self, message: str) -> None:
        """A problem that does not stop the relay (the checker failed on one result, the log is full)."""
        self.warnings.append(message)
        if self._warn is not None:
            self._warn(message)

    # ---- running ---------------------------------------------------------------------------------------

    def run(self) -> int:
        """Relay until the server's stdout ends; 0 on a clean shutdown (the client closed first)."""
        if self.options.log is not None:
            try:
                self._log = open(self.options.log, "ab")  # noqa: SIM115 - closed in `finally`
            except OSError as e:
                raise CheckError(f"cannot open the log: {e.strerror}", source=str(self.options.log)) from None
        try:
            try:
                self._server = subprocess.Popen(
                    self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
                )
            except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
                raise CheckError(
                    f"cannot start the MCP server: {e.strerror or e}", source=self.command[0], code="E_SERVER"
                ) from None
            threads = [threading.Thread(target=self._pump_client, name="proxy-client", daemon=True)]
            if self.options.timeout is not None:
                threads.append(
                    threading.Thread(target=self._watch_timeouts, name="proxy-timeouts", daemon=True)
                )
            for t in threads:
                t.start()
            self._pump_server()  # until the server closes its stdout
            code = self._server.wait()
            self._done.set()
            return self._finish(code)
        finally:
            self._done.set()
            if self._server is not None and self._server.poll() is None:
                self._server.kill()
                self._server.wait()
            if self._log is not None:
                self._log.close()

    def _finish(self, code: int) -> int:
        with self._lock:
            left = list(self._pending.values())
            self._pending.clear()
        for p in left:
            self._answer_error(
                p,
                SERVER_GONE_CODE,
                f"contracts proxy: the MCP server exited (status {code}) before answering",
            )
        if left:
            n = len(left)
            why = f"with {n} request{'s' if n != 1 else ''} unanswered"
        elif not self._client_closed.is_set():
            why = "while the client was still connected"
        elif code != 0:
            why = "after the client closed the connection"
        else:
            return 0
        raise CheckError(
            f"the MCP server exited with status {code} {why}", source=self.command[0], code="E_SERVER"
        )

    def _pump_client(self) -> None:
        try:
            for raw in read_lines(self.client_in):
                msg = _parse(raw)
                if msg is not None:
                    self._track(msg)
                if not self._to_server(raw):
                    break
        except (OSError, ValueError):
            pass
        self._client_closed.set()
        with self._in_lock:
            try:
                if self._server is not None and self._server.stdin is not None:
                    self._server.stdin.close()
            except OSError:
                pass
        self._stop_server_later()

    def _stop_server_later(self) -> None:
        """MCP's stdio shutdown: stdin closed; SIGTERM after the grace period; SIGKILL after as long again.

        The grace period starts once every pending request is answered (by the server, or by `timeout`):
        a client that sends its requests and closes at once (a replayed session) still gets its answers."""
        server = self._server
        if server is None:
            return
        while server.poll() is None and not self._done.is_set():
            with self._lock:
                if not self._pending:
                    break
            time.sleep(0.05)
        for signal_ in (server.terminate, server.kill):
            try:
                server.wait(self.options.grace)
                return
            except subprocess.TimeoutExpired:
                signal_()

    def _pump_server(self) -> None:
        assert self._server is not None and self._server.stdout is not None
        for raw in iter(self._server.stdout.readline, b""):
            out = self._from_server(raw)
            if out is not None:
                self._to_client(out)

    def _watch_timeouts(self) -> None:
        timeout = self.options.timeout or 0.0
        tick = min(0.05, timeout / 10)
        while not self._done.wait(tick):
            now = time.monotonic()
            with self._lock:
                late = [k for k, p in self._pending.items() if p.deadline is not None and p.deadline <= now]
                expired = [self._pending.pop(k) for k in late]
                self._timed_out.update(late)
            for p in expired:
                self._answer_error(
                    p, TIMEOUT_CODE, f"contracts proxy: the MCP server did not answer within {timeout:g} s"
                )
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {
                        "requestId": p.id,
                        "reason": f"timed out after {timeout:g} s (contracts proxy)",
                    },
                }
                self._to_server(orjson.dumps(cancel) + b"\n")

    # ---- both directions -------------------------------------------------------------------------------

    def _to_server(self, raw: bytes) -> bool:
        with self._in_lock:
            stdin = self._server.stdin if self._server is not None else None
            if stdin is None or stdin.closed:
                return False
            try:
                stdin.write(raw)
                stdin.flush()
            except (OSError, ValueError):
                return False
        return True

    def _to_client(self, raw: bytes) -> None:
        with self._out_lock:
            try:
                self.client_out.write(raw)
                self.client_out.flush()
            except (OSError, ValueError):
                pass  # the client is gone; its end closing stops the proxy

    def _track(self, msg: Any) -> None:
        """Remember the client's requests (one, or each of a batch) until the server answers them."""
        for m in msg if isinstance(msg, list) else (msg,):
            if not isinstance(m, dict) or "id" not in m or not isinstance(m.get("method"), str):
                continue
            params = _field(m, "params", dict)
            tool = params.get("name") if m["method"] == "tools/call" else None
            deadline = time.monotonic() + self.options.timeout if self.options.timeout else None
            with self._lock:
                step = self._steps
                if m["method"] == "tools/call":
                    self._steps += 1
                self._pending[_key(m["id"])] = _Pending(
                    id=m["id"],
                    method=m["method"],
                    tool=tool if isinstance(tool, str) else None,
                    arguments=_field(params, "arguments", dict),
                    step=step,
                    started_at=_now_iso(),
                    deadline=deadline,
                    cursor="cursor" in params,
                )

    def _from_server(self, raw: bytes) -> bytes | None:
        msg = _parse(raw)
        if msg is None:
            return raw
        if isinstance(msg, list):
            outs = [self._response(m) for m in msg]
            kept = [o for o in outs if o is not _DROP]
            if all(o is m for o, m in zip(outs, msg, strict=True)):
                return raw
            return orjson.dumps(kept) + _eol(raw) if kept else None
        out = self._response(msg)
        if out is msg:
            return raw
        if out is _DROP:
            return None
        return orjson.dumps(out) + _eol(raw)

    def _response(self, m: Any) -> Any:
        """The message to send on for one server message: itself, a changed copy, or `_DROP`."""
        if not isinstance(m, dict) or "method" in m or "id" not in m:
            return m  # a notification, a server-to-client request, or not JSON-RPC at all
        key = _key(m["id"])
        with self._lock:
            p = self._pending.pop(key, None)
            if p is None:
                if key in self._timed_out:
                    self._timed_out.discard(key)
                    return _DROP
                return m
        if p.method == "tools/call":
            return self._on_call(p, m)
        if p.method == "tools/list":
            return self._on_list(p, m)
        return m

    # ---- tools/list and tools/call ---------------------------------------------------------------------

    def _on_list(self, p: _Pending, m: dict[str, Any]) -> Any:
        result = m.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return m
        names = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
        with self._lock:
            self._tools = [*self._tools, *(n for n in names if n not in self._tools)] if p.cursor else names
            self.session.visible_tools = tuple(self._tools)
        registry = self.checker.registry
        if not self.options.enrich_tools or registry is None:
            return m
        new_tools, changed = [], False
        for t in tools:
            name = t.get("name") if isinstance(t, dict) else None
            spec = registry.get(name) if isinstance(name, str) else None
            out = spec.output if spec is not None else None
            if (
                spec is not None
                and "outputSchema" not in t
                and out is not None
                and schema_types(out, out) == frozenset({"object"})
            ):
                t = {**t, "outputSchema": dict(out)}
                changed = True
            new_tools.append(t)
        return {**m, "result": {**_field(m, "result", dict), "tools": new_tools}} if changed else m

    def _on_call(self, p: _Pending, m: dict[str, Any]) -> Any:
        tool = p.tool or ""
        result = m.get("result")
        if not isinstance(result, dict):
            err = m.get("error")
            message = err.get("message") if isinstance(err, dict) else None
            self._record(p, None, "error", str(message) if message is not None else "no result")
            return m
        ok, payload = call_payload(result)
        if result.get("isError") is True:
            self._record(p, payload if ok else None, "error", payload if not ok else "isError")
            return m
        receipt = None
        if ok:
            try:
                receipt = self.session.check(tool, p.arguments, payload, call_id=f"{self.trace_id}:{p.step}")
            except Exception as e:  # never break the call because the checker failed
                self.warn(f"checking {tool} failed ({type(e).__name__}: {e}); the result passes unchecked")
        else:
            self.session.failed(tool, p.arguments, call_id=f"{self.trace_id}:{p.step}")
        self._record(p, payload, "ok", None)
        if receipt is None:
            return m
        with self._lock:
            self.receipts += 1
        if not self.options.receipt_in:
            return m
        new = dict(result)
        if "text" in self.options.receipt_in:
            new["content"] = [*_field(result, "content", list), {"type": "text", "text": receipt.to_text()}]
        if "meta" in self.options.receipt_in:
            new["_meta"] = {**_field(result, "_meta", dict), META_KEY: receipt.outcome_contract()}
        return {**m, "result": new}

    def _answer_error(self, p: _Pending, code: int, message: str) -> None:
        """Answer a request the server will not answer, and log it when it is a tool call."""
        if p.method == "tools/call":
            self._record(p, None, "error", message)
            try:
                self.session.failed(p.tool or "", p.arguments)
            except Exception as e:
                self.warn(f"recording a failed call failed: {e}")
        err = {"jsonrpc": "2.0", "id": p.id, "error": {"code": code, "message": message}}
        self._to_client(orjson.dumps(err) + b"\n")

    def _record(self, p: _Pending, result: Any, status: str, error: str | None) -> None:
        """One flat trace record (DESIGN §2.1) per completed call, flushed at once."""
        with self._lock:
            self.calls += 1
        if self._log is None:
            return
        rec: dict[str, Any] = {
            "trace_id": self.trace_id,
            "step": p.step,
            "tool": p.tool or "",
            "arguments": p.arguments,
            "result": result,
            "status": status,
            "error": error,
            "started_at": p.started_at,
        }
        with self._lock:
            if self._tools:
                rec["tools"] = list(self._tools)
            try:
                self._log.write(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS) + b"\n")
                self._log.flush()
            except OSError as e:
                self.warn(f"cannot write the log: {e.strerror}")


def run_proxy(
    checker: Checker,
    command: Sequence[str],
    client_in: IO[bytes],
    client_out: IO[bytes],
    options: ProxyOptions | None = None,
    warn: Callable[[str], None] | None = None,
) -> int:
    """Run one proxy session (see the module docstring); the exit code, or a `CheckError` when the server
    cannot be started or exits while the client is still connected."""
    return Proxy(checker, command, client_in, client_out, options, warn).run()
