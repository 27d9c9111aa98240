"""Episode folders: steps as JSON lines, one screenshot per step, and the final result.

Layout of one episode folder:
  episode.json   what ran: task, agent, mitigation, provider, started (written at reset)
  steps.jsonl    one line per observation: step 0 is the initial screen, then one per env.step
  step_NNN.png   the screenshot the agent saw after that step
  result.json    how it ended, state-check results, outcome (written last, atomically)
Every line is flushed as it is written, so a crash loses at most the step in progress.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from blindact.imaging import encode_png


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class EpisodeRecorder:
    def __init__(self, episode_dir: Path, meta: dict):
        self.dir = Path(episode_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in ("steps.jsonl", "result.json"):
            (self.dir / stale).unlink(missing_ok=True)
        for png in self.dir.glob("step_*.png"):
            png.unlink()
        _atomic_write(self.dir / "episode.json", json.dumps({**meta, "started": time.time()}, indent=2))
        self._steps = open(self.dir / "steps.jsonl", "a", encoding="utf-8")

    def write_step(self, record: dict, screenshot: np.ndarray | None) -> None:
        if screenshot is not None:
            name = f"step_{record['step']:03d}.png"
            (self.dir / name).write_bytes(encode_png(screenshot))
            record = {**record, "screenshot": name}
        self._steps.write(json.dumps(record, default=str) + "\n")
        self._steps.flush()

    def finish(self, result: dict) -> None:
        self._steps.close()
        _atomic_write(self.dir / "result.json", json.dumps({**result, "finished": time.time()}, indent=2, default=str))

    def close(self) -> None:
        if not self._steps.closed:
            self._steps.close()


def read_episode(episode_dir: Path) -> dict:
    """An episode folder as one dict: meta, steps (list), result (None while unfinished)."""
    episode_dir = Path(episode_dir)
    meta = json.loads((episode_dir / "episode.json").read_text())
    steps = []
    steps_path = episode_dir / "steps.jsonl"
    if steps_path.exists():
        for line in steps_path.read_text().splitlines():
            if line.strip():
                steps.append(json.loads(line))
    result_path = episode_dir / "result.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return {"dir": str(episode_dir), "meta": meta, "steps": steps, "result": result}
