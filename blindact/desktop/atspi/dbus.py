"""The wire layer of the accessibility reader: a minimal pipelining D-Bus client, in pure Python.

Only ``jeepney`` (D-Bus types) and ``python-xlib`` (to find the bus) are needed, so the reader runs
in any virtualenv and inside containers, with no PyGObject/pyatspi.

A D-Bus round trip costs far more than the work an application does to answer one call, so a
:class:`Connection` lets hundreds of calls be in flight and matches replies by serial; the walk
in :mod:`blindact.desktop.atspi.walker` drives it. Nothing here knows the AT-SPI tree.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_to_bytes

from jeepney.low_level import Endianness, parse_signature

# One method call: interface, member, argument signature, arguments.
CallSpec = tuple[str, str, str, tuple]


class A11yError(RuntimeError):
    """The accessibility bus could not be reached or spoke something unexpected."""


class A11yBusNotFound(A11yError):
    """No accessibility bus address could be found for a display."""


class DBusErrorReply(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name



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
            with Connection(session_bus, timeout=2.0) as conn:
                reply = conn.call(
                    "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress"
                )
            address = reply[0] if reply else ""
        except (A11yError, DBusErrorReply, OSError) as exc:
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


class Connection:
    """A D-Bus connection that lets many calls be in flight and matches replies by serial."""

    def __init__(self, address: str, timeout: float = 2.0, is_bus: bool = True,
                 opener: Callable[[str, float], socket.socket] | None = None) -> None:
        """opener: opens the socket of an address (default: any address it names); a desktop passes one
        that refuses addresses outside its runtime folder (blindact.desktop.connector)."""
        self.address = address
        self.timeout = timeout
        self.is_bus = is_bus
        self.unique_name: str | None = None
        try:
            self._sock = (opener or _connect_address)(address, timeout)
        except OSError as exc:
            raise A11yError(f"cannot connect to D-Bus address {address!r}: {exc}") from exc
        self._rbuf = bytearray()
        self._wbuf = bytearray()
        self._serial = 0
        self._templates: dict[tuple[str, CallSpec], tuple[bytes, bytes]] = {}
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

    def __enter__(self) -> Connection:
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
        """Queue a method call; returns its serial. :meth:`poll` or :func:`poll_many` send it.

        On a peer-to-peer connection ``dest`` is ignored (there is no bus to route by).
        """
        return self.send_batch(dest, path, ((iface, member, signature, args),))

    def send_batch(self, dest: str, path: str, calls: tuple[CallSpec, ...]) -> int:
        """Queue the calls on the same object, in order; returns the first serial (the others follow).

        The hot path of the walk: the object path is encoded once, headers come from a cache.
        """
        encoded = path.encode()
        path_len = _PACK_U32(len(encoded))
        templates = self._templates
        parts: list[bytes] = []
        first = serial = self._serial + 1
        for call in calls:
            cached = templates.get((dest, call))
            if cached is None:
                iface, member, signature, args = call
                body = _marshal_body(signature, args) if signature else b""
                prefix = _header_prefix(dest if self.is_bus else None, iface, member, signature)
                cached = templates[(dest, call)] = (prefix, body)
            prefix, body = cached
            # The path field goes last (field order is free in D-Bus): code 1, signature "o",
            # then the 4-aligned length-prefixed string, padded so the body starts 8-aligned.
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

        Each reply is ``(reply_serial, is_error, body)``; an error's body is a DBusErrorReply.
        Returns an empty list on timeout. Signals and calls addressed to us are dropped.
        """
        replies, broken = poll_many([self], deadline)
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
                        body = DBusErrorReply("blindact.BadReply", str(exc))
                        msg_type = 3
                if msg_type == 3:
                    if not isinstance(body, DBusErrorReply):
                        text = body[0] if body and isinstance(body[0], str) else ""
                        body = DBusErrorReply(error_name or "unknown error", text)
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


def poll_many(
    conns: list[Connection], deadline: float
) -> tuple[list[tuple[Connection, int, bool, Any]], list[tuple[Connection, Exception]]]:
    """Pump several connections until some replies are parsed or ``deadline`` passes.

    Returns ``(replies, broken)``: replies as ``(conn, reply_serial, is_error, body)``, and the
    connections that failed with their error (they are not polled again by this call).
    """
    broken: list[tuple[Connection, Exception]] = []
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

