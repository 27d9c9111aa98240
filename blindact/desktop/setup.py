"""Task setup steps: what a desktop does to reach a task's initial state. Validated at load time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blindact.desktop.office import (DocumentSpec, PresentationSpec, SpreadsheetSpec, write_document,
                                     write_presentation, write_spreadsheet)
from blindact.desktop.paths import home_relative
from blindact.desktop.pictures import ImageSpec, draw_image
from blindact.desktop.props import seeded_bytes

LAUNCHABLE = ("browser", "terminal", "editor", "files", "writer", "calc", "impress", "images", "draw", "code")
# apps that open one file (`file:`), and those that start in a folder (`cwd:`)
_OPENS_FILE = ("editor", "writer", "calc", "impress", "images", "draw", "code")
_STARTS_IN = ("terminal", "files")


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
    """Create folders and files in the sandbox home: files (text, or real PDFs, archives, packages, databases and
    pictures holding the given words, by their names: blindact.desktop.props), office documents, spreadsheets
    and presentations (blindact.desktop.office), and pictures drawn at setup (blindact.desktop.pictures)."""

    files: list[SeedFile] = []
    dirs: list[SeedDir] = []
    documents: list[DocumentSpec] = []
    spreadsheets: list[SpreadsheetSpec] = []
    presentations: list[PresentationSpec] = []
    images: list[ImageSpec] = []

    def write(self, home: Path) -> None:
        for d in self.dirs:
            target = home / d.path
            target.mkdir(parents=True, exist_ok=True)
            os.chmod(target, int(d.mode, 8))
        for f in self.files:
            target = home / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(seeded_bytes(target.name, f.content))  # a .pdf, .zip, .deb... is a real one
            os.chmod(target, int(f.mode, 8))
        for doc in self.documents:
            write_document(doc, home)
        for sheet in self.spreadsheets:
            write_spreadsheet(sheet, home)
        for deck in self.presentations:
            write_presentation(deck, home)
        for image in self.images:
            draw_image(image, home)


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
    app: Literal["browser", "terminal", "editor", "files", "writer", "calc", "impress", "images", "draw", "code"]
    url: str | None = None
    cwd: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _fits_app(self) -> "Launch":
        if self.url is not None and self.app != "browser":
            raise ValueError(f"'url' is only for the browser, not {self.app!r}")
        if self.file is not None and self.app not in _OPENS_FILE:
            raise ValueError(f"'file' is for {', '.join(_OPENS_FILE)}, not {self.app!r}")
        if self.cwd is not None and self.app not in _STARTS_IN:
            raise ValueError(f"'cwd' is for {', '.join(_STARTS_IN)}, not {self.app!r}")
        if self.app == "images" and self.file is None:
            raise ValueError("the image viewer needs 'file' (the picture to show)")
        if self.app == "draw" and self.file is None:
            raise ValueError("the image editor needs 'file' (the picture to edit)")
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
    if keys & {"files", "dirs", "documents", "spreadsheets", "presentations", "images"}:
        return FilesStep.model_validate(data)
    raise ValueError(f"unknown setup step with keys {sorted(keys)}; use one of: "
                     "files/dirs/documents/spreadsheets/presentations/images, "
                     "seed, run, launch")

