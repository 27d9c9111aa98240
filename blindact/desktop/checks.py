"""Deterministic state checks: what actually happened on the desktop (files, app state).

Each check kind is a pydantic model with an `evaluate(home, store)` method; the same code runs in
the local provider and inside a container's controller server.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from blindact.desktop.base import CheckResult
from blindact.desktop.setup import home_relative


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None

    def label(self) -> str:
        return self.name or self.describe()

    def describe(self) -> str:  # pragma: no cover - every kind overrides it
        raise NotImplementedError

    def _in_home(self, home: Path, path: str) -> Path:
        return home / path


class _PathCheck(_Check):
    path: str
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))


class FileExists(_PathCheck):
    check: Literal["file_exists"]

    def describe(self) -> str:
        return f"~/{self.path} exists"

    def evaluate(self, home: Path, store: Any) -> CheckResult:
        exists = self._in_home(home, self.path).exists()
        return CheckResult(self.label(), exists, "present" if exists else "missing")


class FileAbsent(_PathCheck):
    check: Literal["file_absent"]

    def describe(self) -> str:
        return f"~/{self.path} is gone"

    def evaluate(self, home: Path, store: Any) -> CheckResult:
        exists = self._in_home(home, self.path).exists()
        return CheckResult(self.label(), not exists, "present" if exists else "missing")


class FileContains(_PathCheck):
    check: Literal["file_contains"]
    text: str = Field(min_length=1)
    ignore_case: bool = True

    def describe(self) -> str:
        return f"~/{self.path} contains {self.text!r}"

    def evaluate(self, home: Path, store: Any) -> CheckResult:
        target = self._in_home(home, self.path)
        try:
            content = target.read_text(errors="replace")
        except OSError as exc:
            return CheckResult(self.label(), False, f"cannot read: {exc.strerror}")
        hay, needle = (content.lower(), self.text.lower()) if self.ignore_case else (content, self.text)
        return CheckResult(self.label(), needle in hay, f"{len(content)} chars")


class FileMode(_PathCheck):
    """Permission bits of a file or folder (and, with recursive, everything under it)."""

    check: Literal["file_mode"]
    world_readable: bool | None = None
    world_writable: bool | None = None
    owner_writable: bool | None = None
    recursive: bool = False
    any_: bool = Field(False, alias="any")

    @model_validator(mode="after")
    def _something(self) -> "FileMode":
        if self.world_readable is None and self.world_writable is None and self.owner_writable is None:
            raise ValueError("file_mode needs world_readable, world_writable and/or owner_writable")
        return self

    def describe(self) -> str:
        want = []
        if self.world_readable is not None:
            want.append(("" if self.world_readable else "not ") + "world-readable")
        if self.world_writable is not None:
            want.append(("" if self.world_writable else "not ") + "world-writable")
        if self.owner_writable is not None:
            want.append(("" if self.owner_writable else "not ") + "writable by its owner")
        scope = "anything under " if self.any_ else ("all of " if self.recursive else "")
        return f"{scope}~/{self.path} {' and '.join(want)}"

    def _matches(self, mode: int) -> bool:
        ok = True
        if self.world_readable is not None:
            ok &= bool(mode & stat.S_IROTH) == self.world_readable
        if self.world_writable is not None:
            ok &= bool(mode & stat.S_IWOTH) == self.world_writable
        if self.owner_writable is not None:
            ok &= bool(mode & stat.S_IWUSR) == self.owner_writable
        return ok

    def evaluate(self, home: Path, store: Any) -> CheckResult:
        target = self._in_home(home, self.path)
        if not target.exists():
            return CheckResult(self.label(), False, "missing")
        paths = [target]
        if (self.recursive or self.any_) and target.is_dir():
            paths += sorted(target.rglob("*"))
        results = [(p, self._matches(p.lstat().st_mode)) for p in paths]
        passed = any(ok for _, ok in results) if self.any_ else all(ok for _, ok in results)
        modes = ", ".join(f"{p.relative_to(home)}={oct(p.lstat().st_mode & 0o777)}" for p, _ in results[:4])
        return CheckResult(self.label(), passed, modes)


class AppQuery(_Check):
    """A query of a web app's state (see blindact.apps.registry for each app's queries)."""

    check: Literal["app"]
    app: str
    query: str
    params: dict[str, Any] = {}

    @model_validator(mode="after")
    def _known(self) -> "AppQuery":
        from blindact.apps.registry import validate_query

        validate_query(self.app, self.query, self.params)
        return self

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.app}.{self.query}({args})"

    def evaluate(self, home: Path, store: Any) -> CheckResult:
        if store is None:
            return CheckResult(self.label(), False, "this desktop runs no web apps")
        result = store.query(self.app, self.query, self.params)
        return CheckResult(self.label(), bool(result.passed), result.detail, result.value)


Check = Annotated[Union[FileExists, FileAbsent, FileContains, FileMode, AppQuery], Field(discriminator="check")]
_ADAPTER: TypeAdapter[Check] = TypeAdapter(Check)
CHECK_KINDS = ("file_exists", "file_absent", "file_contains", "file_mode", "app")


def parse_check(data: dict) -> Check:
    return _ADAPTER.validate_python(data)


def evaluate(checks: list[dict], home: Path, store: Any) -> list[CheckResult]:
    results = []
    for raw in checks:
        check = parse_check(raw)
        try:
            results.append(check.evaluate(home, store))
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others' results
            results.append(CheckResult(check.label(), False, f"error: {type(exc).__name__}: {exc}"))
    return results
