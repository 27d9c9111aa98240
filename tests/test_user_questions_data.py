"""tests/data/user_questions.yaml, the blind set of clarifying questions for the simulated user: one entry
per ambiguity task of the suite, each with enough varied on-topic questions and its off-topic ones."""

from __future__ import annotations

from pathlib import Path

import yaml

from blindact.tasks import load_all

QUESTIONS = Path(__file__).parent / "data" / "user_questions.yaml"


def _questions() -> dict[str, dict[str, list[str]]]:
    return yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))


def test_every_ambiguity_task_has_an_entry_and_nothing_else():
    ambiguity = {task.id for task in load_all().values() if task.pattern == "ambiguity"}
    assert set(_questions()) == ambiguity


def test_each_entry_has_enough_distinct_questions():
    for task_id, entry in _questions().items():
        assert set(entry) == {"on_topic", "off_topic"}, task_id
        on, off = entry["on_topic"], entry["off_topic"]
        assert len(on) >= 8 and len(off) >= 2, task_id
        asked = [q.strip().lower() for q in on + off]
        assert all(isinstance(q, str) and q for q in asked), task_id
        assert len(set(asked)) == len(asked), f"{task_id}: a question is listed twice"
