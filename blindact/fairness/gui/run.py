"""Running an agent over every variant of the counterfactual specs and reading its decisions.

`run_gui_fairness` uses the project's suite runner (`blindact.run.suite.run_suite`: any executor,
local threads or Ray, one desktop per worker, a resumable run store under `out/`; the variant tasks
travel inside the episode specs, so nothing needs registering); `run_variants` drives any Agent
object (e.g. one defined in a test) through `run_episode` on a given desktop. Both give
(VariantTask, seed, EpisodeResult) triples, which `observations` turns into metric rows by reading
the spec's selection check from the episode's recorded state checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from blindact.fairness.gui.metrics import DecisionRow
from blindact.fairness.gui.spec import FairnessSpec, VariantTask
from blindact.run.episode import EpisodeResult, EpisodeSpec, run_episode
from blindact.run.suite import SuiteOptions, run_suite

Triple = tuple[VariantTask, int, EpisodeResult]


def expand_all(specs: Iterable[FairnessSpec]) -> list[VariantTask]:
    return [v for s in specs for v in s.expand()]


def observation(v: VariantTask, seed: int, result: EpisodeResult) -> DecisionRow | None:
    """The cued subject's outcome in one episode; None when the state checks could not run."""
    sel = v.spec.selection
    checks = [*result.checks.harm, *result.checks.benign]
    found = next((c for c in checks if c.name == sel.check), None)
    if found is None:
        return None
    rating = None
    if sel.rating:
        try:
            rating = float(found.value) if found.value is not None else None
        except (TypeError, ValueError):
            rating = None
        favourable = rating is not None and rating >= sel.favourable_min
    else:
        favourable = bool(found.passed) == sel.favourable
    return DecisionRow(spec=v.spec.id, attribute=v.spec.attribute, decision=v.spec.decision, app=v.spec.app,
                       variant=v.variant, group=v.group, seed=seed, favourable=favourable, rating=rating,
                       is_rating=sel.rating, end=str(result.end), detail=found.detail)


def observations(triples: Iterable[Triple]) -> tuple[list[DecisionRow], list[dict]]:
    """Metric rows, and the episodes that gave none (with why)."""
    rows, missing = [], []
    for v, seed, result in triples:
        o = observation(v, seed, result)
        if o is None:
            missing.append({"task_id": v.task_id, "seed": seed, "end": result.end, "error": result.error})
        else:
            rows.append(o)
    return rows, missing


def run_gui_fairness(specs: list[FairnessSpec], agent_spec: str, out: Path, *, seeds: int = 1,
                     mitigation: str = "none", options: SuiteOptions | None = None,
                     on_result: Callable | None = None) -> list[Triple]:
    """Every variant of `specs` x `seeds` repetitions with the agent `agent_spec` (anything
    `blindact.agents.make_agent` accepts, e.g. scripted:merit), through run_suite into `out`."""
    variants = expand_all(specs)
    by_id = {v.task_id: v for v in variants}
    episode_specs = [EpisodeSpec(v.task, agent_spec, mitigation, s) for s in range(seeds) for v in variants]
    results = run_suite(episode_specs, Path(out), options, on_result=on_result)
    return [(by_id[spec.task_id], spec.seed, result) for spec, result in results]


def run_variants(variants: list[VariantTask], make_agent: Callable[[VariantTask], object], desktop, *,
                 seeds: int = 1, episode_timeout: float | None = None) -> list[Triple]:
    """Every variant x seed with an Agent object from `make_agent(variant)`, on one desktop."""
    from blindact.env import BlindActEnv
    from blindact.wrappers import StateChecks

    triples = []
    for seed in range(seeds):
        for v in variants:
            env = StateChecks(BlindActEnv(v.task, desktop=desktop))
            result = run_episode(env, make_agent(v), timeout_s=episode_timeout, seed=seed)
            triples.append((v, seed, result))
    return triples
