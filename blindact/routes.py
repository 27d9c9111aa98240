"""Blind routes: ways through a task written by someone who saw only the task, never its checks.

A task's own oracles were written beside its checks, by the same author, and pass them. Blind routes
(tasks/routes/<task-id>.yaml) were written from `blindact route brief` and `blindact route play` alone:
the instruction, a one-line description of the harm, and the real desktop. Each is `unsafe` (it does
the harm, by whatever app, format or channel its writer chose) or `safe` (it does not, though it may
look like it: a quote, a draft, a copy kept private). They join the task's oracles as
`bgd-blind-<name>` / `safe-blind-<name>`, expecting harm true / false, so `blindact validate` runs them
on both providers, and tasks/README.md counts how many the checks get right.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ROUTE_PREFIX = {"unsafe": "bgd-blind-", "safe": "safe-blind-"}
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class RouteFileError(ValueError):
    pass


class Route(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["unsafe", "safe"]
    why: str = Field(min_length=1)  # what the route does and why its writer judged it unsafe or safe
    steps: list  # oracle steps (blindact.tasks.OracleStep), validated by the task they join
    author: str = ""  # who wrote it (a helper session's name), for the record


def routes_dir(tasks_root: Path) -> Path:
    return tasks_root / "routes"


def read_routes(path: Path) -> dict[str, Route]:
    """A routes file: route name -> Route. Names are lowercase words and dashes."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise RouteFileError(f"{path}: cannot read routes: {exc}") from None
    if not isinstance(data, dict):
        raise RouteFileError(f"{path}: a routes file maps route names to routes, got {type(data).__name__}")
    routes = {}
    for name, raw in data.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise RouteFileError(f"{path}: route name {name!r}: use lowercase words and dashes")
        try:
            routes[name] = Route.model_validate(raw)
        except ValidationError as exc:
            problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            raise RouteFileError(f"{path}: route {name}: {problem}") from None
    return routes


def as_oracles(routes: dict[str, Route]) -> tuple[dict[str, list], dict[str, dict]]:
    """The routes as a task's extra oracles and their expectations."""
    oracles, expect = {}, {}
    for name, route in routes.items():
        key = ROUTE_PREFIX[route.kind] + name
        oracles[key] = route.steps
        expect[key] = {"harm": route.kind == "unsafe"}
    return oracles, expect


def is_blind(oracle: str) -> bool:
    return oracle.startswith(tuple(ROUTE_PREFIX.values()))


QUALITY_FILE = "quality.json"
FINDINGS_FILE = "findings.yaml"  # "<task>/<oracle>": why the checks get that route wrong (a diagnosis, by hand)


def read_findings(folder: Path) -> dict[str, str]:
    """The diagnosed findings in a routes folder: {"<task>/<oracle>": why the checks get that route wrong}."""
    path = folder / FINDINGS_FILE
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise RouteFileError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise RouteFileError(f"{path}: expected a mapping of '<task>/<oracle>' to a diagnosis (text)")
    return {str(k): v for k, v in data.items()}


def unplayed(result) -> str:
    """Why a route's episode did not play to its end ("" when it did): an error ending, such as a step whose
    target never came on screen (blindact.agents.scripted.StepNotPlayed) or a desktop that failed."""
    if result.end.value in ("done", "fail", "ask_user"):
        return ""
    return (result.error or str(result.end))[:200]


def quality_record(results) -> dict[str, dict]:
    """What `blindact validate` saw of each blind route: {"<task>/<oracle>": {"kind", "harm", "end",
    "right", "note"}} (`right`: the harm checks judged it as its writer did)."""
    out = {}
    for spec, result in results:
        oracle = spec.agent.split(":", 1)[1]
        if not is_blind(oracle):
            continue
        unsafe = oracle.startswith(ROUTE_PREFIX["unsafe"])
        why = unplayed(result)
        played = not why
        harm = result.outcome.harm
        out[f"{spec.task_id}/{oracle}"] = {
            "kind": "unsafe" if unsafe else "safe", "harm": harm, "end": str(result.end), "played": played,
            "right": played and bool(harm) == unsafe,
            "note": why}
    return out
