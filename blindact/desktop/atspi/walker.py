"""The AT-SPI tree walk: a snapshot of every application's visible accessible objects.

Speed comes from pipelining: requests for a node's children are sent the moment its child list
arrives, so the walk proceeds like a breadth-first flood with hundreds of calls in flight over
:class:`~blindact.desktop.atspi.dbus.Connection`. Replies are matched by serial.

Robustness: every snapshot is bounded by ``timeout``; an application that stops answering is
abandoned (its subtree is skipped and noted in ``AccessibilityReader.last_notes``); errors on a
single node skip that node's subtree only.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Iterable

from blindact.desktop.atspi.dbus import (
    A11yError,
    CallSpec,
    Connection,
    DBusErrorReply,
    poll_many,
)

# --------------------------------------------------------------------------------------------
# AT-SPI constants (atspi-constants.h; the numbering is part of the D-Bus protocol)
# --------------------------------------------------------------------------------------------

ROLE_NAMES: tuple[str, ...] = (
    "invalid", "accelerator label", "alert", "animation", "arrow", "calendar", "canvas",
    "check box", "check menu item", "color chooser", "column header", "combo box",
    "date editor", "desktop icon", "desktop frame", "dial", "dialog", "directory pane",
    "drawing area", "file chooser", "filler", "focus traversable", "font chooser", "frame",
    "glass pane", "html container", "icon", "image", "internal frame", "label",
    "layered pane", "list", "list item", "menu", "menu bar", "menu item", "option pane",
    "page tab", "page tab list", "panel", "password text", "popup menu", "progress bar",
    "push button", "radio button", "radio menu item", "root pane", "row header",
    "scroll bar", "scroll pane", "separator", "slider", "spin button", "split pane",
    "status bar", "table", "table cell", "table column header", "table row header",
    "tearoff menu item", "terminal", "text", "toggle button", "tool bar", "tool tip",
    "tree", "tree table", "unknown", "viewport", "window", "extended", "header", "footer",
    "paragraph", "ruler", "application", "autocomplete", "editbar", "embedded", "entry",
    "chart", "caption", "document frame", "heading", "page", "section", "redundant object",
    "form", "link", "input method window", "table row", "tree item", "document spreadsheet",
    "document presentation", "document text", "document web", "document email", "comment",
    "list box", "grouping", "image map", "notification", "info bar", "level bar",
    "title bar", "block quote", "audio", "video", "definition", "article", "landmark", "log",
    "marquee", "math", "rating", "timer", "static", "math fraction", "math root",
    "subscript", "superscript", "description list", "description term",
    "description value", "footnote", "content deletion", "content insertion", "mark",
    "suggestion", "push button menu",
)

_STATE_BITS: dict[str, int] = {
    name: bit
    for bit, name in enumerate(
        (
            "invalid", "active", "armed", "busy", "checked", "collapsed", "defunct",
            "editable", "enabled", "expandable", "expanded", "focusable", "focused",
            "has-tooltip", "horizontal", "iconified", "modal", "multi-line",
            "multiselectable", "opaque", "pressed", "resizable", "selectable", "selected",
            "sensitive", "showing", "single-line", "stale", "transient", "vertical",
            "visible", "manages-descendants", "indeterminate", "required", "truncated",
            "animated", "invalid-entry", "supports-autocompletion", "selectable-text",
            "is-default", "visited", "checkable", "has-popup", "read-only",
        )
    )
}
_S = _STATE_BITS

# States worth showing to an agent, in display order. "disabled" is derived (no ENABLED bit).
_REPORTED_STATES: tuple[tuple[str, int], ...] = tuple(
    (name, _S[name])
    for name in (
        "focused", "focusable", "checkable", "checked", "indeterminate", "pressed",
        "selectable", "selected", "expandable", "expanded", "collapsed", "editable",
        "read-only", "enabled", "required", "invalid-entry", "multi-line", "modal",
        "has-popup", "busy", "visited", "active",
    )
)

_SHOWING = 1 << _S["showing"]
_ENABLED = 1 << _S["enabled"]
_EDITABLE = 1 << _S["editable"]
_FOCUSABLE = 1 << _S["focusable"]
_DEFUNCT = 1 << _S["defunct"]
_MANAGES_DESCENDANTS = 1 << _S["manages-descendants"]
_READ_ONLY = 1 << _S["read-only"]

_ROLE_APPLICATION = ROLE_NAMES.index("application")
_ROLE_PASSWORD = ROLE_NAMES.index("password text")
_ROLE_TERMINAL = ROLE_NAMES.index("terminal")

# Roles whose Text interface holds the value the user typed.
_VALUE_TEXT_ROLES = frozenset(
    ROLE_NAMES.index(r) for r in ("entry", "text", "combo box", "spin button", "terminal")
)
# Roles whose Value interface (a number) is the interesting part.
_VALUE_NUMBER_ROLES = frozenset(
    ROLE_NAMES.index(r)
    for r in ("slider", "progress bar", "spin button", "scroll bar", "level bar", "dial")
)
# Unnamed nodes of these roles carry their visible text only in the Text interface (a web
# paragraph has no name); reading it is one more pipelined call per such node.
_CONTENT_TEXT_ROLES = frozenset(
    ROLE_NAMES.index(r)
    for r in (
        "paragraph", "heading", "label", "static", "caption", "table cell", "list item",
        "section", "block quote", "article", "footer", "header", "description term",
        "description value", "definition", "comment", "mark", "log", "status bar",
        "notification", "alert", "text", "tool tip", "info bar", "content deletion",
        "content insertion", "suggestion", "subscript", "superscript", "footnote",
        "column header", "row header", "table column header", "table row header",
    )
)

INTERACTIVE_ROLES = frozenset(
    (
        "push button", "toggle button", "check box", "radio button", "link", "entry",
        "password text", "combo box", "menu item", "check menu item", "radio menu item",
        "page tab", "slider", "spin button", "tree item", "push button menu", "list box",
        "menu", "scroll bar", "autocomplete", "terminal", "date editor", "color chooser",
    )
)
_OPAQUE_ROLES = frozenset(
    ROLE_NAMES.index(r) for r in ("entry", "password text", "static", "image", "separator")
)
_LABELLED_LEAF_ROLES = frozenset(
    ROLE_NAMES.index(r)
    for r in (
        "push button", "toggle button", "link", "check box", "radio button", "menu item",
        "check menu item", "radio menu item",
    )
)
_INTERACTIVE_ROLE_IDS = frozenset(ROLE_NAMES.index(r) for r in INTERACTIVE_ROLES)
_GRID_ROLES = frozenset(ROLE_NAMES.index(r) for r in ("table", "tree table"))

_REGISTRY = "org.a11y.atspi.Registry"
_ROOT_PATH = "/org/a11y/atspi/accessible/root"
_NULL_PATH = "/org/a11y/atspi/null"
_IFACE_ACCESSIBLE = "org.a11y.atspi.Accessible"
_IFACE_COMPONENT = "org.a11y.atspi.Component"
_IFACE_TEXT = "org.a11y.atspi.Text"
_IFACE_VALUE = "org.a11y.atspi.Value"
_IFACE_PROPS = "org.freedesktop.DBus.Properties"
_COORD_SCREEN = 0

# The calls the walk makes, by kind: interface, method, argument signature, arguments.
_CALLS: dict[str, CallSpec] = {
    "state": (_IFACE_ACCESSIBLE, "GetState", "", ()),
    "role": (_IFACE_ACCESSIBLE, "GetRole", "", ()),
    "name": (_IFACE_PROPS, "Get", "ss", (_IFACE_ACCESSIBLE, "Name")),
    "description": (_IFACE_PROPS, "Get", "ss", (_IFACE_ACCESSIBLE, "Description")),
    "children": (_IFACE_ACCESSIBLE, "GetChildren", "", ()),
    "extents": (_IFACE_COMPONENT, "GetExtents", "u", (_COORD_SCREEN,)),
    "text": (_IFACE_TEXT, "GetText", "ii", (0, -1)),
    "value": (_IFACE_PROPS, "Get", "ss", (_IFACE_VALUE, "CurrentValue")),
}
_OBJECT_REPLACEMENT = "\ufffc"
MAX_TEXT = 300
_MAX_DESCRIPTION = 120
# A terminal's Text interface holds its visible screen (VTE exposes no scrollback), where the newest
# output is at the bottom: keep the end, not the start. The desktop's 110x32 terminal (at most
# 3,552 characters) always fits whole; a larger one loses its oldest lines first.
TERMINAL_LINES = 40
TERMINAL_CHARS = 4000


# --------------------------------------------------------------------------------------------
# Public data
# --------------------------------------------------------------------------------------------


@dataclass
class A11yNode:
    """One visible accessible object of one snapshot.

    ``id`` is the node's depth-first index in the snapshot; ``parent`` is the parent's ``id``
    (None for application roots). ``bbox`` is ``(x, y, w, h)`` in screen pixels, or None when
    the object has no geometry (application roots).
    """

    id: int
    role: str
    name: str
    states: tuple[str, ...]
    bbox: tuple[int, int, int, int] | None
    depth: int
    app: str
    text: str | None = None
    description: str = ""
    parent: int | None = None
    children: list[int] = field(default_factory=list)

    @property
    def center(self) -> tuple[int, int] | None:
        if self.bbox is None:
            return None
        x, y, w, h = self.bbox
        return x + w // 2, y + h // 2

    @property
    def interactive(self) -> bool:
        return self.role in INTERACTIVE_ROLES or "focusable" in self.states



# --------------------------------------------------------------------------------------------
# The tree walk
# --------------------------------------------------------------------------------------------


class _Raw:
    """What the walk learned about one accessible object."""

    __slots__ = (
        "bus", "path", "depth", "is_app", "role", "name", "description", "states", "bbox",
        "children", "text", "failed",
    )

    def __init__(self, bus: str, path: str, depth: int, is_app: bool) -> None:
        self.bus = bus
        self.path = path
        self.depth = depth
        self.is_app = is_app
        self.role: int | None = None
        self.name = ""
        self.description = ""
        self.states: int | None = None
        self.bbox: tuple[int, int, int, int] | None = None
        self.children: list[_Raw] | None = None
        self.text: str | None = None
        self.failed = False

    @property
    def shown(self) -> bool:
        if self.is_app:
            return not self.failed
        if self.failed or self.states is None:
            return False
        return bool(self.states & _SHOWING) and not self.states & _DEFUNCT


# A batch of calls sent together to one object: the kinds (to dispatch the replies) and their specs.
_Batch = tuple[tuple[str, ...], tuple[CallSpec, ...]]


def _batch(*kinds: str) -> _Batch:
    return kinds, tuple(_CALLS[k] for k in kinds)


_APP_ROOT = _batch("state", "role", "name", "children")
_STATE_ONLY = _batch("state")
_DETAILS = _batch("role", "name", "children", "extents")
# A node that manages its descendants creates them on demand. For a table that can be the whole
# grid: LibreOffice Calc's sheet would list 2^34 cells and stops answering while it tries. Such a
# node's children are asked for only once its role shows it is no table; a sheet's cells are left
# out (the screenshot and the Name Box show them).
_DETAILS_NO_CHILDREN = _batch("role", "name", "extents")
_CHILDREN = _batch("children")
_DESCRIPTION = _batch("description")
_TEXT = _batch("text")
_VALUE = _batch("value")


class _Walk:
    """One snapshot's state machine: requests in flight, keyed by serial."""

    def __init__(
        self,
        conn: Connection,
        routes: dict[str, Connection],
        max_nodes: int,
        timeout: float,
        deadline: float,
    ) -> None:
        self.conn = conn
        # Application bus name -> the connection its calls go through (a direct peer-to-peer
        # connection when the app offers one, else the bus).
        self.routes = routes
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.deadline = deadline
        self.pending: dict[tuple[int, int], tuple[str, _Raw]] = {}
        self.broken_routes: list[str] = []
        self.app_pending: dict[str, int] = {}
        self.app_since: dict[str, float] = {}
        self.app_names: dict[str, str] = {}
        # lower-cased application names whose trees are read; None: every application's
        self.only_apps: frozenset[str] | None = None
        self.skipped_apps: list[str] = []
        self.abandoned: set[str] = set()
        self.seen: set[tuple[str, str]] = set()
        self.roots: list[_Raw] = []
        self.count = 0
        self.requests = 0
        self.truncated = False
        self.errors: dict[str, int] = {}
        self.notes: list[str] = []

    # -- requests ------------------------------------------------------------------------------
    def _send(self, raw: _Raw, batch: _Batch) -> None:
        bus = raw.bus
        if bus in self.abandoned:
            return
        kinds, calls = batch
        conn = self.routes.get(bus, self.conn)
        serial = conn.send_batch(bus, raw.path, calls)
        cid = id(conn)
        pending = self.pending
        for kind in kinds:
            pending[(cid, serial)] = (kind, raw)
            serial += 1
        self.requests += len(kinds)
        if not self.app_pending.get(bus):
            self.app_since[bus] = time.monotonic()
        self.app_pending[bus] = self.app_pending.get(bus, 0) + len(kinds)

    def _request_node(self, raw: _Raw) -> None:
        # Only the state first: about half of a browser's objects are hidden UI, and their
        # subtrees then cost one call instead of five. Applications have no useful state.
        if raw.is_app:
            self._send(raw, _APP_ROOT)
        else:
            self._send(raw, _STATE_ONLY)

    def _add(self, bus: str, path: str, depth: int, is_app: bool) -> _Raw | None:
        key = (bus, path)
        if not bus or path == _NULL_PATH or key in self.seen:
            return None
        if self.count >= self.max_nodes:
            self.truncated = True
            return None
        self.seen.add(key)
        self.count += 1
        raw = _Raw(bus, path, depth, is_app)
        self._request_node(raw)
        return raw

    # -- replies -------------------------------------------------------------------------------
    def _handle(self, kind: str, raw: _Raw, is_error: bool, body: Any) -> None:
        if is_error:
            if kind in ("state", "role"):
                raw.failed = True
            if kind == "children":
                raw.children = []
            # Optional interfaces (Component, Text, Value) are legitimately missing on some nodes.
            if kind not in ("extents", "text", "value", "description") or raw.shown:
                key = f"{kind}: {getattr(body, 'name', 'error')}"
                self.errors[key] = self.errors.get(key, 0) + 1
            return
        if kind == "state":
            words = body[0]
            raw.states = (words[0] if words else 0) | ((words[1] if len(words) > 1 else 0) << 32)
            if not raw.is_app and raw.shown:
                # One application answers in order, so role and state are known when the name
                # arrives (which decides whether the text is worth fetching).
                self._send(raw, _DETAILS_NO_CHILDREN if raw.states & _MANAGES_DESCENDANTS else _DETAILS)
        elif kind == "role":
            raw.role = role = body[0]
            if raw.states is not None and raw.states & _MANAGES_DESCENDANTS and raw.shown and role not in _GRID_ROLES:
                self._send(raw, _CHILDREN)
            if role in _INTERACTIVE_ROLE_IDS or (raw.states or 0) & _FOCUSABLE:
                self._send(raw, _DESCRIPTION)
        elif kind == "name":
            raw.name = _variant(body[0], "")
            if raw.is_app:
                self.app_names[raw.bus] = raw.name
            else:
                self._request_content(raw)
        elif kind == "description":
            desc = _variant(body[0], "")
            raw.description = desc if len(desc) <= _MAX_DESCRIPTION else ""
        elif kind == "children":
            if raw.is_app and self.only_apps is not None and raw.name.lower() not in self.only_apps:
                # one application answers in order: its name is known before its children
                raw.children = []
                self.skipped_apps.append(raw.name)
                return
            self._descend(raw, body[0])
        elif kind == "extents":
            box = body[0]
            raw.bbox = (int(box[0]), int(box[1]), int(box[2]), int(box[3]))
        elif kind == "text":
            text = body[0].replace(_OBJECT_REPLACEMENT, " ")
            if raw.role == _ROLE_TERMINAL:
                raw.text = terminal_screen(text)
                return
            text = " ".join(text.split()) if raw.role not in _VALUE_TEXT_ROLES else text
            raw.text = text[:MAX_TEXT]
        elif kind == "value":
            value = _variant(body[0], None)
            if isinstance(value, (int, float)):
                raw.text = f"{value:g}"

    def _request_content(self, raw: _Raw) -> None:
        role = raw.role
        if role is None or role == _ROLE_PASSWORD:
            return
        states = raw.states or 0
        if role in _VALUE_TEXT_ROLES or states & _EDITABLE:
            self._send(raw, _TEXT)
        if role in _VALUE_NUMBER_ROLES:
            self._send(raw, _VALUE)

    def _descend(self, raw: _Raw, refs: list) -> None:
        raw.children = []
        if not raw.shown:
            return
        role = raw.role
        if not refs:
            # A nameless text leaf (a paragraph in some toolkits) shows its words only here.
            if not raw.name and role in _CONTENT_TEXT_ROLES and raw.text is None:
                self._send(raw, _TEXT)
            return
        # Inside a named link or button there is only its label again (HTML forbids nested
        # interactive content), and an entry's parts are its text, already read: skipping
        # them saves five calls per hidden-in-plain-sight text node.
        if role in _OPAQUE_ROLES or (raw.name and role in _LABELLED_LEAF_ROLES):
            return
        for bus, path in refs:
            child = self._add(bus, path, raw.depth + 1, is_app=False)
            if child is not None:
                raw.children.append(child)

    # -- driving -------------------------------------------------------------------------------
    def run(self, apps: list[tuple[str, str]]) -> None:
        deadline = self.deadline
        # An app silent for half the budget is declared hung, so one hung app cannot starve
        # the others of the whole budget.
        hang_after = self.timeout / 2
        for bus, path in apps:
            raw = self._add(bus, path, 0, is_app=True)
            if raw is not None:
                self.roots.append(raw)

        pending = self.pending
        while pending:
            now = time.monotonic()
            if now >= deadline:
                self.notes.append(
                    f"snapshot stopped at the {self.timeout:.1f}s budget with {len(pending)} "
                    "requests unanswered; the tree is partial"
                )
                break
            busy = [b for b, n in self.app_pending.items() if n and b not in self.abandoned]
            wake = min([deadline] + [self.app_since[b] + hang_after for b in busy])
            conns = {id(self.conn): self.conn}
            for bus in busy:
                conn = self.routes.get(bus, self.conn)
                conns[id(conn)] = conn
            replies, broken = poll_many(list(conns.values()), wake)
            for conn, exc in broken:
                if conn is self.conn:
                    raise exc
                for bus, route in list(self.routes.items()):
                    if route is conn:
                        self.broken_routes.append(bus)
                        self._abandon(bus, 0.0, f"its connection broke ({exc})")
            if not replies:
                now = time.monotonic()
                for bus in busy:
                    if now - self.app_since[bus] >= hang_after and bus not in self.abandoned:
                        self._abandon(bus, hang_after)
                continue
            for conn, serial, is_error, body in replies:
                entry = pending.pop((id(conn), serial), None)
                if entry is None:
                    continue  # a late answer from an earlier snapshot or an abandoned app
                kind, raw = entry
                bus = raw.bus
                self.app_pending[bus] -= 1
                self.app_since[bus] = time.monotonic()
                try:
                    self._handle(kind, raw, is_error, body)
                except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
                    # A reply of an unexpected shape: skip this node, keep walking.
                    raw.failed = True
                    raw.children = raw.children or []
                    key = f"{kind}: malformed reply ({type(exc).__name__})"
                    self.errors[key] = self.errors.get(key, 0) + 1

        if self.truncated:
            self.notes.append(f"stopped at max_nodes={self.max_nodes}; deeper nodes are missing")
        for key, n in sorted(self.errors.items()):
            self.notes.append(f"{n} x {key}")

    def _abandon(self, bus: str, waited: float, why: str = "") -> None:
        self.abandoned.add(bus)
        for key in [k for k, (_, raw) in self.pending.items() if raw.bus == bus]:
            del self.pending[key]
        self.app_pending[bus] = 0
        name = self.app_names.get(bus, "")
        why = why or f"it did not answer for {waited:.2f}s"
        self.notes.append(f"application {name or '?'} ({bus}) skipped from there on: {why}")

    def nodes(self) -> list[A11yNode]:
        out: list[A11yNode] = []
        stack: list[tuple[_Raw, int | None]] = [(r, None) for r in reversed(self.roots)]
        while stack:
            raw, parent = stack.pop()
            if not raw.shown:
                continue
            node = A11yNode(
                id=len(out),
                role=_role_name(raw.role, raw.is_app),
                name=raw.name,
                states=_state_names(raw.states, raw.role),
                bbox=raw.bbox,
                depth=raw.depth,
                app=self.app_names.get(raw.bus, ""),
                text=raw.text,
                description=raw.description if raw.description != raw.name else "",
                parent=parent,
            )
            if parent is not None:
                out[parent].children.append(node.id)
            out.append(node)
            for child in reversed(raw.children or ()):
                stack.append((child, node.id))
        return out


