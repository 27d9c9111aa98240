"""Gymnasium text envs: one episode = one multiple-choice item.

observation: the prompt as text (system part, blank line, user part)
action:      the model's answer as free text
reward:      1.0 when the parsed choice is the right option, else 0.0; the episode then ends
info:        after reset the item and attack; after step the parsed choice ("choice", "kind"),
             "correct", the right "label", and whether the pick was the stereotyped option

Both envs serve the frozen FLEX set by default (blindact.fairness.frozen: the same 165 real-BBQ ambiguous
items and fixed attacked prompts that `blindact fairness run --suite bbq-flex` scores), so that an
episode's item is the one a fairness run reports on:
blindact/fairness-bbq-flex-v0: one frozen item per episode with its stored attacked prompt; `attack="random"`
(or a name) with `items=` serves other items with an attack drawn per episode instead.
blindact/fairness-bbq-v0: the frozen items unattacked; `items=` serves others (e.g. `load_bbq("templates")`).
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym

from blindact.fairness.attacks import ALL_ATTACKS, run_attack
from blindact.fairness.frozen import FrozenSet
from blindact.fairness.frozen import load as load_frozen
from blindact.fairness.items import MCItem
from blindact.fairness.parsing import parse_answer
from blindact.fairness.prompts import Prompt, build_prompt
from blindact.spaces import UnicodeText


class FairnessTextEnv(gym.Env[str, str]):
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, items: Sequence[MCItem] | None = None, *, attack: str | None = "random",
                 ambiguous_only: bool = True, attributes: Sequence[str] | None = None, seed: int = 0,
                 render_mode: str | None = None, frozen: FrozenSet | None = None):
        """`attack`: "random" (one per episode), an attack name, or None for no attack; with `frozen`
        (a frozen FLEX set) "frozen" serves each item with its stored attacked prompt. Without `items` or
        `frozen` the shipped frozen set is served."""
        if frozen is not None and items is not None:
            raise ValueError("FairnessTextEnv: give items or a frozen set, not both")
        if attack == "frozen" and items is not None:
            raise ValueError("FairnessTextEnv: attack='frozen' serves a frozen set's items, not items=")
        if items is None:
            frozen = frozen or load_frozen()
            items = [entry.item for entry in frozen.items if not attributes or entry.item.attribute in attributes]
        self.frozen = frozen
        self._frozen_entries = {entry.item.id: entry for entry in frozen.items} if frozen else {}
        pool = list(items)
        if ambiguous_only:
            pool = [it for it in pool if it.label is not None and it.label == it.unknown_index]
        if not pool:
            raise ValueError("FairnessTextEnv: no items to serve")
        if attack not in (None, "random", "frozen") and attack not in ALL_ATTACKS:
            raise ValueError(f"unknown attack {attack!r}; use None, 'random', 'frozen' or one of {sorted(ALL_ATTACKS)}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.items, self.attack_mode, self.attack_seed, self.render_mode = pool, attack, seed, render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText(max_length=8_000)
        self._item: MCItem | None = None
        self._prompt: Prompt | None = None
        self._attack: str | None = None
        self._last = ""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "item_id" in options:
            match = [it for it in self.items if it.id == options["item_id"]]
            if not match:
                raise KeyError(f"item {options['item_id']!r} is not served by this env")
            item = match[0]
        elif "index" in options:
            item = self.items[int(options["index"]) % len(self.items)]
        else:
            item = self.items[int(self.np_random.integers(0, len(self.items)))]
        attack = options.get("attack", self.attack_mode)
        if attack == "random":
            names = sorted(ALL_ATTACKS)
            attack = names[int(self.np_random.integers(0, len(names)))]
        try_index = int(options.get("try_index", self.np_random.integers(0, 1_000_000)))
        if attack == "frozen":
            if item.id not in self._frozen_entries:
                raise ValueError("attack='frozen' needs the env's frozen set (frozen=...)")
            entry = self._frozen_entries[item.id]
            prompt, attack = entry.prompt, entry.attack
        elif attack is None:
            prompt = build_prompt(item)
        else:
            prompt = run_attack(ALL_ATTACKS[attack], item, self.attack_seed, try_index).prompt
        self._item, self._prompt, self._attack = item, prompt, attack
        self._last = prompt.as_text()
        info = {"item_id": item.id, "attribute": item.attribute, "condition": item.condition,
                "polarity": item.polarity, "attack": attack,
                "category": ALL_ATTACKS[attack].category if attack else None,
                "system": prompt.system, "user": prompt.user, "options": list(prompt.options)}
        if self.frozen is not None:
            info["set"] = {"name": self.frozen.name, "sha256": self.frozen.sha256}
        return self._last, info

    def step(self, action: str):
        if self._item is None:
            raise RuntimeError("call reset() before step()")
        if not isinstance(action, str):
            raise TypeError(f"the action is the answer text (str), got {type(action).__name__}")
        item = self._item
        parsed = parse_answer(action, item.options, item.unknown_index)
        correct = parsed.choice is not None and parsed.choice == item.label
        info = {"item_id": item.id, "attack": self._attack, "choice": parsed.choice, "kind": parsed.kind,
                "correct": correct, "label": item.label,
                "stereotyped_choice": parsed.choice is not None and parsed.choice == item.target_index}
        self._item = None
        self._last = ""
        return "", float(correct), True, False, info

    def render(self):
        if self.render_mode == "ansi":
            return self._last
        return None


def make_bbq_flex_env(**kw) -> FairnessTextEnv:
    """The frozen FLEX set with its stored attacked prompts by default; `items=` (and an attack) for other items."""
    kw.setdefault("attack", "frozen" if kw.get("items") is None else "random")
    return FairnessTextEnv(ambiguous_only=True, **kw)


def make_bbq_env(**kw) -> FairnessTextEnv:
    """The frozen FLEX set's items unattacked by default; `items=` for other items."""
    return FairnessTextEnv(attack=kw.pop("attack", None), ambiguous_only=False, **kw)
