"""Running a suite: many episodes through an executor, each written to the run folder's store as
it finishes, resumable at any point."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from blindact.run.budget import Budget, RunSpend
from blindact.run.episode import EpisodeResult, EpisodeSpec
from blindact.run.executors import OnStep, WorkerOptions, make_executor
from blindact.run.store import Store
from blindact.tasks import Task

OnResult = Callable[[EpisodeSpec, EpisodeResult], None]


@dataclass
class SuiteOptions:
    """How a suite runs. provider/provider_options: where desktops come from (blindact.desktop.
    providers); agent_options: each agent spec's constructor options; executor/executor_options:
    where episodes run (blindact.run.executors); workers: desktops at once; resume: keep episodes
    already in the store (else play and replace them); budget: what the run and each episode may
    spend (blindact.run.budget), given anew on each resume."""

    provider: str = "local"
    provider_options: dict = field(default_factory=dict)
    agent_options: dict[str, dict] = field(default_factory=dict)
    episode_timeout: float | None = None
    workers: int = 1
    executor: str = "local"
    executor_options: dict = field(default_factory=dict)
    resume: bool = True
    budget: Budget | None = None

    def config(self, specs: Iterable[EpisodeSpec], **extra) -> dict:
        """The run's configuration as stored: enough to rebuild the same specs on resume (with the
        task specs the store keeps)."""
        specs = list(specs)
        return {
            "agents": sorted({s.agent for s in specs}),
            "mitigations": sorted({s.mitigation for s in specs}),
            "tasks": sorted({s.task_id for s in specs}),
            "seeds": sorted({s.seed for s in specs}),
            "episodes": [[s.task_id, s.agent, s.mitigation, s.seed] for s in specs],
            "provider": self.provider, "provider_options": self.provider_options, "workers": self.workers,
            "executor": self.executor, "episode_timeout": self.episode_timeout,
            "agent_options": self.agent_options, **extra,
        }


def specs_from_store(store: Store) -> tuple[list[EpisodeSpec], dict]:
    """The specs and configuration a run folder was started with (for resume): the tasks are the
    stored specs, not today's files."""
    run = store.run()
    if run is None or "episodes" not in run["config"]:
        raise ValueError(f"{store.run_dir}: the store has no run configuration to resume from")
    tasks: dict[str, Task] = store.tasks()
    missing = sorted({t for t, *_ in run["config"]["episodes"]} - set(tasks))
    if missing:
        raise ValueError(f"{store.run_dir}: the store lacks the specs of tasks {', '.join(missing[:5])} "
                         "(a run from an older blindact); start it again instead of resuming")
    specs = [EpisodeSpec(tasks[t], a, m, int(s)) for t, a, m, s in run["config"]["episodes"]]
    return specs, run["config"]


def result_from_row(row: dict) -> EpisodeResult:
    """An EpisodeResult rebuilt from a store row (for episodes finished before a resume)."""
    from blindact.endings import End

    def flag(v):
        return None if v is None else bool(v)

    return EpisodeResult(End.parse(row["end_reason"]), row["steps"], {"harm": flag(row["harm"]),
                         "benign": flag(row["benign"])}, row["checks"], row["error"], row["seconds"] or 0.0,
                         row["unparseable"], row["usage"], row["agent_info"], node=row["node"] or "")


def _recorded(store: Store, spec: EpisodeSpec, result: EpisodeResult, provider: str) -> EpisodeResult:
    """Write one episode; one that cannot be written (a full disk, data SQLite refuses) is reported as
    this episode's error and left out of the store (so resume plays it again), and the run goes on."""
    try:
        store.record_episode(spec, result, provider=provider)
        return result
    except Exception as exc:  # noqa: BLE001 - see above
        from blindact.endings import End

        return EpisodeResult(End.INTERRUPTED, result.steps, result.outcome, result.checks,
                             f"the episode ran ({result.end}) but could not be stored: {type(exc).__name__}: {exc}",
                             result.seconds, result.unparseable, result.usage, result.agent_info, result.questions,
                             None, result.node)


def run_suite(specs: list[EpisodeSpec], run_dir: str | Path, options: SuiteOptions | None = None, *,
              on_result: OnResult | None = None, on_start: Callable[[EpisodeSpec], None] | None = None,
              on_step: OnStep = None, stop: threading.Event | None = None, config: dict | None = None,
              versions: dict | None = None) -> list[tuple[EpisodeSpec, EpisodeResult]]:
    """Run episodes through the options' executor and write each finished one to the run's store.
    With `resume`, episodes already in the store are not run again (except infrastructure
    failures); without it they are run and replaced. `versions` (what software ran) is recorded
    with the run and every episode. A run its budget stopped ends with the status `budget`, the
    episodes it did not start left to do. `on_step(worker, spec, trajectory)`: after every step, where
    the executor can tell (blindact.run.executors)."""
    options = options or SuiteOptions()
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"the suite names episode {dup[0]!r} more than once; give each task, agent, "
                         "mitigation and seed once")
    run_dir = Path(run_dir)
    config = config or options.config(specs)
    results: list[tuple[EpisodeSpec, EpisodeResult]] = []
    stop = stop or threading.Event()
    worker = WorkerOptions(options.provider, dict(options.provider_options), dict(options.agent_options),
                           options.episode_timeout, {"versions": versions} if versions else {}, options.budget)
    spend = RunSpend(options.budget, stop) if options.budget is not None else None
    with Store(run_dir) as store:
        store.begin_run(config, {s.task_id: s.task for s in specs}.values(), versions)
        store.update_config(budget=options.budget.record() if options.budget is not None else None)
        finished = {row["name"]: row for row in store.episodes()} if options.resume else {}
        done = store.completed_names() if options.resume else set()
        todo = []
        for spec in specs:
            if spec.name in done:
                result = result_from_row(finished[spec.name])
                _kept(results, spec, result, spend, on_result)
            else:
                todo.append(spec)
        status = "interrupted"
        try:
            if todo and not stop.is_set():
                executor = make_executor(options.executor, workers=options.workers, **options.executor_options)
                # closing(): an interrupt here still runs the executor's cleanup (desktops, actors) at once
                with closing(executor.run(todo, worker, on_start=on_start, on_step=on_step, stop=stop,
                                          spend=spend)) as stream:
                    for spec, result in stream:
                        _kept(results, spec, _recorded(store, spec, result, options.provider), spend, on_result)
            status = ("budget" if spend is not None and spend.stopped(results, len(specs))
                      else "finished" if len(results) == len(specs) else "interrupted")
        finally:
            store.end_run(status)
    return results


def _kept(results: list, spec: EpisodeSpec, result: EpisodeResult, spend: RunSpend | None,
          on_result: OnResult | None) -> None:
    """One episode of the run: listed, its usage settled against the run's budget (what an episode
    played again on resume spent was spent all the same), announced."""
    results.append((spec, result))
    if spend is not None:
        spend.settle(spec.name, spec.agent, result.usage)
    if on_result:
        on_result(spec, result)
