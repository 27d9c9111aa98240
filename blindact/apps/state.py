"""Seed, reset and inspect the apps' state files (in-process only; the server has no such endpoints)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Mapping

from blindact.apps.base import QueryResult, seed_key
from blindact.apps.registry import APPS, get_app, parse_query, parse_seed

# Serialized seeded databases, shared by every store in the process: a seed is built once.
_BUILT: dict[str, bytes] = {}


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

    def events(self, app: str) -> list[dict[str, Any]]:
        conn = self._connect(app)
        try:
            rows = conn.execute("SELECT id, ts, kind, payload_json FROM events ORDER BY id").fetchall()
        finally:
            conn.close()
        return [{"id": r["id"], "ts": r["ts"], "kind": r["kind"], "payload": json.loads(r["payload_json"])} for r in rows]
