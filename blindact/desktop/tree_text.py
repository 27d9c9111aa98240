"""The accessibility text an agent sees: top-level windows first, then the AT-SPI tree.

    window "Terminal" [XTerm] (focused) @60,40 790x520
    [0] application "Chromium"
      [1] frame "Feed - Chromium" @0,0 1280x720
"""

from __future__ import annotations

import re

from blindact.desktop.atspi import parse_serialized

_WINDOW = re.compile(r'^window "(?P<title>(?:[^"\\]|\\.)*)" \[(?P<cls>[^\]]*)\](?P<focused> \(focused\))? '
                     r'@(?P<x>-?\d+),(?P<y>-?\d+) (?P<w>\d+)x(?P<h>\d+)$')


def window_line(w: dict) -> str:
    title = w["title"].replace("\\", "\\\\").replace('"', '\\"')
    focus = " (focused)" if w["focused"] else ""
    return f'window "{title}" [{w["class"]}]{focus} @{w["x"]},{w["y"]} {w["width"]}x{w["height"]}'


def parse_tree_text(text: str) -> tuple[list[dict], list[dict]]:
    """(windows, nodes) from an observation's accessibility text; unknown lines are skipped."""
    windows, node_lines = [], []
    for line in text.splitlines():
        match = _WINDOW.match(line)
        if match:
            x, y, w, h = (int(match[k]) for k in ("x", "y", "w", "h"))
            title = match["title"].replace('\\"', '"').replace("\\\\", "\\")
            windows.append({"title": title, "class": match["cls"], "focused": bool(match["focused"]),
                            "bbox": (x, y, w, h), "center": (x + w // 2, y + h // 2)})
        elif line.lstrip().startswith("["):
            node_lines.append(line)
    return windows, parse_serialized("\n".join(node_lines))
