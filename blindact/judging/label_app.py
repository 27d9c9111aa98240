"""`blindact label`: a small local web app in which people label trajectories, blind.

Blind means the page shows what the agent saw, thought and did, and how the episode ended, but never
the state checks, the agent, the mitigation or the episode's folder name: each trajectory gets an
opaque id (from its hash) and the order is shuffled. Several people label the same trajectories
(each runs the page under their own name on the same labels folder); labels that disagree go to a
disagreement queue, where an adjudicator sees every label and records the gold one.

Trajectories on which `blindact judge` left a field tied (several judges or samples split evenly) join
the disagreement queue too, naming the tied fields, until a person labels or adjudicates them.

Pages: / (progress, links), /next (the next trajectory this labeller has not labelled, those with the
fewest labels first), /e/<id> (every step on one scrollable page, the form, keyboard shortcuts),
/disagreements, /adjudicate/<id>, /agreement (inter-annotator kappa), /gold.jsonl (the gold labels),
/labels.jsonl (every label, in the format `blindact label --import` reads).
"""

from __future__ import annotations

import html
import json
import random
from dataclasses import dataclass
from pathlib import Path

import jinja2
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from blindact.endings import End
from blindact.judging.evidence import (
    EpisodeError,
    final_message,
    load_episode,
    task_info,
    trajectory_hash,
)
from blindact.judging.labels import Label, LabelStore, gold_labels, labels_jsonl, opaque_id
from blindact.judging.runs import episode_dirs, judge_ties
from blindact.run.store import StoreError

_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                autoescape=True, undefined=jinja2.StrictUndefined)

# how an ending reads to a labeller: what happened, never why in the harness's words (error texts can
# name the agent or its code)
_ENDING_KIND = {
    "decision": "the agent ended the episode itself",
    "refusal": "the model provider's safety layer stopped the agent",
    "cutoff": "a limit (steps, tokens, time or money) stopped the agent",
    "error": "the episode broke off (a crash, not the agent's decision); judge what it did until then",
}


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


def judge_ties_of(sources: list[Path]) -> dict[str, dict[str, list[str]]]:
    """The judges' ties in the run folders among the sources (episode folders carry no verdicts)."""
    out: dict[str, dict[str, list[str]]] = {}
    for src in map(Path, sources):
        if (src / "episode.json").exists():
            continue
        try:
            ties = judge_ties(src)
        except StoreError:
            continue  # a folder of episodes without a store has no verdicts
        for thash, fields in ties.items():
            for f, judges in fields.items():
                out.setdefault(thash, {}).setdefault(f, [])
                out[thash][f] = sorted(set(out[thash][f]) | set(judges))
    return out


def describe_ending(end: str) -> str:
    try:
        return _ENDING_KIND[End.parse(end).kind]
    except ValueError:
        return "an ending this version of blindact does not know"


@dataclass
class Item:
    """One trajectory as the page shows it."""

    id: str
    dir: Path
    episode: dict
    task: dict
    hash: str

    @property
    def steps(self) -> list[dict]:
        return self.episode["steps"]

    def ending(self) -> dict:
        result = self.episode["result"] or {}
        end = str(result.get("end") or "interrupted")
        return {"end": end, "meaning": describe_ending(end), "message": final_message(result)}


def _yes_no(form, key: str) -> bool | None:
    value = form.get(key)
    return {"yes": True, "no": False}.get(value) if value else None


def load_items(sources: list[Path], seed: int = 0) -> tuple[list[Item], list[tuple[Path, str]]]:
    """The trajectories in a shuffled order (one item per distinct trajectory), and the episodes that
    cannot be labelled with the reason."""
    items: dict[str, Item] = {}
    broken = []
    for d in collect_episodes(sources):
        try:
            ep = load_episode(d)
            task = task_info(ep)
        except (EpisodeError, ValueError) as exc:
            broken.append((d, str(exc)))
            continue
        thash = trajectory_hash(ep)
        items.setdefault(thash, Item(opaque_id(thash), d, ep, task, thash))
    order = sorted(items.values(), key=lambda x: x.id)
    random.Random(seed).shuffle(order)
    return order, broken


def label_from_form(form, item: Item, labeller: str, kind: str) -> Label:
    first = (form.get("first_bgd_step") or "").strip()
    return Label(trajectory_hash=item.hash, episode=item.dir.name, task_id=item.task["id"],
                 pattern=item.task["pattern"], labeller=labeller, kind=kind,
                 bgd_intention=_yes_no(form, "bgd_intention"), bgd_completion=_yes_no(form, "bgd_completion"),
                 over_refusal=_yes_no(form, "over_refusal"),
                 first_bgd_step=int(first) if first.isdigit() else None, note=str(form.get("note") or ""))


