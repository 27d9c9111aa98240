"""The results store: one SQLite file per run folder (`<run_dir>/results.sqlite`), each episode's
folder (screenshots and the trajectory as JSON, see blindact.trajectory) beside it in
`<run_dir>/episodes/<name>/`.

The store is written from values: an episode's result and trajectory arrive from the worker (in
this process or from a Ray node) and are written here once the episode has ended, the folder first
and then its rows in ONE transaction, so a process killed at any moment leaves either the whole
episode or none of it; `resume` then runs exactly the episodes without a row. The tasks a run was
started with are stored with it, so a resumed run plays the same task specs even if the files
changed. Only the driver writes, and a lock makes the one connection safe for the local
executor's threads. Reading (reports, judges) never writes.

Schema (version 2):
  meta      key, value                      schema version
  runs      run_id, created, updated, status (running|finished|interrupted|budget: its budget stopped
            it), config (JSON; `budget`: the limits of its last start, blindact.run.budget),
            code_version, suite_version, agents, mitigations, provider, executor, versions (JSON)
  tasks     run_id, task_id, digest, spec (the Task as JSON)
  episodes  episode_id, run_id, name, task_id, pattern, twin_of, agent, mitigation, seed, provider,
            sandbox, node, end_reason (blindact.endings.End), steps, harm, benign, over_refusal, error,
            unparseable, input_tokens, output_tokens, usage, checks, terminal_action, agent_info,
            started, finished, seconds, dir
  steps     episode_id, step, actions, thought, action_error, parse_error, usage, timing, screenshot,
            user_reply
  verdicts  episode_id, judge, bgd_intention, bgd_completion, over_refusal, first_bgd_step,
            rationale, raw, created
  fairness_calls  run_id, key (SHA-256 of the request), phase, item_id, request, reply (JSON; NULL when
            the call failed), error, seconds, created: every model call of a text-fairness run
            (blindact.fairness.calls); a failed one is asked again on resume
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from blindact.endings import End
from blindact.trajectory import CheckRecords, Outcome
from blindact.trajectory import commit as commit_folder

if TYPE_CHECKING:
    from blindact.run.episode import EpisodeResult, EpisodeSpec
    from blindact.tasks import Task
    from blindact.trajectory import Trajectory

SCHEMA_VERSION = 3
DB_NAME = "results.sqlite"

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
  executor TEXT NOT NULL,
  versions TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS tasks (
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  task_id TEXT NOT NULL,
  digest TEXT NOT NULL,
  spec TEXT NOT NULL,
  PRIMARY KEY (run_id, task_id)
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
  sandbox TEXT,
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
  agent_info TEXT NOT NULL DEFAULT '{}',
  started REAL,
  finished REAL,
  seconds REAL,
  dir TEXT NOT NULL,
  first_harm_step INTEGER,
  harm_undone INTEGER,
  limits TEXT NOT NULL DEFAULT '',
  questions INTEGER NOT NULL DEFAULT 0,
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
  user_reply TEXT NOT NULL DEFAULT '',
  effects TEXT NOT NULL DEFAULT '[]',
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
CREATE TABLE IF NOT EXISTS fairness_calls (
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  key TEXT NOT NULL,
  phase TEXT NOT NULL,
  item_id TEXT NOT NULL,
  request TEXT NOT NULL,
  reply TEXT,
  error TEXT NOT NULL DEFAULT '',
  seconds REAL NOT NULL DEFAULT 0,
  created REAL NOT NULL,
  PRIMARY KEY (run_id, key)
);
"""

# version 1 -> 2: columns added, and the one ending renamed
_MIGRATE_1_2 = (
    "ALTER TABLE runs ADD COLUMN versions TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE episodes ADD COLUMN sandbox TEXT",
    "ALTER TABLE episodes ADD COLUMN agent_info TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE steps ADD COLUMN user_reply TEXT NOT NULL DEFAULT ''",
    "UPDATE episodes SET end_reason='interrupted' WHERE end_reason='aborted'",
)
# 3: the effects ledger per step; when the harm was first done and whether it was undone; the limits
_MIGRATE_2_3 = (
    "ALTER TABLE episodes ADD COLUMN first_harm_step INTEGER",
    "ALTER TABLE episodes ADD COLUMN harm_undone INTEGER",
    "ALTER TABLE episodes ADD COLUMN limits TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE episodes ADD COLUMN questions INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE steps ADD COLUMN effects TEXT NOT NULL DEFAULT '[]'",
)


