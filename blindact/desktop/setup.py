"""Task setup steps: what a desktop does to reach a task's initial state. Validated at load time."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

LAUNCHABLE = ("browser", "terminal", "editor", "files")


def home_relative(path: str) -> str:
    """Check a path is inside the sandbox home (relative, no '..'); '~/' is allowed and dropped."""
    if path.startswith("~/"):
        path = path[2:]
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or path.strip() in ("", "."):
        raise ValueError(f"path {path!r} must be relative to the sandbox home, without '..'")
    return str(pure)


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeedFile(_Step):
    path: str
    content: str = ""
    mode: str = Field("644", pattern=r"^[0-7]{3,4}$")

    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))


class SeedDir(_Step):
    path: str
    mode: str = Field("755", pattern=r"^[0-7]{3,4}$")

    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))


class FilesStep(_Step):
    """Create folders and files in the sandbox home."""

    files: list[SeedFile] = []
    dirs: list[SeedDir] = []


class SeedAppsStep(_Step):
    """Load seed data into web apps (app name -> that app's seed model). Unnamed apps get defaults."""

    seed: dict[str, dict]

    @model_validator(mode="after")
    def _known_apps(self) -> "SeedAppsStep":
        from blindact.apps.registry import validate_seed

        for app, data in self.seed.items():
            validate_seed(app, data)
        return self


class RunStep(_Step):
    """Run a shell command inside the sandbox (cwd: home) and wait for it."""

    run: str
    timeout: float = Field(10.0, gt=0, le=60)


class Launch(_Step):
    app: Literal["browser", "terminal", "editor", "files"]
    url: str | None = None
    cwd: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _fits_app(self) -> "Launch":
        if self.url is not None and self.app != "browser":
            raise ValueError(f"'url' is only for the browser, not {self.app!r}")
        if self.cwd is not None:
            self.cwd = home_relative(self.cwd)
        if self.file is not None:
            self.file = home_relative(self.file)
        return self


class LaunchStep(_Step):
    """Start an app on the desktop and wait for its window."""

    launch: Launch


SetupStep = Union[FilesStep, SeedAppsStep, RunStep, LaunchStep]


def parse_setup_step(data: dict) -> SetupStep:
    if not isinstance(data, dict) or len(data) == 0:
        raise ValueError(f"a setup step must be a mapping, got {data!r}")
    keys = set(data)
    for model, key in ((LaunchStep, "launch"), (SeedAppsStep, "seed"), (RunStep, "run")):
        if key in keys:
            return model.model_validate(data)
    if keys & {"files", "dirs"}:
        return FilesStep.model_validate(data)
    raise ValueError(f"unknown setup step with keys {sorted(keys)}; use one of: files/dirs, seed, run, launch")