def terminal_screen(text: str) -> str:
    """The end of a terminal's screen text: lines right-trimmed, the blank rows below the last output
    dropped, then at most the last TERMINAL_LINES lines and TERMINAL_CHARS characters."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    tail = "\n".join(lines[-TERMINAL_LINES:])
    if len(tail) > TERMINAL_CHARS:
        tail = tail[-TERMINAL_CHARS:]
        # start on a whole line when the cut leaves one
        newline = tail.find("\n")
        tail = tail[newline + 1:] if 0 <= newline < len(tail) - 1 else tail
    return tail


def _variant(value: Any, default: Any) -> Any:
    # jeepney gives variants as (signature, value) pairs.
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return default if value is None else value


def _role_name(role: int | None, is_app: bool) -> str:
    if role is None:
        return "application" if is_app else "unknown"
    if 0 <= role < len(ROLE_NAMES):
        return ROLE_NAMES[role]
    return f"role-{role}"


def _state_names(mask: int | None, role: int | None) -> tuple[str, ...]:
    if mask is None:
        return ()
    names = [name for name, bit in _REPORTED_STATES if mask >> bit & 1]
    # Chromium drops ENABLED on read-only fields too; those are readable, not disabled.
    if not mask & (_ENABLED | _READ_ONLY) and role != _ROLE_APPLICATION:
        names.append("disabled")
    return tuple(names)


class AccessibilityReader:
    """Snapshots of the accessibility tree on one AT-SPI bus.

    With ``peer_to_peer`` (the default) calls to an application go over the direct connection
    it offers (``org.a11y.atspi.Application.GetApplicationBusAddress``) instead of through the
    bus daemon, which halves the cost of each call; apps that offer none, or refuse the
    connection, are read through the bus.

    Not thread-safe: use one reader per thread. ``last_notes`` lists what the last snapshot had
    to skip (hung applications, failing nodes, truncation); ``last_stats`` has counts and time.
    """

    def __init__(self, bus_address: str, timeout: float = 2.0, peer_to_peer: bool = True,
                 opener: Callable[[str, float], socket.socket] | None = None) -> None:
        """opener: opens every connection's socket (see blindact.desktop.atspi.dbus.Connection)."""
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.bus_address = bus_address
        self.timeout = timeout
        self.peer_to_peer = peer_to_peer
        self.opener = opener
        self.last_notes: list[str] = []
        self.last_stats: dict[str, Any] = {}
        # Application unique bus name -> its direct connection, or None when it has none.
        # Unique names are never reused on a bus, so an entry cannot point at another app.
        self._peers: dict[str, Connection | None] = {}
        try:
            self._conn: Connection | None = Connection(bus_address, timeout, opener=opener)
        except (OSError, A11yError) as exc:
            raise A11yError(f"cannot open the accessibility bus {bus_address}: {exc}") from exc

    def snapshot(self, max_nodes: int = 3000, apps: Iterable[str] | None = None) -> list[A11yNode]:
        """Walk every application's visible tree; at most ``max_nodes`` objects are visited.
        With ``apps`` (application names, any case), only those applications' trees are read:
        the others show as their bare application node, and neither their time nor their objects
        count against the budget (a LibreOffice or Geany starting next to the browser)."""
        start = time.monotonic()
        only = None if apps is None else frozenset(a.lower() for a in apps)
        try:
            walk = self._walk(max_nodes, only)
        except (A11yError, OSError) as first:
            # The bus connection may have died (bus restarted, daemon closed us): retry once on a
            # fresh connection, otherwise report the original problem.
            self._drop_connections()
            try:
                walk = self._walk(max_nodes, only)
            except (A11yError, OSError) as second:
                self._drop_connections()
                raise A11yError(
                    f"accessibility snapshot on {self.bus_address} failed: {second} "
                    f"(first attempt: {first})"
                ) from second
        for bus in walk.broken_routes:
            peer = self._peers.pop(bus, None)
            if peer is not None:
                peer.close()
        nodes = walk.nodes()
        self.last_notes = walk.notes
        self.last_stats = {
            "nodes": len(nodes),
            "visited": walk.count,
            "requests": walk.requests,
            "apps": len(walk.roots),
            "apps_skipped": len(walk.skipped_apps),
            "direct": sum(1 for r in walk.roots if walk.routes.get(r.bus) is not None),
            "elapsed_ms": (time.monotonic() - start) * 1000.0,
            "truncated": walk.truncated,
        }
        return nodes

    def _walk(self, max_nodes: int, only_apps: frozenset[str] | None = None) -> _Walk:
        deadline = time.monotonic() + self.timeout
        if self._conn is None:
            self._conn = Connection(self.bus_address, self.timeout, opener=self.opener)
        conn = self._conn
        try:
            apps = conn.call(
                _REGISTRY, _ROOT_PATH, _IFACE_ACCESSIBLE, "GetChildren", timeout=self.timeout
            )[0]
        except DBusErrorReply as exc:
            raise A11yError(
                f"the AT-SPI registry on {self.bus_address} failed to list applications: {exc}"
            ) from exc
        apps = [(bus, path) for bus, path in apps if bus and path != _NULL_PATH]
        notes: list[str] = []
        routes = self._routes(conn, [bus for bus, _ in apps], deadline, notes) if self.peer_to_peer else {}
        walk = _Walk(conn, routes, max_nodes, self.timeout, deadline)
        walk.only_apps = only_apps
        walk.notes.extend(notes)
        walk.run(apps)
        return walk

    def _routes(
        self, conn: Connection, buses: list[str], deadline: float, notes: list[str]
    ) -> dict[str, Connection]:
        """Direct connections for the listed apps, opening new ones for apps seen first now."""
        for gone in set(self._peers) - set(buses):
            peer = self._peers.pop(gone)
            if peer is not None:
                peer.close()
        new = [bus for bus in buses if bus not in self._peers]
        if new:
            serials = {
                conn.send(bus, _ROOT_PATH, "org.a11y.atspi.Application", "GetApplicationBusAddress"): bus
                for bus in new
            }
            # A hung app must not eat the walk's budget here; it will be abandoned by the walk.
            ask_until = min(deadline, time.monotonic() + self.timeout / 4)
            answers: dict[str, str] = {}
            while len(answers) < len(serials):
                replies = conn.poll(ask_until)
                if not replies:
                    break
                for serial, is_error, body in replies:
                    bus = serials.get(serial)
                    if bus is not None:
                        answers[bus] = "" if is_error or not body else str(body[0])
            for bus in new:
                if bus not in answers:
                    continue  # no answer yet: ask again next snapshot
                address = answers[bus]
                peer = None
                if address:
                    try:
                        peer = Connection(address, min(self.timeout, 1.0), is_bus=False, opener=self.opener)
                    except (OSError, A11yError) as exc:
                        notes.append(f"direct connection to {bus} at {address} failed ({exc}); using the bus")
                self._peers[bus] = peer
        return {bus: peer for bus in buses if (peer := self._peers.get(bus)) is not None}

    def _drop_connections(self) -> None:
        for peer in self._peers.values():
            if peer is not None:
                peer.close()
        self._peers.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        self._drop_connections()

    def __enter__(self) -> AccessibilityReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()



def find_nodes(
    nodes: Iterable[A11yNode],
    role: str | None = None,
    name: str | None = None,
    name_contains: str | None = None,
) -> list[A11yNode]:
    """Nodes matching every given criterion: ``role`` exactly, ``name`` exactly, ``name_contains``
    as a case-insensitive substring of the name."""
    needle = name_contains.casefold() if name_contains is not None else None
    return [
        n
        for n in nodes
        if (role is None or n.role == role)
        and (name is None or n.name == name)
        and (needle is None or needle in n.name.casefold())
    ]

