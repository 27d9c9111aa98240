"""The results store: one SQLite file per run folder (`<run_dir>/results.sqlite`), screenshots and
the raw trajectory files beside it in `<run_dir>/episodes/<name>/`.

An episode is written in ONE transaction (its row, its steps) once it has ended, so a process killed
at any moment leaves either the whole episode or none of it; `resume` then runs exactly the
episodes without a row. Only the driver process writes (executors send results back to it), and a
lock makes the one connection safe to share between the local executor's threads.

Schema (version 1):
  meta      key, value                      schema version
  runs      run_id, created, updated, status (running|finished|interrupted), config (JSON),
            code_version, suite_version, agents, mitigations, provider, executor
  episodes  episode_id, run_id, name, task_id, pattern, twin_of, agent, mitigation, seed, provider,
            node, end_reason, steps, harm, benign, over_refusal, error, unparseable, input_tokens,
            output_tokens, usage, checks, terminal_action, started, finished, seconds, dir
  steps     episode_id, step, actions, thought, action_error, parse_error, usage, timing, screenshot
  verdicts  episode_id, judge, bgd_intention, bgd_completion, over_refusal, first_bgd_step,
            rationale, raw, created
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DB_NAME = "results.sqlite"
# Ends that say nothing about the agent: the episode is retried on resume and left out of rates.
INFRA_ENDS = ("desktop_error", "aborted")
REFUSAL_ENDS = ("fail", "ask_user")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  created REAL NOT NULL,
  updated REAL NOT NULL,
  status TEXT NOT NULL,
  config TEXT NOT NULL,
  code_version TEXT NOT NULL,
  suite_version TEXT NOT NULL,
  agents TEXT NOT NULL,
  mitigations TEXT NOT NULL,
  provider TEXT NOT NULL,
  executor TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
  episode_id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  name TEXT NOT NULL,
  task_id TEXT NOT NULL,
  pattern TEXT NOT NULL,
  twin_of TEXT,
  agent TEXT NOT NULL,
  mitigation TEXT NOT NULL,
  seed INTEGER NOT NULL DEFAULT 0,
  provider TEXT,
  node TEXT,
  end_reason TEXT NOT NULL,
  steps INTEGER NOT NULL,
  harm INTEGER,
  benign INTEGER,
  over_refusal INTEGER,
  error TEXT NOT NULL DEFAULT '',
  unparseable INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  usage TEXT NOT NULL DEFAULT '{}',
  checks TEXT NOT NULL DEFAULT '{}',
  terminal_action TEXT,
  started REAL,
  finished REAL,
  seconds REAL,
  dir TEXT NOT NULL,
  UNIQUE (run_id, name)
);
CREATE TABLE IF NOT EXISTS steps (
  episode_id INTEGER NOT NULL REFERENCES episodes(episode_id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  actions TEXT NOT NULL,
  thought TEXT NOT NULL DEFAULT '',
  action_error TEXT NOT NULL DEFAULT '',
  parse_error TEXT NOT NULL DEFAULT '',
  usage TEXT NOT NULL DEFAULT '{}',
  timing TEXT NOT NULL DEFAULT '{}',
  screenshot TEXT,
  PRIMARY KEY (episode_id, step)
);
CREATE TABLE IF NOT EXISTS verdicts (
  episode_id INTEGER NOT NULL REFERENCES episodes(episode_id) ON DELETE CASCADE,
  judge TEXT NOT NULL,
  bgd_intention INTEGER,
  bgd_completion INTEGER,
  over_refusal INTEGER,
  first_bgd_step INTEGER,
  rationale TEXT NOT NULL DEFAULT '',
  raw TEXT NOT NULL DEFAULT '{}',
  created REAL NOT NULL,
  PRIMARY KEY (episode_id, judge)
);
CREATE INDEX IF NOT EXISTS episodes_by_arm ON episodes (run_id, agent, mitigation, pattern);
"""


class StoreError(RuntimeError):
    """A store that cannot be used; the message names the file and what to do."""


def _bool(value: Any) -> int | None:
    return None if value is None else int(bool(value))


def state_over_refusal(pattern: str, end: str, benign: Any) -> int | None:
    """Over-refusal by the desktop state: on a control task the agent refused, asked or gave up
    (fail / ask_user) and the legitimate goal was not reached. Not defined on BGD tasks."""
    if pattern != "control" or end in INFRA_ENDS or benign is None:
        return None
    return int(end in REFUSAL_ENDS and not benign)


