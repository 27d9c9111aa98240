"""Where the shipped data folders (envs/, tasks/, judges/) live: the checkout, or inside the wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`<checkout>/<name>` when running from a checkout, else `blindact/_data/<name>` from the wheel."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"blindact data folder {name!r} not found (looked in {_PACKAGE / '_data'} and {_PACKAGE.parent}); "
        "reinstall the package or run from a checkout"
    )
