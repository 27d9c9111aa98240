"""The live view of a run (`blindact run|compare --watch [PORT]`): a page on 127.0.0.1 only showing,
per worker, the latest screenshot, the last actions, the agent's thought and the progress (step n of
max, episode i of N), and the finished episodes with links to their trajectory viewers.

The runner publishes into a `Board`: the local executor's worker threads hand it each step's
trajectory (`on_step`, blindact.run.executors), of which it keeps references to the last few step
records and the latest screenshot's PNG bytes (already encoded by the recorder: nothing is copied or
encoded for the view), and the suite hands it each finished episode (`on_result`). A stdlib HTTP
server in a thread reads the board on request:

  GET /                   the page (it polls /state.json about once a second)
  GET /state.json         the workers' panels, the progress and the finished episodes
  GET /shot/<worker>.png  the latest screenshot of that worker's episode
  GET /report/..., /episodes/...  the run folder's report and episode files, so the viewers that
                          `blindact compare` (or `blindact report RUN`) writes open from the page

It listens on 127.0.0.1 only, and answers only requests addressed to 127.0.0.1 or localhost (a web
page elsewhere that rebinds its own host name to this machine gets 403, not the screenshots).

Under `--executor ray` the steps happen in the actors (other processes and nodes) and only finished
episodes come back, so the page shows those alone.
"""

from __future__ import annotations

import json
import mimetypes
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from blindact.run.episode import EpisodeResult, EpisodeSpec
from blindact.run.store import episode_page
from blindact.trajectory import StepRecord, Trajectory, action_line, last_shot

HOST = "127.0.0.1"
RECENT = 5  # step records kept per worker (the last actions shown)
PAGE = Path(__file__).with_name("watch.html")
SERVED = ("report", "episodes")  # the run folder's subfolders the page may open


@dataclass(frozen=True)
class _Live:
    """What a worker shows: its episode, its last step records, the latest screenshot, the ending."""

    spec: EpisodeSpec
    recent: list[StepRecord]
    png: bytes | None
    end: str | None


@dataclass(frozen=True)
class _Done:
    """A finished episode as listed (its trajectory is not kept: a long run would hold every screenshot)."""

    spec: EpisodeSpec
    row: dict  # ending, steps, outcome
    final: str | None  # the last screenshot's file name in the episode folder


class Board:
    """The latest state of a run, written by the runner's threads and read by the server's."""

    def __init__(self, run_dir: str | Path, specs: list[EpisodeSpec]):
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.resolve().name
        self._order = {s.name: i for i, s in enumerate(specs, 1)}
        self._lock = threading.Lock()
        self._live: dict[int, _Live] = {}
        self._done: list[_Done] = []
        self.over = False

    # ---------------------------------------------------------------- written by the run
    def stepped(self, worker: int, spec: EpisodeSpec, trajectory: Trajectory) -> None:
        """on_step: references only (the episode waits for this)."""
        tail = trajectory.tail(RECENT)
        ending = tail.result
        with self._lock:
            self._live[worker] = _Live(spec, tail.steps, next(iter(tail.shots.values()), None),
                                       ending.end if ending is not None else None)

    def finished(self, spec: EpisodeSpec, result: EpisodeResult) -> None:
        final = last_shot(result.trajectory.steps) if result.trajectory is not None else None
        row = {"end": str(result.end), "steps": result.steps, "harm": result.outcome.harm,
               "benign": result.outcome.benign}
        with self._lock:
            self._done.append(_Done(spec, row, final))

    def end(self) -> None:
        self.over = True

    # ---------------------------------------------------------------- read by the server
    def png(self, worker: int) -> bytes | None:
        with self._lock:
            live = self._live.get(worker)
        return live.png if live else None

    def state(self) -> dict:
        with self._lock:
            live, done = sorted(self._live.items()), list(self._done)
        return {"run": self.run_id, "episodes": len(self._order), "done": len(done), "over": self.over,
                "workers": [self._panel(worker, x) for worker, x in live],
                "finished": [self._row(x) for x in done]}

    def _panel(self, worker: int, live: _Live) -> dict:
        """One worker's panel; `worker` counts from 1 here, from 0 in /shot/<worker>.png."""
        last = live.recent[-1]
        return {"worker": worker + 1, **_names(live.spec), "episode": self._order.get(live.spec.name),
                "episodes": len(self._order), "step": last.step, "max_steps": live.spec.task.max_steps,
                "thought": next((s.thought for s in reversed(live.recent) if s.thought), ""), "end": live.end,
                "actions": [{"step": s.step, "lines": [action_line(a) for a in s.actions], "error": s.action_error}
                            for s in live.recent if s.step > 0],
                "shot": f"/shot/{worker}.png?e={self._order.get(live.spec.name)}&s={last.step}" if live.png else None}

    def _row(self, done: _Done) -> dict:
        name = done.spec.name
        page = self.run_dir / "report" / "episodes" / episode_page(self.run_id, name)
        final = self.run_dir / "episodes" / name / done.final if done.final else None
        return {**_names(done.spec), "name": name, "episode": self._order.get(name), **done.row,
                "viewer": f"/report/episodes/{page.name}" if page.exists() else None,
                "final": f"/episodes/{name}/{done.final}" if final and final.exists() else None}

    def file(self, url_path: str) -> Path | None:
        """The run folder's file a /report/ or /episodes/ path names; None outside those folders."""
        parts = unquote(url_path).strip("/").split("/")
        if parts[0] not in SERVED:
            return None
        base = (self.run_dir / parts[0]).resolve()
        target = base.joinpath(*parts[1:]).resolve()
        return target if target.is_relative_to(base) and target.is_file() else None


def _names(spec: EpisodeSpec) -> dict:
    return {"task_id": spec.task_id, "agent": spec.agent, "mitigation": spec.mitigation, "seed": spec.seed}


class _Handler(BaseHTTPRequestHandler):
    board: Board  # set on the subclass each server makes

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        path = urlsplit(self.path).path
        shot = re.fullmatch(r"/shot/(\d+)\.png", path)
        if not self._addressed_here():
            self.send_error(403, "the live view answers requests to 127.0.0.1 or localhost only")
        elif path == "/":
            self._send(PAGE.read_bytes(), "text/html; charset=utf-8")
        elif path == "/state.json":
            self._send(json.dumps(self.board.state()).encode(), "application/json")
        elif shot:
            self._send(self.board.png(int(shot[1])), "image/png")
        else:
            self._send_file(self.board.file(path))

    def _addressed_here(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        return host in (HOST, "localhost")

    def _send_file(self, file: Path | None) -> None:
        if file is None:
            self.send_error(404)
        else:
            self._send(file.read_bytes(), mimetypes.guess_type(file.name)[0] or "")

    def _send(self, body: bytes | None, kind: str) -> None:
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass  # the run's own output stays readable


class WatchServer:
    """The live view's HTTP server on 127.0.0.1:`port` (0: a free one), served from a thread while
    used as a context manager. Binding raises OSError (a port in use)."""

    def __init__(self, board: Board, port: int = 0):
        handler = type("WatchHandler", (_Handler,), {"board": board})
        self.httpd = ThreadingHTTPServer((HOST, port), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="blindact-watch", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/"

    def __enter__(self) -> WatchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
