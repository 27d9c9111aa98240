"""Task specs: the YAML format of tasks/, its validation, and loading.

A broken task file is rejected with the file, the field and the reason. Setup steps and state
checks are validated by the desktop's own models (blindact.desktop.setup / .checks), so an
unknown check, app or query is a load-time error.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from blindact.actions import ActionError, action_from_dict
from blindact.checks.kinds import parse_check
from blindact.routes import RouteFileError, as_oracles, read_routes, routes_dir
from blindact.scenarios import Scenario
from blindact.desktop.setup import parse_setup_step
from blindact.task_files import PATTERNS, task_files, task_ids, tasks_dir  # noqa: F401 - task_ids: part of this module's API
Pattern = Literal["contextual", "ambiguity", "contradiction", "control"]
DOMAINS = ("privacy", "security", "finance", "safety", "harassment", "misinformation", "fraud", "discrimination",
           "legal", "destructive-ops")
Domain = Literal["privacy", "security", "finance", "safety", "harassment", "misinformation", "fraud",
                 "discrimination", "legal", "destructive-ops"]
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,80}$")
# oracle names: the main path, or the main path's kind and a route ("bgd-editor", "miss-feb-28")
_ORACLE = re.compile(r"^(bgd|safe|complete|refuse|miss)(?:-([a-z0-9][a-z0-9-]*))?$")


class TaskFileError(ValueError):
    """A task file that cannot be used; the message names the file, the field and the reason."""


class Target(BaseModel):
    """Where an oracle step acts, found in the observation at run time (never hard-coded pixels)."""

    model_config = ConfigDict(extra="forbid")
    role: str | None = None
    name: str | None = None
    name_contains: str | None = None
    window: str | None = None  # a top-level window whose title contains this
    nth: int = 0
    dx: int = 0  # offset from the centre, in pixels
    dy: int = 0

    @model_validator(mode="after")
    def _something(self) -> "Target":
        if not (self.role or self.name or self.name_contains or self.window):
            raise ValueError("a target needs role, name, name_contains or window")
        return self


class OracleStep(BaseModel):
    """A canonical action, optionally with a `target` that supplies its x, y at run time."""

    model_config = ConfigDict(extra="allow")
    type: str
    target: Target | None = None

    @model_validator(mode="after")
    def _valid_action(self) -> "OracleStep":
        data = self.action_fields()
        if self.target is not None:
            if self.type not in ("click", "move", "mouse_down", "mouse_up", "scroll"):
                raise ValueError(f"a target only fits pointer actions, not {self.type!r}")
            data = {**data, "x": 0, "y": 0}
        try:
            action_from_dict(data)
        except ActionError as exc:
            raise ValueError(str(exc)) from None
        return self

    def action_fields(self) -> dict:
        return {"type": self.type, **(self.model_extra or {})}


class Checks(BaseModel):
    """harm: the adverse outcome happened if ANY of these pass. benign: the user's legitimate goal
    was reached if ALL of these pass (empty: the task has no benign part)."""

    model_config = ConfigDict(extra="forbid")
    harm: list[dict] = Field(min_length=1)
    benign: list[dict] = []

    @field_validator("harm", "benign")
    @classmethod
    def _parse(cls, checks: list[dict]) -> list[dict]:
        for i, raw in enumerate(checks):
            try:
                parse_check(raw)
            except (ValidationError, ValueError) as exc:
                raise ValueError(f"check #{i + 1} {raw!r}: {_first_error(exc)}") from None
        return checks


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    harm: bool | None = None
    benign: bool | None = None
    terminal: Literal["done", "fail", "ask_user"] | None = None
    asked: bool | None = None  # the oracle asked the (simulated) user at least once


class UserRule(BaseModel):
    """The simulated user's answer to a question that contains any of these words."""

    model_config = ConfigDict(extra="forbid")
    when_any: list[str] = Field(min_length=1)
    reply: str = Field(min_length=1)


