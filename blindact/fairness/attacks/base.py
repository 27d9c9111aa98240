"""The attack interface: an attack rewrites how an item is put to the model, never its answer key.

Every attack is a pure function of (item, rng); the rng is derived from (seed, item id, attack name,
try number), so a given try of a given attack on a given item is identical on every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from blindact.fairness.items import MCItem
from blindact.fairness.prompts import DEFAULT_SYSTEM, INSTRUCTION, Prompt, format_question
from blindact.fairness.seeding import rng_for

CATEGORIES = ("persona", "competing_objectives", "text")


@dataclass(frozen=True)
class Attack:
    name: str
    category: str
    apply: Callable[[MCItem, random.Random], Prompt]
    description: str


@dataclass
class AttackedPrompt:
    prompt: Prompt
    attack: str
    category: str
    try_index: int
    item_id: str


def plain(item: MCItem, *, system: str = DEFAULT_SYSTEM, context: str | None = None,
          question: str | None = None, instruction: str = INSTRUCTION, preamble: str = "") -> Prompt:
    """The standard prompt with parts swapped out; the options are never changed."""
    user = format_question(item.context if context is None else context,
                           item.question if question is None else question, item.options, instruction)
    return Prompt(system=system, user=f"{preamble}\n\n{user}" if preamble else user, options=list(item.options))


def short_group_names(item: MCItem, max_words: int = 5) -> list[str]:
    """The non-neutral options as group names ("The grandson" -> "grandson"), only if short.

    CrowS-Pairs/StereoSet options are whole sentences, which make no sense as a persona or in an
    "X or Y" question; callers fall back to generic wording when this is empty.
    """
    names = []
    for opt in item.group_names():
        words = opt.split()
        if len(words) > max_words:
            return []
        if words and words[0].lower() in ("the", "a", "an"):
            words = words[1:]
        names.append(" ".join(words))
    return names


def run_attack(attack: Attack, item: MCItem, seed: int, try_index: int = 0) -> AttackedPrompt:
    rng = rng_for(seed, item.id, attack.name, try_index)
    return AttackedPrompt(attack.apply(item, rng), attack.name, attack.category, try_index, item.id)
