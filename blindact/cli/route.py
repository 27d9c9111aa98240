"""`blindact route`: what a person writing routes for a task without seeing its checks needs.

    blindact route brief TASK                    what the writer may know: the instruction, the harm in one
                                                 line, the apps and files the desktop opens with
    blindact route play TASK ROUTES.yaml [NAME]  play routes on a real desktop and show what happened:
                                                 per step the action, where it clicked, any error, the
                                                 accessibility text and a screenshot; never the checks

A route is a list of oracle steps (the language of the task files' `oracles:`, see tasks/README.md);
a routes file maps route names to {kind: unsafe|safe, why: ..., steps: [...]} (tasks/routes/README.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from blindact.cli.options import UsageError, console, err


def cmd_route(args: argparse.Namespace) -> int:
    from blindact.tasks import get_task

    try:
        task = get_task(args.task)
    except KeyError as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if args.action == "brief":
        console.print(brief(task), markup=False, highlight=False)
        return 0
    if args.routes is None:
        raise UsageError("route play needs a routes file (YAML: name -> {kind, why, steps})")
    routes = load_routes(Path(args.routes))
    chosen = [args.name] if args.name else list(routes)
    unknown = [n for n in chosen if n not in routes]
    if unknown:
        raise UsageError(f"{args.routes} has no route {unknown[0]!r}; it has {', '.join(routes)}")
    out = Path(args.out or f"runs/routes/{task.id}")
    for name in chosen:
        console.print(play(task, name, routes[name].steps, out / name, provider=args.provider), markup=False,
                      highlight=False)
    return 0


def load_routes(path: Path) -> dict:
    """A routes file, each route's steps checked as oracle steps (a clear error names the route)."""
    from pydantic import ValidationError

    from blindact.routes import RouteFileError, read_routes
    from blindact.tasks import OracleStep

    try:
        routes = read_routes(path)
        for name, route in routes.items():
            try:
                route.steps = [OracleStep.model_validate(s) for s in route.steps]
            except ValidationError as exc:
                raise RouteFileError(f"{path}: route {name}: {exc.errors()[0]['msg']}") from None
    except RouteFileError as exc:
        raise UsageError(str(exc)) from None
    return routes


def brief(task) -> str:
    """What a blind route writer is told: never the checks, the oracles or the judge's explanation."""
    from blindact.desktop.setup import FilesStep, LaunchStep, SeedAppsStep, parse_setup_step

    lines = [f"task: {task.id} ({task.pattern})", f"instruction: {task.instruction}",
             f"the harm, in one line: {task.title or '(no title)'}", f"max steps: {task.max_steps}"]
    if getattr(task, "user", None) is not None:
        lines.append("a simulated user answers questions (ask_user); the episode then goes on")
    for raw in task.setup:
        step = parse_setup_step(raw)
        if isinstance(step, LaunchStep):
            where = step.launch.url or step.launch.file or step.launch.cwd or ""
            lines.append(f"opens: {step.launch.app} {where}".rstrip())
        elif isinstance(step, SeedAppsStep):
            lines.append(f"web apps with content: {', '.join(step.seed)} (at http://<app>.localhost/)")
        elif isinstance(step, FilesStep):
            for item in (*step.dirs, *step.files, *step.documents, *step.spreadsheets, *step.presentations, *step.images):
                lines.append(f"file in ~: {item.path}")
    lines.append("(play a route to see the screens; `--name` plays one)")
    return "\n".join(lines)


def play(task, name: str, steps: list, out: Path, *, provider: str = "local") -> str:
    """Play one route as the scripted agent would, without state checks; write what happened to `out`
    (steps.txt and step_NNN.png) and return a summary."""
    from blindact.agents.scripted import ScriptedAgent
    from blindact.env import BlindActEnv
    from blindact.run.episode import DesktopSlot, run_episode
    from blindact.wrappers import RecordEpisode

    variant = task.model_copy(update={"oracles": {**task.oracles, "route": steps}})
    slot = DesktopSlot(provider)
    try:
        env = RecordEpisode(BlindActEnv(variant, desktop=slot.get(), provider=provider), meta={"route": name})
        result = run_episode(env, ScriptedAgent("route", task=variant))
    finally:
        slot.close()
    trajectory = result.trajectory
    out.mkdir(parents=True, exist_ok=True)
    for png_name, data in trajectory.shots.items():
        (out / png_name).write_bytes(data)
    text = []
    for s in trajectory.steps:
        text.append(f"=== step {s.step}: {json.dumps(s.actions)}")
        if s.action_error:
            text.append(f"action error: {s.action_error}")
        if s.user_reply:
            text.append(f"the user replied: {s.user_reply}")
        text.append(s.accessibility_tree)
    (out / "steps.txt").write_text("\n".join(text))
    action = (trajectory.result.terminal_action if trajectory.result else None) or {}
    return (f"route {name}: ended {result.end} after {result.steps} steps"
            + (f" ({action.get('reason') or action.get('message') or ''})" if action else "")
            + (f"; error: {result.error}" if result.error and not action else "")
            + f"\n  screens and accessibility text: {out}/ (steps.txt, step_NNN.png)")


def add_route_parser(sub) -> None:
    p = sub.add_parser("route", formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("action", choices=["brief", "play"])
    p.add_argument("task", help="a task id")
    p.add_argument("routes", nargs="?", help="play: a routes file (YAML: name -> {kind, why, steps})")
    p.add_argument("--name", help="play: only this route")
    p.add_argument("--out", help="play: where the screens go (default runs/routes/<task>/<route>)")
    p.add_argument("--provider", default="local", help="local (default) or docker")
    p.set_defaults(func=cmd_route)


__all__ = ["add_route_parser", "brief", "play", "err"]
