"""The effects ledger: what each step changed on the desktop, as typed values.

After every step the desktop compares what the agent can change with what it was before the step:

- files anywhere the agent can write (`FileEffect`): created, modified, moved (same inode, new path),
  deleted, re-moded; a created or modified regular file comes with what it says (its format, sha256 and
  text, read by blindact.content in the desktop's worker process, within time and size limits);
- the web apps' records (`AppEffect`): each app's event log (a mail sent with its recipients, subject,
  body and the text of its attachments; a post, a share, a permission, a payment, a form...);
- the agent's processes (`ProcessEffect`): started and ended, with their command lines.

Cheap enough for every step: a walk of the agent's folders that stats, never reads, unchanged files; a
stat of each app's state file, reading its log only when it changed; one pass over /proc.

The effects of a step are recorded with it (steps.jsonl), shown in the trajectory viewer, and given to
the state checks that read what happened rather than only how things ended (blindact.checks).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

_WALK_LIMIT = 20_000  # entries per folder: more, and the rest of the folder is not looked at this step
_EXTRACT_PER_STEP = 25  # files whose text one step reads; the others are recorded without it


class _Effect(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileEffect(_Effect):
    kind: Literal["file"] = "file"
    op: Literal["created", "modified", "moved", "deleted", "mode"]
    path: str  # "~/..." for the home, else the absolute path
    old_path: str | None = None  # moved: where it was
    file_type: Literal["file", "dir", "link", "other"] = "file"
    size: int = 0
    mode: int = 0  # permission bits
    format: str = ""
    sha256: str = ""
    text: str = ""
    note: str = ""  # why the text is missing or partial


class AppEffect(_Effect):
    kind: Literal["app"] = "app"
    app: str
    event: str  # the app's own name for it: message_sent, post_created, permission_changed...
    record: dict[str, Any] = {}
    text: str = ""  # every text the record holds, attached or shared files' included, for content matching
    authored: str = ""  # the part the agent wrote or chose (a reply's pre-filled quote left out)


class ProcessEffect(_Effect):
    kind: Literal["process"] = "process"
    op: Literal["started", "ended"]
    pid: int
    name: str
    cmdline: str = ""


Effect = Annotated[Union[FileEffect, AppEffect, ProcessEffect], Field(discriminator="kind")]
EFFECTS: TypeAdapter[list[Effect]] = TypeAdapter(list[Effect])


def parse_effects(data: list[dict]) -> list[Effect]:
    return EFFECTS.validate_python(data)


@dataclass
class _Entry:
    ino: int
    size: int
    mtime: int
    mode: int
    ftype: str


@dataclass
class Ledger:
    """One desktop's ledger. `roots`: (label, folder) pairs the agent can write ("~" for its home);
    `store`: the web apps' state (or None); `agent_pids`: the agent's processes now; `worker`: reads files
    and the apps' event logs (blindact.checks.runner.CheckRunner, in its own process, time-bounded)."""

    roots: list[tuple[str, Path]]
    store: Any
    agent_pids: Callable[[], set[int]]
    worker: Any
    exclude: tuple[Path, ...] = ()
    effects: list[dict] = field(default_factory=list)  # the episode's, each with its "step"
    _files: dict[str, _Entry] = field(default_factory=dict)
    _app_marks: dict[str, tuple[int, int]] = field(default_factory=dict)  # app -> (file mtime_ns, last event id)
    _procs: dict[int, tuple[str, str]] = field(default_factory=dict)
    seconds: float = 0.0  # time the last step's diff took

    def begin(self) -> None:
        """The episode starts here: what is there now is the baseline, nothing is an effect."""
        self.effects = []
        self._files = self._scan()
        self._app_marks = {app: (mtime, self._last_event(app)) for app, mtime in self._app_mtimes().items()}
        self._procs = self._processes()

    def step(self) -> list[dict]:
        """What changed since the last call (also kept in `effects`, the episode's ledger so far)."""
        t0 = time.perf_counter()
        found: list[_Effect] = [*self._file_effects(), *self._app_effects(), *self._process_effects()]
        records = [{**e.model_dump(exclude_defaults=True), "kind": e.kind} for e in found]
        self.effects += records
        self.seconds = time.perf_counter() - t0
        return records

    # ---------------------------------------------------------------- files
    def _scan(self) -> dict[str, _Entry]:
        out: dict[str, _Entry] = {}
        for label, root in self.roots:
            try:
                top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue
            count = 0
            try:
                for dirpath, dirnames, filenames, dirfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                    if any(Path(os.path.normpath(root / dirpath)) == ex for ex in self.exclude):
                        dirnames[:] = []
                        continue
                    for name in dirnames + filenames:
                        count += 1
                        if count > _WALK_LIMIT:
                            break
                        try:
                            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                        except OSError:
                            continue
                        rel = os.path.normpath(os.path.join(dirpath, name))
                        key = f"{label}/{rel}" if label == "~" else str(Path(label) / rel)
                        out[key] = _Entry(st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode), _ftype(st.st_mode))
                    if count > _WALK_LIMIT:
                        break
            finally:
                os.close(top)
        return out

    def _file_effects(self) -> list[FileEffect]:
        now = self._scan()
        before = self._files
        self._files = now
        gone = {p: e for p, e in before.items() if p not in now}
        by_inode = {e.ino: p for p, e in gone.items()}
        effects: list[FileEffect] = []
        to_read: list[FileEffect] = []
        for path, e in now.items():
            old = before.get(path)
            if old is None:
                moved_from = by_inode.pop(e.ino, None) if e.ftype != "dir" else None
                if moved_from is not None:
                    gone.pop(moved_from, None)
                    effect = FileEffect(op="moved", path=path, old_path=moved_from, file_type=e.ftype,
                                        size=e.size, mode=e.mode)
                    effects.append(effect)
                    if e.ftype == "file":
                        to_read.append(effect)  # where it went can matter as much as what it says
                    continue
                effect = FileEffect(op="created", path=path, file_type=e.ftype, size=e.size, mode=e.mode)
            elif (old.size, old.mtime, old.ino) != (e.size, e.mtime, e.ino) and e.ftype == "file":
                effect = FileEffect(op="modified", path=path, size=e.size, mode=e.mode)
            elif old.mode != e.mode:
                effects.append(FileEffect(op="mode", path=path, file_type=e.ftype, size=e.size, mode=e.mode))
                continue
            else:
                continue
            effects.append(effect)
            if effect.file_type == "file":
                to_read.append(effect)
        effects += [FileEffect(op="deleted", path=p, file_type=e.ftype, size=e.size, mode=e.mode) for p, e in gone.items()]
        self._read(to_read)
        return effects

    def _read(self, effects: list[FileEffect]) -> None:
        reading = effects[:_EXTRACT_PER_STEP]
        for skipped in effects[_EXTRACT_PER_STEP:]:
            skipped.note = f"not read: more than {_EXTRACT_PER_STEP} files changed in one step"
        if not reading:
            return
        pairs = [self._locate(e.path) for e in reading]
        for effect, found in zip(reading, self.worker.extract(pairs)):
            if found.get("error") and not found.get("text"):
                effect.note = str(found["error"])[:200]
                continue
            effect.format, effect.sha256, effect.text = found.get("format", ""), found.get("sha256", ""), found.get("text", "")
            if found.get("truncated"):
                effect.note = "text cut at the ledger's limit"

    def _locate(self, path: str) -> tuple[str, str]:
        for label, root in self.roots:
            prefix = "~/" if label == "~" else label.rstrip("/") + "/"
            if path.startswith(prefix):
                return str(root), path[len(prefix):]
        return "/", path.lstrip("/")

    # ---------------------------------------------------------------- apps
    def _app_mtimes(self) -> dict[str, int]:
        if self.store is None:
            return {}
        from blindact.apps.registry import APPS

        out = {}
        for app in APPS:
            path = self.store.path(app)
            try:
                st = os.stat(path)
                wal = os.stat(f"{path}-wal").st_mtime_ns if os.path.exists(f"{path}-wal") else 0
            except OSError:
                continue
            out[app] = max(st.st_mtime_ns, wal)
        return out

    def _last_event(self, app: str) -> int:
        try:
            return self.store.last_event_id(app)
        except Exception:  # noqa: BLE001 - an app whose state cannot be read has no events to record
            return 0

    def _app_effects(self) -> list[AppEffect]:
        changed = {app: mtime for app, mtime in self._app_mtimes().items()
                   if mtime != self._app_marks.get(app, (0, 0))[0]}
        if not changed:
            return []
        marks = [(app, self._app_marks.get(app, (0, 0))[1]) for app in changed]
        effects = []
        for (app, last), answer in zip(marks, self.worker.events(marks)):
            for ev in answer.get("events", []):
                effects.append(AppEffect(app=app, event=ev["kind"], record=ev["payload"], text=ev.get("text", ""),
                                         authored=ev.get("authored", "")))
                last = max(last, int(ev["id"]))
            self._app_marks[app] = (changed[app], last)
        return effects

    # ---------------------------------------------------------------- processes
    def _processes(self) -> dict[int, tuple[str, str]]:
        out = {}
        for pid in self.agent_pids():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            out[pid] = (comm, cmdline[:500])
        return out

    def _process_effects(self) -> list[ProcessEffect]:
        now = self._processes()
        before, self._procs = self._procs, now
        started = [ProcessEffect(op="started", pid=p, name=c, cmdline=cmd) for p, (c, cmd) in now.items() if p not in before]
        ended = [ProcessEffect(op="ended", pid=p, name=c, cmdline=cmd) for p, (c, cmd) in before.items() if p not in now]
        return started + ended


def _ftype(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def summarize(effect: dict) -> str:
    """One line for a person (the trajectory viewer)."""
    kind = effect.get("kind")
    if kind == "file":
        what = f"{effect['op']} {effect['path']}"
        if effect.get("old_path"):
            what += f" (from {effect['old_path']})"
        if effect["op"] == "mode":
            what += f" -> {effect.get('mode', 0):o}"
        if effect.get("format"):
            what += f" [{effect['format']}]"
        return what
    if kind == "app":
        fields = ", ".join(f"{k}={str(v)[:40]!r}" for k, v in list(effect.get("record", {}).items())[:4])
        return f"{effect['app']}: {effect['event']} ({fields})"
    if kind == "process":
        return f"process {effect['op']}: {effect.get('cmdline') or effect.get('name')}"
    return str(effect)
