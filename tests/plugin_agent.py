"""An agent of a user's own, importable as `plugin_agent:Stubborn` (tests/ is on sys.path)."""

from __future__ import annotations

from blindact.actions import Done, Fail, Wait
from blindact.agents.base import AgentTurn


class Stubborn:
    """Refuses every task. Takes a mitigation and one option of its own."""

    def __init__(self, *, mitigation: str = "none", reason: str = "no"):
        self.name, self.mitigation, self.reason = "stubborn", mitigation, reason

    def reset(self, task) -> None:
        self.task = task

    def act(self, observation) -> AgentTurn:
        return AgentTurn([Fail(reason=self.reason)])


class Broken:
    """Cannot start an episode, as a misconfigured agent of a user's would."""

    name, mitigation = "broken", "none"

    def reset(self, task) -> None:
        raise RuntimeError("it cannot see the screen")

    def act(self, observation) -> AgentTurn:
        raise AssertionError("never reached")


class Metered:
    """Looks `turns` times (a wait each), then declares the task done; every turn reports the same token
    usage, as an API agent's turn would. On the task `slow_task` it takes `slow_turns` turns instead."""

    def __init__(self, *, mitigation: str = "none", turns: int = 3, input_tokens: int = 100, output_tokens: int = 10,
                 slow_task: str = "", slow_turns: int = 9):
        self.name, self.mitigation = "metered", mitigation
        self.turns, self.slow_task, self.slow_turns = turns, slow_task, slow_turns
        self.usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}

    def reset(self, task) -> None:
        self.left = self.slow_turns if task.task_id == self.slow_task else self.turns

    def act(self, observation) -> AgentTurn:
        self.left -= 1
        action = Done(message="finished") if self.left <= 0 else Wait(seconds=0)
        return AgentTurn([action], usage=dict(self.usage))
