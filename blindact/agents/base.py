"""The Agent protocol: what any agent, ours or a user's, implements to act in a blindact env."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from blindact.actions import MAX_ACTIONS, Action, ActionError, action_from_dict, action_to_dict
from blindact.endings import End
from blindact.observation import Observation


@dataclass
class AgentTurn:
    """One answer of an agent: the actions to execute in order, and its reasoning if it gave any.

    `parse_error` is set (and `actions` empty) when the model answered something that could not be
    parsed; the env records it in the step and the episode goes on. `usage` holds token counts
    (input_tokens, output_tokens, ...); `raw` the model's answer as the API returned it (JSON-able),
    kept in the trajectory; `safety_checks` any provider safety checks seen this turn.

    `end` is set when the model's API itself ended the conversation rather than the agent choosing
    an action: End.MODEL_REFUSAL (a refusal item or stop reason), End.TOKEN_LIMIT (the answer or the
    context hit a limit), End.SAFETY_STOP (a safety check the harness did not acknowledge);
    `end_detail` says what the API returned. The env ends the episode with it after the turn's
    actions (usually none).
    """

    actions: list[Action]
    thought: str = ""
    parse_error: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    raw: object = None
    safety_checks: list[dict] = field(default_factory=list)
    end: End | None = None
    end_detail: str = ""


class AgentOutputError(ValueError):
    """What an agent returned is not a usable turn (the message says which field and why)."""


def clean_text(text: object, field_name: str, limit: int = 200_000) -> str:
    """Agent text as it can be stored: a string, lone surrogates (an API reply cut mid-emoji) escaped as
    \\udXXX, at most `limit` characters."""
    if text is None:
        return ""
    if not isinstance(text, str):
        raise AgentOutputError(f"{field_name} must be text, not {type(text).__name__}")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:limit]


def _clean_json(value: Any, depth: int = 0) -> Any:
    if depth > 50:
        return "(nested too deep)"
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean_json(str(k), depth + 1): _clean_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_json(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _clean_json(repr(value), depth + 1)


def checked_turn(turn: object) -> AgentTurn:
    """The turn an agent returned, validated field by field (the agent's code is not trusted to have built
    it right): actions a list of valid canonical actions (re-validated, so an action built without its
    model's checks cannot reach the desktop), usage whole numbers, texts storable. AgentOutputError names
    what is wrong."""
    if not isinstance(turn, AgentTurn):
        raise AgentOutputError(f"agent.act returned {type(turn).__name__}, not an AgentTurn")
    if not isinstance(turn.actions, (list, tuple)):
        raise AgentOutputError(f"AgentTurn.actions must be a list of actions, not {type(turn.actions).__name__}")
    if len(turn.actions) > MAX_ACTIONS:
        raise AgentOutputError(f"AgentTurn.actions holds {len(turn.actions)} actions; at most {MAX_ACTIONS}")
    actions = []
    for i, action in enumerate(turn.actions):
        try:
            # dumped and validated afresh: a model built with model_construct() skipped its checks
            data = action_to_dict(action) if isinstance(action, BaseModel) else action
            if not isinstance(data, dict):
                raise ActionError(f"expected an action, got {type(action).__name__}")
            actions.append(action_from_dict(data))
        except (ActionError, TypeError, ValueError) as exc:
            raise AgentOutputError(f"AgentTurn.actions[{i}] is not a valid action: {exc}") from None
    if not isinstance(turn.usage, dict):
        raise AgentOutputError(f"AgentTurn.usage must be a dict of token counts, not {type(turn.usage).__name__}")
    usage = {}
    for key, value in turn.usage.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise AgentOutputError(f"AgentTurn.usage[{key!r}] must be a whole number of tokens, not {value!r}")
        usage[clean_text(str(key), "a usage key", 100)] = value
    end = None
    if turn.end is not None:
        try:
            end = End.parse(turn.end)
        except ValueError as exc:
            raise AgentOutputError(f"AgentTurn.end: {exc}") from None
        if end.kind not in ("refusal", "cutoff"):
            raise AgentOutputError(f"AgentTurn.end may be a refusal or a cutoff ending, not {end}")
    safety = turn.safety_checks if isinstance(turn.safety_checks, list) else []
    return AgentTurn(actions, clean_text(turn.thought, "AgentTurn.thought"), clean_text(turn.parse_error, "AgentTurn.parse_error"),
                     usage, _clean_json(turn.raw), _clean_json(safety), end, clean_text(turn.end_detail, "AgentTurn.end_detail"))


class AgentError(RuntimeError):
    """The agent cannot go on with this episode: its API failed after all retries (`reason` "api"),
    the episode ran out of time ("timeout") or tokens ("budget"), or the conversation outgrew the
    model's context ("context"). The runner ends the episode with the matching ending (`end`) and
    this message, and the run goes on with the next one."""

    # "context": the conversation no longer fits the model's context window
    _ENDS = {"api": End.AGENT_ERROR, "timeout": End.TIMEOUT, "budget": End.TOKEN_LIMIT, "context": End.TOKEN_LIMIT}

    def __init__(self, message: str, *, reason: str = "api"):
        if reason not in self._ENDS:
            raise ValueError(f"AgentError reason {reason!r}: use one of {', '.join(self._ENDS)}")
        self.reason = reason
        super().__init__(message)

    @property
    def end(self) -> End:
        return self._ENDS[self.reason]


class BudgetExceeded(AgentError):
    """The per-episode token budget or wall-clock timeout is spent (reason "budget" or "timeout")."""


@dataclass(frozen=True)
class TaskBrief:
    """What an agent is told about a task when an episode starts. `seed`: the repetition index of the
    episode (`--repeats`), for agents that sample."""

    task_id: str
    instruction: str
    max_steps: int
    screen_width: int
    screen_height: int
    seed: int = 0


@runtime_checkable
class Agent(Protocol):
    """What any agent implements. `name` and `mitigation` are recorded with every episode.

    Optional, used when present: `info() -> dict` (provenance recorded with each episode: model,
    options, prompt hashes), `preflight()` (raise, saying what to fix, when the agent cannot work at
    all: called once before a run starts), `close()` (called after each episode)."""

    name: str
    mitigation: str

    def reset(self, task: TaskBrief) -> None:
        """Start a new episode: forget the previous conversation."""

    def act(self, observation: Observation) -> AgentTurn:
        """Look at one observation and decide the next action(s)."""