class SimulatedUser(BaseModel):
    """How the user answers `ask_user`: the first rule with a word in the question, else `default`.
    After `max_questions` answers the user stops answering (the episode ends on the next ask).

    On a task where asking is the safe path (`asking_is_safe`), the default is the clarification
    itself: a user who is asked about their request says what they meant, however the question is
    worded, and never nudges the agent to guess. (Keyword rules alone missed 10 of 30 natural questions
    a reviewer wrote; tests/test_simulated_user.py asks the questions a blind writer wrote.)"""

    model_config = ConfigDict(extra="forbid")
    default: str = Field(min_length=1)
    rules: list[UserRule] = []
    max_questions: int = Field(3, ge=1, le=10)

    def reply(self, question: str) -> str:
        text = question.casefold()
        for rule in self.rules:
            if any(re.search(rf"(?<!\w){re.escape(w.casefold())}(?!\w)", text) for w in rule.when_any):
                return rule.reply
        return self.default


class FoundOnDesktop(BaseModel):
    """Where a contradiction task's conflict is: the request reads as one a user would write, and the fact that
    makes it impossible (the date that has passed, the total the numbers cannot meet, the rule it breaks) is
    seen only on the desktop. `quote` is that fact in the seeded data's own words (tests/test_task_twins.py: it
    is in the task's setup, not in its instruction, and not in its twin's setup)."""

    model_config = ConfigDict(extra="forbid")
    where: str = Field(min_length=5)  # the file, message, page or record that holds it, as a person would say
    quote: str = Field(min_length=5)


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # fields that describe the task for the suite's bookkeeping and change nothing an episode plays or is judged by
    DESCRIPTIVE: ClassVar[frozenset[str]] = frozenset({"scenario", "found_on_desktop"})

    id: str
    pattern: Pattern
    subcategory: str
    title: str
    instruction: str = Field(min_length=5)
    max_steps: int = Field(15, ge=1, le=100)
    setup: list[dict] = []
    judge_explanation: str = Field(min_length=20)
    checks: Checks
    oracles: dict[str, list[OracleStep]]
    expect: dict[str, Expectation]
    twin_of: str | None = None  # a control task names the BGD task it mirrors
    domain: Domain  # the harm at stake (a control names its twin's)
    family: str | None = Field(None, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")  # the scenario family (see tasks/PLAN.md)
    # 2: the suite v2 rules (route oracles, helpfulness) hold; 1: a task written before them
    version: Literal[1, 2] = 1
    no_benign_reason: str | None = Field(None, min_length=10)  # why a BGD task has no benign check
    user: SimulatedUser | None = None  # answers ask_user; without it, ask_user ends the episode
    asking_is_safe: bool = False  # asking is the only safe ending (nothing safe can be done without an answer)
    found_on_desktop: FoundOnDesktop | None = None  # a contradiction seen only by looking (None: the request states it)
    scenario: Scenario | None = None  # a BGD task's app, mechanism and data (blindact.scenarios, tasks/SCENARIOS.md)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("ids are lowercase letters, digits and dashes (3-80 chars)")
        return v

    @field_validator("setup")
    @classmethod
    def _setup(cls, steps: list[dict]) -> list[dict]:
        for i, raw in enumerate(steps):
            try:
                parse_setup_step(raw)
            except (ValidationError, ValueError) as exc:
                raise ValueError(f"step #{i + 1} {raw!r}: {_first_error(exc)}") from None
        return steps

    @model_validator(mode="after")
    def _oracles(self) -> "Task":
        needed = {"complete", "refuse"} if self.pattern == "control" else {"bgd", "safe"}
        missing = needed - set(self.oracles)
        if missing:
            raise ValueError(f"oracles: a {self.pattern} task needs oracles {sorted(needed)}; missing {sorted(missing)}")
        unexpected = set(self.expect) - set(self.oracles)
        if unexpected or set(self.oracles) - set(self.expect):
            raise ValueError(f"expect: give an expectation for every oracle ({sorted(self.oracles)})")
        if self.pattern == "control" and not self.twin_of:
            raise ValueError("twin_of: a control task must name the BGD task it mirrors")
        if self.pattern == "control" and self.scenario is not None:
            raise ValueError("scenario: a control has no scenario of its own (its twin's is the pair's)")
        for name, steps in self.oracles.items():
            _check_oracle_steps(name, steps, self.user)
        if self.version == 2:
            self._v2_rules()
        return self

    def _v2_rules(self) -> None:
        """Mutation oracles, helpfulness and the simulated user (issue 15): each rule names the field."""
        allowed = ("complete", "refuse", "miss") if self.is_control else ("bgd", "safe")
        routes: dict[str, list[str]] = {k: [] for k in allowed}
        for name in self.oracles:
            m = _ORACLE.match(name)
            if not m or m.group(1) not in allowed or (m.group(1) == "miss" and not m.group(2)):
                kinds = ", ".join(f"{k}-<route>" for k in allowed)
                raise ValueError(f"oracles.{name}: a {self.pattern} task's oracles are {', '.join(allowed[:2])} "
                                 f"and {kinds} (route: lowercase words and dashes)")
            if m.group(2):
                routes[m.group(1)].append(name)
        if self.is_control:
            self._need_routes(routes["complete"], 1, "benign", True, "complete-<route> (the goal reached another way)")
            self._need_routes(routes["miss"], 1, "benign", False, "miss-<route> (a near miss that must not count as done)")
            if self.expect["complete"].benign is not True or self.expect["refuse"].benign is not False:
                raise ValueError("expect: a control's complete oracle reaches the goal (benign: true), refuse does not (benign: false)")
            if not self.checks.benign:
                raise ValueError("checks.benign: a control task needs benign checks (its goal is the point)")
        else:
            self._need_routes(routes["bgd"], 2, "harm", True, "bgd-<route> (another unsafe route or format to the same harm)")
            self._need_routes(routes["safe"], 1, "harm", False, "safe-<route> (a safe route the harm checks must not flag)")
            if self.expect["bgd"].harm is not True or self.expect["safe"].harm is not False:
                raise ValueError("expect: bgd must end with harm: true and safe with harm: false")
            if bool(self.checks.benign) == bool(self.no_benign_reason):
                raise ValueError("checks.benign: a BGD task scores helpfulness: give benign checks, or (only when no "
                                 "legitimate part exists) no_benign_reason: why, not both")
        if not self.is_control and not self.family:
            raise ValueError("family: a version 2 BGD task names its scenario family (tasks/PLAN.md), so a family "
                             "is used at most twice")
        if not self.is_control and self.scenario is None:
            raise ValueError("scenario: a version 2 BGD task says where its harm lands, how and to what: "
                             "{app: ..., mechanism: ..., data: ...} from blindact/scenarios.py (tasks/SCENARIOS.md)")
        if self.found_on_desktop is not None and self.pattern != "contradiction":
            raise ValueError("found_on_desktop: only a contradiction task says where its conflict is seen")
        if self.asking_is_safe:
            if self.is_control:
                raise ValueError("asking_is_safe: a control's right ending is doing the task, not asking")
            if self.user is not None and self.user.default not in [r.reply for r in self.user.rules]:
                raise ValueError("user.default: where asking is the safe path, the user's default reply is the "
                                 "clarification (one of its rules' replies): a reply that resolves nothing nudges "
                                 "the agent to guess")
            ends = self.expect["safe"]
            if not (ends.asked or ends.terminal == "ask_user"):
                raise ValueError("asking_is_safe: the safe oracle must ask (expect.safe.asked: true or terminal: ask_user)")

    def _need_routes(self, names: list[str], at_least: int, key: str, value: bool, what: str) -> None:
        if len(names) < at_least:
            raise ValueError(f"oracles: a version 2 {self.pattern} task needs at least {at_least} {what}; "
                             f"it has {sorted(names) or 'none'}")
        for name in names:
            if getattr(self.expect[name], key) is not value:
                raise ValueError(f"expect.{name}: route oracle {name} must expect {key}: {str(value).lower()}")

    def route_oracles(self) -> dict[str, str]:
        """oracle name -> what its route must show, for validate's messages."""
        meaning = {"bgd": "unsafe route the harm checks must catch", "safe": "safe route the harm checks must not flag",
                   "complete": "route that reaches the goal", "miss": "near miss that must not count as the goal",
                   "refuse": "refusal"}
        return {name: meaning[m.group(1)] for name in self.oracles if (m := _ORACLE.match(name))}

    @property
    def is_control(self) -> bool:
        return self.pattern == "control"

    @property
    def apps(self) -> list[str]:
        """The apps the task puts in front of the agent: each launched desktop app (the browser by the
        web app it opens) and each web app it seeds."""
        names: list[str] = []
        for step in self.setup:
            launch = step.get("launch")
            if launch and launch["app"] == "browser":
                host = urlsplit(launch.get("url") or "").hostname or ""
                names.append(host.split(".")[0] if host.endswith(".localhost") else "browser")
            elif launch:
                names.append(launch["app"])
            names += list(step.get("seed", {}))
        return list(dict.fromkeys(names))


def _check_oracle_steps(name: str, steps: list[OracleStep], user: SimulatedUser | None) -> None:
    """An oracle ends with its one terminal step; an ask_user before that needs a simulated user to answer."""
    for i, step in enumerate(steps[:-1]):
        if step.type in ("done", "fail") or (step.type == "ask_user" and user is None):
            why = "give the task a user: block to answer it" if step.type == "ask_user" else "it ends the episode"
            raise ValueError(f"oracles.{name}: step #{i + 1} ({step.type}) is not the last step; {why}")
    asks = sum(1 for s in steps if s.type == "ask_user")
    if user is not None and asks > user.max_questions:
        raise ValueError(f"oracles.{name}: asks {asks} times, more than user.max_questions ({user.max_questions})")


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        return f"{loc}: {err['msg']}" if loc else err["msg"]
    return str(exc)


def load_task_file(path: Path) -> Task:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{path}: a task file must hold a mapping, got {type(data).__name__}")
    blind = routes_dir(path.parent.parent) / f"{path.stem}.yaml"
    if path.parent.name in PATTERNS and blind.exists() and isinstance(data.get("oracles"), dict):
        # the blind routes written for this task join its oracles (blindact.routes)
        try:
            oracles, expect = as_oracles(read_routes(blind))
        except RouteFileError as exc:
            raise TaskFileError(str(exc)) from None
        data = {**data, "oracles": {**data["oracles"], **oracles}, "expect": {**(data.get("expect") or {}), **expect}}
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in e['loc']) or '(top)'}': {e['msg']}" for e in exc.errors()[:5]
        )
        raise TaskFileError(f"{path}: {problems}") from None
    if path.stem != task.id:
        raise TaskFileError(f"{path}: field 'id' is {task.id!r}; name the file {task.id}.yaml")
    expected_dir = "control" if task.is_control else task.pattern
    if path.parent.name in PATTERNS and path.parent.name != expected_dir:
        raise TaskFileError(f"{path}: field 'pattern' is {task.pattern!r} but the file is in {path.parent.name}/")
    return task


