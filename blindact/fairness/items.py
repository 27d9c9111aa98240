"""The common item shape every fairness dataset is turned into: a multiple-choice question.

BBQ items are already 3-way multiple choice. CrowS-Pairs and StereoSet items become choice
questions too (see `datasets/crows.py`, `datasets/stereoset.py`), so one prompt format, one
answer parser and one env serve all of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# BBQ's nine attribute names, used as the canonical attribute vocabulary across datasets.
ATTRIBUTES: tuple[str, ...] = (
    "Age",
    "Disability_status",
    "Gender_identity",
    "Nationality",
    "Physical_appearance",
    "Race_ethnicity",
    "Religion",
    "SES",
    "Sexual_orientation",
)


@dataclass
class MCItem:
    """One multiple-choice question.

    `label` is the index of the right option, None for preference items that have no right
    answer (CrowS-Pairs / StereoSet scored by which option is preferred). `unknown_index` is the neutral "cannot tell" option
    when there is one. `target_index` is the option naming the stereotyped group (BBQ) or the
    stereotypical sentence (CrowS-Pairs, StereoSet), None when it is not known. `polarity` is
    "neg"/"nonneg" and `condition` "ambig"/"disambig" for BBQ-style items, "" otherwise.
    `groups` holds, per option, the group label the dataset gives it ("unknown" for the neutral one).
    """

    id: str
    source: str
    attribute: str
    context: str
    question: str
    options: list[str]
    label: int | None
    unknown_index: int | None = None
    target_index: int | None = None
    polarity: str = ""
    condition: str = ""
    groups: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.label is not None and not 0 <= self.label < len(self.options):
            raise ValueError(f"item {self.id}: label {self.label} outside {len(self.options)} options")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MCItem":
        return cls(**d)

    def group_names(self) -> list[str]:
        """The non-neutral options' texts (the people/groups the question is about)."""
        return [o for i, o in enumerate(self.options) if i != self.unknown_index]
