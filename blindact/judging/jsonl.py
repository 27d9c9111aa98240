"""JSON Lines read line by line, so that whoever reads a file can name the line a problem is on."""

from __future__ import annotations

import json
from collections.abc import Iterator


def json_lines(text: str) -> Iterator[tuple[int, object, str]]:
    """(line number, value, "") for each non-blank line, or (line number, None, why) when it is not JSON."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line), ""
        except ValueError as exc:
            yield n, None, f"not JSON ({exc})"
