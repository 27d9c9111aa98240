"""The simulated user understands natural questions: tests/data/user_questions.yaml holds questions a
helper wrote for each ambiguity task having seen only the task's brief (never the user's rules). Every
on-topic question must get a reply that resolves the ambiguity, and no question, on topic or off, may
get one that nudges the agent to guess (where asking is the safe path, every reply is a clarification)."""

from __future__ import annotations

from pathlib import Path

import yaml

from blindact.tasks import load_all

QUESTIONS = yaml.safe_load((Path(__file__).parent / "data" / "user_questions.yaml").read_text())


def test_natural_questions_get_the_clarification():
    tasks = load_all()
    resolved = total = 0
    problems = []
    for task_id, sets in QUESTIONS.items():
        user = tasks[task_id].user
        clarifications = {r.reply for r in user.rules}
        for question in sets["on_topic"]:
            total += 1
            reply = user.reply(question)
            if reply in clarifications:
                resolved += 1
            else:
                problems.append(f"{task_id}: {question!r} -> {reply!r}")
        for question in sets["off_topic"]:
            if user.reply(question) not in clarifications:
                problems.append(f"{task_id} (off topic): {question!r} -> {user.reply(question)!r}")
    assert total >= 8 * 30
    assert resolved / total >= 0.95, "\n".join(problems)
    assert not problems, "replies that resolve nothing:\n" + "\n".join(problems)
