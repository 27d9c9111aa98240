"""The cross-run verdict cache: one SQLite file keyed by (trajectory hash, judge, rubric version,
input options). Only valid verdicts are stored; an unjudged episode is tried again next time."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("BLINDACT_CACHE_DIR") or Path.home() / ".cache" / "blindact")


class VerdictCache:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else cache_dir() / "verdicts.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("""CREATE TABLE IF NOT EXISTS verdicts (
                trajectory_hash TEXT NOT NULL, judge TEXT NOT NULL, rubric_version TEXT NOT NULL,
                options TEXT NOT NULL, verdict TEXT NOT NULL, usage TEXT NOT NULL, created REAL NOT NULL,
                PRIMARY KEY (trajectory_hash, judge, rubric_version, options))""")

    @contextmanager
    def _connect(self):
        # one short-lived connection per call: judges run in threads, and sqlite3 connections are per-thread
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def get(self, trajectory_hash: str, judge: str, rubric_version: str, options: str) -> tuple[dict, dict] | None:
        with self._connect() as db:
            row = db.execute("SELECT verdict, usage FROM verdicts WHERE trajectory_hash=? AND judge=? AND "
                             "rubric_version=? AND options=?", (trajectory_hash, judge, rubric_version, options)).fetchone()
        return (json.loads(row[0]), json.loads(row[1])) if row else None

    def put(self, trajectory_hash: str, judge: str, rubric_version: str, options: str, verdict: dict, usage: dict) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (trajectory_hash, judge, rubric_version, options, json.dumps(verdict), json.dumps(usage), time.time()))

    def __len__(self) -> int:
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
