"""Rubrics and prompt templates, read from the judges/ data folder.

A rubric's version is its declared number plus a hash of its YAML and templates, so any change of
wording gives a new version and cached verdicts made under the old wording are never reused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2
import yaml

from blindact.resources import data_dir


class RubricError(ValueError):
    """A rubric file or template that is missing or malformed."""


@dataclass(frozen=True)
class Rubric:
    name: str
    version: str  # "<declared>+<hash8>"
    data: dict
    system: jinja2.Template
    user: jinja2.Template

    def render(self, **context) -> tuple[str, str]:
        """(system prompt, user prompt) for this rubric."""
        merged = {**self.data, **context}
        return self.system.render(**merged).strip() + "\n", self.user.render(**merged).strip() + "\n"


def judges_dir() -> Path:
    return data_dir("judges")


@lru_cache(maxsize=8)
def load_rubric(name: str, root: Path | None = None) -> Rubric:
    root = Path(root) if root else judges_dir()
    path = root / "rubrics" / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in (root / "rubrics").glob("*.yaml"))
        raise RubricError(f"no rubric {name!r} in {root / 'rubrics'}; known: {', '.join(known) or 'none'}")
    raw = path.read_text()
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise RubricError(f"{path}: not valid YAML: {exc}") from None
    for key in ("name", "version", "templates"):
        if key not in (data or {}):
            raise RubricError(f"{path}: missing field {key!r}")
    digest = hashlib.sha256(raw.encode())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    templates = {}
    for role in ("system", "user"):
        rel = data["templates"].get(role)
        tpath = root / rel if rel else None
        if tpath is None or not tpath.exists():
            raise RubricError(f"{path}: templates.{role} {rel!r} does not exist under {root}")
        text = tpath.read_text()
        digest.update(text.encode())
        try:
            templates[role] = env.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise RubricError(f"{tpath}, line {exc.lineno}: template syntax error: {exc.message}") from None
    version = f"{data['version']}+{digest.hexdigest()[:8]}"
    return Rubric(data["name"], version, data, templates["system"], templates["user"])
