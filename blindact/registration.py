"""What `import blindact` registers with Gymnasium, and what `gymnasium.make("blindact/<task-id>")`
builds: the env with its state checks and, given `run_dir`, the recording wrapper writing each
episode into that run folder's store. (Here, at the top, because it puts the layers together.)

Registration is lazy so that `import blindact` and `blindact --help` stay fast: the ids are
registered with entry-point strings (the env module is imported by `gymnasium.make`), and only once
Gymnasium itself is imported; `import blindact` never imports Gymnasium."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gymnasium as gym

    from blindact.tasks import Task

ENTRY_POINT = "blindact.registration:make_env"


def make_env(task_id: str | None = None, *, task: Task | None = None, run_dir: str | Path | None = None,
             episode_meta: dict | None = None, **env_options) -> gym.Env:
    """StateChecks(BlindActEnv(...)), wrapped in RecordEpisode writing to `run_dir` when given;
    env_options go to BlindActEnv (desktop, provider, provider_options, width, height, render_mode)."""
    from blindact.env import BlindActEnv
    from blindact.wrappers import RecordEpisode, StateChecks

    env: gym.Env = StateChecks(BlindActEnv(task, task_id=task_id, **env_options))
    if run_dir is not None:
        from blindact.run.store import Store

        def save(trajectory) -> None:
            with Store(run_dir) as store:
                store.record_trajectory(trajectory)

        env = RecordEpisode(env, meta=episode_meta, on_episode=save)
    return env


def register_envs() -> None:
    """Register `blindact/<task-id>` for every shipped task, and the text-fairness envs (idempotent).
    Only file names are read and nothing of the envs is imported: a task is parsed, and its env
    module imported, when `gymnasium.make` builds it."""
    import gymnasium as gym

    from blindact.fairness import register_fairness_envs
    from blindact.task_files import task_ids

    for task_id in task_ids():
        env_id = f"blindact/{task_id}"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"task_id": task_id},
                         nondeterministic=True, disable_env_checker=True)
    register_fairness_envs()


def _register_or_warn() -> None:
    try:
        register_envs()
    except FileNotFoundError as exc:  # no tasks/ folder: a broken install, but gymnasium itself must still import
        warnings.warn(f"blindact: tasks not registered with gymnasium: {exc}", stacklevel=2)


class _RegisterAfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `gymnasium` is first imported, it lets the usual finder find it and
    has its loader register blindact's envs right after gymnasium's own module has run (a
    post-import hook: the standard import machinery, no patching of gymnasium)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)  # once, and so that the lookup below does not come back here
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_then_register(module) -> None:
            run_module(module)
            _register_or_warn()

        spec.loader.exec_module = exec_then_register  # this import's own loader instance only
        return spec


def register_when_gymnasium_loads() -> None:
    """Make `gymnasium.make("blindact/...")` work without importing Gymnasium now: register at once
    when Gymnasium is already imported, else as soon as it is."""
    if "gymnasium" in sys.modules:
        _register_or_warn()
    elif not any(isinstance(f, _RegisterAfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterGymnasium())
