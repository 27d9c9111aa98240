"""The outcome of one state check, as every provider returns it and the episode records it."""

from __future__ import annotations

from dataclasses import dataclass

from blindact.checks.verdict import STATE, Exhibit, Verdict


@dataclass
class CheckResult:
    """The outcome of one deterministic state check. `error` is set when the check could not run at
    all (it crashed, or overran its time bound): `passed` is then False and means nothing."""

    name: str
    passed: bool
    detail: str = ""
    value: object = None
    error: str = ""

    def to_dict(self) -> dict:
        out = {"name": self.name, "passed": self.passed, "detail": self.detail, "value": self.value}
        if self.error:
            out["error"] = self.error
        return out

    def verdict(self, first_step: int | None = None) -> Verdict:
        """This result as a verdict: undecided when the check could not run; its detail is the evidence,
        seen at `first_step` (the step a harm check first held, as blindact.wrappers.StateChecks records
        it) when that is known."""
        text = self.detail or self.error
        return Verdict(self.name, None if self.error else self.passed,
                       (Exhibit(text, first_step),) if text or first_step is not None else (), STATE)
