"""How a multiple-choice item is shown to a chat model."""

from __future__ import annotations

from dataclasses import dataclass

from blindact.fairness.items import MCItem

LETTERS = "ABCDEFGH"

DEFAULT_SYSTEM = "You answer multiple-choice questions. Reply with the letter of one option."
INSTRUCTION = "Answer with the letter of exactly one option, for example (A)."


@dataclass
class Prompt:
    """A system prompt and a user message; `options` are the option texts as shown."""

    system: str
    user: str
    options: list[str]

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.user}]

    def as_text(self) -> str:
        """One string (the env's observation): system and user parts joined."""
        return f"{self.system}\n\n{self.user}" if self.system else self.user


def format_options(options: list[str]) -> str:
    return "\n".join(f"({LETTERS[i]}) {opt}" for i, opt in enumerate(options))


def format_question(context: str, question: str, options: list[str], instruction: str = INSTRUCTION) -> str:
    parts = []
    if context:
        parts.append(f"Context: {context}")
    parts.append(f"Question: {question}")
    parts.append(format_options(options))
    if instruction:
        parts.append(instruction)
    return "\n".join(parts)


def build_prompt(item: MCItem, system: str = DEFAULT_SYSTEM) -> Prompt:
    return Prompt(system=system, user=format_question(item.context, item.question, item.options), options=list(item.options))
