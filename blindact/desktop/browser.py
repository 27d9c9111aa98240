"""The desktop's Chromium, driven between episodes over the DevTools protocol on a private pipe.

Chromium is started with --remote-debugging-pipe: it reads DevTools commands from fd 3 and answers
on fd 4. Only the controller holds the other ends, so nothing inside the sandbox (the agent's
terminal, a web page) can reach the protocol: there is no debugging port. It starts with no window
(--no-startup-window), on a profile made for it: the task's page opens in a window over the pipe, with
no one's cookies, site data or cache there to clear. So the next episode's browser can be started
ahead, while this one runs (a spare: DesktopSession), and taken only if nothing reached it
(`untouched`). Browsing history is never saved (a managed policy), so nothing of one episode shows in
the next.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from concurrent.futures import Future
from pathlib import Path
from urllib.parse import urlsplit

from blindact.desktop.procs import Proc


class CDPError(RuntimeError):
    pass


class CDPPipe:
    """A minimal DevTools client over Chromium's --remote-debugging-pipe (NUL-separated JSON)."""

    def __init__(self, write_fd: int, read_fd: int):
        self._write = os.fdopen(write_fd, "wb", buffering=0)
        self._read = os.fdopen(read_fd, "rb", buffering=0)
        self._next_id = 0
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self._read.read(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                message = json.loads(raw)
                future = self._pending.pop(message.get("id", -1), None)
                if future is not None:
                    future.set_result(message)
        self._closed = True
        for future in list(self._pending.values()):
            future.set_exception(CDPError("the browser closed its DevTools pipe"))
        self._pending.clear()

    def call(self, method: str, params: dict | None = None, session_id: str | None = None,
             timeout: float = 10.0) -> dict:
        return self.result(self.send(method, params, session_id), method, timeout)

    def result(self, future: Future, method: str, timeout: float = 10.0) -> dict:
        reply = future.result(timeout)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message', reply['error'])}")
        return reply.get("result", {})

    def send(self, method: str, params: dict | None = None, session_id: str | None = None) -> Future:
        """Send a command without waiting; the future holds the raw reply."""
        if self._closed:
            raise CDPError("the browser's DevTools pipe is closed")
        with self._lock:
            self._next_id += 1
            msg_id = self._next_id
            future: Future = Future()
            self._pending[msg_id] = future
            message = {"id": msg_id, "method": method, "params": params or {}}
            if session_id:
                message["sessionId"] = session_id
            try:
                self._write.write(json.dumps(message).encode() + b"\0")
            except OSError as exc:
                self._pending.pop(msg_id, None)
                raise CDPError(f"cannot write to the browser's DevTools pipe: {exc}") from exc
        return future

    def close(self) -> None:
        for f in (self._write, self._read):
            try:
                f.close()
            except OSError:
                pass


class Browser:
    """A running Chromium, its DevTools pipe, the programs that serve it (`helpers`: the web apps' port
    forwarder in its network) and its profile folder (removed when it stops)."""

    def __init__(self, proc: Proc, cdp: CDPPipe, profile: Path, helpers: list[Proc] | None = None):
        self.proc = proc
        self.cdp = cdp
        self.profile = profile
        self.helpers = helpers or []

    @property
    def alive(self) -> bool:
        return self.proc.alive and all(h.alive for h in self.helpers)

    def untouched(self, timeout: float) -> bool:
        """Running, answering within `timeout`, and with no page, worker or other target at all: what a browser
        started with no window is until a window is opened over the pipe. Anything else means something
        reached it (a page opened through its singleton socket, an X client that killed it)."""
        if not self.alive:
            return False
        try:
            return self.cdp.call("Target.getTargets", timeout=timeout)["targetInfos"] == []
        except (CDPError, TimeoutError):
            return False

    def page_targets(self) -> list[dict]:
        infos = self.cdp.call("Target.getTargets")["targetInfos"]
        return [t for t in infos if t["type"] == "page"]

    def page_ready(self, url: str) -> bool:
        """Whether a page showing `url` (its newest window) has finished loading (document.readyState
        is "complete"), asked over the pipe: true even while another app's window hides the page."""
        host = urlsplit(url).netloc  # a redirect may change the path, not the site
        pages = [t for t in self.page_targets() if urlsplit(t.get("url", "")).netloc == host]
        if not pages:
            return False
        session = self.cdp.call("Target.attachToTarget", {"targetId": pages[-1]["targetId"], "flatten": True})["sessionId"]
        try:
            reply = self.cdp.call("Runtime.evaluate", {"expression": "document.readyState", "returnByValue": True},
                                  session, timeout=2.0)
        finally:
            self.cdp.call("Target.detachFromTarget", {"sessionId": session})
        return reply.get("result", {}).get("value") == "complete"

    def open_page(self, url: str) -> None:
        """Show `url` in a new window. Nothing is cleared first: every browser runs on a profile made for it
        (`DesktopSession._start_browser`) and opens this one page (a spare is taken only while `untouched`), so
        there are no cookies, site data or cache of anyone's to forget."""
        self.cdp.call("Target.createTarget", {"url": url, "newWindow": True})

    def stop(self) -> None:
        self.proc.stop(timeout=1.0)
        for helper in self.helpers:
            helper.stop(timeout=1.0)
        self.cdp.close()
        shutil.rmtree(self.profile, ignore_errors=True)
