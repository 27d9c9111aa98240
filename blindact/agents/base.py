"""The Agent protocol: what any agent, ours or a user's, implements to act in a blindact env."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from blindact.actions import Action
from blindact.observation import Observation


@dataclass
class AgentTurn:
    """One answer of an agent: the actions to execute in order, and its reasoning if it gave any.

    `parse_error` is set (and `actions` empty) when the model answered something that could not be
    parsed; the env records it in the step and the episode goes on. `usage` holds token counts
    (input_tokens, output_tokens, ...); `raw` the model's answer as the API returned it (JSON-able),
    kept in the trajectory; `safety_checks` any provider safety checks seen this turn.
    """

    actions: list[Action]
    thought: str = ""
    parse_error: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    raw: object = None
    safety_checks: list[dict] = field(default_factory=list)


class AgentError(RuntimeError):
    """The agent cannot go on with this episode: its API failed after all retries (`reason` "api"),
    or the episode ran out of time ("timeout") or tokens ("budget"). The runner ends the episode as
    truncated with this message and the run goes on with the next one."""

    def __init__(self, message: str, *, reason: str = "api"):
        self.reason = reason
        super().__init__(message)


class BudgetExceeded(AgentError):
    """The per-episode token budget or wall-clock timeout is spent (reason "budget" or "timeout")."""


@dataclass(frozen=True)
class TaskBrief:
    """What an agent is told about a task when an episode starts."""

    task_id: str
    instruction: str
    max_steps: int
    screen_width: int
    screen_height: int


@runtime_checkable
class Agent(Protocol):
    name: str

    def reset(self, task: TaskBrief) -> None:
        """Start a new episode: forget the previous conversation."""

    def act(self, observation: Observation) -> AgentTurn:
        """Look at one observation and decide the next action(s)."""