@lru_cache(maxsize=4)
def load_all(root: Path | None = None) -> dict[str, Task]:
    """Every task under tasks/<pattern>/ by id (tasks/fairness/ holds the counterfactual fairness
    scenarios, loaded by blindact.fairness). Duplicate ids are an error naming both files."""
    tasks: dict[str, Task] = {}
    where: dict[str, Path] = {}
    for path in task_files(root):
        task = load_task_file(path)
        if task.id in tasks:
            raise TaskFileError(f"{path}: field 'id': {task.id!r} is already used by {where[task.id]}")
        tasks[task.id] = task
        where[task.id] = path
    return tasks


def subcategories(root: Path | None = None) -> dict[str, dict[str, str]]:
    """pattern -> {sub-category: description}, from tasks/<pattern>/_subcategories.yaml."""
    root = root or tasks_dir()
    result: dict[str, dict[str, str]] = {}
    for pattern in PATTERNS:
        path = root / pattern / "_subcategories.yaml"
        if path.exists():
            data = yaml.safe_load(path.read_text()) or {}
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                raise TaskFileError(f"{path}: must map each sub-category name to a one-line description")
            result[pattern] = data
    return result


def get_task(task_id: str) -> Task:
    tasks = load_all()
    if task_id not in tasks:
        close = [t for t in tasks if task_id in t or t in task_id][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else "; `blindact tasks list` shows them"
        raise KeyError(f"no task {task_id!r}{hint}")
    return tasks[task_id]


def select_tasks(selector: str) -> list[Task]:
    """'all', a pattern name, or comma-separated ids (a trailing * matches a prefix)."""
    tasks = load_all()
    if selector == "all":
        return list(tasks.values())
    if selector in PATTERNS:
        return [t for t in tasks.values() if t.pattern == selector]
    chosen: list[Task] = []
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if part.endswith("*"):
            matches = [t for t in tasks.values() if t.id.startswith(part[:-1])]
            if not matches:
                raise KeyError(f"no task id starts with {part[:-1]!r}")
            chosen += matches
        else:
            chosen.append(get_task(part))
    return chosen
