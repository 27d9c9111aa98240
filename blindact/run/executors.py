"""Where episodes run. An executor takes the specs still to run and yields (spec, result) as
episodes finish; the suite writes each to the one store of the driver. Specs carry their Task and
results their Trajectory, so values travel, not ids or files.

- local (default): worker threads in this process, each owning one desktop for its whole life.
- ray: Ray actors on an existing cluster (or a local one), each owning one desktop on its node. An
  episode whose actor dies (its node lost) is played again on another actor, up to `retries` times.

Pointing `ray` at a cluster: start it with `ray start --head` on one machine and `ray start
--address=<head>:6379` on the others, with blindact installed in the same Python environment on
every node (and the desktop packages, or Docker and the image for `--provider docker`), then pass
`--executor ray --ray-address <head>:6379` (or `auto` on a cluster node). `--workers` is the number
of desktops across the cluster; `--ray-cpus` the CPUs Ray reserves for each.

`on_step(worker, spec, trajectory)` (the live view, blindact.run.watch) is called after every step: by
the local executor's worker threads, and under Ray by the driver, for the steps the actors put on a
Ray queue (each the step's tail of the trajectory with its latest screenshot, dropped rather than
waited for when the driver lags behind).
"""

from __future__ import annotations

import functools
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from blindact.endings import End
from blindact.run.budget import Budget, Meter, RunSpend
from blindact.run.episode import DesktopSlot, EpisodeResult, EpisodeSpec, run_one
from blindact.trajectory import Trajectory

OnStart = Callable[[EpisodeSpec], None] | None
OnStep = Callable[[int, EpisodeSpec, Trajectory], None] | None
Finished = tuple[EpisodeSpec, EpisodeResult]


class ExecutorError(RuntimeError):
    pass


@dataclass
class WorkerOptions:
    """What every worker needs to run any episode (plain data, so it travels to Ray)."""

    provider: str = "local"
    provider_options: dict = field(default_factory=dict)
    agent_options: dict[str, dict] = field(default_factory=dict)  # agent spec -> its constructor options
    episode_timeout: float | None = None
    meta: dict = field(default_factory=dict)  # recorded with every episode (versions)
    budget: Budget | None = None

    def run(self, spec: EpisodeSpec, slot: DesktopSlot, spend: RunSpend | None = None,
            on_step: Callable[[Trajectory], None] | None = None) -> EpisodeResult:
        """One episode; anything that escapes it is that episode's recorded error (its desktop replaced),
        never the end of the worker or of the run. `spend`: the run's live spend, when this worker
        shares the driver's process (blindact.run.budget)."""
        meter = Meter(self.budget, spec.name, spec.agent, spend) if self.budget is not None else None
        try:
            result = run_one(spec, slot, provider=self.provider, agent_options=self.agent_options.get(spec.agent, {}),
                             episode_timeout=self.episode_timeout, meta=self.meta, meter=meter, on_step=on_step)
        except Exception as exc:  # noqa: BLE001 - see above
            slot.discard()
            result = EpisodeResult(End.DESKTOP_ERROR, 0, error=f"the episode failed: {type(exc).__name__}: {exc}")
        result.node = socket.gethostname()
        return result


class LocalExecutor:
    """Worker threads in this process, each owning one desktop."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))

    def run(self, specs: list[EpisodeSpec], opts: WorkerOptions, *, on_start: OnStart = None,
            on_step: OnStep = None, stop: threading.Event | None = None,
            spend: RunSpend | None = None) -> Iterator[Finished]:
        stop = stop or threading.Event()
        todo: queue.Queue[EpisodeSpec] = queue.Queue()
        for spec in specs:
            todo.put(spec)
        done: queue.Queue[Finished | None] = queue.Queue()
        failures: list[BaseException] = []

        def worker(number: int) -> None:
            slot = DesktopSlot(opts.provider, opts.provider_options)
            try:
                while not stop.is_set():
                    try:
                        spec = todo.get_nowait()
                    except queue.Empty:
                        return
                    if on_start:
                        on_start(spec)
                    done.put((spec, opts.run(spec, slot, spend, on_step and functools.partial(on_step, number, spec))))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                failures.append(exc)
                stop.set()
            finally:
                slot.close()
                done.put(None)

        threads = [threading.Thread(target=worker, args=(i,), name=f"blindact-worker-{i}", daemon=True)
                   for i in range(min(self.workers, len(specs)) or 1)]
        for t in threads:
            t.start()
        alive = len(threads)
        try:
            while alive:
                try:
                    item = done.get(timeout=0.2)
                except queue.Empty:
                    continue
                if item is None:
                    alive -= 1
                else:
                    yield item
        finally:
            stop.set()  # an interrupted caller: workers finish their episode, close their desktop, exit
            for t in threads:
                t.join(timeout=60)
        if failures:
            raise failures[0]


class EpisodeActor:
    """A Ray actor owning one desktop on its node (wrapped with ray.remote at run time, so importing
    this module never needs Ray). `steps`: a Ray queue the live view's steps go to, or None."""

    def __init__(self, opts: WorkerOptions, number: int = 0, steps=None):
        self.opts = opts
        self.number = number
        self.steps = steps
        self.slot = DesktopSlot(opts.provider, opts.provider_options)

    def _stepped(self, spec: EpisodeSpec, trajectory: Trajectory) -> None:
        from ray.util.queue import Full

        from blindact.run.watch import RECENT

        try:
            self.steps.put_nowait((self.number, spec.name, trajectory.tail(RECENT)))
        except Full:
            pass  # the driver lags behind: a later step shows instead

    def run(self, spec: EpisodeSpec) -> EpisodeResult:
        import ray

        on_step = functools.partial(self._stepped, spec) if self.steps is not None else None
        result = self.opts.run(spec, self.slot, on_step=on_step)
        # several Ray nodes may share one machine (and its host name): name the node too
        result.node = f"{result.node}/ray-{ray.get_runtime_context().get_node_id()[:12]}"
        return result

    def close(self) -> bool:
        self.slot.close()
        return True


