"""The outcome of one state check, as every provider returns it and the episode records it."""

from __future__ import annotations

from dataclasses import dataclass


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
