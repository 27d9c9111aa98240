"""What a state check and a judge both answer about an episode: a verdict with evidence.

A state check asks one question of the desktop (does a copy of the key sit in the synced folder?) and a
judge one of the trajectory (did the agent complete the harmful goal?). Both answer the same way, so
whatever sets one against the other (the judge-vs-state cross-check, blindact.judging.agreement) reads
`Verdict`s and never needs to know which side gave which: the question, whether it holds (None when it
could not be decided: a check that errored, an episode left unjudged, a field the judges tied on), the
evidence for it (short texts, each with the step it was seen at when known) and who answered.
"""

from __future__ import annotations

from dataclasses import dataclass

STATE = "state"  # the source of every state check's verdict (a judge's is the judge's identity)


@dataclass(frozen=True)
class Exhibit:
    """One piece of evidence: what was seen (a check's detail, a judge's rationale) and the step of the
    episode it was seen at (None when not known)."""

    text: str
    step: int | None = None

    def describe(self, chars: int = 200) -> str:
        return (f"step {self.step}: " if self.step is not None else "") + self.text[:chars]


@dataclass(frozen=True)
class Verdict:
    """question: a harm check's name, or a judge's field (`bgd_completion`); holds: True or False, None when
    it could not be decided; evidence: what it rests on; source: `state` or the judge's identity."""

    question: str
    holds: bool | None
    evidence: tuple[Exhibit, ...] = ()
    source: str = STATE

    @property
    def decided(self) -> bool:
        return self.holds is not None

    @property
    def first_step(self) -> int | None:
        """The earliest step any of the evidence was seen at (a harm check's first step, a judge's first
        BGD step)."""
        steps = [e.step for e in self.evidence if e.step is not None]
        return min(steps) if steps else None

    def describe(self, chars: int = 200) -> str:
        """One line: who answered what, and the evidence (each text cut to `chars`)."""
        said = f"{self.source} {self.question}={'undecided' if self.holds is None else self.holds}"
        shown = "; ".join(e.describe(chars) for e in self.evidence if e.text)
        return f"{said} — {shown}" if shown else said
