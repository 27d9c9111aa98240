"""Reading what the agent left, in a worker process of its own, each item with a wall-clock bound.

State checks, and the text extraction of the effects ledger, read what the agent left behind, and the
agent may have left a trap: a document that decompresses to gigabytes, a regular expression's worst
case, a sqlite file that is locked. Run in the desktop's own process, one such read would hang the
episode (and, locally, the whole worker). Here every item (a check, a file to read) runs in a
long-lived child process (started with the desktop, so no episode pays its start-up) that answers one
line per item; an item that does not answer within `item_timeout` seconds is recorded as one that could
not be done, the child is killed and a fresh one does the rest. The child has an address-space limit,
so a memory bomb ends as a MemoryError (a result that says so), never as the host swapping.

Results already received are always kept: a harm found by one check survives another's timeout.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from blindact.checks.result import CheckResult

DEFAULT_ITEM_TIMEOUT = 10.0
DEFAULT_MEMORY_BYTES = 2 << 30
STARTUP_TIMEOUT = 60.0
# what the ledger reads of one file it records (a check reads up to blindact.desktop.safefs's cap)
LEDGER_TEXT_CHARS = 20_000


class CheckRunner:
    """home: the agent's home; state_dir: the web apps' state (None: no apps); scratch: a folder of the
    controller's for the worker's own files (copies of what the readers open)."""

    def __init__(self, home: Path, state_dir: Path | None, *, scratch: Path | None = None,
                 check_timeout: float = DEFAULT_ITEM_TIMEOUT, memory_bytes: int = DEFAULT_MEMORY_BYTES):
        self.home = Path(home)
        self.state_dir = state_dir
        self.scratch = scratch
        self.check_timeout = check_timeout
        self.memory_bytes = memory_bytes
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the worker now (it imports while the desktop starts); idempotent."""
        if self._proc is not None and self._proc.poll() is None:
            return
        argv = [sys.executable, "-m", "blindact.checks.runner", "--home", str(self.home)]
        if self.state_dir is not None:
            argv += ["--state", str(self.state_dir)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if self.scratch is not None:
            env["TMPDIR"] = str(self.scratch)
        limit = self.memory_bytes
        from blindact.desktop.procs import _die_with_parent, popen

        def limits() -> None:
            _die_with_parent()
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        self._proc = popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      preexec_fn=limits, close_fds=True, env=env)
        self._ready = False

    def _await_ready(self) -> bool:
        """The worker says it is ready once its imports are done: its start-up (seconds on a loaded
        machine) never counts against the first item's bound."""
        if self._ready:
            return True
        proc = self._proc
        deadline = time.monotonic() + STARTUP_TIMEOUT
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                return False
            chunk = os.read(proc.stdout.fileno(), 1)
            if not chunk:
                return False
            line += chunk
        self._ready = line.strip() == b"ready"
        return self._ready

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for stream in (proc.stdin, proc.stdout) if proc is not None else ():
            try:
                stream.close()
            except OSError:
                pass

    def run(self, checks: list[dict], labels: list[str], effects: list[dict] | None = None) -> list[CheckResult]:
        """One result per check, in order. `labels` name the checks for results the worker never gave;
        `effects`: the episode's ledger so far, for the checks that read it."""
        def failed(i: int, why: str) -> dict:
            return {"name": labels[i], "passed": False, "detail": why, "error": why}

        rows = self._items("checks", checks, failed, {"effects": effects or []})
        return [CheckResult(**row) for row in rows]

    def extract(self, files: list[tuple[str, str]]) -> list[dict]:
        """What each file says ((root, path in it) pairs): format, size, sha256, text (capped), notes."""
        def failed(i: int, why: str) -> dict:
            return {"error": why}

        return self._items("extract", [list(f) for f in files], failed, {})

    def events(self, marks: list[tuple[str, int]]) -> list[dict]:
        """Per (app, last event id seen): {"events": [{id, kind, payload, text}, ...]} of what came after."""
        def failed(i: int, why: str) -> dict:
            return {"events": [], "error": why}

        return self._items("events", [list(m) for m in marks], failed, {})

    def _items(self, kind: str, items: list, failed: Callable[[int, str], dict], context: dict) -> list[dict]:
        out: list[dict] = []
        while len(out) < len(items):
            done = len(out)
            got = self._batch(kind, items[done:], context)
            out += got
            if len(out) < len(items):
                # the worker failed on the next item (it died or overran): that item is recorded as such,
                # and a fresh worker takes the rest
                reason = self._last_failure
                out.append(failed(len(out), reason))
        return out

    def _batch(self, kind: str, items: list, context: dict) -> list[dict]:
        """As many results as the worker gives before it fails or overruns (`_last_failure` says why)."""
        self.start()
        proc = self._proc
        self._last_failure = ""
        if not self._await_ready():
            self.close()
            self._last_failure = f"the worker did not start within {STARTUP_TIMEOUT:g}s"
            return []
        try:
            proc.stdin.write((json.dumps({"kind": kind, "items": items, **context}, default=str) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            self._last_failure = "the worker died before it ran"
            return []
        out: list[dict] = []
        buffer = b""
        deadline = time.monotonic() + self.check_timeout
        while len(out) < len(items):
            left = deadline - time.monotonic()
            ready = select.select([proc.stdout], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.close()
                self._last_failure = f"did not finish within {self.check_timeout:g}s"
                return out
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                code = proc.poll()
                self.close()
                self._last_failure = f"the worker exited ({code}) while running it"
                return out
            buffer += chunk
            while b"\n" in buffer and len(out) < len(items):
                line, buffer = buffer.split(b"\n", 1)
                out.append(json.loads(line))
                deadline = time.monotonic() + self.check_timeout
        return out


def _extracted(root: str, rel: str) -> dict:
    from blindact.content import Limits, extract
    from blindact.desktop.safefs import SafeFolder

    data = SafeFolder(root).read_bytes(rel, 5_000_000)
    found = extract(data, Path(rel).name, limits=Limits(input_bytes=5_000_000, seconds=2.0))
    text = found.all_text()
    return {"format": found.format, "size": found.size, "sha256": found.sha256,
            "text": text[:LEDGER_TEXT_CHARS], "truncated": bool(found.truncated) or len(text) > LEDGER_TEXT_CHARS,
            "error": found.error or ""}


def _serve(home: Path, state: Path | None) -> int:
    from blindact.checks.kinds import evaluate_one
    from blindact.desktop.safefs import SafeFolder

    store = None
    if state is not None:
        from blindact.apps.state import AppStateStore

        store = AppStateStore(state)
    folder = SafeFolder(home)
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        for item in request["items"]:
            try:
                if request["kind"] == "checks":
                    result = evaluate_one(item, folder, store, request.get("effects") or [])
                    record = {**result.to_dict(), "error": result.error}
                elif request["kind"] == "events":
                    app, after = item
                    record = {"events": [{**ev, **dict(zip(("text", "authored"), store.event_texts(app, ev)))}
                                         for ev in store.events(app, after)]}
                else:
                    record = _extracted(*item)
            except MemoryError:
                record = {"name": str(item), "passed": False, "detail": "ran out of memory",
                          "error": "it ran out of memory (a file too big to read?)"}
            except Exception as exc:  # noqa: BLE001 - one unreadable item must not stop the worker
                record = {"name": str(item), "passed": False, "detail": f"{type(exc).__name__}: {exc}",
                          "error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(record, default=str).encode() + b"\n")
            out.flush()
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="blindact's state-check worker (started by the desktop)")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--state", type=Path)
    args = parser.parse_args()
    sys.exit(_serve(args.home, args.state))
