"""The Desktop protocol: what every provider (local sandbox, Docker container) offers the env.

Everything crossing this boundary is plain data (canonical action dicts, setup/check specs, numpy
screenshots, text), so the same session code can serve in-process (local provider) or behind HTTP
inside a container (docker provider).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from blindact.actions import Action, ActionError
from blindact.checks.result import CheckResult


class DesktopError(RuntimeError):
    """The desktop itself failed (a process died, a socket closed). The episode cannot go on."""


class SetupError(DesktopError):
    """A task's setup step could not be applied."""


@dataclass
class ResetTiming:
    total_s: float
    phases: dict[str, float] = field(default_factory=dict)


@dataclass
class Observed:
    """What one step did and what the screen shows after it: the screenshot, the accessibility
    text, how many of the step's actions ran, the error of the one that failed ("" when all ran),
    where the time went, and what the step changed on the desktop (`effects`: the effects ledger's
    records, blindact.desktop.ledger; empty for a provider without one)."""

    screenshot: np.ndarray
    tree: str
    executed: int = 0
    error: str = ""
    timing: dict[str, float] = field(default_factory=dict)
    effects: list[dict] = field(default_factory=list)


# the longest one step's actions may run (200 waits of 30 s would otherwise hold a desktop for 100 min)
STEP_BUDGET_S = 60.0


def perform_step(desktop: "Desktop", actions: list[Action], budget_s: float = STEP_BUDGET_S) -> Observed:
    """Execute actions in order (stopping at the first that fails, or once the step has run for
    `budget_s`), let the screen settle, then observe: the tree first (reading it may wait for a loading
    page, and the screenshot must show what the tree describes), then the screenshot. Providers that run
    the desktop in this process use this as their `step`; remote ones run it next to the desktop, in one
    round trip."""
    t0 = time.perf_counter()
    executed, error = 0, ""
    for action in actions:
        if time.perf_counter() - t0 > budget_s:
            error = (f"the step ran past the {budget_s:.0f}s one step may take: {executed} of {len(actions)} "
                     "actions were done, the rest were not")
            break
        try:
            desktop.execute(action)
        except ActionError as exc:
            error = f"{action.type} failed: {exc}"
            break
        executed += 1
    t1 = time.perf_counter()
    settle_s = desktop.settle() if executed else 0.0
    t2 = time.perf_counter()
    record = getattr(desktop, "record_effects", None)
    effects = record() if callable(record) else []
    t3 = time.perf_counter()
    tree = desktop.accessibility_tree()
    t4 = time.perf_counter()
    shot = desktop.screenshot()
    t5 = time.perf_counter()
    timing = {"execute_s": t1 - t0, "settle_s": settle_s, "effects_s": t3 - t2, "a11y_s": t4 - t3,
              "screenshot_s": t5 - t4}
    return Observed(shot, tree, executed, error, timing, effects)


@runtime_checkable
class Desktop(Protocol):
    width: int
    height: int
    # what keeps the agent's programs from the measurement, as recorded with every episode:
    # "bwrap" (a bubblewrap sandbox), "none" (asked for explicitly), or a provider's own kind
    sandbox_kind: str

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

    def step(self, actions: list[Action]) -> Observed:
        """Execute non-terminal actions, settle, observe (see `perform_step`); an empty list only
        observes. An action that cannot be done stops the list and is reported in `error`."""

    def show_message(self, title: str, text: str) -> None:
        """Show a message window on the screen (the simulated user's reply to a question)."""

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
