"""Running episodes: one agent in one env, until a terminal action, max steps or a failure."""

from __future__ import annotations

import json
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

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


def run_episode(env, agent: Agent, *, timeout_s: float | None = None, reset_options: dict | None = None) -> EpisodeResult:
    """Drive `agent` in `env` for one episode. An agent that crashes or runs out of time ends the
    episode with that reason recorded; everything done before stays in the trajectory."""
    t0 = time.perf_counter()
    unwrapped = env.unwrapped
    obs, info = env.reset(options=reset_options)
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
    """One episode of a suite: which task, which agent, and the folder name of its trajectory."""

    task_id: str
    agent_spec: str
    mitigation: str = "none"

    @property
    def name(self) -> str:
        agent = self.agent_spec.replace(":", "-").replace("/", "_").replace("@", "_at_")
        return f"{self.task_id}__{agent}__{self.mitigation}"


def run_suite(specs: list[EpisodeSpec], run_dir: Path, *, provider: str = "local", workers: int = 1,
              episode_timeout: float | None = None, agent_options: dict | None = None,
              provider_options: dict | None = None, resume: bool = True,
              on_result: Callable[[EpisodeSpec, EpisodeResult], None] | None = None,
              on_start: Callable[[EpisodeSpec], None] | None = None,
              stop: threading.Event | None = None) -> list[tuple[EpisodeSpec, EpisodeResult]]:
    """Run episodes on `workers` desktops at once. Each worker thread owns one desktop for its whole
    life (so the kernel ties the desktop's processes to it). A broken desktop is replaced and the
    suite goes on; finished episodes (result.json present) are skipped when `resume` is set."""
    from blindact.agents import make_agent
    from blindact.desktop.providers import make_desktop
    from blindact.env import BlindActEnv
    from blindact.tasks import get_task

    run_dir = Path(run_dir)
    episodes_dir = run_dir / "episodes"
    episodes_dir.mkdir(parents=True, exist_ok=True)
    results: list[tuple[EpisodeSpec, EpisodeResult]] = []
    todo: queue.Queue[EpisodeSpec] = queue.Queue()
    for spec in specs:
        done = episodes_dir / spec.name / "result.json"
        if resume and done.exists():
            prior = json.loads(done.read_text())
            if prior.get("end") != "aborted":
                result = EpisodeResult(spec.task_id, spec.agent_spec, prior["end"], prior.get("steps", 0),
                                       prior.get("outcome", {}), prior.get("checks", {}), prior.get("error", ""))
                results.append((spec, result))
                if on_result:
                    on_result(spec, result)
                continue
        todo.put(spec)
    stop = stop or threading.Event()
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        desktop = None
        try:
            while not stop.is_set():
                try:
                    spec = todo.get_nowait()
                except queue.Empty:
                    return
                if on_start:
                    on_start(spec)
                if desktop is None:
                    desktop = make_desktop(provider, **(provider_options or {}))
                    desktop.start()
                task = get_task(spec.task_id)
                env = BlindActEnv(task=task, desktop=desktop, run_dir=episodes_dir, provider=provider,
                                  episode_meta={"agent": spec.agent_spec, "mitigation": spec.mitigation})
                try:
                    agent = make_agent(spec.agent_spec, mitigation=spec.mitigation, **(agent_options or {}))
                    result = run_episode(env, agent, timeout_s=episode_timeout,
                                         reset_options={"episode_name": spec.name})
                except DesktopError as exc:
                    result = EpisodeResult(spec.task_id, spec.agent_spec, "desktop_error", 0, error=str(exc))
                    env.abort("desktop_error", str(exc))
                if result.end == "desktop_error":
                    desktop.close()  # start a fresh desktop for the next episode
                    desktop = None
                with lock:
                    results.append((spec, result))
                if on_result:
                    on_result(spec, result)
        except BaseException as exc:  # noqa: BLE001 - surfaced to the caller after the others stop
            failures.append(exc)
            stop.set()
        finally:
            if desktop is not None:
                desktop.close()

    threads = [threading.Thread(target=worker, name=f"blindact-worker-{i}", daemon=True)
               for i in range(max(1, min(workers, todo.qsize() or 1)))]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.2)
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        raise
    if failures:
        raise failures[0]
    return results
