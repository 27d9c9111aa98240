"""Seed, reset and inspect the apps' state files (in-process only; the server has no such endpoints)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Mapping

from blindact.apps.base import QueryResult, seed_key
from blindact.apps.registry import APPS, get_app, parse_query, parse_seed

# Serialized seeded databases, shared by every store in the process: a seed is built once.
_BUILT: dict[str, bytes] = {}


_REPLY_HEADER = re.compile(r"^On \d{4}-\d{2}-\d{2}, .{1,200} wrote:\s*$")


def _without_reply_quote(body: str) -> str:
    """A reply's body without the quote the form filled in: the "On <date>, <name> wrote:" line and the
    "> " lines under it (what the agent typed above or below it stays)."""
    lines = body.splitlines()
    out, quoting = [], False
    for line in lines:
        if _REPLY_HEADER.match(line.strip()):
            quoting = True
            continue
        if quoting and (line.startswith(">") or not line.strip()):
            continue
        quoting = False
        out.append(line)
    return "\n".join(out)


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


class AppStateStore:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def db_path(state_dir: Path, app: str) -> Path:
        return Path(state_dir) / f"{app}.sqlite3"

    def path(self, app: str) -> Path:
        get_app(app)
        return self.db_path(self.state_dir, app)

    def ensure_initialized(self) -> None:
        """Seed with defaults any app whose state file is missing (leaves existing state alone)."""
        for name in APPS:
            if not self.path(name).exists():
                self._restore(name, None)

    def reset(self, seeds: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Restore EVERY app: the given seed for the apps named in `seeds`, the default for the rest.

        Call it while the server is idle (between episodes). Each file is replaced atomically, so a
        request that still holds the old file open cannot write into the new episode.
        """
        seeds = dict(seeds or {})
        unknown = sorted(set(seeds) - set(APPS))
        if unknown:
            raise ValueError(f"reset: unknown app(s) {', '.join(unknown)}; known apps: {', '.join(APPS)}")
        for name in APPS:
            self._restore(name, seeds.get(name))

    def _restore(self, name: str, seed: Mapping[str, Any] | None) -> None:
        app = APPS[name]
        data = parse_seed(name, seed if seed is not None else {})
        key = seed_key(name, data)
        blob = _BUILT.get(key)
        if blob is None:
            blob = _BUILT[key] = app.build_db(data)
        target = self.path(name)
        # A leftover rollback journal would be replayed onto the fresh file; drop it first.
        for suffix in ("-journal", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, target)

    def _connect(self, app: str) -> sqlite3.Connection:
        path = self.path(app)
        if not path.exists():
            raise FileNotFoundError(f"no state for app {app!r} at {path}; call AppStateStore.reset() first")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        conn.row_factory = sqlite3.Row
        return conn

    def query(self, app: str, name: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        parsed = parse_query(app, name, dict(params or {}))
        conn = self._connect(app)
        try:
            return APPS[app].queries[name].fn(conn, parsed)
        finally:
            conn.close()

    def events(self, app: str, after: int = 0) -> list[dict[str, Any]]:
        """The app's event log (every record the agent made or changed), from the event after `after`."""
        conn = self._connect(app)
        try:
            rows = conn.execute("SELECT id, ts, kind, payload_json FROM events WHERE id > ? ORDER BY id", (after,)).fetchall()
        finally:
            conn.close()
        return [{"id": r["id"], "ts": r["ts"], "kind": r["kind"], "payload": json.loads(r["payload_json"])} for r in rows]

    def last_event_id(self, app: str) -> int:
        conn = self._connect(app)
        try:
            return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])
        finally:
            conn.close()

    def event_texts(self, app: str, event: dict[str, Any]) -> tuple[str, str]:
        """(everything, authored): every text an event's record holds, for matching content, and the part
        the agent wrote or chose. Both include what attached or shared files say (a mail's attachments, a
        drive item's content, read by blindact.content within its limits). `authored` leaves out the quote
        a reply form fills in (the message being answered: the agent did not write it); a forward's
        quote stays in (forwarding is choosing to send it)."""
        payload = event["payload"]
        parts = list(_strings(payload))
        authored = list(parts)
        files: list[tuple[str, bytes]] = []
        if app == "mail" and event["kind"] == "message_sent":
            authored = [payload.get("subject") or "", _without_reply_quote(payload.get("body") or "")]
            if payload.get("message_id"):
                files = self._rows(app, "SELECT filename AS name, content FROM attachments WHERE message_id = ?",
                                   int(payload["message_id"]))
        elif app == "drive" and payload.get("item_id"):
            files = self._rows(app, "SELECT name, content FROM items WHERE id = ? AND kind = 'file'", int(payload["item_id"]))
        if files:
            from blindact.content import Limits, extract

            for name, data in files:
                data = data if isinstance(data, bytes) else str(data or "").encode()
                found = extract(data, name, limits=Limits(input_bytes=10_000_000, seconds=2.0))
                piece = f"[file {name}]\n{found.all_text()}"
                parts.append(piece)
                authored.append(piece)
        return "\n".join(parts), "\n".join(authored)

    def _rows(self, app: str, sql: str, *args: Any) -> list[tuple[str, Any]]:
        conn = self._connect(app)
        try:
            return [(r[0], r[1]) for r in conn.execute(sql, args).fetchall()]
        finally:
            conn.close()
