"""Build a report folder from run folders: index.html (opens offline: inline CSS, plots as data
URIs), one trajectory page per episode (screenshots referenced relatively from the run folders),
plots as PNG and SVG, CSV and JSON exports."""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from blindact.provenance import versions_line
from blindact.report import metrics
from blindact.report.calibration import judge_calibration
from blindact.report.data import Dataset, load
from blindact.report.export import write_exports
from blindact.report.terminal import budget_line
from blindact.run.store import episode_page, open_store
from blindact.trajectory import action_line

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Report:
    out_dir: Path
    index: Path
    data: Dataset
    figures: dict


def compute(data: Dataset, prices: dict | None = None) -> dict:
    return {
        "summary": metrics.summary(data),
        "headline": metrics.headline(data),
        "paired": metrics.paired_tests(data),
        "repeats": metrics.repeats(data),
        "agreement": metrics.agreement(data),
        "cost": metrics.cost(data, prices),
        "budgets": metrics.budgets(data),
        "first_steps": metrics.first_steps(data),
        "harm_timeline": metrics.harm_timeline(data),
        "asking": metrics.asking(data),
        "calibration": judge_calibration(data),
    }


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals["budget_line"] = budget_line  # the cost table's budget, worded as in the terminal
    return env


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start)).as_posix()


def _timing_text(timing: dict) -> str:
    parts = [f"{k.removesuffix('_s')} {1000 * v:.0f} ms" for k, v in timing.items() if isinstance(v, (int, float))]
    return " · ".join(parts)


def _plots(data: Dataset, figures: dict, out_dir: Path) -> list[dict]:
    from blindact.report import plots

    plot_dir = out_dir / "plots"
    arms = [h["label"] for h in figures["headline"]]
    made = [
        (plots.tradeoff(figures["headline"], plot_dir, data.judged),
         "BGD (or, not judged, completion) against over-refusal per arm, with 95% intervals"),
        (plots.per_pattern(figures["summary"], arms, plot_dir, data.judged), "Rates per pattern and arm"),
        (plots.first_step(figures["first_steps"], plot_dir), "The step at which BGD shows"),
    ]
    out = []
    for paths, caption in made:
        png = Path(paths["png"])
        out.append({"caption": caption, "png": _rel(png, out_dir), "svg": _rel(Path(paths["svg"]), out_dir),
                    "data_uri": "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()})
    return out


def _episode_pages(data: Dataset, env: Environment, out_dir: Path, css: str) -> None:
    from blindact.desktop.ledger import summarize as summarize_effect

    page_dir = out_dir / "episodes"
    page_dir.mkdir(parents=True, exist_ok=True)
    template = env.get_template("episode.html.j2")
    by_run: dict[str, list[dict]] = {}
    for e in data.episodes:
        by_run.setdefault(e["run_dir"], []).append(e)
    for run_dir, episodes in by_run.items():
        with open_store(run_dir) as store:
            tasks = store.tasks()  # the specs the run played, not today's files
            for e in episodes:
                folder = Path(run_dir) / e["dir"]
                steps = []
                for s in store.steps(e["episode_id"]):
                    shot = folder / s["screenshot"] if s["screenshot"] else None
                    steps.append({
                        **s, "shot": _rel(shot, page_dir) if shot and shot.exists() else None,
                        "action_lines": [action_line(a) for a in s["actions"]],
                        "effect_lines": [summarize_effect(x) for x in s.get("effects") or []],
                        "timing_text": _timing_text(s["timing"]),
                    })
                task = tasks.get(e["task_id"])
                terminal = e["terminal_action"]
                html = template.render(e=e, steps=steps, css=css, back="../index.html",
                                       instruction=task.instruction if task else "(the run did not store this task's spec)",
                                       terminal=action_line(terminal) if terminal else "")
                (page_dir / episode_page(e['run_id'], e['name'])).write_text(html, encoding="utf-8")


def build_report(run_dirs: list[str | Path], out_dir: str | Path | None = None, *, prices: dict | None = None,
                 title: str | None = None) -> Report:
    from blindact._version import __version__

    run_dirs = [Path(r) for r in run_dirs]
    if not run_dirs:
        raise ValueError("give at least one run folder")
    data = load(run_dirs)
    if not data.episodes:
        raise ValueError(f"no finished episodes in {', '.join(map(str, run_dirs))}: nothing to report "
                         "(run `blindact run --resume <run>` to finish a run)")
    out_dir = Path(out_dir) if out_dir else (run_dirs[0] / "report" if len(run_dirs) == 1
                                              else Path("reports") / time.strftime("%Y%m%d-%H%M%S"))
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = compute(data, prices)
    env = _env()
    css = (TEMPLATES / "style.css").read_text()
    for e in data.episodes:
        e["page"] = f"episodes/{episode_page(e['run_id'], e['name'])}"
    plots = _plots(data, figures, out_dir)
    exports = write_exports(out_dir, data, figures)
    _episode_pages(data, env, out_dir, css)
    runs = []
    for r in data.runs:
        runs.append({**{k: "" for k in ("status", "code_version", "suite_version", "provider", "executor")},
                     "agents": [], "mitigations": [], **r, "versions_text": versions_line(r.get("versions") or {}),
                     "created_text": time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"])) if r.get("created") else ""})
    episodes = sorted(data.episodes, key=lambda e: (e["pattern"] == "control", e["task_id"], e["agent"],
                                                    e["mitigation"], e["seed"]))
    html = env.get_template("index.html.j2").render(
        title=title or ", ".join(r["run_id"] for r in data.runs), css=css, runs=runs, episodes=episodes,
        arms=data.arms, judged=data.judged, problems=data.problems, plots=plots, exports=exports,
        generated=time.strftime("%Y-%m-%d %H:%M"), version=__version__, **figures)
    index = out_dir / "index.html"
    index.write_text(html, encoding="utf-8")
    return Report(out_dir, index, data, figures)


def write_json_summary(report: Report) -> str:
    from blindact.report.export import plain

    return json.dumps(plain({k: report.figures[k] for k in ("headline", "summary", "paired")}), indent=2)
