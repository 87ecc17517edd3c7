"""A headless Chromium driven over the Chrome DevTools Protocol on a pipe, with the standard library only.

`chromium --remote-debugging-pipe` reads protocol commands (JSON, each ended by a NUL byte) on fd 3 and
writes replies and events on fd 4. `Browser.load` opens a page, waits for its load event and collects
everything the page reports: console calls of any level, uncaught exceptions, and log entries (a CSP
violation or a failed fetch is one); `evaluate` runs an expression in the page and `screenshot` writes a
PNG of the whole page (or a clip of it). Nothing here touches the network: the pages are local files.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: Debian's /usr/bin/chromium is a shell launcher; the browser itself is under /usr/lib/chromium.
CANDIDATES = (
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
)


def find_chromium() -> str | None:
    """The browser binary: $CHROMIUM, then the distribution's paths, then PATH."""
    env = os.environ.get("CHROMIUM")
    if env and Path(env).exists():
        return env
    for c in CANDIDATES:
        if Path(c).exists():
            return c
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless browser process; use as a context manager."""

    def __init__(self, binary: str, *, width: int = 1100, height: int = 900, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="contracts-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()

        def wire() -> None:  # in the child: the protocol's fds are 3 (commands) and 4 (replies)
            a, b = os.dup(cmd_r), os.dup(evt_w)  # above 4 first: the pipe's own fds may be 3 or 4
            os.dup2(a, 3)  # dup2 makes them inheritable
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            close_fds=False,
        )
        os.close(cmd_r)
        os.close(evt_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain, session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._evt_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- the protocol ----------------------------------------------------------------------------------

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from the browser")
            chunk = os.read(self._evt_r, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its protocol pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        out: dict[str, Any] = json.loads(msg)
        return out

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; events that arrive meanwhile are kept."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                result: dict[str, Any] = m.get("result", {})
                return result
            if "method" in m:
                self.events.append(m)

    def _wait_event(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(ev["method"] == method for ev in self.events):
            m = self._read(deadline)
            if "method" in m:
                self.events.append(m)

    # -- what a test uses ------------------------------------------------------------------------------

    def load(self, url: str) -> None:
        """Open `url` and wait for its load event (then a moment for late scripts)."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self._wait_event("Page.loadEventFired")
        self.evaluate("new Promise(r => setTimeout(r, 100))")

    def problems(self) -> list[str]:
        """Everything the page reported: console calls of any level, uncaught exceptions, log entries."""
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled":
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append(f"console.{p.get('type')}: {args}")
            elif ev["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"uncaught: {d.get('exception', {}).get('description') or d.get('text')}")
            elif ev["method"] == "Log.entryAdded":
                e = p.get("entry", {})
                out.append(f"log.{e.get('level')}: {e.get('text')}")
        return out

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def pdf(self, path: Path) -> Path:
        """The page printed to PDF (print media: the `@media print` styles apply)."""
        data = self.call("Page.printToPDF", {"printBackground": False}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def screenshot(self, path: Path, *, clip: dict[str, float] | None = None) -> Path:
        """A PNG of the whole page (or `clip`: x, y, width, height in CSS pixels)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        else:
            w, h = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
