"""BlindActEnv: a real desktop behind the Gymnasium API.

    env = gymnasium.make("blindact/pilot-contextual-threat-comment")
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step({"type": "click", "x": 640, "y": 400})

Actions: a canonical action (model or dict), a list of them, pyautogui code (a string), or an
AgentTurn (which also carries the agent's thought, usage, parse errors and, when the model's API
ended the conversation, that ending). A malformed or off-screen action never raises: the step
returns with `last_action_error` set.

`terminated` when the agent ends the episode (done, fail, ask_user without a simulated user to
answer, or its API's refusal or safety stop); `truncated` at the task's max_steps or when the
desktop breaks (info["desktop_error"] says why). info["end"] names the ending (blindact.endings.End).

The env itself only runs the desktop. What an episode amounts to is added by wrappers
(blindact.wrappers): `StateChecks` runs the task's state checks when the episode ends and gives the
reward; `RecordEpisode` keeps the trajectory. `gymnasium.make("blindact/<task>")` applies
StateChecks, and RecordEpisode as well when given `run_dir` (blindact.registration).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from blindact.actions import MAX_ACTIONS, Action, ActionError, MoveTo, Wait, action_from_dict, action_to_dict, check_on_screen
from blindact.agents.base import AgentTurn
from blindact.desktop.base import Desktop, DesktopError, Observed
from blindact.endings import End
from blindact.spaces import UnicodeText
from blindact.tasks import Task

USER_WINDOW_TITLE = "Message from the user"


class ActionSpace(spaces.Space[Any]):
    """Canonical actions on a width x height screen. sample() gives a harmless pointer move or wait."""

    def __init__(self, width: int, height: int, seed: int | None = None):
        self.width, self.height = width, height
        super().__init__(shape=None, dtype=None, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> Action:
        if self.np_random.random() < 0.2:
            return Wait(seconds=0.0)
        x, y = int(self.np_random.integers(0, self.width)), int(self.np_random.integers(0, self.height))
        return MoveTo(x=x, y=y)

    def contains(self, x: Any) -> bool:
        try:
            for action in coerce_actions(x):
                check_on_screen(action, self.width, self.height)
        except ActionError:
            return False
        return True

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ActionSpace({self.width}x{self.height})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ActionSpace) and (other.width, other.height) == (self.width, self.height)


def coerce_actions(action: Any) -> list[Action]:
    """Whatever env.step accepts, as canonical actions (ActionError when it cannot be read; more than
    MAX_ACTIONS in one step is refused before any is read)."""
    if isinstance(action, AgentTurn):
        action = list(action.actions)
    if isinstance(action, str):
        from blindact.actions import parse_pyautogui

        return parse_pyautogui(action)
    if isinstance(action, (list, tuple)):
        if len(action) > MAX_ACTIONS:
            raise ActionError(f"one step holds {len(action)} actions; at most {MAX_ACTIONS} at a time")
        return [action_from_dict(a) for a in action]
    return [action_from_dict(action)]


class BlindActEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, task: Task | str | None = None, *, task_id: str | None = None, provider: str = "local",
                 desktop: Desktop | None = None, render_mode: str | None = None, width: int = 1280,
                 height: int = 720, provider_options: dict | None = None):
        """task: a Task, or a task id (looked up in the shipped suite, once, here)."""
        if isinstance(task, str):
            task, task_id = None, task
        if task is None:
            if task_id is None:
                raise ValueError("give task (a blindact.tasks.Task) or task_id (see `blindact tasks list`)")
            from blindact.tasks import get_task

            task = get_task(task_id)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r} is not supported; use 'rgb_array' or None")
        self.task = task
        self.render_mode = render_mode
        self.provider = provider
        self._provider_options = provider_options or {}
        self._desktop = desktop
        self._owns_desktop = desktop is None
        self.width, self.height = (desktop.width, desktop.height) if desktop else (width, height)
        self.observation_space = self._observation_space()
        self.action_space = ActionSpace(self.width, self.height)
        self._step = 0
        self._done = True
        self._questions = 0
        self._last_obs: dict | None = None
        self._end_info: dict | None = None

    def _observation_space(self) -> spaces.Dict:
        return spaces.Dict({
            "screenshot": spaces.Box(0, 255, (self.height, self.width, 3), np.uint8),
            "accessibility_tree": UnicodeText(),
            "instruction": UnicodeText(10_000),
            "step": spaces.Discrete(self.task.max_steps + 1),
            "last_action_error": UnicodeText(10_000),
            "user_reply": UnicodeText(10_000),
        })

    # ------------------------------------------------------------------ desktop
    @property
    def desktop(self) -> Desktop:
        if self._desktop is None:
            from blindact.desktop.providers import make_desktop

            self._desktop = make_desktop(self.provider, width=self.width, height=self.height,
                                         **self._provider_options)
        return self._desktop

    def _obs(self, observed: Observed, error: str = "", user_reply: str = "") -> dict:
        return {
            "screenshot": observed.screenshot,
            "accessibility_tree": observed.tree,
            "instruction": self.task.instruction,
            "step": min(self._step, self.task.max_steps),
            "last_action_error": error,
            "user_reply": user_reply,
        }

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """options: {"task": Task} (or {"task_id": id}) plays another task on the same desktop."""
        super().reset(seed=seed)
        options = options or {}
        if "task" in options or "task_id" in options:
            task = options.get("task")
            if task is None:
                from blindact.tasks import get_task

                task = get_task(options["task_id"])
            self.task = task
            self.observation_space = self._observation_space()
        try:
            self.desktop.start()
            timing = self.desktop.reset(self.task.setup)
            observed = self.desktop.step([])
        except DesktopError:
            raise
        except Exception as exc:  # noqa: BLE001 - a desktop that fails in any way is a DesktopError to the runner
            raise DesktopError(f"reset failed: {type(exc).__name__}: {exc}") from exc
        self._step = 0
        self._done = False
        self._questions = 0
        self._end_info = None
        obs = self._obs(observed)
        self._last_obs = obs
        info = {"task_id": self.task.id, "reset_s": timing.total_s, "reset_phases": timing.phases,
                "timing": {"reset_s": timing.total_s, **observed.timing}, "effects": observed.effects}
        return obs, info

    def step(self, action: Any):
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        turn = action if isinstance(action, AgentTurn) else None
        self._step += 1
        error = turn.parse_error if turn is not None and turn.parse_error else ""
        actions: list[Action] = []
        if not error:
            try:
                actions = coerce_actions(action)
            except ActionError as exc:
                error = f"could not read the action: {exc}"
        runnable: list[Action] = []
        terminal: Action | None = None
        for act in actions:
            if act.is_terminal:
                terminal = act
                break
            runnable.append(act)
        info: dict[str, Any] = {"step": self._step, "actions": [action_to_dict(a) for a in actions]}
        end: End | None = None
        user_reply = ""
        try:
            observed = self.desktop.step(runnable)
            effects = list(observed.effects)
            error = error or observed.error
            if terminal is not None and not observed.error:
                if terminal.type == "ask_user" and self._can_answer():
                    user_reply = self._answer(terminal.question)
                    observed = self.desktop.step([])
                    effects += observed.effects
                else:
                    end = End(terminal.type)
            elif turn is not None and turn.end is not None:
                end = End.parse(turn.end)
            if end is None and self._step >= self.task.max_steps:
                end = End.MAX_STEPS
            obs = self._obs(observed, error, user_reply)
            info["timing"] = observed.timing
            info["effects"] = effects
        except Exception as exc:  # noqa: BLE001 - whatever the agent did to the desktop, this episode ends here, recorded
            info["desktop_error"] = str(exc) if isinstance(exc, DesktopError) else f"{type(exc).__name__}: {exc}"
            end = End.DESKTOP_ERROR
            obs = {**(self._last_obs or {}), "step": min(self._step, self.task.max_steps),
                   "last_action_error": f"the desktop failed: {info['desktop_error']}", "user_reply": ""}
        if error:
            info["action_error"] = error
        if user_reply:
            info["user_reply"] = user_reply
        self._last_obs = obs
        terminated = truncated = False
        if end is not None:
            terminated = end.kind in ("decision", "refusal")
            truncated = not terminated
            detail = turn.end_detail if turn is not None and turn.end is not None else ""
            info.update(self._finish(end, terminal if end.kind == "decision" else None, detail))
        return obs, 0.0, terminated, truncated, info

    @property
    def questions_asked(self) -> int:
        """How many of the agent's questions the simulated user has answered this episode."""
        return self._questions

    def _can_answer(self) -> bool:
        user = getattr(self.task, "user", None)
        return user is not None and self._questions < user.max_questions

    def _answer(self, question: str) -> str:
        """The task's simulated user answers; the reply appears on the screen, as a chat message
        would, and in the observation's `user_reply`."""
        self._questions += 1
        reply = self.task.user.reply(question)
        self.desktop.show_message(USER_WINDOW_TITLE, reply)
        return reply

    def _finish(self, end: End, terminal: Action | None, detail: str = "") -> dict:
        self._done = True
        self._end_info = {"end": end, "terminal_action": action_to_dict(terminal) if terminal else None,
                          "steps": self._step, "questions": self._questions, "error": detail}
        return dict(self._end_info)

    def end_episode(self, end: End, detail: str = "") -> dict:
        """End the episode from outside (the agent crashed, the episode ran out of time): returns
        the ending's info, as a last step would. Idempotent: an ended episode returns its ending."""
        if self._done:
            return dict(self._end_info or {})
        return self._finish(End.parse(end), None, detail)

    @property
    def episode_over(self) -> bool:
        return self._done

    def render(self):
        if self.render_mode == "rgb_array":
            return None if self._last_obs is None else self._last_obs["screenshot"]
        return None

    def close(self):
        if self._desktop is not None and self._owns_desktop:
            self._desktop.close()
            self._desktop = None
        super().close()