class RayExecutor:
    def __init__(self, workers: int = 1, address: str | None = None, cpus_per_worker: float = 1.0,
                 retries: int = 2, init_options: dict | None = None):
        self.workers = max(1, int(workers))
        self.address = address
        self.cpus_per_worker = cpus_per_worker
        self.retries = retries
        self.init_options = init_options or {}

    def _ray(self):
        try:
            import ray
        except ImportError as exc:
            raise ExecutorError("--executor ray needs Ray: pip install 'blindact[ray]'") from exc
        owns = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_options}
            if self.address:
                kwargs["address"] = self.address
            ray.init(**kwargs)
            owns = True
        return ray, owns

    def run(self, specs: list[EpisodeSpec], opts: WorkerOptions, *, on_start: OnStart = None,
            on_step: OnStep = None, stop: threading.Event | None = None,
            spend: RunSpend | None = None) -> Iterator[Finished]:
        """`spend` stays here: actors in other processes keep to each episode's budget, and the run's
        is checked (through `stop`) as their episodes come back. `on_step` is called here, for the
        steps the actors put on the live queue (see the module's docstring)."""
        ray, owns = self._ray()
        stop = stop or threading.Event()
        # SPREAD: one desktop per node before two on any, so a lost node costs the fewest episodes
        actor_cls = ray.remote(num_cpus=self.cpus_per_worker, max_restarts=0, scheduling_strategy="SPREAD")(EpisodeActor)
        todo = list(reversed(specs))
        attempts: dict[str, int] = {}
        live = self._live_queue() if on_step else None
        by_name = {s.name: s for s in specs}

        def show_steps() -> None:
            for number, name, tail in _drain(live):
                on_step(number, by_name[name], tail)

        actors = [actor_cls.remote(opts, i, live) for i in range(min(self.workers, len(specs)))]
        number = {a: i for i, a in enumerate(actors)}
        idle = list(actors)
        pending: dict = {}
        try:
            while todo or pending:
                while idle and todo and not stop.is_set():
                    actor, spec = idle.pop(), todo.pop()
                    if on_start and spec.name not in attempts:
                        on_start(spec)
                    attempts[spec.name] = attempts.get(spec.name, 0) + 1
                    pending[actor.run.remote(spec)] = (actor, spec)
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                if live is not None:
                    show_steps()
                for ref in ready:
                    actor, spec = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        # the actor's process or node died: a new actor, and the episode again elsewhere
                        actors.remove(actor)
                        replacement = actor_cls.remote(opts, number[actor], live)
                        number[replacement] = number[actor]
                        actors.append(replacement)
                        idle.append(replacement)
                        if attempts[spec.name] <= self.retries:
                            todo.append(spec)
                        else:
                            yield spec, EpisodeResult(End.DESKTOP_ERROR, 0, error=(
                                f"Ray worker lost {attempts[spec.name]} times running this episode: {exc}"))
                        continue
                    idle.append(actor)
                    yield spec, result
        finally:
            closing = [a.close.remote() for a in actors]
            try:
                ray.get(closing, timeout=60)
            except (ray.exceptions.RayError, TimeoutError):
                pass  # an actor that cannot close cleanly is killed below; its desktop dies with it
            for a in actors:
                ray.kill(a)
            if live is not None:
                live.shutdown()
            if owns:
                ray.shutdown()

    @staticmethod
    def _live_queue():
        from ray.util.queue import Queue

        # no CPU of its own: on a cluster sized to its desktops the queue must not take a desktop's place
        return Queue(maxsize=200, actor_options={"num_cpus": 0})


def _drain(live) -> list:
    """Whatever the actors have put on the live queue so far, without waiting."""
    from ray.util.queue import Empty

    try:
        return live.get_nowait_batch(live.qsize()) if live.qsize() else []
    except Empty:
        return []


EXECUTORS: dict[str, type] = {"local": LocalExecutor, "ray": RayExecutor}
EXECUTOR_HELP = {
    "local": "worker threads here, one desktop each (default)",
    "ray": "Ray actors on a cluster (--ray-address), one desktop each; lost nodes' episodes run again",
}


def make_executor(kind: str, *, workers: int = 1, **options):
    if kind not in EXECUTORS:
        raise ValueError(f"executor {kind!r}: use one of {', '.join(EXECUTORS)}")
    return EXECUTORS[kind](workers=workers, **options)
