"""One episode: which task, agent, mitigation and seed (`EpisodeSpec`, carrying the Task itself),
how it went (`EpisodeResult`, carrying the trajectory), and running it (`run_episode` on any
wrapped env, `run_one` on a worker's desktop)."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym

from blindact.agents.base import Agent, AgentError, TaskBrief, checked_turn, clean_text
from blindact.desktop.base import DesktopError
from blindact.endings import End
from blindact.observation import Observation
from blindact.run.budget import Meter
from blindact.tasks import Task
from blindact.trajectory import CheckRecords, Outcome, Trajectory


@dataclass(frozen=True)
class EpisodeSpec:
    """task: the Task value itself (resolved from its id once, at the command line or API
    boundary, so variants made in memory run anywhere, Ray workers included); agent: an agent spec
    (`blindact.agents.make_agent`); seed: the repetition index, also handed to env.reset."""

    task: Task
    agent: str
    mitigation: str = "none"
    seed: int = 0

    @property
    def task_id(self) -> str:
        return self.task.id

    @property
    def name(self) -> str:
        """The episode's folder and store name: unique in a run."""
        agent = self.agent.replace(":", "-").replace("/", "_").replace("@", "_at_")
        base = f"{self.task.id}__{agent}__{self.mitigation}"
        return f"{base}__s{self.seed}" if self.seed else base


@dataclass
class EpisodeResult:
    """How one episode went, typed as its folder's result.json is (blindact.trajectory: Outcome,
    CheckRecords); dicts given for `outcome` or `checks` are validated into them."""

    end: End
    steps: int
    outcome: Outcome = field(default_factory=Outcome)
    checks: CheckRecords = field(default_factory=CheckRecords)
    error: str = ""
    seconds: float = 0.0
    unparseable: int = 0
    usage: dict = field(default_factory=dict)
    agent_info: dict = field(default_factory=dict)  # the adapter's own provenance (model, tool, prompt hashes)
    questions: int = 0  # questions the task's simulated user answered
    trajectory: Trajectory | None = None
    node: str = ""  # the machine it ran on

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, Outcome):
            self.outcome = Outcome.model_validate(self.outcome or {})
        if not isinstance(self.checks, CheckRecords):
            self.checks = CheckRecords.model_validate(self.checks or {})


def _describe(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _ended(env: gym.Env, end: End, detail: str) -> dict:
    return env.get_wrapper_attr("end_episode")(end, detail)


def run_episode(env: gym.Env, agent: Agent, *, timeout_s: float | None = None, seed: int | None = None,
                reset_options: dict | None = None, meter: Meter | None = None) -> EpisodeResult:
    """Drive `agent` in `env` (wrapped with StateChecks, and RecordEpisode to keep the trajectory)
    for one episode. An agent that crashes, returns something that is not a valid turn, or runs out of
    time (its `act()` included: it runs under the episode's remaining time) ends the episode with that
    ending recorded; everything done before stays in the trajectory. With a `meter`, each turn's usage
    is charged to it and the episode ends when it says the budget is spent (blindact.run.budget). A
    DesktopError propagates."""
    t0 = time.perf_counter()
    deadline = None if timeout_s is None else t0 + timeout_s
    obs, _ = env.reset(seed=seed, options=reset_options)
    u = env.unwrapped
    unparseable = 0
    usage: dict[str, int] = {}
    info: dict
    try:
        brief = TaskBrief(u.task.id, u.task.instruction, u.task.max_steps, u.width, u.height, seed or 0)
        _bounded(lambda: agent.reset(brief), deadline, "agent.reset")
    except _OutOfTime as exc:
        info = _ended(env, End.TIMEOUT, str(exc))
    except Exception as exc:  # noqa: BLE001 - an agent under test may fail in any way; record it
        info = _ended(env, End.AGENT_ERROR, f"agent.reset failed: {_describe(exc)}")
    else:
        while True:
            if deadline is not None and time.perf_counter() > deadline:
                info = _ended(env, End.TIMEOUT, f"episode exceeded {timeout_s:.0f}s")
                break
            spent = meter.ending() if meter is not None else None
            if spent is not None:
                info = _ended(env, *spent)
                break
            try:
                turn = checked_turn(_bounded(lambda: agent.act(Observation.from_gym(obs)), deadline, "agent.act"))
            except _OutOfTime as exc:
                info = _ended(env, End.TIMEOUT, str(exc))
                break
            except AgentError as exc:
                info = _ended(env, exc.end, clean_text(str(exc), "the agent's error"))
                break
            except Exception as exc:  # noqa: BLE001 - as above (AgentOutputError included)
                info = _ended(env, End.AGENT_ERROR, clean_text(_describe(exc), "the agent's error"))
                break
            unparseable += bool(turn.parse_error)
            for key, value in turn.usage.items():
                usage[key] = usage.get(key, 0) + value
            if meter is not None:
                meter.charge(turn.usage)
            obs, _reward, terminated, truncated, info = env.step(turn)
            if terminated or truncated:
                break
    recorder_trajectory = _trajectory_of(env)
    return EpisodeResult(
        end=End.parse(info["end"]), steps=int(info.get("steps", 0)),
        outcome=info.get("outcome") or {}, checks=info.get("checks") or {},
        error=info.get("error") or info.get("desktop_error") or info.get("check_error") or "",
        seconds=time.perf_counter() - t0, unparseable=unparseable, usage=usage,
        agent_info=_agent_info(agent), questions=int(info.get("questions", 0)), trajectory=recorder_trajectory)


class _OutOfTime(Exception):
    pass


def _bounded(call, deadline: float | None, what: str):
    """call() on a thread of its own, within the episode's remaining time (if it has a limit). The agent's
    code runs there, so whatever it raises (KeyboardInterrupt and SystemExit included: they are not the
    user's) comes back here as this episode's error, never as the end of the run; a thread that overruns
    is abandoned (a daemon: it cannot keep the program alive), since Python cannot stop a thread."""
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        raise _OutOfTime(f"no time left for {what}")
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the episode's thread below
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"blindact-{what}", daemon=True)
    thread.start()
    thread.join(left)
    if thread.is_alive():
        raise _OutOfTime(f"{what} did not return within the episode's time limit ({left:.1f}s were left)")
    error = box.get("error")
    if error is not None:
        if not isinstance(error, Exception):
            raise AgentError(f"{what} raised {type(error).__name__}: {error}") from error
        raise error
    return box["value"]


