"""One HTTP server for every app, routed by the Host header.

No setup or inspection endpoints on purpose: the agent can reach this server, so seeding and state
checks go through `AppStateStore` in-process only.

    python -m blindact.apps.server --state-dir DIR (--uds PATH | --port N)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Host, Mount, Route
from starlette.staticfiles import StaticFiles

from blindact.apps.base import App, templates, webapps_dir
from blindact.apps.registry import APPS
from blindact.apps.state import AppStateStore


def _app_site(app: App, state_dir: Path, static: StaticFiles) -> Starlette:
    site = Starlette(routes=[*app.routes, Mount("/static", app=static, name="static")])
    site.state.app_def = app
    site.state.db_path = AppStateStore.db_path(state_dir, app.name)
    return site


async def _unreachable(request: Request) -> Response:
    host = (request.headers.get("host") or "").split(":")[0] or "this site"
    html = templates().get_template("unreachable.html").render(host=host)
    return HTMLResponse(html, status_code=404)


def create_app(state_dir: Path) -> Starlette:
    """The ASGI app serving all apps from the state files in `state_dir` (seeded on first use)."""
    state_dir = Path(state_dir)
    store = AppStateStore(state_dir)
    store.ensure_initialized()
    static = StaticFiles(directory=webapps_dir() / "static")
    routes = [Host(app.host, app=_app_site(app, state_dir, static)) for app in APPS.values()]
    routes.append(Route("/{path:path}", _unreachable, methods=["GET", "POST", "HEAD"]))
    return Starlette(routes=routes)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m blindact.apps.server", description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True, help="folder holding one SQLite file per app")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--uds", type=Path, help="listen on this unix socket")
    where.add_argument("--port", type=int, help="listen on 127.0.0.1:PORT")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)

    app = create_app(args.state_dir)
    if args.uds:
        args.uds.unlink(missing_ok=True)
        uvicorn.run(app, uds=str(args.uds), log_level=args.log_level)
    else:
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
