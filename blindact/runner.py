"""Running episodes: one agent in one env, until a terminal action, max steps or a failure."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from blindact.agents.base import Agent, AgentTurn, TaskBrief
from blindact.desktop.base import DesktopError
from blindact.observation import Observation


@dataclass
class EpisodeResult:
    task_id: str
    agent: str
    end: str  # done | fail | ask_user | max_steps | desktop_error | agent_error | timeout
    steps: int
    outcome: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0
    unparseable: int = 0
    usage: dict = field(default_factory=dict)


def run_episode(env, agent: Agent, *, timeout_s: float | None = None, reset_options: dict | None = None,
                seed: int | None = None) -> EpisodeResult:
    """Drive `agent` in `env` for one episode. An agent that crashes or runs out of time ends the
    episode with that reason recorded; everything done before stays in the trajectory."""
    t0 = time.perf_counter()
    unwrapped = env.unwrapped
    obs, info = env.reset(seed=seed, options=reset_options)
    task = unwrapped.task
    agent.reset(TaskBrief(task.id, task.instruction, task.max_steps, unwrapped.width, unwrapped.height))
    unparseable = 0
    usage: dict[str, int] = {}
    steps = 0
    while True:
        if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
            return _abort(env, agent, task.id, "timeout", f"episode exceeded {timeout_s:.0f}s", steps, t0, unparseable, usage)
        try:
            turn = agent.act(Observation.from_gym(obs))
        except Exception as exc:  # noqa: BLE001 - an agent under test may fail in any way; record it
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return _abort(env, agent, task.id, "agent_error", detail, steps, t0, unparseable, usage)
        if not isinstance(turn, AgentTurn):
            turn = AgentTurn(list(turn[0]), thought=turn[1] if len(turn) > 1 else "")
        unparseable += bool(turn.parse_error)
        for key, value in turn.usage.items():
            usage[key] = usage.get(key, 0) + int(value)
        obs, _reward, terminated, truncated, info = env.step(turn)
        steps += 1
        if terminated or truncated:
            return EpisodeResult(task.id, agent.name, info.get("end", "max_steps"), steps, info.get("outcome", {}),
                                 info.get("checks", {}), info.get("desktop_error", ""),
                                 time.perf_counter() - t0, unparseable, usage)


def _abort(env, agent, task_id, end, detail, steps, t0, unparseable, usage) -> EpisodeResult:
    result = env.unwrapped.abort(end, detail)
    return EpisodeResult(task_id, agent.name, end, steps, result.get("outcome", {}), result.get("checks", {}),
                         detail, time.perf_counter() - t0, unparseable, usage)


# ---------------------------------------------------------------------------------------- suites


@dataclass
class EpisodeSpec:
    """One episode of a suite: which task, which agent, which mitigation prompt and which seed (a
    repetition index, also handed to env.reset), and the folder name of its trajectory."""

    task_id: str
    agent_spec: str
    mitigation: str = "none"
    seed: int = 0

    @property
    def name(self) -> str:
        agent = self.agent_spec.replace(":", "-").replace("/", "_").replace("@", "_at_")
        base = f"{self.task_id}__{agent}__{self.mitigation}"
        return f"{base}__s{self.seed}" if self.seed else base


@dataclass
class SuiteOptions:
    """What every worker needs to run any episode of a suite (plain data, so it can travel to Ray)."""

    provider: str = "local"
    provider_options: dict = field(default_factory=dict)
    agent_options: dict = field(default_factory=dict)
    episode_timeout: float | None = None


def resolve_agent_spec(agent_spec: str, pattern: str) -> str:
    """`scripted:A/B` plays oracle A on BGD tasks and oracle B on control tasks (BGD tasks have
    oracles bgd/safe, controls complete/refuse), so one scripted stand-in covers a whole suite."""
    kind, _, rest = agent_spec.partition(":")
    if kind.strip().lower() != "scripted" or "/" not in rest:
        return agent_spec
    on_bgd, _, on_control = rest.partition("/")
    return f"scripted:{on_control if pattern == 'control' else on_bgd}"


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
            desktop.start()
            self.desktop = desktop
        return self.desktop

    def discard(self) -> None:
        if self.desktop is not None:
            desktop, self.desktop = self.desktop, None
            desktop.close()

    close = discard


def run_one(spec: EpisodeSpec, slot: DesktopSlot, episodes_dir: Path, opts: SuiteOptions) -> EpisodeResult:
    """One episode of a suite on the worker's desktop, its trajectory in `episodes_dir/<spec.name>`.
    Whatever the agent does (including failing to start) becomes a recorded end, never an exception;
    only a desktop that cannot start at all propagates (DesktopError) after being recorded as such."""
    from blindact.agents import make_agent
    from blindact.env import BlindActEnv
    from blindact.tasks import get_task

    task = get_task(spec.task_id)
    t0 = time.perf_counter()
    try:
        desktop = slot.get()
    except DesktopError as exc:
        slot.discard()
        return EpisodeResult(spec.task_id, spec.agent_spec, "desktop_error", 0, error=f"desktop start: {exc}",
                             seconds=time.perf_counter() - t0)
    env = BlindActEnv(task=task, desktop=desktop, run_dir=episodes_dir, provider=opts.provider,
                      episode_meta={"agent": spec.agent_spec, "mitigation": spec.mitigation, "seed": spec.seed})
    try:
        agent = make_agent(resolve_agent_spec(spec.agent_spec, task.pattern), mitigation=spec.mitigation,
                           **opts.agent_options)
        result = run_episode(env, agent, timeout_s=opts.episode_timeout,
                             reset_options={"episode_name": spec.name}, seed=spec.seed)
    except DesktopError as exc:
        env.abort("desktop_error", str(exc))
        result = EpisodeResult(spec.task_id, spec.agent_spec, "desktop_error", 0, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - an agent that cannot even start is a result, not a crash
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        aborted = env.abort("agent_error", detail)
        result = EpisodeResult(spec.task_id, spec.agent_spec, "agent_error", aborted.get("steps", 0),
                               aborted.get("outcome", {}), aborted.get("checks", {}), detail)
    if result.end == "desktop_error":
        slot.discard()  # the next episode gets a fresh desktop
    result.agent = spec.agent_spec
    result.seconds = result.seconds or time.perf_counter() - t0
    return result


def result_from_row(row: dict) -> EpisodeResult:
    """An EpisodeResult rebuilt from a store row (for episodes finished before a resume)."""
    def flag(v):
        return None if v is None else bool(v)

    return EpisodeResult(row["task_id"], row["agent"], row["end_reason"], row["steps"],
                         {"harm": flag(row["harm"]), "benign": flag(row["benign"])}, row["checks"], row["error"],
                         row["seconds"] or 0.0, row["unparseable"], row["usage"])


def run_suite(specs: list[EpisodeSpec], run_dir: Path, *, provider: str = "local", workers: int = 1,
              episode_timeout: float | None = None, agent_options: dict | None = None,
              provider_options: dict | None = None, resume: bool = True,
              on_result: Callable[[EpisodeSpec, EpisodeResult], None] | None = None,
              on_start: Callable[[EpisodeSpec], None] | None = None,
              stop: threading.Event | None = None, executor: str | object = "local",
              executor_options: dict | None = None, config: dict | None = None,
              ) -> list[tuple[EpisodeSpec, EpisodeResult]]:
    """Run episodes through an executor (`local`: worker threads, each owning one desktop; `ray`:
    Ray actors, each owning one desktop on its node) and write each finished episode to the run's
    store in one transaction. With `resume`, episodes already in the store are not run again
    (except infrastructure failures); without it they are run and replaced."""
    from blindact.executors import make_executor
    from blindact.store import Store
    from blindact.tasks import get_task

    run_dir = Path(run_dir)
    episodes_dir = run_dir / "episodes"
    episodes_dir.mkdir(parents=True, exist_ok=True)
    opts = SuiteOptions(provider, dict(provider_options or {}), dict(agent_options or {}), episode_timeout)
    config = config or suite_config(specs, provider=provider, workers=workers, episode_timeout=episode_timeout,
                                    executor=executor if isinstance(executor, str) else type(executor).__name__)
    results: list[tuple[EpisodeSpec, EpisodeResult]] = []
    stop = stop or threading.Event()
    with Store(run_dir) as store:
        store.begin_run(config)
        finished = {row["name"]: row for row in store.episodes()} if resume else {}
        done = store.completed_names() if resume else set()
        todo = []
        for spec in specs:
            if spec.name in done:
                result = result_from_row(finished[spec.name])
                results.append((spec, result))
                if on_result:
                    on_result(spec, result)
            else:
                todo.append(spec)
        status = "interrupted"
        try:
            if todo:
                runner = make_executor(executor, workers=workers, **(executor_options or {}))
                # closing(): an interrupt here still runs the executor's cleanup (desktops, actors) at once
                with closing(runner.run(todo, opts, episodes_dir, on_start=on_start, stop=stop)) as stream:
                    for spec, result, node in stream:
                        task = get_task(spec.task_id)
                        store.record_episode(spec, result, pattern=task.pattern, twin_of=task.twin_of,
                                             provider=provider, node=node)
                        results.append((spec, result))
                        if on_result:
                            on_result(spec, result)
            status = "finished" if len(results) == len(specs) else "interrupted"
        finally:
            store.end_run(status)
    return results


def suite_config(specs: Iterable[EpisodeSpec], **extra) -> dict:
    """The run's configuration as stored: enough to rebuild the same specs on resume."""
    specs = list(specs)
    return {
        "agents": sorted({s.agent_spec for s in specs}),
        "mitigations": sorted({s.mitigation for s in specs}),
        "tasks": sorted({s.task_id for s in specs}),
        "seeds": sorted({s.seed for s in specs}),
        "episodes": [[s.task_id, s.agent_spec, s.mitigation, s.seed] for s in specs],
        **extra,
    }


def specs_from_config(config: dict) -> list[EpisodeSpec]:
    return [EpisodeSpec(t, a, m, int(s)) for t, a, m, s in config["episodes"]]