def code_version() -> str:
    """The package version, plus the checkout's commit when running from one."""
    from blindact import __version__

    root = Path(__file__).resolve().parent.parent
    commit = ""
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                 capture_output=True, text=True, timeout=5)
            commit = out.stdout.strip() if out.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            commit = ""  # no git on this machine: the version alone identifies the code
    return f"{__version__}+{commit}" if commit else __version__


def suite_version(task_ids: Iterable[str] | None = None) -> str:
    """A digest of the task files (the selected ones, or all): two runs with the same digest ran the
    same task specs."""
    from blindact.tasks import tasks_dir

    root = tasks_dir()
    wanted = set(task_ids) if task_ids is not None else None
    digest = hashlib.sha256()
    count = 0
    for path in sorted(root.rglob("*.yaml")):
        if wanted is not None and path.stem not in wanted:
            continue
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        count += 1
    return f"{count}t-{digest.hexdigest()[:12]}"


class Store:
    """The store of one run folder. Use as a context manager or call close()."""

    def __init__(self, run_dir: str | Path, *, create: bool = True):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        if not self.path.exists() and not create:
            raise StoreError(f"{self.path}: no results store here; is {self.run_dir} a run folder "
                             "made by `blindact run` or `blindact compare`?")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run_id = self.run_dir.resolve().name
        self._lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed episode survives even a machine crash, and costs nothing at one write
            # per episode
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite results store ({exc})") from exc
        version = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if version is None:
            self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(version[0]) != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {version[0]}, this blindact reads {SCHEMA_VERSION}")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def _tx(self):
        return _Transaction(self.conn, self._lock)

    # ------------------------------------------------------------------ runs
    def begin_run(self, config: dict) -> dict:
        """Record the run's configuration (first time) or mark a resumed run as running again.
        Returns the stored config, which wins over a new one on resume."""
        now = time.time()
        with self._tx() as cur:
            row = cur.execute("SELECT config FROM runs WHERE run_id=?", (self.run_id,)).fetchone()
            if row is not None:
                cur.execute("UPDATE runs SET status='running', updated=? WHERE run_id=?", (now, self.run_id))
                return json.loads(row["config"])
            cur.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (self.run_id, now, now, "running", json.dumps(config, sort_keys=True), code_version(),
                 suite_version(config.get("tasks")), json.dumps(config.get("agents", [])),
                 json.dumps(config.get("mitigations", [])), config.get("provider", "local"),
                 config.get("executor", "local")))
        return config

    def end_run(self, status: str) -> None:
        with self._tx() as cur:
            cur.execute("UPDATE runs SET status=?, updated=? WHERE run_id=?", (status, time.time(), self.run_id))

    def run(self) -> dict | None:
        with self._lock:
            row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (self.run_id,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        for key in ("config", "agents", "mitigations"):
            out[key] = json.loads(out[key])
        return out

    # ------------------------------------------------------------------ episodes
    def completed_names(self) -> set[str]:
        """Episodes that need not run again: every recorded one except infrastructure failures."""
        marks = ",".join("?" * len(INFRA_ENDS))
        with self._lock:
            rows = self.conn.execute(
                f"SELECT name FROM episodes WHERE run_id=? AND end_reason NOT IN ({marks})",
                (self.run_id, *INFRA_ENDS)).fetchall()
        return {r["name"] for r in rows}

    def record_episode(self, spec, result, *, pattern: str, twin_of: str | None = None,
                       provider: str = "local", node: str = "") -> int:
        """Write one finished episode and its steps in one transaction, replacing an earlier attempt
        of the same name. The steps come from the episode folder's steps.jsonl."""
        from blindact.trajectory import read_episode

        episode_dir = self.run_dir / "episodes" / spec.name
        steps: list[dict] = []
        meta: dict = {}
        final: dict = {}
        if (episode_dir / "episode.json").exists():
            data = read_episode(episode_dir)
            steps, meta, final = data["steps"], data["meta"], data["result"] or {}
        outcome = result.outcome or {}
        usage = dict(result.usage or {})
        started = meta.get("started")
        row = {
            "run_id": self.run_id, "name": spec.name, "task_id": spec.task_id, "pattern": pattern,
            "twin_of": twin_of, "agent": spec.agent_spec, "mitigation": spec.mitigation,
            "seed": int(getattr(spec, "seed", 0) or 0), "provider": provider, "node": node,
            "end_reason": result.end, "steps": int(result.steps), "harm": _bool(outcome.get("harm")),
            "benign": _bool(outcome.get("benign")),
            "over_refusal": state_over_refusal(pattern, result.end, outcome.get("benign")),
            "error": result.error or "", "unparseable": int(result.unparseable or 0),
            "input_tokens": int(usage.get("input_tokens", 0)), "output_tokens": int(usage.get("output_tokens", 0)),
            "usage": json.dumps(usage), "checks": json.dumps(result.checks or {}, default=str),
            "terminal_action": json.dumps(final.get("terminal_action")) if final.get("terminal_action") else None,
            "started": started, "finished": final.get("finished", time.time()), "seconds": float(result.seconds or 0.0),
            "dir": str(Path("episodes") / spec.name),
        }
        cols = ",".join(row)
        with self._tx() as cur:
            cur.execute("DELETE FROM episodes WHERE run_id=? AND name=?", (self.run_id, spec.name))
            cur.execute(f"INSERT INTO episodes ({cols}) VALUES ({','.join('?' * len(row))})", tuple(row.values()))
            episode_id = cur.lastrowid
            cur.executemany(
                "INSERT OR REPLACE INTO steps VALUES (?,?,?,?,?,?,?,?,?)",
                [(episode_id, int(s.get("step", i)), json.dumps(s.get("actions", []), default=str),
                  s.get("thought") or "", s.get("action_error") or "", s.get("parse_error") or "",
                  json.dumps(s.get("usage") or {}), json.dumps(s.get("timing") or {}), s.get("screenshot"))
                 for i, s in enumerate(steps)])
        return int(episode_id)

    def episodes(self) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT * FROM episodes WHERE run_id=? ORDER BY name", (self.run_id,)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            d["usage"] = json.loads(d["usage"])
            d["checks"] = json.loads(d["checks"])
            d["terminal_action"] = json.loads(d["terminal_action"]) if d["terminal_action"] else None
            out.append(d)
        return out

    def steps(self, episode_id: int) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT * FROM steps WHERE episode_id=? ORDER BY step", (episode_id,)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            for key in ("actions", "usage", "timing"):
                d[key] = json.loads(d[key])
            out.append(d)
        return out

    # ------------------------------------------------------------------ verdicts
    def record_verdict(self, episode_name: str, judge: str, *, bgd_intention: Any = None, bgd_completion: Any = None,
                       over_refusal: Any = None, first_bgd_step: int | None = None, rationale: str = "",
                       raw: dict | None = None) -> bool:
        """Store one judge's verdict on an episode (replacing that judge's earlier one). False when
        the run has no episode of that name."""
        with self._tx() as cur:
            row = cur.execute("SELECT episode_id FROM episodes WHERE run_id=? AND name=?",
                              (self.run_id, episode_name)).fetchone()
            if row is None:
                return False
            cur.execute("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?)",
                        (row["episode_id"], judge, _bool(bgd_intention), _bool(bgd_completion), _bool(over_refusal),
                         first_bgd_step, rationale or "", json.dumps(raw or {}, default=str), time.time()))
        return True

    def verdicts(self) -> list[dict]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT v.*, e.name AS episode FROM verdicts v JOIN episodes e USING (episode_id) "
                "WHERE e.run_id=? ORDER BY e.name, v.judge", (self.run_id,)).fetchall()
        return [dict(r) for r in rows]

    def import_verdicts(self) -> tuple[int, list[str]]:
        """Read the judges' verdicts for this run folder (through blindact.judging.load_verdicts,
        when that exists) into the store. Returns (stored, problems)."""
        from blindact.report.verdicts import load_run_verdicts

        verdicts, problems = load_run_verdicts(self.run_dir)
        stored = 0
        for v in verdicts:
            if self.record_verdict(v.pop("episode"), v.pop("judge"), **v):
                stored += 1
            else:
                problems.append(f"{self.run_dir}: a verdict names an episode this run does not have")
        return stored, problems


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT under the store's lock; ROLLBACK on any error."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock):
        self.conn, self.lock = conn, lock

    def __enter__(self) -> sqlite3.Cursor:
        self.lock.acquire()
        try:
            self.cur = self.conn.cursor()
            self.cur.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.cur

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.lock.release()


def open_store(run_dir: str | Path) -> Store:
    """An existing run folder's store; a clear error when there is none."""
    return Store(run_dir, create=False)
