"""`blindact label`: a small local web app in which a person steps through trajectories and labels them.

Pages: / lists the episodes; /e/<i>?step=<k> shows one step (screenshot, reasoning, actions, the
accessibility tree) with the episode's instruction, task explanation, ending and state checks, and the
label form; posting the form stores the label under the labeller's name and moves to the next episode.
"""

from __future__ import annotations

import html
from pathlib import Path

import jinja2
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from blindact.judging.evidence import (
    EpisodeError,
    load_episode,
    task_info,
    trajectory_hash,
)
from blindact.judging.labels import Label, LabelStore
from blindact.judging.runs import episode_dirs

_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                autoescape=True, undefined=jinja2.StrictUndefined)


def collect_episodes(sources: list[Path]) -> list[Path]:
    """Episode folders from run folders (with episodes/) or episode folders themselves."""
    out: list[Path] = []
    for src in map(Path, sources):
        if (src / "episode.json").exists():
            out.append(src)
        else:
            out += episode_dirs(src)
    finished = [d for d in out if (d / "result.json").exists()]
    if not finished:
        raise FileNotFoundError(f"no finished episodes in {', '.join(map(str, sources))}")
    return finished


def _yes_no(form, key: str) -> bool | None:
    value = form.get(key)
    return {"yes": True, "no": False}.get(value) if value else None


def create_label_app(sources: list[Path], labels_dir: Path, labeller: str) -> Starlette:
    episodes = collect_episodes(sources)
    store = LabelStore(labels_dir)
    loaded: dict[int, dict] = {}

    def episode(i: int) -> dict:
        if not 0 <= i < len(episodes):
            raise IndexError(i)
        if i not in loaded:
            ep = load_episode(episodes[i])
            loaded[i] = {"ep": ep, "task": task_info(ep), "hash": trajectory_hash(ep)}
        return loaded[i]

    def mine() -> dict[str, Label]:
        return {x.trajectory_hash: x for x in store.all(labeller)}

    async def index(request: Request) -> Response:
        done = mine()
        rows = []
        for i, d in enumerate(episodes):
            try:
                e = episode(i)
            except EpisodeError as exc:
                rows.append({"i": i, "name": d.name, "task": "", "pattern": "", "label": None, "error": str(exc)})
                continue
            rows.append({"i": i, "name": d.name, "task": e["task"]["id"], "pattern": e["task"]["pattern"],
                         "label": done.get(e["hash"]), "error": ""})
        page = _TEMPLATES.get_template("label_index.html")
        return HTMLResponse(page.render(rows=rows, labeller=labeller, labels_path=str(store.path),
                                        saved=request.query_params.get("saved")))

    def render_episode(i: int, step: int, error: str = "", status: int = 200) -> Response:
        e = episode(i)
        steps = e["ep"]["steps"]
        step = max(0, min(step, len(steps) - 1))
        current = steps[step]
        result = e["ep"]["result"]
        page = _TEMPLATES.get_template("label_episode.html")
        return HTMLResponse(page.render(
            i=i, total=len(episodes), name=episodes[i].name, task=e["task"], step=current, step_i=step,
            n_steps=len(steps), result=result, labeller=labeller, existing=mine().get(e["hash"]), error=error,
            final=(result.get("terminal_action") or {})), status_code=status)

    async def show(request: Request) -> Response:
        i = int(request.path_params["i"])
        try:
            step = int(request.query_params.get("step", "0"))
        except ValueError:
            step = 0
        try:
            return render_episode(i, step)
        except IndexError:
            return HTMLResponse(f"no episode {i}", status_code=404)

    async def save(request: Request) -> Response:
        i = int(request.path_params["i"])
        try:
            e = episode(i)
        except IndexError:
            return HTMLResponse(f"no episode {i}", status_code=404)
        form = await request.form()
        step = int(form.get("step") or 0)
        first = (form.get("first_bgd_step") or "").strip()
        try:
            label = Label(trajectory_hash=e["hash"], episode=episodes[i].name, task_id=e["task"]["id"],
                          pattern=e["task"]["pattern"], labeller=labeller, kind="human",
                          bgd_intention=_yes_no(form, "bgd_intention"), bgd_completion=_yes_no(form, "bgd_completion"),
                          over_refusal=_yes_no(form, "over_refusal"),
                          first_bgd_step=int(first) if first.isdigit() else None, note=str(form.get("note") or ""))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'label'}: {x['msg']}" for x in exc.errors())
            return render_episode(i, step, error=problems, status=400)
        store.save(label)
        if i + 1 < len(episodes):
            return RedirectResponse(f"/e/{i + 1}?step=0", status_code=303)
        return RedirectResponse("/?saved=all", status_code=303)

    async def shot(request: Request) -> Response:
        i = int(request.path_params["i"])
        name = request.path_params["name"]
        try:
            names = {s.get("screenshot") for s in episode(i)["ep"]["steps"]}
        except IndexError:
            names = set()
        # only files the trajectory names are served, so the URL cannot reach anything else on disk
        if name not in names:
            return HTMLResponse(f"no screenshot {html.escape(name)}", status_code=404)
        return FileResponse(episodes[i] / name)

    return Starlette(routes=[
        Route("/", index), Route("/e/{i:int}", show, methods=["GET"]), Route("/e/{i:int}", save, methods=["POST"]),
        Route("/shot/{i:int}/{name}", shot),
    ])
