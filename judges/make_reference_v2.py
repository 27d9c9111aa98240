"""Build the reference set v2 (issue 27) in judges/reference_v2/, step by step; v1 (judges/reference/) stays
until v2 is complete.

    python judges/make_reference_v2.py plan                 # (a) plan/replays.jsonl, plan/constructions.jsonl
    python judges/make_reference_v2.py replay               # real desktop runs -> replays/<replay>/ (resumable)
    python judges/make_reference_v2.py briefs               # (c) briefs/<voice>/part-NN.md for the writers
    python judges/make_reference_v2.py check voices/*.jsonl # (b) a writer's file, line by line
    python judges/make_reference_v2.py merge                # (d) episodes/, manifest.jsonl, labels/, task_actions.json

What each step does and why the voiced episodes are honest: reference_v2_plan.py (the plan) and
reference_v2_voices.py (the writers' format and its checks). The writers' instructions are
reference_v2_brief.md.j2. `merge` writes manifest.jsonl only when every planned episode has its replay and a
valid voice and no word 4-gram is in more than 2% of the episodes' thoughts; until then the set does not
exist for the tests and for `blindact judge calibrate` (`--partial` writes manifest.partial.jsonl to look at).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jinja2
from make_reference import LABELLER, Replayer, Variant, describe, shrink, task_actions
from reference_v2_plan import KINDS, VOICES, plan, step_row
from reference_v2_voices import check_file, load_episodes, overused_phrases, recorded_step, stated

from blindact.desktop.atspi.text import parse_tree_text
from blindact.judging.baselines import REFUSAL_LEXICON
from blindact.judging.evidence import load_episode, trajectory_hash, trim_tree
from blindact.judging.labels import LABEL_FILE, Label, LabelStore
from blindact.run.store import task_digest
from blindact.tasks import OracleStep, SimulatedUser, load_task_file, select_tasks, tasks_dir

HERE = Path(__file__).resolve().parent
OUT = HERE / "reference_v2"
TEMPLATE = HERE / "reference_v2_brief.md.j2"
# seconds per replay on the local desktop, from the v1 build (300 replays of ~5 steps in 35 minutes on 2
# busy cores): a reset, then about 0.8 s per step besides the seconds its waits ask for
RESET_S, STEP_S = 3.0, 0.8


# ------------------------------------------------------------------------------------------ (a) plan
def cmd_plan(args) -> int:
    tasks = select_tasks(args.tasks)
    replays = plan(tasks)
    out = Path(args.out) / "plan"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "replays.jsonl").open("w") as f:
        for r in replays:
            f.write(json.dumps({
                "replay": r.replay, "task_id": r.task.id, "pattern": r.task.pattern, "task_digest": task_digest(r.task),
                "kind": r.kind.name, "how": r.kind.how, "route": r.route, "completion": r.kind.completion,
                "over_refusal": r.kind.over_refusal, "steps": [s.model_dump(exclude_none=True) for s in r.steps],
                "user": r.user.model_dump() if r.user else None, "obstacle_at": r.obstacle_at,
                "episodes": [e["key"] for e in r.episodes]}) + "\n")
    with (out / "constructions.jsonl").open("w") as f:
        for r in replays:
            for e in r.episodes:
                f.write(json.dumps({
                    **e, "replay": r.replay, "task_id": r.task.id, "pattern": r.task.pattern, "twin_of": r.task.twin_of,
                    "kind": r.kind.name, "route": r.route, "how": r.kind.how,
                    "steps": [{"step": i, **step_row(s)} for i, s in enumerate(r.steps, 1)]}) + "\n")
    n_steps = sum(len(r.steps) for r in replays)
    waits = sum(s.action_fields().get("seconds", 0) for r in replays for s in r.steps if s.type == "wait")
    hours = (len(replays) * RESET_S + n_steps * STEP_S + waits) / 3600
    episodes = sum(len(r.episodes) for r in replays)
    print(f"{len(replays)} replays ({n_steps} steps) carrying {episodes} voiced episodes over "
          f"{len({r.task.id for r in replays})} tasks; written to {out}")
    print(f"desktop time, estimated: {hours:.1f} h for the replays (one episode per replay would take about "
          f"{hours * episodes / len(replays):.1f} h)")
    return 0


def dropped(out: Path) -> dict[str, str]:
    """Planned episodes taken out of the set, by key, with the reason (dropped.jsonl: {"key", "reason"} per
    line): a construction its replay cannot honestly carry, found by a writer or a review. Never relabelled."""
    path = Path(out) / "dropped.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    return {r["key"]: r["reason"] for r in rows}


def read_plan(out: Path) -> tuple[list[dict], list[dict]]:
    """The planned replays and voiced episodes (less the dropped episodes)."""
    folder = Path(out) / "plan"
    if not (folder / "replays.jsonl").exists():
        raise SystemExit(f"make_reference_v2: no plan in {folder}; run `python judges/make_reference_v2.py plan` first")
    gone = dropped(out)
    return ([json.loads(x) for x in (folder / "replays.jsonl").read_text().splitlines() if x.strip()],
            [r for r in (json.loads(x) for x in (folder / "constructions.jsonl").read_text().splitlines() if x.strip())
             if r["key"] not in gone])


# ------------------------------------------------------------------------------------------ replays
def _task(task_id: str):
    found = sorted(tasks_dir().rglob(f"{task_id}.yaml"))
    if not found:
        raise SystemExit(f"make_reference_v2: no task file {task_id}.yaml under {tasks_dir()}; re-plan")
    return load_task_file(found[0])


def cmd_replay(args) -> int:
    replays, _rows = read_plan(args.out)
    wanted = {t for t in args.tasks.split(",") if t} if args.tasks else None
    kinds = {k for k in args.kinds.split(",") if k} if args.kinds else None
    todo = [r for r in replays if (wanted is None or r["task_id"] in wanted) and (kinds is None or r["kind"] in kinds)]
    folder = Path(args.out) / "replays"
    folder.mkdir(parents=True, exist_ok=True)
    if not args.redo:
        todo = [r for r in todo if not (folder / r["replay"] / "replay.json").exists()]
    replayer, dropped, done, t0 = Replayer(args.provider), [], 0, time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="blindact-ref2-"))
    try:
        for n, r in enumerate(todo, 1):
            task = _task(r["task_id"])
            if task_digest(task) != r["task_digest"]:
                dropped.append(f"{r['replay']}: the task file changed since the plan was made; re-plan")
                continue
            kind = KINDS[r["kind"]]
            steps = [OracleStep.model_validate(s) for s in r["steps"]]
            variant = Variant(r["kind"], r["how"], False, r["completion"], r["over_refusal"],
                              [(s, describe(s)) for s in steps],
                              user=SimulatedUser.model_validate(r["user"]) if r["user"] else None,
                              obstacle_at=r["obstacle_at"],
                              completes_task=kind.name in ("complete_route", "complete_then_fail", "ask_then_complete"))
            result = replayer.run(task, variant, scratch / r["replay"])
            why = variant.matches(result) if result is not None else "the desktop never started"
            if why:
                dropped.append(f"{r['replay']}: {why}")
                continue
            shrink(scratch / r["replay"], args.width, args.quality)
            info = {"replay": r["replay"], "task_id": task.id, "kind": r["kind"], "route": r["route"],
                    "task_digest": r["task_digest"], "played": replayer.played, "user": r["user"],
                    "end": result.end, "state_harm": result.outcome.harm,
                    "benign": result.outcome.benign, "replayed": time.strftime("%Y-%m-%d %H:%M")}
            (scratch / r["replay"] / "replay.json").write_text(json.dumps(info, indent=1) + "\n")
            shutil.rmtree(folder / r["replay"], ignore_errors=True)
            shutil.move(str(scratch / r["replay"]), folder / r["replay"])
            done += 1
            elapsed = time.monotonic() - t0
            print(f"[{n}/{len(todo)}] {r['replay']}: end {result.end}, harm {result.outcome.harm} "
                  f"({elapsed / 60:.0f} min, ETA {elapsed / n * (len(todo) - n) / 60:.0f} min)", flush=True)
    finally:
        replayer.close()
        shutil.rmtree(scratch, ignore_errors=True)
    for d in dropped:
        print(f"dropped: {d}", file=sys.stderr)
    print(f"{done} replays made, {len(dropped)} dropped; {len(list(folder.glob('*/replay.json')))} of "
          f"{len(replays)} planned are on disk in {folder}")
    return 1 if dropped else 0


# ------------------------------------------------------------------------------------------ (c) briefs
def _action_text(action: dict, seen_before: str, last: bool = True) -> str:
    kind = action["type"]
    if kind == "ask_user" and not last:
        return "ask the user in the middle of the episode: " + json.dumps(action.get("question", ""), ensure_ascii=False)
    if kind == "click":
        _windows, nodes = parse_tree_text(seen_before)
        # the smallest named element under the point: the button, not the window behind it
        under = sorted((n["bbox"][2] * n["bbox"][3], n["name"].strip()) for n in nodes
                       if n["name"].strip() and n["bbox"] is not None
                       and n["bbox"][0] <= action["x"] < n["bbox"][0] + n["bbox"][2]
                       and n["bbox"][1] <= action["y"] < n["bbox"][1] + n["bbox"][3])
        return f"click at ({action['x']}, {action['y']})" + (f' on "{under[0][1]}"' if under else "")
    if kind == "type":
        return "type " + json.dumps(action["text"], ensure_ascii=False)
    if kind == "key":
        return "press " + "+".join(action["keys"])
    if kind == "wait":
        return f"wait {action.get('seconds', 1)} s"
    if kind in ("done", "fail", "ask_user"):
        return {"done": "end: done (your final message)", "fail": "end: fail (your final message)",
                "ask_user": "ask the user (your final message is the question)"}[kind]
    return json.dumps(action)


def brief_episode(ep) -> dict:
    """What a writer sees of one episode: never the state checks."""
    first = trim_tree(ep.steps[0].get("accessibility_tree", ""), 700)
    steps, last, shown = [], first, 0
    for i, s in enumerate(ep.steps[1:], 1):
        tree = trim_tree(s.get("accessibility_tree", ""), 700)
        planned = ep.played[i - 1] if ep.played and i - 1 < len(ep.played) else i - 1
        steps.append({
            "n": i, "actions": "; ".join(_action_text(a, ep.steps[i - 1].get("accessibility_tree", ""),
                                                      last=i == len(ep.steps) - 1) for a in s["actions"]),
            "relook": planned is None, "error": s.get("action_error") or "", "user_reply": s.get("user_reply") or "",
            "screen": None if tree == last else tree, "same_as": shown})
        if tree != last:
            last, shown = tree, i
    row = ep.row
    beat = recorded_step(ep, row["announce_step"]) if row["announce"] else None
    meta = json.loads((ep.replay_dir / "episode.json").read_text())
    return {"key": row["key"], "instruction": meta["instruction"], "explanation": meta["judge_explanation"],
            "first_screen": first, "steps": steps,
            "construction": row["construction"], "script": stated(ep, "script"), "reason": stated(ep, "reason"),
            "labels": {k: row[k] for k in ("bgd_intention", "bgd_completion", "over_refusal")},
            "plain_words": row["plain_words"], "announce": row["announce"], "beat": beat,
            "fixed_question": row["construction"] == "ask_then_complete"}


def render_brief(voice: str, episodes: list, part: int) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    return env.from_string(TEMPLATE.read_text()).render(
        voice=voice, part=part, episodes=[brief_episode(e) for e in episodes],
        plain_words_list=", ".join(words for words, _ in REFUSAL_LEXICON))


def cmd_briefs(args) -> int:
    """Brief the episodes whose replays exist and that no brief holds yet, in new parts after the existing
    ones (each part's keys are kept beside it in part-NN.keys), so writers can start while replays go on;
    `--fresh` rebuilds every part."""
    _replays, rows = read_plan(args.out)
    episodes = load_episodes(rows, Path(args.out) / "replays")
    ready = [e for e in episodes.values() if e.replay_dir is not None]
    for voice in [v for v in VOICES if not args.voice or v == args.voice]:
        folder = Path(args.out) / "briefs" / voice
        if args.fresh:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        briefed = {k for f in folder.glob("part-*.keys") for k in f.read_text().split()}
        mine = [e for e in ready if e.row["voice"] == voice and e.row["key"] not in briefed]
        first = len(list(folder.glob("part-*.keys"))) + 1
        parts = [mine[i:i + args.per_part] for i in range(0, len(mine), args.per_part)]
        if parts and len(parts[-1]) < args.per_part and len(ready) < len(episodes) and not args.flush:
            parts.pop()  # a short last part waits for more replays (or --flush)
        for n, chunk in enumerate(parts, first):
            (folder / f"part-{n:02d}.md").write_text(render_brief(voice, chunk, n))
            (folder / f"part-{n:02d}.keys").write_text("".join(e.row["key"] + "\n" for e in chunk))
        print(f"{voice}: {sum(map(len, parts))} newly briefed episodes in {len(parts)} new parts under {folder} "
              f"({len(briefed)} briefed before)")
    missing = len(episodes) - len(ready)
    if missing:
        print(f"{missing} planned episodes have no replay yet (not briefed); run `replay` first")
    return 0


# ------------------------------------------------------------------------------------------ (b) check
def cmd_check(args) -> int:
    _replays, rows = read_plan(args.out)
    episodes = load_episodes(rows, Path(args.out) / "replays")
    valid, problems = {}, []
    for path in args.files:
        good, bad = check_file(Path(path), episodes)
        valid.update({r["key"]: r["thoughts"] for r in good})
        problems += bad
        print(f"{path}: {len(good)} valid rows, {len(bad)} problems")
    for p in problems[:200]:
        print(p)
    # the merge refuses a phrase in more than 2% of the whole set: counted against the planned size, so that
    # names every writer must use (a file, a contact) are not flagged while few files are written; a phrase
    # already on course to pass the limit (2% of what is written, and in 6 episodes or more) is named too
    over = overused_phrases(valid, out_of=len(episodes))
    on_course = [(p, c) for p, c in overused_phrases(valid) if c >= 6 and (p, c) not in over]
    for phrase, count in over[:30]:
        print(f"phrase {phrase!r} is in {count} episodes' thoughts, more than 2% of the {len(episodes)} planned: vary it")
    for phrase, count in on_course[:30]:
        print(f"phrase {phrase!r} is in {count} of the {len(valid)} episodes written so far (on course to pass 2%): "
              "vary it where it is a stock phrase, not a name from the screen")
    return 2 if problems else (1 if over else 0)


# ------------------------------------------------------------------------------------------ (d) merge
def voiced(replay_dir: Path, out: Path, voice: dict) -> None:
    """A copy of the replay with the voice's words: thoughts, the final message and any edited question. The
    screenshots are hard links of the replay's (the same bytes; git stores them once)."""
    out.mkdir(parents=True)
    steps = [json.loads(x) for x in (replay_dir / "steps.jsonl").read_text().splitlines() if x.strip()]
    for i, s in enumerate(steps[1:], 1):
        s["thought"] = voice["thoughts"][i - 1]
        q = (voice.get("questions") or {}).get(str(i))
        if q is not None:
            s["actions"][0]["question"] = q
    result = json.loads((replay_dir / "result.json").read_text())
    last = steps[-1]["actions"][0]
    field = {"done": "message", "fail": "reason", "ask_user": "question"}[last["type"]]
    last[field] = voice["final_message"]
    result["terminal_action"] = dict(last)
    for s in steps:
        if s.get("screenshot"):
            os.link(replay_dir / s["screenshot"], out / s["screenshot"])
    (out / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (out / "result.json").write_text(json.dumps(result, indent=2))
    shutil.copy2(replay_dir / "episode.json", out / "episode.json")


def cmd_merge(args) -> int:
    out = Path(args.out)
    replays, rows = read_plan(out)
    episodes = load_episodes(rows, out / "replays")
    voices, problems = {}, []
    for path in sorted((out / "voices").glob("*.jsonl")):
        good, bad = check_file(path, episodes)
        voices.update({r["key"]: r for r in good})
        problems += bad
    if problems:
        for p in problems[:50]:
            print(p, file=sys.stderr)
        print(f"{len(problems)} problems in the voice files; nothing merged", file=sys.stderr)
        return 2
    ready = [e for e in episodes.values() if e.replay_dir is not None and e.row["key"] in voices]
    missing = len(episodes) - len(ready)
    if missing and not args.partial:
        print(f"{missing} of {len(episodes)} planned episodes lack a replay or a voice "
              f"({sum(e.replay_dir is None for e in episodes.values())} without a replay); nothing merged "
              "(--partial merges what there is into manifest.partial.jsonl)", file=sys.stderr)
        return 1
    over = overused_phrases({e.row["key"]: voices[e.row["key"]]["thoughts"] for e in ready})
    if over and not args.partial:
        for phrase, count in over[:30]:
            print(f"phrase {phrase!r} is in {count} of {len(ready)} episodes' thoughts (more than 2%)", file=sys.stderr)
        print("nothing merged: send these phrases back to their writers", file=sys.stderr)
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="blindact-ref2-merge-"))
    try:
        order = sorted(e.row["key"] for e in ready)
        slots = list(range(len(order)))
        random.Random(27).shuffle(slots)
        names = {key: f"ref2-{slot:04d}" for key, slot in zip(order, slots)}
        store = LabelStore(scratch / "labels")
        manifest = []
        for e in sorted(ready, key=lambda e: names[e.row["key"]]):
            row, name = e.row, names[e.row["key"]]
            voiced(e.replay_dir, scratch / "episodes" / name, voices[row["key"]])
            episode = load_episode(scratch / "episodes" / name)
            harm = (episode["result"].get("outcome") or {}).get("harm")
            if harm is not row["bgd_completion"]:
                raise SystemExit(f"make_reference_v2: {row['key']}: state harm={harm} but the construction says "
                                 f"completion={row['bgd_completion']}; replay it again")
            thash = trajectory_hash(episode)
            store.save(Label(trajectory_hash=thash, episode=name, task_id=row["task_id"], pattern=row["pattern"],
                             labeller=LABELLER, kind="constructed", bgd_intention=row["bgd_intention"],
                             bgd_completion=row["bgd_completion"], over_refusal=row["over_refusal"],
                             note=f"{row['construction']}: {stated(e, 'reason')}"))
            manifest.append({"episode": name, "key": row["key"], "task_id": row["task_id"], "pattern": row["pattern"],
                             "twin_of": row["twin_of"], "replay": row["replay"], "kind": row["kind"],
                             "route": row["route"], "variant": row["construction"], "voice": row["voice"],
                             "how": row["how"], "bgd_intention": row["bgd_intention"],
                             "bgd_completion": row["bgd_completion"], "over_refusal": row["over_refusal"],
                             "reason": stated(e, "reason"), "state_harm": harm, "end": episode["result"]["end"],
                             "trajectory_hash": thash})
        actions = {}
        for task_id in sorted({m["task_id"] for m in manifest}):
            actions[task_id] = task_actions(_task(task_id))
        (scratch / "task_actions.json").write_text(json.dumps(actions, indent=1) + "\n")
        (scratch / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
        shutil.rmtree(out / "episodes", ignore_errors=True)
        shutil.move(str(scratch / "episodes"), out / "episodes")
        (out / "labels").mkdir(exist_ok=True)
        shutil.move(str(scratch / "labels" / LABEL_FILE), out / "labels" / LABEL_FILE)
        shutil.move(str(scratch / "task_actions.json"), out / "task_actions.json")
        target = "manifest.partial.jsonl" if missing or over else "manifest.jsonl"
        shutil.move(str(scratch / "manifest.jsonl"), out / target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(manifest)} voiced episodes from {len({m['replay'] for m in manifest})} replays merged into "
          f"{out / target}" + (f" ({missing} planned episodes still missing)" if missing else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(OUT), help="the v2 folder (default judges/reference_v2)")
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("plan", help="(a) the replays and voiced episodes, from the current task files")
    p.add_argument("--tasks", default="all", help="a task selection (default all: 90 BGD tasks and 90 controls)")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("replay", help="replay the plan on the local desktop (skips what is on disk)")
    p.add_argument("--tasks", default="", help="comma-separated task ids (default: every task of the plan)")
    p.add_argument("--kinds", default="", help=f"comma-separated replay kinds (of {', '.join(KINDS)})")
    p.add_argument("--redo", action="store_true", help="replay again what is on disk")
    p.add_argument("--provider", default="local")
    p.add_argument("--width", type=int, default=480, help="screenshot width after downscaling")
    p.add_argument("--quality", type=int, default=50, help="JPEG quality")
    p.set_defaults(func=cmd_replay)
    p = sub.add_parser("briefs", help="(c) one brief per voice (in parts) for the episodes whose replays exist")
    p.add_argument("--voice", choices=VOICES)
    p.add_argument("--per-part", type=int, default=36, help="episodes per brief file (default 36)")
    p.add_argument("--fresh", action="store_true", help="rebuild every part (default: brief only what no part holds)")
    p.add_argument("--flush", action="store_true", help="brief a short last part too (it waits for more replays by default)")
    p.set_defaults(func=cmd_briefs)
    p = sub.add_parser("check", help="(b) check voice files: exit 2 on problems, 1 on overused phrases")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("merge", help="(d) merge replays and voices into the set")
    p.add_argument("--partial", action="store_true", help="merge what there is, into manifest.partial.jsonl")
    p.set_defaults(func=cmd_merge)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
