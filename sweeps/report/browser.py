"""Open a report in headless Chromium, as a reader's browser would, over the DevTools protocol
on a pipe (``--remote-debugging-pipe``: no port, no extra package): what the page logged to the
console at each level, uncaught exceptions, values of expressions on the rendered DOM, and a
screenshot of the first screen.

Chromium is Debian's ``chromium`` (the Makefile installs it); ``SYSTOLIC_CHROMIUM`` names
another binary.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["Browser", "BrowserError", "chromium"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(RuntimeError):
    """No browser, or the browser did not answer."""


def chromium() -> str:
    """The Chromium binary: ``SYSTOLIC_CHROMIUM`` or the first on PATH."""
    named = os.environ.get("SYSTOLIC_CHROMIUM")
    found = named or next((p for n in _NAMES if (p := shutil.which(n))), None)
    if not found:
        raise BrowserError("no Chromium found (Debian: apt-get install chromium; `make test` "
                           "installs it), or set SYSTOLIC_CHROMIUM")  # fmt: skip
    return found


class Browser:
    """One headless Chromium with one page of ``width`` x ``height`` CSS pixels."""

    def __init__(self, width: int = 1280, height: int = 800, timeout: float = 60.0):
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="systolic-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def pipes() -> None:  # in the child: the protocol's fds 3 (commands) and 4 (replies)
            commands = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)  # out of 3 and 4's way
            replies = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self._proc = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe", "--hide-scrollbars",
             f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=pipes, pass_fds=(3, 4),  # kept open past the child's close_fds
        )  # fmt: skip
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget",
                                   {"targetId": target, "flatten": True})["sessionId"]  # fmt: skip
        for domain in ("Runtime", "Log", "Page"):
            self._call(f"{domain}.enable", session=True)
        self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                   "deviceScaleFactor": 1, "mobile": False}, session=True)  # fmt: skip

    # -- the protocol ---------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self._proc.poll() is not None:
                raise BrowserError("Chromium did not answer in time"
                                   if left <= 0 else "Chromium exited")  # fmt: skip
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed its pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _call(self, method: str, params: dict | None = None, *, session: bool = False) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _wait_for(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == method for e in self.events):
            reply = self._receive(deadline)
            if "method" in reply:
                self.events.append(reply)

    # -- what a test asks -----------------------------------------------------------------------
    def open(self, path: str | Path) -> None:
        """Load the file and wait for its load event."""
        self.events.clear()
        self._call("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=True)
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression on the page."""
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True}, session=True)  # fmt: skip
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def settle(self, expression: str, seconds: float = 10.0) -> object:
        """Poll ``expression`` until it is truthy (rendering finishes after the load event)."""
        deadline = time.monotonic() + seconds
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "warning", "assert"):  # fmt: skip
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                out.append(f"console.{p['type']}: {text}")
            elif e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(
                    f"exception: {d.get('exception', {}).get('description') or d.get('text')}"
                )
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry']['text']} ({p['entry'].get('url', '')})")
        return out

    def screenshot(self, path: str | Path) -> Path:
        """A PNG of the page's first screen (the viewport)."""
        data = self._call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self._call("Browser.close")
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
