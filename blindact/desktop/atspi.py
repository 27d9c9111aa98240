"""Read a desktop's accessibility tree through AT-SPI over D-Bus, in pure Python.

Only ``jeepney`` (D-Bus types) and ``python-xlib`` (to find the bus) are needed, so the reader runs
in any virtualenv and inside containers, with no PyGObject/pyatspi.

Speed comes from pipelining: a D-Bus round trip costs far more than the work an application does
to answer one call, so the reader never waits for one reply before sending the next request.
Requests for a node's children are sent the moment its child list arrives, so the walk proceeds
like a breadth-first flood with hundreds of calls in flight. Replies are matched by serial.

Robustness: every snapshot is bounded by ``timeout``; an application that stops answering is
abandoned (its subtree is skipped and noted in ``AccessibilityReader.last_notes``); errors on a
single node skip that node's subtree only.

Typical use::

    address = find_a11y_bus(":5")
    reader = AccessibilityReader(address)
    nodes = reader.snapshot()
    print(serialize(nodes))
"""

from __future__ import annotations

import json
import re
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import unquote_to_bytes

from jeepney.low_level import Endianness, parse_signature

__all__ = [
    "A11yBusNotFound",
    "A11yError",
    "A11yNode",
    "AccessibilityReader",
    "find_a11y_bus",
    "find_nodes",
    "parse_serialized",
    "serialize",
]


class A11yError(RuntimeError):
    """The accessibility bus could not be reached or spoke something unexpected."""


class A11yBusNotFound(A11yError):
    """No accessibility bus address could be found for a display."""


