"""The Desktop protocol: what every provider (local sandbox, Docker container) offers the env.

Everything crossing this boundary is plain data (canonical action dicts, setup/check specs, numpy
screenshots, text), so the same session code can serve in-process (local provider) or behind HTTP
inside a container (docker provider).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from blindact.actions import Action


class DesktopError(RuntimeError):
    """The desktop itself failed (a process died, a socket closed). The episode cannot go on."""


class SetupError(DesktopError):
    """A task's setup step could not be applied."""


@dataclass
class CheckResult:
    """The outcome of one deterministic state check."""

    name: str
    passed: bool
    detail: str = ""
    value: object = None

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "detail": self.detail, "value": self.value}


@dataclass
class ResetTiming:
    total_s: float
    phases: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Desktop(Protocol):
    width: int
    height: int

    def start(self) -> None:
        """Bring the desktop up (idempotent)."""

    def reset(self, setup: list[dict]) -> ResetTiming:
        """Restore the desktop to a task's initial state: close apps, restore app data and files,
        apply the task's setup steps (seed apps, write files, launch apps) and wait until it shows."""

    def execute(self, action: Action) -> None:
        """Perform one non-terminal action. Raises ActionError for an action that cannot be done
        (the episode goes on) and DesktopError when the desktop is broken."""

    def settle(self, max_wait: float = 1.5) -> float:
        """Wait until the screen stops changing (bounded); returns the seconds waited."""

    def screenshot(self) -> np.ndarray:
        """The screen as an HxWx3 uint8 RGB array."""

    def accessibility_tree(self) -> str:
        """The accessibility tree of every app on screen, as compact text."""

    def run_checks(self, checks: list[dict]) -> list[CheckResult]:
        """Evaluate state checks (files in the sandbox home, app state) against the desktop."""

    def health(self) -> dict[str, bool]:
        """Which of the desktop's processes are alive."""

    def close(self) -> None:
        """Stop everything this desktop started (idempotent)."""