def _trajectory_of(env: gym.Env) -> Trajectory | None:
    try:
        return env.get_wrapper_attr("trajectory")
    except AttributeError:
        return None


def _agent_info(agent: object) -> dict:
    info = getattr(agent, "info", None)
    if not callable(info):
        return {}
    try:
        return dict(info())
    except Exception as exc:  # noqa: BLE001 - provenance must not cost the episode
        return {"info_error": _describe(exc)}


class DesktopSlot:
    """The one desktop a worker owns: started on first use, replaced after it breaks."""

    def __init__(self, provider: str, provider_options: dict | None = None):
        self.provider = provider
        self.provider_options = provider_options or {}
        self.desktop = None

    def get(self):
        from blindact.desktop.providers import make_desktop

        if self.desktop is None:
            desktop = make_desktop(self.provider, **self.provider_options)
            try:
                desktop.start()
            except BaseException:
                desktop.close()
                raise
            self.desktop = desktop
        return self.desktop

    def discard(self) -> None:
        """Drop the desktop; one that fails even to close is dropped all the same (its processes die
        with this one, and the next run's sweep removes what is left)."""
        if self.desktop is not None:
            desktop, self.desktop = self.desktop, None
            try:
                desktop.close()
            except Exception:  # noqa: BLE001 - see above
                pass

    close = discard


def run_one(spec: EpisodeSpec, slot: DesktopSlot, *, provider: str, agent_options: dict | None = None,
            episode_timeout: float | None = None, meta: dict | None = None, meter: Meter | None = None,
            on_step: Callable[[Trajectory], None] | None = None) -> EpisodeResult:
    """One episode of a suite on the worker's desktop. Whatever the agent does (including failing
    to start) becomes a recorded ending, never an exception; so does a desktop that breaks. `on_step`
    sees the trajectory after every step (RecordEpisode)."""
    from blindact.agents import make_agent
    from blindact.env import BlindActEnv
    from blindact.wrappers import RecordEpisode, StateChecks

    t0 = time.perf_counter()
    try:
        agent = make_agent(spec.agent, mitigation=spec.mitigation, task=spec.task, **(agent_options or {}))
    except Exception as exc:  # noqa: BLE001 - an agent that cannot even be built is a result, not a crash
        return EpisodeResult(End.AGENT_ERROR, 0, error=f"the agent could not be built: {_describe(exc)}",
                             seconds=time.perf_counter() - t0)
    try:
        try:
            desktop = slot.get()
        except Exception as exc:  # noqa: BLE001 - a desktop that cannot start is this episode's error, not the run's
            slot.discard()
            return EpisodeResult(End.DESKTOP_ERROR, 0, error=f"desktop start: {_describe(exc)}",
                                 seconds=time.perf_counter() - t0)
        episode_meta = {"agent": spec.agent, "mitigation": spec.mitigation, "seed": spec.seed, **(meta or {})}
        env = RecordEpisode(StateChecks(BlindActEnv(spec.task, desktop=desktop, provider=provider)), meta=episode_meta,
                            on_step=on_step)
        try:
            result = run_episode(env, agent, timeout_s=episode_timeout, seed=spec.seed, meter=meter)
        except Exception as exc:  # noqa: BLE001 - a desktop that broke in any way: recorded, replaced, the run goes on
            detail = str(exc) if isinstance(exc, DesktopError) else _describe(exc)
            result = EpisodeResult(End.DESKTOP_ERROR, 0, error=detail, agent_info=_agent_info(agent),
                                   trajectory=_interrupted(env, detail))
            result.steps = result.trajectory.result.steps if result.trajectory is not None else 0
    finally:
        close = getattr(agent, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001 - the episode is over; an agent that fails to close changes nothing
                pass
    if result.end == End.DESKTOP_ERROR:
        slot.discard()  # the next episode gets a fresh desktop
    result.seconds = result.seconds or time.perf_counter() - t0
    return result


def _interrupted(env: gym.Env, detail: str) -> Trajectory | None:
    """The trajectory of an episode the desktop broke under (its reset, usually), ended as such."""
    trajectory = _trajectory_of(env)
    if trajectory is not None and not trajectory.finished:
        trajectory.end({"end": str(End.DESKTOP_ERROR), "steps": max(0, len(trajectory.steps) - 1), "error": detail,
                        "finished": time.time()})
    return trajectory
