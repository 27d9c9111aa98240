"""A desktop served by the controller server (blindact.desktop.server), reached over HTTP.

`RemoteDesktop` implements the Desktop protocol against any controller server: one in a container
over a unix socket (the docker provider), or one on a VM or another machine over TCP. It raises
the same exception types the in-process desktop would (ActionError, SetupError, DesktopError), so
the env cannot tell them apart. A step (act + settle + observe) is one round trip.

Screenshots come back through a folder both sides see when there is one (`share_dir`: a tmpfs
file is ~10x cheaper than 2.7 MB of HTTP body), else compressed in the answer.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from blindact.actions import Action, ActionError, action_to_dict
from blindact.checks.result import CheckResult
from blindact.desktop.base import DesktopError, Observed, ResetTiming, SetupError

OnBroken = Callable[[str, Exception], DesktopError]


def _default_broken(what: str, exc: Exception) -> DesktopError:
    return DesktopError(f"the desktop's controller failed during {what}: {type(exc).__name__}: {exc}")


class RemoteDesktop:
    """width/height: the screen size; sandbox_kind: what the server side runs the agent's apps in;
    name: how errors name this desktop (e.g. "desktop container 0123456789ab"); on_broken: turns a
    transport failure into a DesktopError that says why (e.g. with the container's logs)."""

    def __init__(self, client: httpx.Client, *, width: int, height: int, sandbox_kind: str,
                 name: str = "the remote desktop", share_dir: Path | None = None, reset_timeout: float = 120.0,
                 on_broken: OnBroken = _default_broken):
        self.http = client
        self.name = name
        self.width = width
        self.height = height
        self.sandbox_kind = sandbox_kind
        self.share_dir = share_dir
        self.reset_timeout = reset_timeout
        self.on_broken = on_broken

    @classmethod
    def over_unix_socket(cls, socket_path: Path, **kwargs) -> "RemoteDesktop":
        client = httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), base_url="http://desktop",
                              timeout=httpx.Timeout(30.0, connect=5.0))
        return cls(client, share_dir=socket_path.parent, **kwargs)

    @classmethod
    def over_tcp(cls, base_url: str, **kwargs) -> "RemoteDesktop":
        return cls(httpx.Client(base_url=base_url, timeout=httpx.Timeout(30.0, connect=5.0)), **kwargs)

    def close(self) -> None:
        self.http.close()

    # ---------------------------------------------------------------- HTTP
    def request(self, method: str, path: str, what: str, *, timeout: float | None = None, **kw) -> httpx.Response:
        try:
            r = self.http.request(method, path, timeout=timeout if timeout is not None else 30.0, **kw)
        except httpx.TransportError as exc:
            raise self.on_broken(what, exc) from exc
        if r.status_code < 400:
            return r
        try:
            body = r.json()
            kind, message = body.get("error", "internal"), body.get("message", r.text)
        except ValueError:
            kind, message = "internal", r.text
        if kind == "action":
            raise ActionError(message)
        if kind == "setup":
            raise SetupError(f"{message} ({self.name})")
        if kind == "request":
            raise ValueError(f"the desktop server rejected {what}: {message}")
        raise DesktopError(f"{self.name} failed during {what}: {message}")

    def _frame(self, shot: dict) -> np.ndarray:
        w, h = int(shot["width"]), int(shot["height"])
        if "file" in shot:
            try:
                frame = np.fromfile(self.share_dir / shot["file"], dtype=np.uint8)
            except (OSError, TypeError) as exc:
                raise self.on_broken("screenshot (reading the frame file)", exc) from exc
            if frame.size != w * h * 3:
                raise DesktopError(f"screenshot file holds {frame.size} bytes, expected {w}x{h}x3")
            return frame.reshape(h, w, 3)
        data = base64.b64decode(shot["png"])
        return np.array(Image.open(io.BytesIO(data)).convert("RGB"))  # writable, as a local screenshot is

    def _screenshot_mode(self) -> str:
        return "file" if self.share_dir is not None else "png"

    # ---------------------------------------------------------------- Desktop protocol
    def start(self) -> None:
        """The server's desktop is up once it answers; nothing to start from here."""

    def reset(self, setup: list[dict]) -> ResetTiming:
        r = self.request("POST", "/reset", "reset", json={"setup": setup}, timeout=self.reset_timeout)
        body = r.json()
        return ResetTiming(float(body["total_s"]), dict(body.get("phases") or {}))

    def execute(self, action: Action) -> None:
        self.request("POST", "/action", f"action {action.type}", json=action_to_dict(action), timeout=60.0)

    def settle(self, max_wait: float = 1.5) -> float:
        r = self.request("POST", "/settle", "settle", json={"max_wait": max_wait}, timeout=max_wait + 30.0)
        return float(r.json()["waited_s"])

    def step(self, actions: list[Action]) -> Observed:
        r = self.request("POST", "/step", "step", timeout=120.0,
                         json={"actions": [action_to_dict(a) for a in actions], "screenshot": self._screenshot_mode()})
        body = r.json()
        return Observed(self._frame(body["screenshot"]), body["tree"], int(body["executed"]), body["error"],
                        {k: float(v) for k, v in body["timing"].items()}, list(body.get("effects") or []))

    def screenshot(self) -> np.ndarray:
        r = self.request("GET", "/screenshot", "screenshot", params={"format": self._screenshot_mode()})
        return self._frame(r.json())

    def accessibility_tree(self) -> str:
        return self.request("GET", "/a11y", "accessibility tree").text

    def show_message(self, title: str, text: str) -> None:
        self.request("POST", "/message", "showing a message", json={"title": title, "text": text})

    def run_checks(self, checks: list[dict]) -> list[CheckResult]:
        r = self.request("POST", "/checks", "state checks", json={"checks": checks}, timeout=60.0)
        return [CheckResult(**item) for item in r.json()]

    def health(self) -> dict[str, bool]:
        r = self.request("GET", "/health", "health check", timeout=10.0)
        return r.json().get("procs", {})
