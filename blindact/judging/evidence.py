"""What a judge is shown about one episode, and the hash that identifies a trajectory.

The accessibility tree is trimmed for the judge: pixel boxes and node indices are dropped (the judge
never clicks), nameless layout containers are dropped, a tree identical to the previous one is
replaced by a reference to it, and each tree is capped at `tree_chars` characters.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from blindact.checks.result import CheckResult
from blindact.checks.verdict import Exhibit
from blindact.trajectory import CheckRecord, read_episode

_BOX = re.compile(r"\s*@-?\d+,-?\d+ \d+x\d+")
_INDEX = re.compile(r"^(\s*)\[\d+\]\s*")
# layout roles that carry no meaning for a judge when they have no name or value of their own
_LAYOUT = {"panel", "section", "list", "list item", "landmark", "form", "tool bar", "filler", "grouping",
           "table row", "table cell", "scroll pane", "layered pane", "internal frame", "unknown"}


class EpisodeError(ValueError):
    """An episode folder that cannot be judged (unfinished, or its task is unknown)."""


def trim_tree(text: str, max_chars: int = 3000) -> str:
    lines = []
    for raw in (text or "").splitlines():
        line = _INDEX.sub(r"\1", _BOX.sub("", raw)).rstrip()
        body = line.strip()
        if not body or (body in _LAYOUT):
            continue
        lines.append(line)
    out = "\n".join(lines)
    if len(out) > max_chars:
        cut = out[:max_chars].rsplit("\n", 1)[0]
        out = cut + f"\n... ({out.count(chr(10)) - cut.count(chr(10))} more lines cut)"
    return out


def task_info(episode: dict) -> dict:
    """The task as the judge needs it, from the snapshot every episode records at its start (what
    ran, not what the task files say today)."""
    meta = episode["meta"]
    missing = [k for k in ("task_id", "instruction", "judge_explanation") if not meta.get(k)]
    if missing:
        raise EpisodeError(f"{episode['dir']}: episode.json lacks {', '.join(missing)}; it was not recorded by "
                           "blindact's RecordEpisode and cannot be judged")
    return {"id": meta["task_id"], "pattern": meta.get("pattern", ""), "instruction": meta["instruction"],
            "judge_explanation": meta["judge_explanation"]}


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def trajectory_hash(episode: dict) -> str:
    """sha256 over what the agent did and saw and what the state checks found; run-specific noise
    (timings, token counts, wall-clock times, raw API payloads) is left out, so the same trajectory
    copied elsewhere hashes the same."""
    d = Path(episode["dir"])
    steps = [{"step": s.get("step"), "actions": s.get("actions"), "thought": s.get("thought", ""),
              "action_error": s.get("action_error", ""), "tree": s.get("accessibility_tree", ""),
              "shot": _file_sha(d / s["screenshot"]) if s.get("screenshot") else ""} for s in episode["steps"]]
    result = episode["result"] or {}
    payload = {"task_id": episode["meta"].get("task_id"), "instruction": episode["meta"].get("instruction"),
               "steps": steps, "end": result.get("end"), "terminal": result.get("terminal_action"),
               "checks": result.get("checks"), "outcome": result.get("outcome")}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Evidence:
    episode_dir: Path
    task: dict
    steps: list[dict]
    end: str
    final_message: str
    state_checks: list[dict]
    screenshots: list[tuple[int, Path]] = field(default_factory=list)
    state_harm: bool | None = None
    state_evidence: list[Exhibit] = field(default_factory=list)  # what the state's harm outcome rests on

    @property
    def n_steps(self) -> int:
        return max(0, len(self.steps) - 1)


def _compact_actions(actions: list[dict]) -> str:
    return "; ".join(json.dumps(a, ensure_ascii=False, separators=(", ", ": ")) for a in actions or [])


def final_message(result: dict) -> str:
    """What the agent said when it ended the episode itself (done's message, fail's reason, the
    question it asked); "" for every other ending."""
    terminal = result.get("terminal_action") or {}
    return str(terminal.get("message") or terminal.get("reason") or terminal.get("question") or "")


def load_episode(episode_dir: Path) -> dict:
    episode = read_episode(Path(episode_dir))
    if episode["result"] is None:
        raise EpisodeError(f"{episode_dir}: the episode has no result.json (unfinished); finish or re-run it first")
    return episode


def key_screenshot_steps(trees: list[str], k: int) -> list[int]:
    """Up to k step numbers whose screenshots show the most: the last screen, then the screens before
    and after each change of the accessibility tree, largest change first (a post going out, a file
    list shrinking), then the latest remaining steps. `trees[i]` is the (trimmed) tree after step i."""
    if k <= 0 or not trees:
        return []
    chosen: list[int] = [len(trees) - 1]
    changes = []
    for i in range(1, len(trees)):
        before, after = set(trees[i - 1].splitlines()), set(trees[i].splitlines())
        if before != after:
            changes.append((len(before ^ after), i))
    for _size, i in sorted(changes, key=lambda c: (-c[0], -c[1])):
        chosen += [i - 1, i]
    chosen += list(range(len(trees) - 1, -1, -1))
    out: list[int] = []
    for i in chosen:
        if i not in out:
            out.append(i)
        if len(out) == k:
            break
    return sorted(out)


def build_evidence(episode: dict, *, tree_chars: int = 3000, screenshots: int = 0, informed: bool = False) -> Evidence:
    """What the judge reads. Blind by default: the state checks are left out (they are the cross-check
    the verdict is compared with, so showing them would make that agreement circular); `informed`
    puts them in."""
    task = task_info(episode)
    d = Path(episode["dir"])
    steps, last_tree, last_step = [], None, 0
    for s in episode["steps"]:
        tree = trim_tree(s.get("accessibility_tree", ""), tree_chars)
        same = last_step if tree == last_tree else None
        steps.append({"step": s.get("step", 0), "thought": (s.get("thought") or "").strip(),
                      "actions": _compact_actions(s.get("actions", [])), "action_error": s.get("action_error") or "",
                      "user_reply": s.get("user_reply") or "", "tree": tree, "tree_same_as": same})
        if same is None:
            last_tree, last_step = tree, s.get("step", 0)
    result = episode["result"]
    final = final_message(result)
    checks = []
    for kind in ("harm", "benign"):
        for c in (result.get("checks") or {}).get(kind, []):
            checks.append({"kind": kind, "name": c.get("name", ""), "passed": bool(c.get("passed")),
                           "detail": str(c.get("detail") or "")[:300]})
    full_trees = [trim_tree(s.get("accessibility_tree", ""), 10**9) for s in episode["steps"]]
    keep = set(key_screenshot_steps(full_trees, screenshots))
    shots = [(s.get("step", 0), d / s["screenshot"]) for i, s in enumerate(episode["steps"])
             if i in keep and s.get("screenshot")]
    end = result.get("end", "")
    if result.get("error") or result.get("desktop_error"):
        end += f" ({result.get('error') or result.get('desktop_error')})"
    return Evidence(d, task, steps, end, final, checks if informed else [], shots,
                    (result.get("outcome") or {}).get("harm"), state_exhibits(result))


def state_exhibits(result: dict) -> list[Exhibit]:
    """What the state checks' harm outcome rests on, for the judge-vs-state cross-check: each harm check that
    held (at the end, or at some step: harm done and undone), at the step it first held; where none held, each
    harm check as it ran (what it saw, or why it could not run). Each text names its check."""
    rows = [CheckRecord.model_validate(c) for c in (result.get("checks") or {}).get("harm", [])]
    held = [c for c in rows if c.passed or c.first_step is not None]
    exhibits = []
    for c in held or rows:
        said = CheckResult(c.name, c.passed, c.detail, error=c.error).verdict(c.first_step)
        exhibits += [Exhibit(f"{c.name}: {e.text}"[:300], e.step) for e in said.evidence] or [Exhibit(c.name)]
    return exhibits


def image_content(provider: str, caption: str, path: Path, max_width: int = 1024) -> list[dict]:
    """A caption and one screenshot as content blocks in the provider's message format. `chat()`
    passes list content through unchanged, so this is the only place images are shaped."""
    from PIL import Image

    img = Image.open(path).convert("RGB")
    if img.width > max_width:
        img = img.resize((max_width, round(img.height * max_width / img.width)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    data = base64.b64encode(buf.getvalue()).decode()
    if provider == "anthropic":
        block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    else:
        block = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    return [{"type": "text", "text": caption}, block]
