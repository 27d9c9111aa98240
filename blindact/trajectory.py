"""One episode as a value (what ran, every step, how it ended) and its folder on disk.

The recording wrapper builds a `Trajectory` in memory as the episode runs; the run's store writes it
once the episode has ended (its rows in SQLite and this folder beside them), so nothing is written
by the env and read back, and Ray workers send the value itself to the driver.

Layout of an episode folder (the form the judges, the labelling page and people read):
  episode.json   what ran: task, agent, mitigation, seed, provider, sandbox, versions, started
  steps.jsonl    one line per observation: step 0 is the initial screen, then one per env.step
  step_NNN.png   the screenshot the agent saw after that step
  result.json    how it ended, the state checks' results, the outcome (written last)
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

STEPS_FILE = "steps.jsonl"
META_FILE = "episode.json"
RESULT_FILE = "result.json"


def action_line(action: dict) -> str:
    """One recorded action as a line: `type(field=value, ...)`, empty fields left out."""
    kind = action.get("type", "?")
    rest = ", ".join(f"{k}={v!r}" for k, v in action.items() if k != "type" and v not in (None, "", [], {}))
    return f"{kind}({rest})"


def shot_name(step: int) -> str:
    return f"step_{step:03d}.png"


class _Record(BaseModel):
    # written by this blindact, read back from folders an older one may have written: unknown fields are
    # kept as they were, never a reason to refuse an episode
    model_config = ConfigDict(extra="allow")


class CheckRecord(_Record):
    """One state check's result: `error` when it could not run; `first_step` (harm checks) the first step
    at which it held, from the effects ledger."""

    name: str
    passed: bool
    detail: str = ""
    value: Any = None
    error: str = ""
    first_step: int | None = None


class CheckRecords(_Record):
    harm: list[CheckRecord] = []
    benign: list[CheckRecord] = []


class Outcome(_Record):
    """What the state checks say happened: `harm` (at any step: blindact.wrappers), `benign` (the goal
    reached; None where the task has none), when the harm was first done and whether it was undone."""

    harm: bool | None = None
    benign: bool | None = None
    first_harm_step: int | None = None
    harm_undone: bool = False


class StepRecord(_Record):
    """One observation of an episode: step 0 is the initial screen, then one per env.step. `effects`: what
    the step changed on the desktop (the effects ledger, blindact.desktop.ledger)."""

    step: int
    actions: list[dict] = []
    thought: str = ""
    parse_error: str = ""
    usage: dict[str, int] = {}
    raw: Any = None
    safety_checks: list = []
    action_error: str = ""
    user_reply: str = ""
    timing: dict[str, float] = {}
    accessibility_tree: str = ""
    screenshot: str | None = None
    effects: list[dict] = []


class EpisodeEnding(_Record):
    """How an episode ended (result.json): the ending (blindact.endings.End), the agent's own ending where a
    check that could not run replaced it, the terminal action, the state checks and the outcome."""

    end: str
    agent_end: str | None = None
    terminal_action: dict | None = None
    steps: int = 0
    questions: int = 0
    error: str = ""
    desktop_error: str = ""
    check_error: str = ""
    checks: CheckRecords = Field(default_factory=CheckRecords)
    outcome: Outcome = Field(default_factory=Outcome)
    finished: float = 0.0


def last_shot(steps: list[StepRecord]) -> str | None:
    """The file name of the latest screenshot among these steps."""
    return next((s.screenshot for s in reversed(steps) if s.screenshot), None)


@dataclass
class Trajectory:
    """meta: what ran; steps: one record per observation (step 0 = the initial screen), naming its
    screenshot file; shots: the image bytes by file name; result: how it ended (None while the episode
    runs). Dicts given for steps or the result are validated into their records."""

    meta: dict
    steps: list[StepRecord] = field(default_factory=list)
    shots: dict[str, bytes] = field(default_factory=dict)
    result: EpisodeEnding | None = None

    def __post_init__(self) -> None:
        self.steps = [s if isinstance(s, StepRecord) else StepRecord.model_validate(s) for s in self.steps]

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "result" and value is not None and not isinstance(value, EpisodeEnding):
            value = EpisodeEnding.model_validate(value)  # a dict given as the ending is validated into one
        object.__setattr__(self, name, value)

    @property
    def finished(self) -> bool:
        return self.result is not None

    def add_step(self, record: dict | StepRecord, png: bytes | None) -> None:
        step = record if isinstance(record, StepRecord) else StepRecord.model_validate(record)
        if png is not None:
            step.screenshot = shot_name(step.step)
            self.shots[step.screenshot] = png
        self.steps.append(step)

    def end(self, result: dict | EpisodeEnding) -> None:
        self.result = result

    def tail(self, n: int) -> Trajectory:
        """The last `n` steps with only the latest of their screenshots: what a live view shows, small
        enough to send after every step."""
        steps = self.steps[-n:]
        shot = last_shot(steps)
        return Trajectory(self.meta, list(steps), {shot: self.shots[shot]} if shot in self.shots else {}, self.result)

    @classmethod
    def read(cls, folder: Path) -> "Trajectory":
        """An episode folder back as a value (to store episodes recorded elsewhere)."""
        data = read_episode(folder)
        shots = {s["screenshot"]: (Path(folder) / s["screenshot"]).read_bytes()
                 for s in data["steps"] if s.get("screenshot") and (Path(folder) / s["screenshot"]).exists()}
        return cls(meta=data["meta"], steps=data["steps"], shots=shots, result=data["result"])

    def write(self, folder: Path) -> None:
        """The folder form, replacing whatever an earlier attempt of this episode left there. Files
        are written to a sibling folder first and swapped in, so a crash never leaves a mix."""
        commit(self.stage(folder), folder)

    def stage(self, folder: Path) -> Path:
        """Write the folder form beside `folder` (as `<name>.writing`) and return where; `commit` swaps it
        in, `discard` drops it."""
        folder = Path(folder)
        tmp = folder.with_name(folder.name + ".writing")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        try:
            for name, image in self.shots.items():
                if "/" in name or name.startswith("."):
                    raise ValueError(f"screenshot file name {name!r} would leave the episode folder")
                (tmp / name).write_bytes(image)
            (tmp / META_FILE).write_text(json.dumps(self.meta, indent=2, default=str))
            (tmp / STEPS_FILE).write_text("".join(json.dumps(s.model_dump(mode="json", exclude_unset=True), default=str) + "\n"
                                                  for s in self.steps))
            if self.result is not None:
                (tmp / RESULT_FILE).write_text(json.dumps(self.result.model_dump(mode="json", exclude_unset=True), indent=2, default=str))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return tmp


def commit(staged: Path, folder: Path) -> None:
    """Swap a staged episode folder in place of `folder` (an earlier attempt's is removed)."""
    folder = Path(folder)
    if folder.exists():
        old = folder.with_name(folder.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(folder, old)
        os.replace(staged, folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staged, folder)


def read_episode(episode_dir: Path) -> dict:
    """An episode folder as one dict: dir, meta, steps (list), result (None while unfinished)."""
    episode_dir = Path(episode_dir)
    meta_path = episode_dir / META_FILE
    if not meta_path.exists():
        raise FileNotFoundError(f"{episode_dir}: not an episode folder (no {META_FILE})")
    meta = json.loads(meta_path.read_text())
    steps = []
    steps_path = episode_dir / STEPS_FILE
    if steps_path.exists():
        for n, line in enumerate(steps_path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    steps.append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{steps_path}, line {n}: not JSON ({exc})") from None
    result_path = episode_dir / RESULT_FILE
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return {"dir": str(episode_dir), "meta": meta, "steps": steps, "result": result}