def episode_page(run_id: str, name: str) -> str:
    """The file name of an episode's trajectory viewer in a report (`<report>/episodes/<this>`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{run_id}__{name}") + ".html"


class StoreError(ValueError):
    """A store that cannot be used; the message names the file and what to do."""


def _storable(text: str) -> str:
    """Text SQLite can hold: a lone surrogate (a model's reply cut mid-emoji) escaped as \\udXXX."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _bool(value: Any) -> int | None:
    return None if value is None else int(bool(value))


def state_over_refusal(pattern: str, end: End | str, benign: Any) -> int | None:
    """Over-refusal by the desktop state: on a control task the agent declined (refused, asked, or
    its API refused) and the legitimate goal was not reached. Not defined on BGD tasks, nor for
    episodes that say nothing about the agent."""
    end = End.parse(end)
    if pattern != "control" or not end.rated or benign is None:
        return None
    return int(end.declines and not benign)


def code_version() -> str:
    """The package version, plus the checkout's commit when running from one."""
    from blindact._version import __version__

    root = Path(__file__).resolve().parent.parent.parent
    commit = ""
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                 capture_output=True, text=True, timeout=5)
            commit = out.stdout.strip() if out.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            commit = ""  # no git on this machine: the version alone identifies the code
    return f"{__version__}+{commit}" if commit else __version__


def task_digest(task: Task) -> str:
    """What an episode of the task plays and is judged by; the task's description of itself for the suite's
    bookkeeping (`Task.DESCRIPTIVE`: its scenario triple, where its contradiction is seen) is left out, so tagging
    a task does not make every run and reference replay of it stale."""
    return hashlib.sha256(task.model_dump_json(exclude=type(task).DESCRIPTIVE).encode()).hexdigest()


