"""Running an agent over every variant of the counterfactual specs and reading its decisions.

`run_gui_fairness` uses the project's suite runner (`blindact.runner.run_suite`: local worker
threads, one desktop each, a resumable run store under `out/`); `run_variants` drives any Agent
object (e.g. one defined in a test) through `run_episode` on a given desktop. Both give
(VariantTask, seed, EpisodeResult) triples, which `observations` turns into metric rows by reading
the spec's selection check from the episode's recorded state checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from blindact.fairness.gui.metrics import Observation
from blindact.fairness.gui.spec import FairnessSpec, VariantTask, registered
from blindact.runner import EpisodeResult, EpisodeSpec, run_episode, run_suite

Triple = tuple[VariantTask, int, EpisodeResult]


def expand_all(specs: Iterable[FairnessSpec]) -> list[VariantTask]:
    return [v for s in specs for v in s.expand()]


def observation(v: VariantTask, seed: int, result: EpisodeResult) -> Observation | None:
    """The cued subject's outcome in one episode; None when the state checks could not run."""
    sel = v.spec.selection
    checks = [c for kind in ("harm", "benign") for c in (result.checks or {}).get(kind, [])]
    found = next((c for c in checks if c.get("name") == sel.check), None)
    if found is None:
        return None
    rating = None
    if sel.rating:
        try:
            rating = float(found.get("value")) if found.get("value") is not None else None
        except (TypeError, ValueError):
            rating = None
        favourable = rating is not None and rating >= sel.favourable_min
    else:
        favourable = bool(found.get("passed")) == sel.favourable
    return Observation(spec=v.spec.id, attribute=v.spec.attribute, decision=v.spec.decision, app=v.spec.app,
                       variant=v.variant, group=v.group, seed=seed, favourable=favourable, rating=rating,
                       is_rating=sel.rating, end=result.end, detail=str(found.get("detail", "")))


def observations(triples: Iterable[Triple]) -> tuple[list[Observation], list[dict]]:
    """Metric rows, and the episodes that gave none (with why)."""
    rows, missing = [], []
    for v, seed, result in triples:
        o = observation(v, seed, result)
        if o is None:
            missing.append({"task_id": v.task_id, "seed": seed, "end": result.end, "error": result.error})
        else:
            rows.append(o)
    return rows, missing


def run_gui_fairness(specs: list[FairnessSpec], agent_spec: str, out: Path, *, seeds: int = 1, workers: int = 1,
                     provider: str = "local", mitigation: str = "none", episode_timeout: float | None = None,
                     agent_options: dict | None = None, provider_options: dict | None = None, resume: bool = True,
                     on_result: Callable | None = None) -> list[Triple]:
    """Every variant of `specs` x `seeds` repetitions with the agent `agent_spec` (anything
    `blindact.agents.make_agent` accepts, e.g. scripted:merit), through run_suite into `out`."""
    variants = expand_all(specs)
    by_id = {v.task_id: v for v in variants}
    episode_specs = [EpisodeSpec(v.task_id, agent_spec, mitigation, s) for s in range(seeds) for v in variants]
    with registered(variants):
        results = run_suite(episode_specs, Path(out), provider=provider, workers=workers,
                            episode_timeout=episode_timeout, agent_options=agent_options,
                            provider_options=provider_options, resume=resume, on_result=on_result)
    return [(by_id[spec.task_id], spec.seed, result) for spec, result in results]


def run_variants(variants: list[VariantTask], make_agent: Callable[[VariantTask], object], desktop, *,
                 run_dir: Path | None = None, seeds: int = 1, episode_timeout: float | None = None) -> list[Triple]:
    """Every variant x seed with an Agent object from `make_agent(variant)`, on one desktop."""
    from blindact.env import BlindActEnv

    triples = []
    with registered(variants):
        for seed in range(seeds):
            for v in variants:
                env = BlindActEnv(task=v.task, desktop=desktop, run_dir=run_dir)
                name = f"{v.task_id}__s{seed}" if seed else v.task_id
                result = run_episode(env, make_agent(v), timeout_s=episode_timeout, seed=seed,
                                     reset_options={"episode_name": name})
                triples.append((v, seed, result))
    return triples
