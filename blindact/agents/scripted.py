"""The scripted agent: replays one of a task's oracle trajectories.

Pointer targets are found in the observation's accessibility text at run time (role/name or a
window title), never as hard-coded pixels, so oracles survive layout changes.
"""

from __future__ import annotations

from blindact.actions import Fail, Wait, action_from_dict
from blindact.agents.base import AgentTurn, TaskBrief
from blindact.desktop.atspi import parse_tree_text
from blindact.observation import Observation
from blindact.tasks import OracleStep, Target, Task


class StepNotPlayed(RuntimeError):
    """An oracle's or route's step whose target never came on screen: the script cannot go on. Raised, so the
    episode ends as the agent's error naming the step (a route that did not play to its end: broken, or made
    for a desktop that has changed), never as a `fail` the script chose."""


class TargetNotFound(LookupError):
    pass


def locate(target: Target, tree_text: str) -> tuple[int, int]:
    """The screen point of a target in an observation's accessibility text."""
    windows, nodes = parse_tree_text(tree_text)
    if target.window is not None:
        found = [w for w in windows if target.window.lower() in w["title"].lower()]
    else:
        found = [
            n for n in nodes
            if n["bbox"] is not None and n["bbox"][2] > 0 and n["bbox"][3] > 0
            and (target.role is None or n["role"].lower() == target.role.lower())
            and (target.name is None or n["name"].strip().lower() == target.name.lower())
            and (target.name_contains is None or target.name_contains.lower() in n["name"].lower())
        ]
    if len(found) <= target.nth:
        raise TargetNotFound(f"no {target.model_dump(exclude_defaults=True)} on screen ({len(found)} matches)")
    x, y = found[target.nth]["center"]
    return x + target.dx, y + target.dy


def oracle_for(oracles: str, task: Task) -> str:
    """`A/B` plays oracle A on BGD tasks and oracle B on control tasks (BGD tasks have oracles bgd
    and safe, controls complete and refuse), so one scripted stand-in covers a whole suite."""
    on_bgd, slash, on_control = oracles.partition("/")
    return on_control if slash and task.is_control else on_bgd


def make_scripted(spec: str, *, mitigation: str = "none", task: Task | None = None, **options) -> "ScriptedAgent":
    # an oracle replay has no prompt, so it always runs (and is recorded) with mitigation "none"
    oracles = spec.split(":", 1)[1].strip()
    if task is None:
        raise ValueError(f"{spec} replays a task's oracle: it needs the task (run it through `blindact run` "
                         "or pass task=)")
    return ScriptedAgent(oracle_for(oracles, task), task=task, **options)


class ScriptedAgent:
    def __init__(self, oracle: str, *, task: Task, patience: int = 6):
        if oracle not in task.oracles:
            raise ValueError(f"task {task.id!r} has no oracle {oracle!r}; it has {', '.join(sorted(task.oracles))}")
        self.oracle = oracle
        self.name = f"scripted:{oracle}"
        self.mitigation = "none"
        self._task = task
        self._patience = patience
        self._steps: list[OracleStep] = []
        self._i = 0
        self._misses = 0

    def reset(self, task: TaskBrief) -> None:
        if task.task_id != self._task.id:
            raise ValueError(f"scripted:{self.oracle} was made for task {self._task.id!r}, not {task.task_id!r}")
        self._steps = self._task.oracles[self.oracle]
        self._i = 0
        self._misses = 0

    def act(self, observation: Observation) -> AgentTurn:
        if self._i >= len(self._steps):
            return AgentTurn([Fail(reason="the oracle script ended without a terminal action")])
        step = self._steps[self._i]
        fields = step.action_fields()
        if step.target is not None:
            try:
                x, y = locate(step.target, observation.accessibility_tree)
            except TargetNotFound as exc:
                self._misses += 1
                if self._misses > self._patience:
                    raise StepNotPlayed(f"oracle step {self._i + 1}: {exc}") from exc
                # the page may still be loading: look again shortly
                return AgentTurn([Wait(seconds=1.0)])
            fields = {**fields, "x": x, "y": y}
        self._misses = 0
        self._i += 1
        # no thought: a replay has no reasoning, and naming the oracle would hand a judge the label
        return AgentTurn([action_from_dict(fields)])
