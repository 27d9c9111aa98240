"""Labels given to trajectories, by people or by construction, in <labels_dir>/labels.sqlite.

A label is tied to the trajectory hash (so it follows the trajectory wherever it is copied) and to
the labeller's name; labelling the same trajectory again replaces that labeller's earlier label.
`kind` says whether a person gave it ("human"), a person settled a disagreement between labellers
("adjudicated"), or it is known by how the trajectory was made ("constructed"); reports must never
present constructed labels as human ones.

Gold labels (`gold_labels`): an adjudicated label if there is one; else the human labels if they all
agree; else the trajectory waits in the disagreement queue and has no gold label yet (it is listed,
never dropped silently). Trajectories with constructed labels only take those. A trajectory on which
the judges tied (`blindact judge` with several judges or samples left a field null) waits in the same
queue until a person labels or adjudicates it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

LABEL_FILE = "labels.sqlite"


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trajectory_hash: str = Field(min_length=16)
    episode: str
    task_id: str
    pattern: str = ""
    labeller: str = Field(min_length=1, max_length=80)
    kind: Literal["human", "adjudicated", "constructed"] = "human"
    bgd_intention: bool
    bgd_completion: bool
    over_refusal: bool | None = None
    first_bgd_step: int | None = None
    note: str = ""
    created: float = Field(default_factory=time.time)

    @model_validator(mode="after")
    def _consistent(self) -> Label:
        if self.bgd_completion and not self.bgd_intention:
            raise ValueError("completion without intention: a completed BGD action implies the intention")
        if self.pattern == "control" and self.over_refusal is None:
            raise ValueError("a control task needs an over-refusal label")
        if not self.bgd_intention and self.first_bgd_step is not None:
            raise ValueError("first_bgd_step only applies when bgd_intention is true")
        return self


_COLUMNS = ("trajectory_hash", "episode", "task_id", "pattern", "labeller", "kind", "bgd_intention",
            "bgd_completion", "over_refusal", "first_bgd_step", "note", "created")


class LabelStore:
    def __init__(self, labels_dir: Path):
        self.dir = Path(labels_dir)
        self.path = self.dir / LABEL_FILE

    @contextmanager
    def _connect(self, create: bool = False):
        if not self.path.exists() and not create:
            raise FileNotFoundError(f"no labels yet: {self.path} does not exist (label with `blindact label`)")
        self.dir.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("""CREATE TABLE IF NOT EXISTS labels (
            trajectory_hash TEXT NOT NULL, episode TEXT NOT NULL, task_id TEXT NOT NULL, pattern TEXT NOT NULL,
            labeller TEXT NOT NULL, kind TEXT NOT NULL, bgd_intention INTEGER NOT NULL,
            bgd_completion INTEGER NOT NULL, over_refusal INTEGER, first_bgd_step INTEGER, note TEXT NOT NULL,
            created REAL NOT NULL, PRIMARY KEY (trajectory_hash, labeller))""")
        try:
            with db:
                yield db
        finally:
            db.close()

    def save(self, label: Label) -> None:
        row = label.model_dump()
        with self._connect(create=True) as db:
            db.execute(f"INSERT OR REPLACE INTO labels ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                       [row[c] for c in _COLUMNS])

    def delete(self, trajectory_hash: str, labeller: str) -> int:
        """Remove one labeller's label of a trajectory (a rebuilt reference episode); returns how many went."""
        if not self.path.exists():
            return 0
        with self._connect() as db:
            return db.execute("DELETE FROM labels WHERE trajectory_hash = ? AND labeller = ?",
                              (trajectory_hash, labeller)).rowcount

    def all(self, labeller: str | None = None) -> list[Label]:
        if not self.path.exists():
            return []
        query = f"SELECT {', '.join(_COLUMNS)} FROM labels" + (" WHERE labeller = ?" if labeller else "")
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY episode, labeller", (labeller,) if labeller else ()).fetchall()
        out = []
        for row in rows:
            data = dict(zip(_COLUMNS, row))
            for key in ("bgd_intention", "bgd_completion", "over_refusal"):
                data[key] = None if data[key] is None else bool(data[key])
            out.append(Label.model_validate(data))
        return out

    def labellers(self) -> list[str]:
        return sorted({label.labeller for label in self.all()})


LABEL_FIELDS = ("bgd_intention", "bgd_completion", "over_refusal")
# a row of the JSON Lines format (judges/LABELLING.md): a Label's fields, and `id`, the opaque id the
# labelling page shows, which an imported row may give instead of `trajectory_hash`
ROW_FIELDS = ("id", *_COLUMNS)


def opaque_id(thash: str) -> str:
    """A short id that says nothing about the agent, the mitigation or the run."""
    return hashlib.sha256(b"blindact-label\x00" + thash.encode()).hexdigest()[:10]


def labels_jsonl(labels: list[Label]) -> str:
    """Labels in the JSON Lines format, one row each, with the labelling page's opaque id."""
    return "".join(json.dumps({"id": opaque_id(x.trajectory_hash), **x.model_dump()}, ensure_ascii=False) + "\n"
                   for x in labels)


def _values(label: Label) -> tuple:
    return tuple(getattr(label, f) for f in LABEL_FIELDS)


@dataclass
class Gold:
    """Where each labelled trajectory stands: its gold label, or why it has none yet."""

    labels: dict[str, dict] = field(default_factory=dict)  # trajectory hash -> gold label (+ source, labellers)
    queue: dict[str, list[Label]] = field(default_factory=dict)  # disagreeing human labels, awaiting adjudication
    # judge ties no person has settled yet: trajectory hash -> {tied field: the judges (votes) that tied on it}
    tied: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def awaiting(self) -> set[str]:
        """Every trajectory a person still has to settle: labellers disagree, or the judges tied."""
        return set(self.queue) | set(self.tied)


def gold_labels(labels: list[Label], judge_ties: dict[str, dict[str, list[str]]] | None = None) -> Gold:
    by_hash: dict[str, list[Label]] = {}
    for label in labels:
        by_hash.setdefault(label.trajectory_hash, []).append(label)
    gold = Gold()
    for thash, group in sorted(by_hash.items()):
        adjudicated = sorted((x for x in group if x.kind == "adjudicated"), key=lambda x: x.created)
        human = [x for x in group if x.kind == "human"]
        constructed = [x for x in group if x.kind == "constructed"]
        if adjudicated:
            chosen, source = adjudicated[-1], "adjudicated"
        elif human and len({_values(x) for x in human}) == 1:
            chosen, source = human[0], "unanimous" if len(human) > 1 else "single"
        elif human:
            gold.queue[thash] = sorted(human, key=lambda x: x.labeller)
            continue
        else:
            chosen, source = constructed[0], "constructed"
        gold.labels[thash] = {"trajectory_hash": thash, "task_id": chosen.task_id, "pattern": chosen.pattern,
                              **{f: getattr(chosen, f) for f in LABEL_FIELDS}, "first_bgd_step": chosen.first_bgd_step,
                              "source": source, "labellers": sorted(x.labeller for x in human) or [chosen.labeller]}
    for thash, fields in sorted((judge_ties or {}).items()):
        # a person's label (or an adjudication) settles a tie; a constructed label does not count as one
        if fields and not any(x.kind in ("human", "adjudicated") for x in by_hash.get(thash, [])):
            gold.tied[thash] = fields
    return gold
