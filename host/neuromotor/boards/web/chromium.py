"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol: open a page,
evaluate JavaScript in it, take its downloads. The tests and benchmarks use it to run the
browser board's page. Every instance is stopped on exit, its profile directory removed.

    with Chromium(download_dir=d) as b:
        b.open("http://127.0.0.1:8000/?steps=2000")
        b.wait_for("window.nmState.done", timeout=60)
        state = b.evaluate("window.nmState")
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from neuromotor.errors import UserError

BINARIES = ("chromium", "chromium-browser", "google-chrome")


class BrowserError(RuntimeError):
    pass


def find_binary() -> str:
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path
    raise UserError("no Chromium found (Debian: apt-get install chromium, or device/port/setup_system.sh)")


class Chromium:
    def __init__(self, download_dir=None, offline=True, start_timeout=30.0):
        """offline: every host name but 127.0.0.1 fails to resolve, so a page that needed
        anything from elsewhere would break."""
        from websockets.sync.client import connect

        self.profile = Path(tempfile.mkdtemp(prefix="nm-chromium-"))
        args = [find_binary(), "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update", "--mute-audio",
                "--disable-gpu", "about:blank"]
        if offline:
            args.insert(1, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
        if os.geteuid() == 0:  # Chromium's sandbox refuses root
            args.insert(1, "--no-sandbox")
        self._log = open(self.profile / "chromium.log", "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._id = 0
        self.events = []
        self.session = None
        try:
            port_file = self.profile / "DevToolsActivePort"
            deadline = time.monotonic() + start_timeout
            while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
                if self.proc.poll() is not None:
                    raise BrowserError(f"chromium exited with {self.proc.returncode}: {self._tail()}")
                if time.monotonic() > deadline:
                    raise BrowserError(f"chromium did not start within {start_timeout:.0f} s: {self._tail()}")
                time.sleep(0.05)
            port, path = port_file.read_text().split()[:2]
            # entered by hand: closed in close(), not at the end of a with block
            self.ws = connect(f"ws://127.0.0.1:{port}{path}", max_size=None,
                              open_timeout=start_timeout).__enter__()
            target = self.send("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
            self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                     browser=True)["sessionId"]
            self.send("Page.enable")
            self.send("Network.enable")
            self.send("Runtime.enable")
            if download_dir is not None:
                self.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(download_dir)},
                          browser=True)
        except BaseException:
            self.close()
            raise

    def _tail(self) -> str:
        self._log.flush()
        return (self.profile / "chromium.log").read_text(errors="replace")[-2000:]

    def send(self, method, params=None, browser=False, timeout=60.0):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if not browser:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"{method}: no answer within {timeout:.0f} s")
            reply = json.loads(self.ws.recv(timeout=left))
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def open(self, url: str):
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str, await_promise=False, timeout=60.0):
        """The expression's value (JSON-serialisable), or BrowserError with the page's exception."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": await_promise}, timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise BrowserError(d.get("exception", {}).get("description") or d.get("text"))
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float, poll: float = 0.2, fail=None):
        """Poll until the expression is truthy; return its value. fail: an expression whose
        truthy value (a message) stops the wait at once."""
        deadline = time.monotonic() + timeout
        while True:
            if fail is not None:
                bad = self.evaluate(fail)
                if bad:
                    raise BrowserError(f"the page failed: {bad}")
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"{expression} still false after {timeout:.0f} s")
            time.sleep(poll)

    def requested_urls(self):
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self):
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                self.send("Browser.close", browser=True, timeout=5)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
            ws.close()
            self.ws = None
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        # Chromium's helpers (renderer, GPU, zygote) live in the process group it leads
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
