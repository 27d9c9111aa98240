"""The controller server that runs inside a desktop container.

It wraps one `DesktopSession` (the same code the local provider runs in-process) behind a small HTTP
API on a unix socket in a folder the host bind-mounts, so the container keeps `--network none`.

    GET  /health                      {"ok": bool, "procs": {name: alive}}
    POST /reset     {"setup": [...]}   ResetTiming as {"total_s", "phases"}
    POST /step      {"actions": [...], "screenshot": "file"|"png"}
                                      act, settle, observe in one round trip:
                                      {"tree", "executed", "error", "timing", "screenshot": SHOT}
    POST /action    canonical action   {} ; 422 for an action that cannot be done
    POST /settle    {"max_wait": s}    {"waited_s": s}
    GET  /screenshot?format=file|png   SHOT
    GET  /a11y                        text/plain accessibility tree
    POST /message   {"title", "text"}  {} ; a message window on the screen
    POST /checks    {"checks": [...]}  [CheckResult dicts]
    GET  /info                        {"width", "height", "pid", "sandbox"}

SHOT is {"width", "height"} plus "file": the raw RGB bytes written to frame.rgb beside the socket
(the folder the host mounts: ~2 ms against 15-35 ms for 2.7 MB of HTTP body), or "png": the image
compressed, base64 (for a client that shares no folder).

Errors are JSON {"error": kind, "message": text}; kind is one of action, setup, desktop, request,
internal, so the client can raise the same exception type the local provider would.

Every desktop call runs on one long-lived thread: the session's children are tied to the thread
that started them (PR_SET_PDEATHSIG), and X/mss handles to the thread that opened them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from blindact.actions import ActionError, action_from_dict
from blindact.desktop.base import Desktop, DesktopError, SetupError
from blindact.desktop.sandbox import SANDBOX_KINDS

log = logging.getLogger("blindact.server")


def _error(kind: str, message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message}, status_code=status)


class DesktopRunner:
    """Serialises every call to the desktop onto one dedicated thread."""

    def __init__(self, factory: Callable[[], Desktop]):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desktop")
        self.desktop: Desktop = self._pool.submit(factory).result()

    def start(self) -> None:
        self._pool.submit(self.desktop.start).result()

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.wrap_future(self._pool.submit(fn, *args))

    def close(self) -> None:
        try:
            self._pool.submit(self.desktop.close).result(timeout=30)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)


def create_app(runner: DesktopRunner, share_dir: Path | None = None) -> Starlette:
    """share_dir: a folder the client reads too (the socket's), for screenshots passed as a file."""
    desktop = runner.desktop

    async def guarded(request: Request, handler) -> Response:
        try:
            return await handler(request)
        except ActionError as exc:
            return _error("action", str(exc), 422)
        except SetupError as exc:
            return _error("setup", str(exc), 409)
        except DesktopError as exc:
            return _error("desktop", str(exc), 500)
        except (ValidationError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
            return _error("request", f"{type(exc).__name__}: {exc}", 400)
        except Exception as exc:  # noqa: BLE001 - any other failure is reported, never hidden
            log.exception("unexpected error on %s", request.url.path)
            tail = "".join(traceback.format_exception(exc)[-3:])
            return _error("internal", f"{type(exc).__name__}: {exc}\n{tail}", 500)

    def route(path: str, methods: list[str]):
        def wrap(handler):
            async def endpoint(request: Request) -> Response:
                return await guarded(request, handler)

            return Route(path, endpoint, methods=methods)

        return wrap

    @route("/health", ["GET"])
    async def health(request: Request) -> Response:
        procs = await runner.call(desktop.health)
        return JSONResponse({"ok": all(procs.values()) if procs else False, "procs": procs})

    @route("/info", ["GET"])
    async def info(request: Request) -> Response:
        return JSONResponse({"width": desktop.width, "height": desktop.height, "pid": os.getpid(),
                             "sandbox": desktop.sandbox_kind})

    def shot(rgb, mode: str) -> dict:
        h, w = rgb.shape[:2]
        if mode == "file":
            if share_dir is None:
                raise ValueError("screenshot mode 'file' needs a folder shared with the client; use png")
            tmp = share_dir / "frame.rgb.tmp"
            rgb.tofile(tmp)
            os.replace(tmp, share_dir / "frame.rgb")
            return {"width": w, "height": h, "file": "frame.rgb"}
        if mode == "png":
            from blindact.imaging import b64, encode_png

            return {"width": w, "height": h, "png": b64(encode_png(rgb))}
        raise ValueError(f"screenshot mode must be file or png, not {mode!r}")

    @route("/step", ["POST"])
    async def step(request: Request) -> Response:
        body = await request.json()
        actions = [action_from_dict(a) for a in body.get("actions") or []]
        observed = await runner.call(desktop.step, actions)
        return JSONResponse({"tree": observed.tree, "executed": observed.executed, "error": observed.error,
                             "timing": observed.timing, "effects": observed.effects,
                             "screenshot": shot(observed.screenshot, body.get("screenshot", "png"))})

    @route("/message", ["POST"])
    async def message(request: Request) -> Response:
        body = await request.json()
        await runner.call(desktop.show_message, str(body["title"]), str(body["text"]))
        return JSONResponse({})

    @route("/reset", ["POST"])
    async def reset(request: Request) -> Response:
        body = await request.json()
        timing = await runner.call(desktop.reset, list(body.get("setup") or []))
        return JSONResponse({"total_s": timing.total_s, "phases": timing.phases})

    @route("/action", ["POST"])
    async def action(request: Request) -> Response:
        act = action_from_dict(await request.json())
        await runner.call(desktop.execute, act)
        return JSONResponse({})

    @route("/settle", ["POST"])
    async def settle(request: Request) -> Response:
        body = await request.json()
        waited = await runner.call(desktop.settle, float(body.get("max_wait", 1.5)))
        return JSONResponse({"waited_s": waited})

    @route("/screenshot", ["GET"])
    async def screenshot(request: Request) -> Response:
        rgb = await runner.call(desktop.screenshot)
        return JSONResponse(shot(rgb, request.query_params.get("format", "png")))

    @route("/a11y", ["GET"])
    async def a11y(request: Request) -> Response:
        return PlainTextResponse(await runner.call(desktop.accessibility_tree))

    @route("/checks", ["POST"])
    async def checks(request: Request) -> Response:
        body = await request.json()
        results = await runner.call(desktop.run_checks, list(body.get("checks") or []))
        return JSONResponse([r.to_dict() for r in results])

    return Starlette(routes=[health, info, reset, step, action, settle, screenshot, a11y, message, checks])


def _session_factory(root: Path, width: int, height: int, sandbox: str) -> Callable[[], Desktop]:
    def make() -> Desktop:
        from blindact.desktop.session import DesktopSession

        return DesktopSession(root, width=width, height=height, sandbox=sandbox)

    return make


def socket_folder_problem(folder: Path) -> str:
    """Why the agent (the uid sandbox's account) could reach the controller's socket in `folder`
    ("" when it cannot): the folder must be private to its owner, and that owner not the agent."""
    import pwd

    from blindact.desktop.sandbox import SANDBOX_USER, uid_problem

    problem = uid_problem()
    if problem:
        return f"the uid sandbox cannot run: {problem}"
    try:
        st = folder.stat()
    except OSError as exc:
        return f"the controller's socket folder {folder} is not there ({exc})"
    agent = pwd.getpwnam(SANDBOX_USER).pw_uid
    if st.st_mode & 0o077:
        return f"the controller's socket folder {folder} is open to others (mode {st.st_mode & 0o777:o}); make it 0700"
    if st.st_uid == agent:
        return (f"the controller's socket folder {folder} belongs to uid {agent}, the account the agent's apps run as; "
                f"run the host side as another user")
    return ""


def serve(runner: DesktopRunner, uds: Path) -> None:
    import uvicorn

    uds.parent.mkdir(parents=True, exist_ok=True)
    uds.unlink(missing_ok=True)
    config = uvicorn.Config(create_app(runner, share_dir=uds.parent), uds=str(uds), log_level="warning", access_log=False,
                            lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    try:
        server.run()
    finally:
        uds.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m blindact.desktop.server",
                                     description="Serve one desktop's controller on a unix socket.")
    parser.add_argument("--uds", type=Path, required=True, help="unix socket path to listen on")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("BLINDACT_DESKTOP_ROOT", "/tmp/desktop")),
                        help="folder for the desktop's home, runtime files, app state and logs")
    parser.add_argument("--width", type=int, default=int(os.environ.get("BLINDACT_WIDTH", 1280)))
    parser.add_argument("--height", type=int, default=int(os.environ.get("BLINDACT_HEIGHT", 720)))
    parser.add_argument("--sandbox", default=os.environ.get("BLINDACT_SANDBOX", "uid"), choices=SANDBOX_KINDS,
                        help="what the agent's apps run in: uid (another user; the container's default), bwrap, "
                             "or none (as the controller itself: only when asked for)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.sandbox == "uid":
        problem = socket_folder_problem(args.uds.parent)
        if problem:
            parser.error(problem)

    # uvicorn turns SIGTERM into a graceful stop; until it runs, a stop must still close the desktop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    runner = DesktopRunner(_session_factory(args.root, args.width, args.height, args.sandbox))
    try:
        runner.start()
        log.info("desktop up (%dx%d, sandbox=%s); serving on %s", args.width, args.height, args.sandbox, args.uds)
        serve(runner, args.uds)
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
