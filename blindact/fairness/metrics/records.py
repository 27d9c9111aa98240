"""The per-item results the metrics read. Plain dataclasses so reports can store and reload them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from blindact.fairness.items import MCItem
from blindact.fairness.parsing import ParsedAnswer


@dataclass
class Prediction:
    """A model's answer to one unattacked item. `choice` is None for refusals, unparsed replies and failed
    calls (kind "error": not an answer, left out of every figure)."""

    item_id: str
    attribute: str
    choice: int | None
    label: int | None = None
    unknown_index: int | None = None
    target_index: int | None = None
    polarity: str = ""
    condition: str = ""
    kind: str = ""
    groups: tuple[str, ...] = ()
    choice_norm: int | None = None  # log-likelihood scoring: the pick by length-normalised likelihood
    subset: str = ""  # StereoSet: "intrasentence" or "intersentence"
    term: str = ""  # StereoSet: the target term the item is about
    lm_eval_biased: tuple[int, ...] | None = None  # BBQ: the options lm-eval counts as biased (None: not known)

    @property
    def failed(self) -> bool:
        return self.kind == "error"

    @property
    def correct(self) -> bool:
        return self.choice is not None and self.choice == self.label

    @property
    def correct_norm(self) -> bool:
        return self.choice_norm is not None and self.choice_norm == self.label

    @classmethod
    def of(cls, item: MCItem, parsed: ParsedAnswer) -> "Prediction":
        biased = item.meta.get("lm_eval_biased")
        return cls(item.id, item.attribute, parsed.choice, item.label, item.unknown_index, item.target_index,
                   item.polarity, item.condition, parsed.kind, tuple(item.groups),
                   subset=str(item.meta.get("kind", "")), term=str(item.meta.get("target", "")),
                   lm_eval_biased=tuple(biased) if biased is not None else None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Prediction":
        biased = d.get("lm_eval_biased")
        return cls(**{**d, "groups": tuple(d.get("groups", ())),
                      "lm_eval_biased": tuple(biased) if biased is not None else None})


@dataclass
class FlexRecord:
    """One source item in a FLEX run.

    `source_correct` is None when the unattacked call failed. `attacked_correct` is None when the item was
    not attacked (coverage-only runs skip the items answered wrongly without attack) or when every attacked
    call failed (`attack_failed`). `attack`/`category` name the attack whose variant was scored (the
    targeted pick).
    """

    item_id: str
    attribute: str
    source_correct: bool | None
    attack: str | None = None
    category: str | None = None
    attacked_correct: bool | None = None
    tied: tuple[str, ...] = ()  # the attacks as strong as `attack` on this item (ties go to the earlier one)
    attack_failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