class _DBusErrorReply(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name


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
_VISIBLE = 1 << _S["visible"]
_ENABLED = 1 << _S["enabled"]
_SENSITIVE = 1 << _S["sensitive"]
_EDITABLE = 1 << _S["editable"]
_FOCUSABLE = 1 << _S["focusable"]
_DEFUNCT = 1 << _S["defunct"]
_READ_ONLY = 1 << _S["read-only"]

_ROLE_APPLICATION = ROLE_NAMES.index("application")
_ROLE_PASSWORD = ROLE_NAMES.index("password text")

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
_WRAPPER_ROLES = frozenset(
    (
        "section", "panel", "filler", "unknown", "redundant object", "grouping",
        "html container", "layered pane", "glass pane", "root pane", "viewport",
        "scroll pane", "split pane", "internal frame", "invalid", "static",
    )
)

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
_CALLS: dict[str, tuple[str, str, str, tuple]] = {
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
_MAX_TEXT = 300
_MAX_DESCRIPTION = 120


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
# Finding the bus
# --------------------------------------------------------------------------------------------


def find_a11y_bus(display: str, session_bus: str | None = None) -> str:
    """Return the D-Bus address of the accessibility bus of X display ``display``.

    First reads the ``AT_SPI_BUS`` property that at-spi-bus-launcher puts on the root window;
    then, if ``session_bus`` (the desktop's session bus address) is given, asks
    ``org.a11y.Bus.GetAddress`` there. The caller's own ``DBUS_SESSION_BUS_ADDRESS`` is never
    used: it may belong to a different desktop than ``display``.
    """
    tried: list[str] = []
    try:
        address = _read_root_property(display, "AT_SPI_BUS")
    except Exception as exc:  # python-xlib raises many unrelated types for a dead display
        tried.append(f"X root-window property AT_SPI_BUS on {display}: {type(exc).__name__}: {exc}")
    else:
        if address:
            return address
        tried.append(f"X root-window property AT_SPI_BUS on {display}: not set")

    if session_bus:
        try:
            with _Connection(session_bus, timeout=2.0) as conn:
                reply = conn.call(
                    "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress"
                )
            address = reply[0] if reply else ""
        except (A11yError, _DBusErrorReply, OSError) as exc:
            tried.append(f"org.a11y.Bus.GetAddress on session bus {session_bus}: {exc}")
        else:
            if address:
                return address
            tried.append(f"org.a11y.Bus.GetAddress on session bus {session_bus}: empty answer")
    else:
        tried.append("org.a11y.Bus.GetAddress on the session bus: no session bus address given")

    raise A11yBusNotFound(
        f"no AT-SPI accessibility bus found for display {display} "
        "(is at-spi-bus-launcher running for it?); tried: " + "; ".join(tried)
    )


def _read_root_property(display: str, prop: str) -> str:
    from Xlib import X
    from Xlib import display as xdisplay

    disp = xdisplay.Display(display)
    try:
        atom = disp.intern_atom(prop, only_if_exists=True)
        if atom == X.NONE:
            return ""
        value = disp.screen().root.get_full_property(atom, X.AnyPropertyType)
        if value is None:
            return ""
        raw = value.value
        if isinstance(raw, str):
            return raw.strip("\0 \n")
        return bytes(raw).decode("utf-8", "replace").strip("\0 \n")
    finally:
        disp.close()


# --------------------------------------------------------------------------------------------
# A minimal pipelining D-Bus client
# --------------------------------------------------------------------------------------------


def _connect_address(address: str, timeout: float) -> socket.socket:
    """Open a stream socket to the first reachable entry of a D-Bus address list."""
    errors: list[str] = []
    for entry in address.split(";"):
        entry = entry.strip()
        if not entry:
            continue
        transport, _, rest = entry.partition(":")
        params = {}
        for item in rest.split(","):
            key, sep, value = item.partition("=")
            if sep:
                params[key] = unquote_to_bytes(value)
        try:
            if transport == "unix":
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                if "path" in params:
                    target: Any = params["path"]
                elif "abstract" in params:
                    target = b"\0" + params["abstract"]
                else:
                    raise A11yError(f"unsupported unix address (no path/abstract): {entry}")
                try:
                    sock.connect(target)
                except OSError:
                    sock.close()
                    raise
                return sock
            if transport == "tcp":
                host = params.get("host", b"localhost").decode()
                port = int(params.get("port", b"0"))
                return socket.create_connection((host, port), timeout=timeout)
            errors.append(f"{entry}: unsupported transport {transport!r}")
        except OSError as exc:
            errors.append(f"{entry}: {exc}")
    raise A11yError(f"cannot connect to D-Bus address {address!r}: " + "; ".join(errors))


def _pad(n: int, align: int) -> int:
    return (align - n % align) % align


def _marshal_string(buf: bytearray, value: str, sig_char: str) -> None:
    data = value.encode("utf-8")
    if sig_char == "g":
        buf.append(len(data))
    else:
        buf.extend(b"\0" * _pad(len(buf), 4))
        buf.extend(struct.pack("<I", len(data)))
    buf.extend(data)
    buf.append(0)


def _marshal_body(signature: str, args: tuple) -> bytes:
    """Marshal the few flat argument lists this module sends (s, u, i)."""
    buf = bytearray()
    for sig_char, value in zip(signature, args, strict=True):
        if sig_char in "so":
            _marshal_string(buf, value, sig_char)
        elif sig_char in "ui":
            buf.extend(b"\0" * _pad(len(buf), 4))
            buf.extend(struct.pack("<I" if sig_char == "u" else "<i", value))
        elif sig_char == "b":
            buf.extend(b"\0" * _pad(len(buf), 4))
            buf.extend(struct.pack("<I", 1 if value else 0))
        else:
            raise ValueError(f"cannot marshal argument type {sig_char!r}")
    return bytes(buf)


def _header_prefix(dest: str | None, iface: str, member: str, signature: str) -> bytes:
    """Marshalled header fields except the object path, padded to 8 bytes.

    The path goes last (field order is free in D-Bus), so this prefix can be cached per kind of
    call and only the path is marshalled per node.
    """
    fields = bytearray()
    for code, sig_char, value in (
        (2, "s", iface), (3, "s", member), (6, "s", dest or ""), (8, "g", signature)
    ):
        if (code == 8 and not signature) or (code == 6 and dest is None):
            continue
        fields.extend(b"\0" * _pad(len(fields), 8))
        fields.extend(bytes((code, 1, ord(sig_char), 0)))
        _marshal_string(fields, value, sig_char)
    fields.extend(b"\0" * _pad(len(fields), 8))
    return bytes(fields)


_PACK_HEADER = struct.Struct("<4sIII").pack
_PACK_U32 = struct.Struct("<I").pack
_ZEROS = tuple(b"\0" * i for i in range(9))


def _marshal_call(serial: int, prefix: bytes, path: str, body: bytes) -> bytes:
    encoded = path.encode()
    # Field (1, 'o', path): code, signature "o", then the 4-aligned length-prefixed string.
    fields_len = len(prefix) + 8 + len(encoded) + 1
    return b"".join(
        (
            _PACK_HEADER(b"l\x01\x00\x01", len(body), serial, fields_len),
            prefix,
            b"\x01\x01o\x00",
            _PACK_U32(len(encoded)),
            encoded,
            b"\0" * (1 + _pad(fields_len, 8)),
            body,
        )
    )


_BODY_TYPES: dict[str, Any] = {}
_U32 = struct.Struct("<I").unpack_from
_EXTENTS = struct.Struct("<4i").unpack_from


def _fast_au(data: bytes) -> tuple:
    (n,) = _U32(data, 0)
    return (list(struct.unpack_from("<%dI" % (n // 4), data, 4)),)


def _fast_u(data: bytes) -> tuple:
    return _U32(data, 0)


def _fast_extents(data: bytes) -> tuple:
    return (_EXTENTS(data, 0),)


def _fast_s(data: bytes) -> tuple:
    (n,) = _U32(data, 0)
    return (data[4 : 4 + n].decode("utf-8", "replace"),)


def _fast_v(data: bytes) -> tuple:
    if data[:3] != b"\x01s\x00":
        raise _NotFast
    (n,) = _U32(data, 4)
    return (("s", data[8 : 8 + n].decode("utf-8", "replace")),)


def _fast_refs(data: bytes) -> tuple:
    (total,) = _U32(data, 0)
    pos, end, out = 8, 8 + total, []
    while pos < end:
        pos += -pos % 8
        (n,) = _U32(data, pos)
        bus = data[pos + 4 : pos + 4 + n].decode()
        pos += 5 + n
        pos += -pos % 4
        (n,) = _U32(data, pos)
        out.append((bus, data[pos + 4 : pos + 4 + n].decode()))
        pos += 5 + n
    return (out,)


class _NotFast(Exception):
    pass


# Hand-written little-endian decoders for the replies the walk receives by the thousand;
# jeepney's generic parser handles everything else.
_FAST_BODIES = {
    "au": _fast_au,
    "u": _fast_u,
    "(iiii)": _fast_extents,
    "s": _fast_s,
    "v": _fast_v,
    "a(so)": _fast_refs,
}


def _parse_body(signature: str, data: bytes, endian: Endianness) -> tuple:
    if endian is Endianness.little:
        fast = _FAST_BODIES.get(signature)
        if fast is not None:
            try:
                return fast(data)
            except _NotFast:
                pass
    parser = _BODY_TYPES.get(signature)
    if parser is None:
        parser = parse_signature(list("(" + signature + ")"))
        _BODY_TYPES[signature] = parser
    value, _ = parser.parse_data(data, 0, endian)
    return value


def _header_fields(buf: bytearray, start: int, end: int, fmt: str) -> tuple[int, str, str]:
    """reply_serial, error_name and body signature from a message's header field array.

    Every header field is a (byte code, variant) struct whose variant signature is a single
    type character, so each field starts with 4 fixed bytes. Alignment is relative to the
    message start, which need not be aligned within the read buffer.
    """
    reply_serial, error_name, signature = 0, "", ""
    u32 = "<I" if fmt == "<" else ">I"
    pos = start + 16
    while pos < end:
        pos += -(pos - start) % 8
        if pos >= end:
            break
        code = buf[pos]
        if buf[pos + 1] != 1:
            break  # not a single-type variant: malformed for a header, stop reading fields
        kind = buf[pos + 2]
        pos += 4
        if kind == 0x75:  # 'u'
            if code == 5:
                (reply_serial,) = struct.unpack_from(u32, buf, pos)
            pos += 4
        elif kind == 0x73 or kind == 0x6F:  # 's', 'o'
            (length,) = struct.unpack_from(u32, buf, pos)
            if code == 4:
                error_name = buf[pos + 4 : pos + 4 + length].decode("utf-8", "replace")
            pos += 5 + length
        elif kind == 0x67:  # 'g'
            length = buf[pos]
            if code == 8:
                signature = buf[pos + 1 : pos + 1 + length].decode("ascii", "replace")
            pos += 2 + length
        else:
            break  # unknown field type: its size is unknown, so the rest cannot be read
    return reply_serial, error_name, signature


class _Connection:
    """A D-Bus connection that lets many calls be in flight and matches replies by serial."""

    def __init__(self, address: str, timeout: float = 2.0, is_bus: bool = True) -> None:
        self.address = address
        self.timeout = timeout
        self.is_bus = is_bus
        self.unique_name: str | None = None
        self._sock = _connect_address(address, timeout)
        self._rbuf = bytearray()
        self._wbuf = bytearray()
        self._serial = 0
        self._templates: dict[tuple, tuple[bytes, bytes]] = {}
        try:
            self._authenticate()
            # Non-blocking from here on: reads and writes happen only when select() allows.
            self._sock.setblocking(False)
            if is_bus:
                self.unique_name = self.call(
                    "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                    "Hello",
                )[0]
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> _Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    # The EXTERNAL mechanism with an empty initial response makes the daemon take our identity
    # from the socket's peer credentials. Claiming a uid (as most clients do) fails when the
    # daemon lives in a user namespace where our uid maps to a different number.
    def _authenticate(self) -> None:
        self._sock.sendall(b"\0AUTH EXTERNAL\r\n")
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._read_auth_line(deadline)
            if line.startswith(b"DATA"):
                self._sock.sendall(b"DATA\r\n")
            elif line.startswith(b"OK "):
                self._sock.sendall(b"BEGIN\r\n")
                return
            else:
                raise A11yError(
                    f"D-Bus authentication on {self.address} refused: {line.decode(errors='replace')!r}"
                )

    def _read_auth_line(self, deadline: float) -> bytes:
        while b"\r\n" not in self._rbuf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise A11yError(f"D-Bus authentication on {self.address} timed out")
            self._sock.settimeout(remaining)
            try:
                chunk = self._sock.recv(4096)
            except socket.timeout:
                continue
            if not chunk:
                raise A11yError(f"D-Bus daemon at {self.address} closed the connection during auth")
            self._rbuf.extend(chunk)
        line, _, rest = bytes(self._rbuf).partition(b"\r\n")
        self._rbuf = bytearray(rest)
        return line

    # -- sending -------------------------------------------------------------------------------
    def send(
        self, dest: str, path: str, iface: str, member: str, signature: str = "", *args: Any
    ) -> int:
        """Queue a method call; returns its serial. :meth:`poll` or :func:`_poll_many` send it.

        On a peer-to-peer connection ``dest`` is ignored (there is no bus to route by).
        """
        self._serial += 1
        key = (dest, iface, member, signature, args)
        cached = self._templates.get(key)
        if cached is None:
            body = _marshal_body(signature, args) if signature else b""
            prefix = _header_prefix(dest if self.is_bus else None, iface, member, signature)
            cached = self._templates[key] = (prefix, body)
        self._wbuf += _marshal_call(self._serial, cached[0], path, cached[1])
        return self._serial

    def send_batch(self, dest: str, path: str, kinds: tuple[str, ...]) -> int:
        """Queue one call per kind (see _CALLS) on the same object; returns the first serial.

        The hot path of the walk: the object path is encoded once, headers come from a cache.
        """
        encoded = path.encode()
        path_len = _PACK_U32(len(encoded))
        templates = self._templates
        parts: list[bytes] = []
        first = serial = self._serial + 1
        for kind in kinds:
            cached = templates.get((dest, kind))
            if cached is None:
                iface, member, signature, args = _CALLS[kind]
                body = _marshal_body(signature, args) if signature else b""
                prefix = _header_prefix(dest if self.is_bus else None, iface, member, signature)
                cached = templates[(dest, kind)] = (prefix, body)
            prefix, body = cached
            fields_len = len(prefix) + 9 + len(encoded)
            parts += (
                _PACK_HEADER(b"l\x01\x00\x01", len(body), serial, fields_len),
                prefix,
                b"\x01\x01o\x00",
                path_len,
                encoded,
                _ZEROS[1 + (-fields_len % 8)],
                body,
            )
            serial += 1
        self._serial = serial - 1
        self._wbuf += b"".join(parts)
        return first

    # -- receiving -----------------------------------------------------------------------------
    def fileno(self) -> int:
        return self._sock.fileno()

    @property
    def wants_write(self) -> bool:
        return bool(self._wbuf)

    def write_some(self) -> None:
        try:
            sent = self._sock.send(self._wbuf)
        except BlockingIOError:
            return
        del self._wbuf[:sent]

    def read_some(self) -> None:
        try:
            chunk = self._sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            raise A11yError(f"the D-Bus peer at {self.address} closed the connection")
        self._rbuf += chunk

    def poll(self, deadline: float) -> list[tuple[int, bool, Any]]:
        """Send what is queued and return the replies that arrived before ``deadline``.

        Each reply is ``(reply_serial, is_error, body)``; an error's body is a _DBusErrorReply.
        Returns an empty list on timeout. Signals and calls addressed to us are dropped.
        """
        replies, broken = _poll_many([self], deadline)
        if broken:
            raise broken[0][1]
        return [r[1:] for r in replies]

    def _parse_available(self) -> list[tuple[int, bool, Any]]:
        """Cut complete messages off the read buffer; keep replies and errors only."""
        out: list[tuple[int, bool, Any]] = []
        buf = self._rbuf
        pos = 0
        n = len(buf)
        while n - pos >= 16:
            fmt = "<" if buf[pos] == 0x6C else ">"
            msg_type = buf[pos + 1]
            body_len, _serial, fields_len = struct.unpack_from(fmt + "III", buf, pos + 4)
            header_end = pos + 16 + fields_len
            body_start = header_end + (-fields_len % 8)
            total_end = body_start + body_len
            if total_end > n:
                break
            if msg_type == 2 or msg_type == 3:  # method return, error
                reply_serial, error_name, signature = _header_fields(buf, pos, header_end, fmt)
                body: Any = ()
                if signature:
                    endian = Endianness.little if fmt == "<" else Endianness.big
                    try:
                        body = _parse_body(signature, bytes(buf[body_start:total_end]), endian)
                    except (ValueError, struct.error, IndexError, KeyError, UnicodeDecodeError) as exc:
                        body = _DBusErrorReply("blindact.BadReply", str(exc))
                        msg_type = 3
                if msg_type == 3:
                    if not isinstance(body, _DBusErrorReply):
                        text = body[0] if body and isinstance(body[0], str) else ""
                        body = _DBusErrorReply(error_name or "unknown error", text)
                    out.append((reply_serial, True, body))
                else:
                    out.append((reply_serial, False, body))
            pos = total_end
        if pos:
            del buf[:pos]
        return out

    def call(
        self, dest: str, path: str, iface: str, member: str, signature: str = "", *args: Any,
        timeout: float | None = None,
    ) -> tuple:
        """A blocking call (used for set-up; the walk itself pipelines via send/poll)."""
        serial = self.send(dest, path, iface, member, signature, *args)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            replies = self.poll(deadline)
            if not replies and time.monotonic() >= deadline:
                raise A11yError(f"{dest} {path} {iface}.{member} got no reply from {self.address}")
            for reply_serial, is_error, body in replies:
                if reply_serial == serial:
                    if is_error:
                        raise body
                    return body


def _poll_many(
    conns: list[_Connection], deadline: float
) -> tuple[list[tuple[_Connection, int, bool, Any]], list[tuple[_Connection, Exception]]]:
    """Pump several connections until some replies are parsed or ``deadline`` passes.

    Returns ``(replies, broken)``: replies as ``(conn, reply_serial, is_error, body)``, and the
    connections that failed with their error (they are not polled again by this call).
    """
    broken: list[tuple[_Connection, Exception]] = []
    live = list(conns)
    while True:
        replies = [(c, *r) for c in live for r in c._parse_available()]
        if replies or not live:
            return replies, broken
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return replies, broken
        writers = [c for c in live if c.wants_write]
        try:
            readable, writable, _ = select.select(live, writers, [], remaining)
        except (OSError, ValueError):
            # A closed socket: find it and report it rather than failing every connection.
            readable, writable = [], []
            for c in live:
                if c._sock.fileno() < 0:
                    broken.append((c, A11yError(f"connection to {c.address} is closed")))
            live = [c for c in live if c._sock.fileno() >= 0]
            continue
        for c in writable:
            try:
                c.write_some()
            except OSError as exc:
                broken.append((c, A11yError(f"writing to {c.address} failed: {exc}")))
        for c in readable:
            try:
                c.read_some()
            except (OSError, A11yError) as exc:
                if not isinstance(exc, A11yError):
                    exc = A11yError(f"reading from {c.address} failed: {exc}")
                broken.append((c, exc))
        if broken:
            dead = {id(c) for c, _ in broken}
            live = [c for c in live if id(c) not in dead]
            replies = [(c, *r) for c in live for r in c._parse_available()]
            return replies, broken


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


_STATE_ONLY = ("state",)
_DETAILS = ("role", "name", "children", "extents")
_DESCRIPTION = ("description",)
_TEXT = ("text",)
_VALUE = ("value",)


class _Walk:
    """One snapshot's state machine: requests in flight, keyed by serial."""

    def __init__(
        self,
        conn: _Connection,
        routes: dict[str, _Connection],
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
        self.abandoned: set[str] = set()
        self.seen: set[tuple[str, str]] = set()
        self.roots: list[_Raw] = []
        self.count = 0
        self.requests = 0
        self.truncated = False
        self.errors: dict[str, int] = {}
        self.notes: list[str] = []

    # -- requests ------------------------------------------------------------------------------
    def _send(self, raw: _Raw, kinds: tuple[str, ...]) -> None:
        bus = raw.bus
        if bus in self.abandoned:
            return
        conn = self.routes.get(bus, self.conn)
        serial = conn.send_batch(bus, raw.path, kinds)
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
            self._send(raw, ("state", "role", "name", "children"))
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
                self._send(raw, _DETAILS)
        elif kind == "role":
            raw.role = role = body[0]
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
            self._descend(raw, body[0])
        elif kind == "extents":
            box = body[0]
            raw.bbox = (int(box[0]), int(box[1]), int(box[2]), int(box[3]))
        elif kind == "text":
            text = body[0].replace(_OBJECT_REPLACEMENT, " ")
            text = " ".join(text.split()) if raw.role not in _VALUE_TEXT_ROLES else text
            raw.text = text[:_MAX_TEXT]
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
            replies, broken = _poll_many(list(conns.values()), wake)
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

    def __init__(self, bus_address: str, timeout: float = 2.0, peer_to_peer: bool = True) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.bus_address = bus_address
        self.timeout = timeout
        self.peer_to_peer = peer_to_peer
        self.last_notes: list[str] = []
        self.last_stats: dict[str, Any] = {}
        # Application unique bus name -> its direct connection, or None when it has none.
        # Unique names are never reused on a bus, so an entry cannot point at another app.
        self._peers: dict[str, _Connection | None] = {}
        try:
            self._conn: _Connection | None = _Connection(bus_address, timeout)
        except (OSError, A11yError) as exc:
            raise A11yError(f"cannot open the accessibility bus {bus_address}: {exc}") from exc

    def snapshot(self, max_nodes: int = 3000) -> list[A11yNode]:
        """Walk every application's visible tree; at most ``max_nodes`` objects are visited."""
        start = time.monotonic()
        try:
            walk = self._walk(max_nodes)
        except (A11yError, OSError) as first:
            # The bus connection may have died (bus restarted, daemon closed us): retry once on a
            # fresh connection, otherwise report the original problem.
            self._drop_connections()
            try:
                walk = self._walk(max_nodes)
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
            "direct": sum(1 for r in walk.roots if walk.routes.get(r.bus) is not None),
            "elapsed_ms": (time.monotonic() - start) * 1000.0,
            "truncated": walk.truncated,
        }
        return nodes

    def _walk(self, max_nodes: int) -> _Walk:
        deadline = time.monotonic() + self.timeout
        if self._conn is None:
            self._conn = _Connection(self.bus_address, self.timeout)
        conn = self._conn
        try:
            apps = conn.call(
                _REGISTRY, _ROOT_PATH, _IFACE_ACCESSIBLE, "GetChildren", timeout=self.timeout
            )[0]
        except _DBusErrorReply as exc:
            raise A11yError(
                f"the AT-SPI registry on {self.bus_address} failed to list applications: {exc}"
            ) from exc
        apps = [(bus, path) for bus, path in apps if bus and path != _NULL_PATH]
        notes: list[str] = []
        routes = self._routes(conn, [bus for bus, _ in apps], deadline, notes) if self.peer_to_peer else {}
        walk = _Walk(conn, routes, max_nodes, self.timeout, deadline)
        walk.notes.extend(notes)
        walk.run(apps)
        return walk

    def _routes(
        self, conn: _Connection, buses: list[str], deadline: float, notes: list[str]
    ) -> dict[str, _Connection]:
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
                        peer = _Connection(address, min(self.timeout, 1.0), is_bus=False)
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


# --------------------------------------------------------------------------------------------
# Text form for language models, and reading it back
# --------------------------------------------------------------------------------------------

_HIDDEN_STATES = frozenset(("enabled", "selectable", "checkable", "expandable", "active"))


def _is_wrapper(node: A11yNode) -> bool:
    return (
        node.role in _WRAPPER_ROLES
        and not node.name
        and not node.text
        and not node.interactive
    )


def serialize(nodes: list[A11yNode]) -> str:
    """One line per node, indented by depth, e.g. ``[12] push button "Post comment" (focusable)
    @640,410 96x32`` (``@x,y`` is the top-left corner in screen pixels, then width x height).

    Unnamed wrapper sections/panels with a single child, and empty leaf wrappers, are left out;
    their children move up a level. Interactive nodes are always kept. ``disabled`` and the
    other reported states appear in parentheses; text content as ``value="..."``.
    """
    by_id = {n.id: n for n in nodes}
    skipped: set[int] = set()
    merged: dict[int, str] = {}
    for node in nodes:
        kids = [by_id[c] for c in node.children if c in by_id]
        # Runs of text pieces (Chromium's "static" children of a paragraph) read better as the
        # parent's value than as one line per piece.
        if kids and not node.text and all(k.role == "static" and not k.children for k in kids):
            joined = " ".join(" ".join(k.name for k in kids).split())
            joined = re.sub(r" ([.,;:!?])", r"\1", joined)
            if joined and joined != node.name:
                merged[node.id] = joined[:_MAX_TEXT]
            skipped.update(k.id for k in kids)
        elif node.role == "static" and not node.children and not _has_words(node.name):
            skipped.add(node.id)  # list bullets and stray punctuation
    # Children first, so a wrapper whose only child was itself dropped counts as empty.
    for node in reversed(nodes):
        if node.id in skipped or not _is_wrapper(node) or node.id in merged:
            continue
        kept_children = [c for c in node.children if c not in skipped]
        if len(kept_children) <= 1:
            skipped.add(node.id)

    lines: list[str] = []
    level: dict[int, int] = {}
    for node in nodes:
        parent = node.parent
        while parent is not None and parent in skipped:
            parent = by_id[parent].parent if parent in by_id else None
        if node.id in skipped:
            continue
        depth = level[parent] + 1 if parent is not None and parent in level else 0
        level[node.id] = depth
        lines.append("  " * depth + _format_node(node, merged.get(node.id)))
    return "\n".join(lines)


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _format_node(node: A11yNode, merged_text: str | None = None) -> str:
    parts = [f"[{node.id}] {node.role}"]
    if node.name:
        parts.append(_quote(node.name))
    states = [s for s in node.states if s not in _HIDDEN_STATES]
    if "disabled" in states and not node.interactive:
        states.remove("disabled")
    if states:
        parts.append("(" + ", ".join(states) + ")")
    text = node.text if node.text is not None else merged_text
    if text and text != node.name:
        parts.append("value=" + _quote(text))
    if node.description:
        parts.append("desc=" + _quote(node.description))
    if node.bbox is not None and node.bbox[2] >= 0 and node.bbox[3] >= 0:
        # toolkits report (-1, -1, -1, -1) for "no geometry" (e.g. a tab strip entry): leave it out
        x, y, w, h = node.bbox
        parts.append(f"@{x},{y} {w}x{h}")
    return " ".join(parts)


_LINE_HEAD = re.compile(
    r"^(?P<indent> *)\[(?P<id>\d+)\] (?P<role>[a-z0-9 -]+?)(?= \"| \(| value=| desc=| @|$)"
)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BBOX = re.compile(r"^@(-?\d+),(-?\d+) (-?\d+)x(-?\d+)$")


def parse_serialized(text: str) -> list[dict[str, Any]]:
    """Read :func:`serialize` output back: one dict per line with id, depth, role, name, states,
    value, description, bbox and center (None when the line has no geometry)."""
    out: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        head = _LINE_HEAD.match(line)
        if head is None:
            raise ValueError(f"line {lineno} is not in serialize() format: {line!r}")
        item: dict[str, Any] = {
            "id": int(head["id"]),
            "depth": len(head["indent"]) // 2,
            "role": head["role"],
            "name": "",
            "states": [],
            "value": None,
            "description": "",
            "bbox": None,
            "center": None,
        }
        rest = line[head.end():].lstrip(" ")
        if rest.startswith('"'):
            item["name"], rest = _take_string(rest, lineno)
        if rest.startswith("("):
            close = rest.index(")")
            item["states"] = [s.strip() for s in rest[1:close].split(",") if s.strip()]
            rest = rest[close + 1 :].lstrip(" ")
        if rest.startswith("value="):
            item["value"], rest = _take_string(rest[len("value=") :], lineno)
        if rest.startswith("desc="):
            item["description"], rest = _take_string(rest[len("desc=") :], lineno)
        if rest:
            box = _BBOX.match(rest)
            if box is None:
                raise ValueError(f"line {lineno}: cannot read {rest!r}")
            x, y, w, h = (int(v) for v in box.groups())
            item["bbox"] = (x, y, w, h)
            item["center"] = (x + w // 2, y + h // 2)
        out.append(item)
    return out


def _take_string(rest: str, lineno: int) -> tuple[str, str]:
    match = _JSON_STRING.match(rest)
    if match is None:
        raise ValueError(f"line {lineno}: expected a quoted string at {rest[:40]!r}")
    return json.loads(match.group(0)), rest[match.end():].lstrip(" ")


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
