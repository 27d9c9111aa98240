"""Optional loading from Hugging Face `datasets` (only when it is installed and the hub is reachable)."""

from __future__ import annotations

import json
from typing import Any

from blindact.fairness.datasets.identity import note


class HubUnavailable(RuntimeError):
    """`datasets` is missing or the dataset could not be fetched."""


def load_rows(name: str, config: str | None, split: str) -> list[dict[str, Any]]:
    """The rows of one config and split, noted (as JSON) for the run's dataset hash."""
    try:
        import datasets  # heavy and optional: imported only when asked for
    except ImportError as e:
        raise HubUnavailable("loading from the hub needs the `datasets` package (pip install datasets)") from e
    try:
        ds = datasets.load_dataset(name, config, split=split)
    except Exception as e:  # the hub client raises many unrelated types (network, auth, schema)
        raise HubUnavailable(f"could not load {name!r} config={config!r} split={split!r} from the hub: {e}") from e
    rows = [dict(r) for r in ds]
    note(f"hub:{name}/{config}/{split}", json.dumps(rows, sort_keys=True, default=str).encode("utf-8"))
    return rows
