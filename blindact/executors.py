"""Where episodes run. An executor takes the specs still to run and yields (spec, result, node) as
episodes finish; the caller (runner.run_suite) writes each to the store, so results from every
executor flow into the one store of the driver.

- local (default): worker threads in this process, each owning one desktop for its whole life.
- ray: Ray actors on an existing cluster (or a local one), each owning one desktop on its node.
  An actor runs the episode into a scratch folder on its node and sends the trajectory files back
  with the result; the driver writes them under the run folder.

Pointing `ray` at a cluster: start it with `ray start --head` on one machine and `ray start
--address=<head>:6379` on the others, with blindact installed in the same Python environment on
every node (and Xvfb + Chromium, or Docker for `--provider docker`), then pass
`--executor ray --ray-address <head>:6379` (or `auto` on a cluster node). `--workers` is the number
of desktops across the cluster; `--ray-cpus` the CPUs Ray reserves for each.
"""

from __future__ import annotations

import base64
import queue
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from blindact.runner import DesktopSlot, EpisodeResult, EpisodeSpec, SuiteOptions, run_one

OnStart = Callable[[EpisodeSpec], None] | None
Finished = tuple[EpisodeSpec, EpisodeResult, str]


class ExecutorError(RuntimeError):
    pass


def make_executor(kind, *, workers: int = 1, **options):
    if not isinstance(kind, str):
        return kind  # a ready executor object
    if kind == "local":
        return LocalExecutor(workers=workers, **options)
    if kind == "ray":
        return RayExecutor(workers=workers, **options)
    raise ValueError(f"executor {kind!r}: use 'local' or 'ray'")


class LocalExecutor:
    def __init__(self, workers: int = 1):
        self.workers = max(1, int(workers))

    def run(self, specs: list[EpisodeSpec], opts: SuiteOptions, episodes_dir: Path, *, on_start: OnStart = None,
            stop: threading.Event | None = None) -> Iterator[Finished]:
        stop = stop or threading.Event()
        todo: queue.Queue[EpisodeSpec] = queue.Queue()
        for spec in specs:
            todo.put(spec)
        done: queue.Queue[Finished | None] = queue.Queue()
        failures: list[BaseException] = []
        node = socket.gethostname()

        def worker() -> None:
            slot = DesktopSlot(opts.provider, opts.provider_options)
            try:
                while not stop.is_set():
                    try:
                        spec = todo.get_nowait()
                    except queue.Empty:
                        return
                    if on_start:
                        on_start(spec)
                    done.put((spec, run_one(spec, slot, episodes_dir, opts), node))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                failures.append(exc)
                stop.set()
            finally:
                slot.close()
                done.put(None)

        threads = [threading.Thread(target=worker, name=f"blindact-worker-{i}", daemon=True)
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


# ------------------------------------------------------------------------------------------ Ray


def _pack(folder: Path) -> dict[str, str]:
    """An episode folder's files as name -> base64 text (small: a few PNGs and JSON files)."""
    if not folder.is_dir():
        return {}
    return {p.name: base64.b64encode(p.read_bytes()).decode() for p in sorted(folder.iterdir()) if p.is_file()}


def _unpack(files: dict[str, str], folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)  # a half-written earlier attempt of this episode
    folder.mkdir(parents=True)
    for name, data in files.items():
        if "/" in name or name.startswith("."):
            raise ExecutorError(f"refusing the file name {name!r} sent back for {folder.name}")
        (folder / name).write_bytes(base64.b64decode(data))


class EpisodeActor:
    """A Ray actor owning one desktop on its node (wrapped with ray.remote at run time, so importing
    this module never needs Ray)."""

    def __init__(self, opts: dict):
        self.opts = SuiteOptions(**opts)
        self.slot = DesktopSlot(self.opts.provider, self.opts.provider_options)
        self.scratch = Path(tempfile.mkdtemp(prefix="blindact-ray-"))

    def run(self, spec: dict) -> dict:
        episode = EpisodeSpec(**spec)
        result = run_one(episode, self.slot, self.scratch, self.opts)
        folder = self.scratch / episode.name
        files = _pack(folder)
        shutil.rmtree(folder, ignore_errors=True)
        return {"result": asdict(result), "files": files, "node": socket.gethostname()}

    def close(self) -> bool:
        self.slot.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        return True


class RayExecutor:
    def __init__(self, workers: int = 1, address: str | None = None, cpus_per_worker: float = 1.0,
                 init_options: dict | None = None):
        self.workers = max(1, int(workers))
        self.address = address
        self.cpus_per_worker = cpus_per_worker
        self.init_options = init_options or {}

    def _ray(self):
        try:
            import ray
        except ImportError as exc:
            raise ExecutorError("--executor ray needs Ray: pip install 'blindact[ray]' (or pip install ray)") from exc
        owns = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_options}
            if self.address:
                kwargs["address"] = self.address
            ray.init(**kwargs)
            owns = True
        return ray, owns

    def run(self, specs: list[EpisodeSpec], opts: SuiteOptions, episodes_dir: Path, *, on_start: OnStart = None,
            stop: threading.Event | None = None) -> Iterator[Finished]:
        ray, owns = self._ray()
        stop = stop or threading.Event()
        actor_cls = ray.remote(num_cpus=self.cpus_per_worker, max_restarts=0)(EpisodeActor)
        opts_dict = asdict(opts)
        todo = list(reversed(specs))
        actors = [actor_cls.remote(opts_dict) for _ in range(min(self.workers, len(specs)))]
        idle = list(actors)
        pending: dict = {}
        try:
            while todo or pending:
                while idle and todo and not stop.is_set():
                    actor, spec = idle.pop(), todo.pop()
                    if on_start:
                        on_start(spec)
                    pending[actor.run.remote(asdict(spec))] = (actor, spec)
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in ready:
                    actor, spec = pending.pop(ref)
                    try:
                        payload = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        # the actor's process died (node lost, OOM): record it and go on with a new one
                        actors.remove(actor)
                        actor = actor_cls.remote(opts_dict)
                        actors.append(actor)
                        idle.append(actor)
                        yield spec, EpisodeResult(spec.task_id, spec.agent_spec, "desktop_error", 0,
                                                  error=f"Ray worker lost: {exc}"), ""
                        continue
                    _unpack(payload["files"], episodes_dir / spec.name)
                    idle.append(actor)
                    yield spec, EpisodeResult(**payload["result"]), payload["node"]
        finally:
            closing = [a.close.remote() for a in actors]
            try:
                ray.get(closing, timeout=60)
            except (ray.exceptions.RayError, TimeoutError):
                pass  # an actor that cannot close cleanly is killed below; its desktop dies with it
            for a in actors:
                ray.kill(a)
            if owns:
                ray.shutdown()