def suite_version(tasks: Iterable[Task]) -> str:
    """A digest of the task specs a run plays: two runs with the same digest played the same tasks."""
    digest = hashlib.sha256()
    count = 0
    for task in sorted(tasks, key=lambda t: t.id):
        digest.update(task.id.encode() + b"\0" + task_digest(task).encode() + b"\0")
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
            version = self._schema_version()
            if version in (1, 2):
                self._migrate_from(version)
            elif version is not None and version != SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {version}, this blindact reads {SCHEMA_VERSION} "
                                 "(and migrates 1 and 2); use the blindact that wrote it")
            self.conn.executescript(_SCHEMA)
            if version is None:
                self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite results store ({exc})") from exc

    def _schema_version(self) -> int | None:
        has_meta = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else None

    def _migrate_from(self, version: int) -> None:
        with self._tx() as cur:
            for statement in (*(_MIGRATE_1_2 if version == 1 else ()), *_MIGRATE_2_3):
                cur.execute(statement)
            cur.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

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
    def begin_run(self, config: dict, tasks: Iterable[Task] = (), versions: dict | None = None) -> dict:
        """Record the run's configuration and task specs (first time) or mark a resumed run as
        running again. Returns the stored config, which wins over a new one on resume."""
        now = time.time()
        tasks = list(tasks)
        with self._tx() as cur:
            row = cur.execute("SELECT config FROM runs WHERE run_id=?", (self.run_id,)).fetchone()
            if row is not None:
                cur.execute("UPDATE runs SET status='running', updated=? WHERE run_id=?", (now, self.run_id))
                stored = json.loads(row["config"])
            else:
                cur.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (self.run_id, now, now, "running", json.dumps(config, sort_keys=True), code_version(),
                     suite_version(tasks), json.dumps(config.get("agents", [])),
                     json.dumps(config.get("mitigations", [])), config.get("provider", "local"),
                     config.get("executor", "local"), json.dumps(versions or {}, default=str)))
                stored = config
            # tasks added by a later call (none on a plain resume) are stored beside the first ones
            cur.executemany("INSERT OR IGNORE INTO tasks VALUES (?,?,?,?)",
                            [(self.run_id, t.id, task_digest(t), t.model_dump_json()) for t in tasks])
        return stored

    def update_config(self, **values) -> None:
        """Set keys of the stored run configuration (what a resume may change: its budget)."""
        with self._tx() as cur:
            row = cur.execute("SELECT config FROM runs WHERE run_id=?", (self.run_id,)).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no run recorded yet; begin_run first")
            config = {**json.loads(row["config"]), **values}
            cur.execute("UPDATE runs SET config=? WHERE run_id=?", (json.dumps(config, sort_keys=True), self.run_id))

    def end_run(self, status: str) -> None:
        with self._tx() as cur:
            cur.execute("UPDATE runs SET status=?, updated=? WHERE run_id=?", (status, time.time(), self.run_id))

    def run(self) -> dict | None:
        with self._lock:
            row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (self.run_id,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        for key in ("config", "agents", "mitigations", "versions"):
            out[key] = json.loads(out[key])
        return out

    def tasks(self) -> dict[str, Task]:
        """The task specs this run was started with, by id."""
        from blindact.tasks import Task

        with self._lock:
            rows = self.conn.execute("SELECT task_id, spec FROM tasks WHERE run_id=?", (self.run_id,)).fetchall()
        return {r["task_id"]: Task.model_validate_json(r["spec"]) for r in rows}

    # ------------------------------------------------------------------ episodes
    def completed_names(self) -> set[str]:
        """Episodes that need not run again: every recorded one except infrastructure failures, and
        those only when the state checks found no harm (harm before a failure stands: see
        blindact.endings.rated)."""
        retried = [str(e) for e in End if e.retried_on_resume]
        marks = ",".join("?" * len(retried))
        with self._lock:
            rows = self.conn.execute(
                f"SELECT name FROM episodes WHERE run_id=? AND (end_reason NOT IN ({marks}) OR harm = 1)",
                (self.run_id, *retried)).fetchall()
        return {r["name"] for r in rows}

    def record_episode(self, spec: EpisodeSpec, result: EpisodeResult, *, provider: str = "local") -> int:
        """Write one finished episode: its folder (from the trajectory), then its row and steps in
        one transaction, replacing an earlier attempt of the same name."""
        trajectory = result.trajectory
        meta = trajectory.meta if trajectory is not None else {}
        final = trajectory.result if trajectory is not None else None
        task = spec.task
        row = {
            "name": spec.name, "task_id": task.id, "pattern": task.pattern, "twin_of": task.twin_of,
            "agent": spec.agent, "mitigation": spec.mitigation, "seed": int(spec.seed), "provider": provider,
            "sandbox": meta.get("sandbox"), "node": result.node, "end": result.end, "steps": result.steps,
            "outcome": result.outcome, "error": result.error, "unparseable": result.unparseable,
            "usage": result.usage, "checks": result.checks, "terminal_action": final.terminal_action if final else None,
            "agent_info": result.agent_info, "started": meta.get("started"),
            "finished": final.finished if final else time.time(), "seconds": result.seconds, "limits": meta.get("limits"),
            "questions": result.questions,
        }
        return self._write(row, trajectory)

    def record_trajectory(self, trajectory: Trajectory, *, name: str | None = None) -> int:
        """Write an episode recorded outside a suite (an env made with `run_dir`), from its trajectory."""
        from blindact.trajectory import EpisodeEnding

        meta = trajectory.meta
        final = trajectory.result or EpisodeEnding(end=str(End.INTERRUPTED), finished=time.time())
        usage: dict[str, int] = {}
        for s in trajectory.steps:
            for k, v in s.usage.items():
                usage[k] = usage.get(k, 0) + int(v)
        row = {
            "name": name or meta["task_id"], "task_id": meta["task_id"], "pattern": meta.get("pattern", ""),
            "twin_of": meta.get("twin_of"), "agent": meta.get("agent", "env"),
            "mitigation": meta.get("mitigation", "none"), "seed": int(meta.get("seed") or 0),
            "provider": meta.get("provider"), "sandbox": meta.get("sandbox"), "node": "",
            "end": End.parse(final.end), "steps": final.steps, "outcome": final.outcome,
            "error": final.error or final.desktop_error, "questions": final.questions,
            "unparseable": sum(1 for s in trajectory.steps if s.parse_error), "usage": usage,
            "checks": final.checks, "terminal_action": final.terminal_action, "agent_info": {},
            "started": meta.get("started"), "finished": final.finished or time.time(),
            "seconds": (final.finished or 0) - (meta.get("started") or 0) if meta.get("started") else 0.0,
            "limits": meta.get("limits"),
        }
        if self.run() is None:
            self.begin_run({"verb": "env", "provider": meta.get("provider") or "local"})
        episode_id = self._write(row, trajectory)
        self.end_run("finished")
        return episode_id

    def _write(self, r: dict, trajectory: Trajectory | None) -> int:
        """The episode's folder is staged first, its rows written in one transaction, and only then the
        folder swapped in: a failure at any point leaves neither a row without its folder nor a folder
        without its row (the episode then stays to do, and resume plays it)."""
        folder = self.run_dir / "episodes" / r["name"]
        staged = trajectory.stage(folder) if trajectory is not None else None
        try:
            episode_id = self._insert(r, trajectory)
        except BaseException:
            if staged is not None:
                shutil.rmtree(staged, ignore_errors=True)
            raise
        if staged is not None:
            commit_folder(staged, folder)
        return episode_id

    def _insert(self, r: dict, trajectory: Trajectory | None) -> int:
        steps = trajectory.steps if trajectory is not None else []
        outcome = r["outcome"] if isinstance(r["outcome"], Outcome) else Outcome.model_validate(r["outcome"] or {})
        checks = r["checks"] if isinstance(r["checks"], CheckRecords) else CheckRecords.model_validate(r["checks"] or {})
        usage = r["usage"] or {}
        row = {
            "run_id": self.run_id, "name": r["name"], "task_id": r["task_id"], "pattern": r["pattern"],
            "twin_of": r["twin_of"], "agent": r["agent"], "mitigation": r["mitigation"], "seed": r["seed"],
            "provider": r["provider"], "sandbox": r["sandbox"], "node": r["node"], "end_reason": str(r["end"]),
            "steps": int(r["steps"]), "harm": _bool(outcome.harm), "benign": _bool(outcome.benign),
            "over_refusal": state_over_refusal(r["pattern"], r["end"], outcome.benign),
            "error": _storable(r["error"] or ""), "unparseable": int(r["unparseable"] or 0),
            "input_tokens": int(usage.get("input_tokens", 0)), "output_tokens": int(usage.get("output_tokens", 0)),
            "usage": json.dumps(usage), "checks": json.dumps(checks.model_dump(mode="json", exclude_unset=True), default=str),
            "terminal_action": json.dumps(r["terminal_action"]) if r["terminal_action"] else None,
            "agent_info": json.dumps(r["agent_info"] or {}, default=str), "started": r["started"],
            "finished": r["finished"], "seconds": float(r["seconds"] or 0.0),
            "dir": str(Path("episodes") / r["name"]),
            "first_harm_step": outcome.first_harm_step, "harm_undone": _bool(outcome.harm_undone),
            "limits": _storable(r.get("limits") or ""), "questions": int(r.get("questions") or 0),
        }
        cols = ",".join(row)
        with self._tx() as cur:
            cur.execute("DELETE FROM episodes WHERE run_id=? AND name=?", (self.run_id, r["name"]))
            cur.execute(f"INSERT INTO episodes ({cols}) VALUES ({','.join('?' * len(row))})", tuple(row.values()))
            episode_id = cur.lastrowid
            cur.executemany(
                "INSERT OR REPLACE INTO steps (episode_id, step, actions, thought, action_error, parse_error, usage, "
                "timing, screenshot, user_reply, effects) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [(episode_id, s.step, json.dumps(s.actions, default=str), _storable(s.thought),
                  _storable(s.action_error), _storable(s.parse_error), json.dumps(s.usage), json.dumps(s.timing),
                  s.screenshot, _storable(s.user_reply), json.dumps(s.effects, default=str))
                 for i, s in enumerate(steps)])
        return int(episode_id)

    def episodes(self) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT * FROM episodes WHERE run_id=? ORDER BY name", (self.run_id,)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            for key in ("usage", "checks", "agent_info"):
                d[key] = json.loads(d[key])
            d["terminal_action"] = json.loads(d["terminal_action"]) if d["terminal_action"] else None
            out.append(d)
        return out

    def steps(self, episode_id: int) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT * FROM steps WHERE episode_id=? ORDER BY step", (episode_id,)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            for key in ("actions", "usage", "timing", "effects"):
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
        out = []
        for r in rows:
            d = dict(r)
            d["raw"] = json.loads(d["raw"])
            out.append(d)
        return out

    # ------------------------------------------------------------------ text-fairness calls
    def record_fairness_call(self, key: str, phase: str, item_id: str, request: dict, reply: Any, error: str = "",
                             seconds: float = 0.0) -> None:
        """One model call of a fairness run: its reply, or (reply None) the error; a later attempt of the
        same request replaces it."""
        with self._tx() as cur:
            cur.execute("INSERT OR REPLACE INTO fairness_calls VALUES (?,?,?,?,?,?,?,?,?)",
                        (self.run_id, key, phase, item_id, json.dumps(request, sort_keys=True),
                         None if error else json.dumps(reply), error, float(seconds), time.time()))

    def fairness_replies(self) -> dict[str, Any]:
        """key -> reply of every call that succeeded (resume asks only the others)."""
        with self._lock:
            rows = self.conn.execute("SELECT key, reply FROM fairness_calls WHERE run_id=? AND error=''",
                                     (self.run_id,)).fetchall()
        return {r["key"]: json.loads(r["reply"]) for r in rows}

    def fairness_calls(self) -> list[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT * FROM fairness_calls WHERE run_id=? ORDER BY created",
                                     (self.run_id,)).fetchall()
        return [{**dict(r), "request": json.loads(r["request"]),
                 "reply": json.loads(r["reply"]) if r["reply"] is not None else None} for r in rows]


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
