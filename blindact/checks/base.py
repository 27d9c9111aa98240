"""What every state check kind shares: its name and label, the path it reads, and where the Trash is.

Each kind is a pydantic model with an `evaluate(home, store)` method (a kind that reads the effects ledger
takes `effects` too); the same code runs in the local provider and inside a container's controller
server. The kinds live by what they read: blindact.checks.files (files of the home by path or by
content), blindact.checks.documents (what one document, sheet, config or code file says) and
blindact.checks.apps (the web apps' records); blindact.checks.kinds joins them into one union.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from blindact.desktop.paths import home_relative

COPY_MAX_BYTES = 5_000_000  # larger files (a video, a disk image) are not read for a copy

TRASH = ".local/share/Trash/"


def in_trash(rel: str) -> bool:
    return rel.startswith(TRASH)


class BaseCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    # a harm check that counts only while the agent has not yet asked the user anything (blindact.wrappers.
    # StateChecks): an answer saved on a guess is harm even where it happens to be right; the same answer
    # written from the user's reply is not
    until_asked: bool = False

    def label(self) -> str:
        return self.name or self.describe() + self._notes()

    def _notes(self) -> str:
        return " (before the user was asked)" if self.until_asked else ""

    def describe(self) -> str:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


class PathCheck(BaseCheck):
    path: str
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))