def create_label_app(sources: list[Path], labels_dir: Path, labeller: str, *, seed: int = 0,
                     labellers_needed: int = 2) -> Starlette:
    items, broken = load_items(sources, seed)
    by_id = {x.id: x for x in items}
    store = LabelStore(labels_dir)

    def page(name: str, status: int = 200, **context) -> HTMLResponse:
        return HTMLResponse(_TEMPLATES.get_template(name).render(labeller=labeller, **context), status_code=status)

    def gold():
        return gold_labels(store.all(), judge_ties_of(sources))

    def labels_by_hash() -> dict[str, list[Label]]:
        out: dict[str, list[Label]] = {}
        for x in store.all():
            out.setdefault(x.trajectory_hash, []).append(x)
        return out

    def item_of(request: Request) -> Item | None:
        return by_id.get(request.path_params["id"])

    def not_found(request: Request) -> Response:
        return HTMLResponse(f"no trajectory {html.escape(request.path_params['id'])}", status_code=404)

    async def index(request: Request) -> Response:
        labels = labels_by_hash()
        settled = gold()
        rows = []
        for n, x in enumerate(items, 1):
            group = [y for y in labels.get(x.hash, []) if y.kind == "human"]
            mine = any(y.labeller == labeller for y in group)
            # where others stand is shown only once you have labelled it yourself, so it cannot sway you
            status = ("gold" if x.hash in settled.labels else "disagreement" if x.hash in settled.queue else "") if mine else ""
            rows.append({"n": n, "id": x.id, "task": x.task["id"], "pattern": x.task["pattern"],
                         "count": len(group), "mine": mine, "status": status})
        return page("label_index.html", rows=rows, needed=labellers_needed, broken=len(broken),
                    queue=sum(1 for x in items if x.hash in settled.awaiting()), saved=request.query_params.get("saved"))

    async def next_unlabelled(request: Request) -> Response:
        labels = labels_by_hash()
        todo = [(len([y for y in labels.get(x.hash, []) if y.kind == "human"]), n, x) for n, x in enumerate(items)
                if not any(y.labeller == labeller and y.kind == "human" for y in labels.get(x.hash, []))]
        if not todo:
            return RedirectResponse("/?saved=all", status_code=303)
        # trajectories still short of labellers first, then the shuffled order
        _count, _n, x = min(todo, key=lambda t: (t[0] >= labellers_needed, t[0], t[1]))
        return RedirectResponse(f"/e/{x.id}", status_code=303)

    def render_item(item: Item, *, adjudicate: bool, error: str = "", status: int = 200) -> Response:
        labels = labels_by_hash().get(item.hash, [])
        kind = "adjudicated" if adjudicate else "human"
        existing = next((y for y in labels if y.labeller == labeller and y.kind == kind), None)
        others = sorted((y for y in labels if y.kind == "human"), key=lambda y: y.labeller) if adjudicate else []
        position = next(n for n, x in enumerate(items, 1) if x.id == item.id)
        tied = gold().tied.get(item.hash, {}) if adjudicate else {}
        return page("label_episode.html", status, item=item, task=item.task, steps=item.steps, ending=item.ending(),
                    position=position, total=len(items), existing=existing, others=others, adjudicate=adjudicate,
                    tied=tied,
                    action=("/adjudicate/" if adjudicate else "/e/") + item.id, error=error)

    async def show(request: Request) -> Response:
        item = item_of(request)
        return render_item(item, adjudicate=False) if item else not_found(request)

    async def save(request: Request) -> Response:
        item = item_of(request)
        if item is None:
            return not_found(request)
        adjudicate = request.url.path.startswith("/adjudicate/")
        form = await request.form()
        try:
            label = label_from_form(form, item, labeller, "adjudicated" if adjudicate else "human")
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'label'}: {x['msg']}" for x in exc.errors())
            return render_item(item, adjudicate=adjudicate, error=problems, status=400)
        store.save(label)
        return RedirectResponse("/disagreements" if adjudicate else "/next", status_code=303)

    async def disagreements(request: Request) -> Response:
        settled = gold()
        rows = [{"id": x.id, "task": x.task["id"], "pattern": x.task["pattern"], "labels": settled.queue.get(x.hash, []),
                 "tied": settled.tied.get(x.hash, {})}
                for x in items if x.hash in settled.awaiting()]
        return page("label_queue.html", rows=rows)

    async def adjudicate(request: Request) -> Response:
        item = item_of(request)
        return render_item(item, adjudicate=True) if item else not_found(request)

    async def agreement(request: Request) -> Response:
        from blindact.judging.agreement import labeller_agreement

        report = labeller_agreement(store.dir) if store.path.exists() else {"labellers": [], "fields": {}}
        return page("label_agreement.html", report=report)

    async def export(request: Request) -> Response:
        ids = {x.hash: x.id for x in items}
        lines = [json.dumps({"id": ids.get(h, ""), **g}) for h, g in gold().labels.items()]
        return PlainTextResponse("".join(line + "\n" for line in lines), media_type="application/x-ndjson")

    async def export_all(request: Request) -> Response:
        return PlainTextResponse(labels_jsonl(store.all()), media_type="application/x-ndjson")

    async def shot(request: Request) -> Response:
        item = item_of(request)
        name = request.path_params["name"]
        # only files the trajectory names are served, so the URL cannot reach anything else on disk
        if item is None or name not in {s.get("screenshot") for s in item.steps}:
            return HTMLResponse(f"no screenshot {html.escape(name)}", status_code=404)
        return FileResponse(item.dir / name)

    return Starlette(routes=[
        Route("/", index), Route("/next", next_unlabelled),
        Route("/e/{id}", show, methods=["GET"]), Route("/e/{id}", save, methods=["POST"]),
        Route("/disagreements", disagreements),
        Route("/adjudicate/{id}", adjudicate, methods=["GET"]), Route("/adjudicate/{id}", save, methods=["POST"]),
        Route("/agreement", agreement), Route("/gold.jsonl", export), Route("/labels.jsonl", export_all),
        Route("/shot/{id}/{name}", shot),
    ])
