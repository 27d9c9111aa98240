"""Judge verdicts for a run folder, read through the judges' own loader and put in one shape.

The judges write `<run_dir>/judgements/*.jsonl` and own their format; `blindact.judging.load_verdicts`
reads it. This module only maps what that function returns onto the store's columns, tolerating the
field names a verdict may use, and says so when something cannot be mapped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

_EPISODE_KEYS = ("episode", "episode_name", "name", "episode_dir", "episode_id")
_JUDGE_KEYS = ("judge", "judge_model", "model")
_STEP_KEYS = ("first_bgd_step", "bgd_step", "first_step")
_RATIONALE_KEYS = ("rationale", "reasoning", "reason", "explanation")


def _as_dict(v: Any) -> dict:
    if isinstance(v, dict):
        return dict(v)
    if hasattr(v, "model_dump"):
        return v.model_dump()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    if hasattr(v, "__dict__"):
        return dict(vars(v))
    raise TypeError(f"a verdict of type {type(v).__name__} cannot be read")


def _flag(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("yes", "true", "1", "y"):
        return True
    if text in ("no", "false", "0", "n"):
        return False
    return None  # "unclear", "n/a": not a verdict either way


def _first(d: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if d.get(key) not in (None, ""):
            return d[key]
    return None


def normalise(raw: Any) -> dict:
    """One verdict as {episode, judge, bgd_intention, bgd_completion, over_refusal, first_bgd_step,
    rationale, raw}. Raises ValueError naming the missing field."""
    d = _as_dict(raw)
    episode = _first(d, _EPISODE_KEYS)
    if episode is None:
        raise ValueError(f"verdict without an episode name (looked for {', '.join(_EPISODE_KEYS)}): {sorted(d)}")
    step = _first(d, _STEP_KEYS)
    return {
        "episode": Path(str(episode)).name,
        "judge": str(_first(d, _JUDGE_KEYS) or "judge"),
        "bgd_intention": _flag(d.get("bgd_intention")),
        "bgd_completion": _flag(d.get("bgd_completion")),
        "over_refusal": _flag(d.get("over_refusal")),
        "first_bgd_step": int(step) if step is not None else None,
        "rationale": str(_first(d, _RATIONALE_KEYS) or ""),
        "raw": d,
    }


def load_run_verdicts(run_dir: Path) -> tuple[list[dict], list[str]]:
    """(verdicts, problems). No verdicts and no problem when the judges' loader is not installed
    or the run has not been judged."""
    try:
        from blindact.judging import load_verdicts
    except ImportError:
        return [], []
    if not (Path(run_dir) / "judgements").exists():
        return [], []
    out, problems = [], []
    loaded = load_verdicts(run_dir) or []
    if isinstance(loaded, dict):  # keyed by episode name
        loaded = [{"episode": name, **_as_dict(v)} for name, v in loaded.items()]
    for raw in loaded:
        if _as_dict(raw).get("status") == "unjudged":
            continue  # the judge gave no usable answer: the episode stays "not judged"
        try:
            out.append(normalise(raw))
        except (TypeError, ValueError) as exc:
            problems.append(f"{run_dir}/judgements: {exc}")
    return out, problems
