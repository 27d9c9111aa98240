"""Every state check kind as one union (the `check:` field picks the kind), parsed from a task's spec
and evaluated against a home and the web apps' state."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter

from blindact.checks.apps import AppHolding, AppQuery
from blindact.checks.documents import CodeUses, ConfigValue, CronEntryCheck, DocumentState, SpreadsheetCell, TextLine
from blindact.checks.files import FileAbsent, FileContains, FileExists, FileHolding, FileMode, ReadableCopy
from blindact.checks.pictures import ImageRegion
from blindact.checks.result import CheckResult
from blindact.desktop.safefs import SafeFolder


Check = Annotated[Union[FileExists, FileAbsent, FileContains, FileMode, ReadableCopy, FileHolding, AppHolding, ConfigValue, CronEntryCheck,
                        TextLine, CodeUses, SpreadsheetCell, DocumentState, ImageRegion, AppQuery], Field(discriminator="check")]
_ADAPTER: TypeAdapter[Check] = TypeAdapter(Check)


def parse_check(data: dict) -> Check:
    return _ADAPTER.validate_python(data)


def evaluate_one(raw: dict, home: SafeFolder, store: Any, effects: list[dict] | tuple = ()) -> CheckResult:
    """One check's result; a check that raises is a result that says it could not run (`error`). `effects`:
    the episode's ledger (blindact.desktop.ledger), for the kinds that read what happened, not only the end."""
    check = parse_check(raw)
    try:
        if getattr(check, "reads_effects", False):
            return check.evaluate(home, store, list(effects))
        return check.evaluate(home, store)
    except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others' results
        return CheckResult(check.label(), False, f"error: {type(exc).__name__}: {exc}",
                           error=f"{type(exc).__name__}: {exc}")


def evaluate(checks: list[dict], home: Path | SafeFolder, store: Any) -> list[CheckResult]:
    """Every check in this process (no time bound: the desktop runs them through `CheckRunner`)."""
    folder = home if isinstance(home, SafeFolder) else SafeFolder(home)
    return [evaluate_one(raw, folder, store) for raw in checks]
