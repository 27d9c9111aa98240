"""Run folders (a store plus episode folders) made from the shipped reference trajectories, the way
the judges and the labelling page find episodes."""

from __future__ import annotations

import json
from pathlib import Path

from blindact.run.store import Store
from blindact.trajectory import Trajectory

REFERENCE = Path(__file__).resolve().parents[1] / "judges" / "reference"
REFERENCE_V2 = REFERENCE.parent / "reference_v2"  # the default set once built (judges/README.md)


def manifest(reference: Path = REFERENCE) -> list[dict]:
    return [json.loads(x) for x in (reference / "manifest.jsonl").read_text().splitlines() if x.strip()]


def reference_run(run_dir: Path, names: list[str]) -> Path:
    """A run folder holding the named reference episodes, recorded in its store under their names."""
    with Store(run_dir) as store:
        for name in names:
            store.record_trajectory(Trajectory.read(REFERENCE / "episodes" / name), name=name)
    return run_dir


def reference_copy(folder: Path, reference: Path = REFERENCE) -> Path:
    """A reference set seen through a folder of its own (its manifest copied, its episodes linked), so a
    calibration is recorded there and not in the repository."""
    import shutil

    folder.mkdir(parents=True)
    shutil.copy(reference / "manifest.jsonl", folder / "manifest.jsonl")
    (folder / "episodes").symlink_to(reference / "episodes", target_is_directory=True)
    return folder
