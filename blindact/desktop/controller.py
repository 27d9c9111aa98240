"""Acts on one X display: XTest input, screen grabs, settling, and the window list.

In-process and subprocess-free: one python-xlib connection for input and window queries, one mss
(XShm) grabber for the screen. The local provider uses it directly; inside a container the
controller server wraps the same class.
"""

from __future__ import annotations

import threading
import time

import mss
import numpy as np
from Xlib import X, XK, Xatom
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError, DisplayConnectionError, XError
from Xlib.ext import xtest
from Xlib.protocol import event

from blindact.actions import (
    Action,
    ActionError,
    Click,
    Drag,
    Key,
    KeyDown,
    KeyUp,
    MouseDown,
    MouseUp,
    MoveTo,
    Scroll,
    TypeText,
    Wait,
    check_on_screen,
)
from blindact.actions.keys import keysym_name
from blindact.desktop.xstate import XState

_BUTTONS = {"left": 1, "middle": 2, "right": 3}
_SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
_SHIFTED_INDEX = 1


class Controller:
    def __init__(self, display: int, width: int, height: int):
        self.display_name = f":{display}"
        self.width = width
        self.height = height
        self._lock = threading.RLock()
        self._grabber: mss.base.MSSBase | None = None
        self._grabber_thread: int | None = None
        self.reconnects = 0
        self._connect()

    def _connect(self) -> None:
        """(Re)open the X connection. Any client of the display can cut ours (XKillClient on one of our
        resources); the next call then reconnects instead of failing the episode."""
        self._x = xdisplay.Display(self.display_name)
        self._root = self._x.screen().root
        self._atoms: dict[str, int] = {}
        self._spare_keycodes = self._find_spare_keycodes()
        self._remapped: dict[int, int] = {}  # keysym -> spare keycode it was bound to
        self._shift = self._keycode_for(XK.string_to_keysym("Shift_L"))

    def _reconnect(self) -> None:
        try:
            self._x.close()
        except Exception:  # noqa: BLE001 - the connection is already broken
            pass
        self._drop_grabber()
        self._connect()
        self.reconnects += 1

    def _drop_grabber(self) -> None:
        if self._grabber is not None:
            try:
                self._grabber.close()
            except Exception:  # noqa: BLE001 - a grabber on a cut connection
                pass
            self._grabber = None

    def _retrying(self, call):
        """call(), once more on a fresh connection when the server cut ours."""
        with self._lock:
            try:
                return call()
            except (ConnectionClosedError, DisplayConnectionError, OSError):
                self._reconnect()
                return call()

    # ---------------------------------------------------------------- screen
    def _mss(self) -> mss.base.MSSBase:
        # mss handles are bound to the thread that created them
        ident = threading.get_ident()
        if self._grabber is None or self._grabber_thread != ident:
            if self._grabber is not None:
                self._grabber.close()
            self._grabber = mss.MSS(display=self.display_name)
            self._grabber_thread = ident
        return self._grabber

    def grab_raw(self) -> bytes:
        """The screen as raw BGRA bytes (cheap: for change detection)."""
        region = {"left": 0, "top": 0, "width": self.width, "height": self.height}
        try:
            shot = self._mss().grab(region)
        except Exception:  # noqa: BLE001 - mss raises its own types for a cut connection: one fresh try
            self._drop_grabber()
            shot = self._mss().grab(region)
        return bytes(shot.raw)

    def screenshot(self) -> np.ndarray:
        raw = self.grab_raw()
        return _bgra_to_rgb(raw, self.width, self.height)

    def settle(self, max_wait: float = 1.5, quiet: float = 0.05, first_delay: float = 0.02,
               interval: float = 0.015) -> tuple[float, bytes]:
        """Wait until the screen has not changed for `quiet` seconds, at most `max_wait`.

        Returns (seconds waited, last frame as raw BGRA) so the caller needs no extra grab.
        """
        start = time.monotonic()
        time.sleep(first_delay)
        last = self.grab_raw()
        stable_since = time.monotonic()
        while True:
            now = time.monotonic()
            if now - stable_since >= quiet or now - start >= max_wait:
                return now - start, last
            time.sleep(interval)
            frame = self.grab_raw()
            if frame != last:
                last = frame
                stable_since = time.monotonic()

    # ---------------------------------------------------------------- input
    def execute(self, action: Action) -> None:
        check_on_screen(action, self.width, self.height)
        with self._lock:
            try:
                self._execute(action)
                self._x.sync()
            except XError as exc:
                raise ActionError(f"{action.type}: the X server refused it: {exc}") from exc
            except (ConnectionClosedError, DisplayConnectionError, OSError) as exc:
                # the connection was cut mid-action: reconnect for what follows, and say this one may
                # not have been done in full
                self._reconnect()
                raise ActionError(f"{action.type}: the X connection was cut while doing it ({exc}); "
                                  "reconnected") from exc

    def _execute(self, action: Action) -> None:
        if isinstance(action, MoveTo):
            self._move(action.x, action.y)
        elif isinstance(action, Click):
            if action.x is not None:
                self._move(action.x, action.y)
            for _ in range(action.count):
                self._button(_BUTTONS[action.button], True)
                self._button(_BUTTONS[action.button], False)
        elif isinstance(action, (MouseDown, MouseUp)):
            if action.x is not None:
                self._move(action.x, action.y)
            self._button(_BUTTONS[action.button], isinstance(action, MouseDown))
        elif isinstance(action, Drag):
            (x0, y0), rest = action.path[0], action.path[1:]
            self._move(x0, y0)
            self._button(_BUTTONS[action.button], True)
            self._x.sync()
            for x, y in rest:
                self._interpolate_to(x, y)
            self._button(_BUTTONS[action.button], False)
        elif isinstance(action, Scroll):
            if action.x is not None:
                self._move(action.x, action.y)
            for amount, neg, pos in ((action.dy, "up", "down"), (action.dx, "left", "right")):
                button = _SCROLL_BUTTONS[pos if amount > 0 else neg]
                for _ in range(abs(amount)):
                    self._button(button, True)
                    self._button(button, False)
        elif isinstance(action, TypeText):
            self._type(action.text)
        elif isinstance(action, Key):
            codes = [self._key_for(k) for k in action.keys]
            for code, shifted in codes:
                if shifted:
                    self._key(self._shift, True)
                self._key(code, True)
                self._chord_pause(len(codes))
            for code, shifted in reversed(codes):
                self._key(code, False)
                if shifted:
                    self._key(self._shift, False)
                self._chord_pause(len(codes))
        elif isinstance(action, (KeyDown, KeyUp)):
            code, _ = self._key_for(action.key)
            self._key(code, isinstance(action, KeyDown))
        elif isinstance(action, Wait):
            time.sleep(action.seconds)
        else:
            raise ActionError(f"{action.type} is not an action the desktop performs")

    def _move(self, x: int, y: int) -> None:
        xtest.fake_input(self._x, X.MotionNotify, x=int(x), y=int(y))

    def _interpolate_to(self, x: int, y: int, steps: int = 8) -> None:
        # apps (and drag-and-drop) only see a drag when the pointer passes through points on the way
        pointer = self._root.query_pointer()
        x0, y0 = pointer.root_x, pointer.root_y
        for i in range(1, steps + 1):
            self._move(round(x0 + (x - x0) * i / steps), round(y0 + (y - y0) * i / steps))
            self._x.sync()
            time.sleep(0.005)

    def _button(self, button: int, down: bool) -> None:
        xtest.fake_input(self._x, X.ButtonPress if down else X.ButtonRelease, button)

    def _key(self, keycode: int, down: bool) -> None:
        xtest.fake_input(self._x, X.KeyPress if down else X.KeyRelease, keycode)

    def _chord_pause(self, n_keys: int) -> None:
        # a chord's keys a few ms apart, as xdotool sends them: a window manager grabs the keyboard when
        # it sees Alt+Tab and must still see Alt go up afterwards, or it never ends its window switch
        if n_keys > 1:
            self._x.sync()
            time.sleep(0.012)

    def _type(self, text: str) -> None:
        for char in text:
            if char == "\n":
                code, shifted = self._keycode_for(XK.string_to_keysym("Return")), False
            elif char == "\t":
                code, shifted = self._keycode_for(XK.string_to_keysym("Tab")), False
            else:
                code, shifted = self._char_keycode(char)
            if shifted:
                self._key(self._shift, True)
            self._key(code, True)
            self._key(code, False)
            if shifted:
                self._key(self._shift, False)

    def _key_for(self, canonical: str) -> tuple[int, bool]:
        if len(canonical) == 1:
            return self._char_keycode(canonical)
        keysym = XK.string_to_keysym(keysym_name(canonical))
        if keysym == X.NoSymbol:
            raise ActionError(f"key {canonical!r} has no X keysym")
        return self._keycode_for(keysym), False

    def _char_keycode(self, char: str) -> tuple[int, bool]:
        keysym = _char_keysym(char)
        for keycode, index in self._x.keysym_to_keycodes(keysym):
            if index in (0, _SHIFTED_INDEX):
                return keycode, index == _SHIFTED_INDEX
        return self._remap(keysym), False

    def _keycode_for(self, keysym: int) -> int:
        for keycode, index in self._x.keysym_to_keycodes(keysym):
            if index == 0:
                return keycode
        return self._remap(keysym)

    def _find_spare_keycodes(self) -> list[int]:
        first = self._x.display.info.min_keycode
        count = self._x.display.info.max_keycode - first + 1
        mapping = self._x.get_keyboard_mapping(first, count)
        return [first + i for i, syms in enumerate(mapping) if not any(syms)]

    def _remap(self, keysym: int) -> int:
        # characters without a key on the keymap (é, €, emoji) get bound to a spare keycode, as
        # xdotool does; bindings are reused and recycled round-robin
        if keysym in self._remapped:
            return self._remapped[keysym]
        if not self._spare_keycodes:
            raise ActionError(f"no free keycode left to type keysym 0x{keysym:x}")
        keycode = self._spare_keycodes.pop(0)
        self._spare_keycodes.append(keycode)
        for old, code in list(self._remapped.items()):
            if code == keycode:
                del self._remapped[old]
        self._x.change_keyboard_mapping(keycode, [(keysym, keysym)])
        self._x.sync()
        time.sleep(0.01)  # clients must see MappingNotify before the key event
        self._remapped[keysym] = keycode
        return keycode

    # ---------------------------------------------------------------- windows
    def _atom(self, name: str) -> int:
        if name not in self._atoms:
            self._atoms[name] = self._x.intern_atom(name)
        return self._atoms[name]

    def windows(self) -> list[dict]:
        """Top-level windows the window manager manages: title, class, geometry, focused."""
        return self._retrying(self._windows)

    def _windows(self) -> list[dict]:
        with self._lock:
            prop = self._root.get_full_property(self._atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
            active = self._root.get_full_property(self._atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
            active_id = int(active.value[0]) if active and len(active.value) else 0
            result = []
            for wid in (prop.value if prop else []):
                try:
                    win = self._x.create_resource_object("window", int(wid))
                    name = win.get_full_property(self._atom("_NET_WM_NAME"), self._atom("UTF8_STRING"))
                    title = name.value.decode("utf-8", "replace") if name else (win.get_wm_name() or "")
                    wm_class = win.get_wm_class() or ("", "")
                    geom = win.get_geometry()
                    origin = win.translate_coords(self._root, 0, 0)
                    attrs = win.get_attributes()
                except XError:
                    continue  # closed while we looked
                if attrs.map_state != X.IsViewable:
                    continue
                result.append({
                    "id": int(wid), "title": title if isinstance(title, str) else title.decode(),
                    "class": wm_class[1] if len(wm_class) > 1 else "",
                    "x": -origin.x, "y": -origin.y, "width": geom.width, "height": geom.height,
                    "focused": int(wid) == active_id,
                })
            return result

    def set_background(self, rgb: int) -> None:
        """Paint the desktop (the root window) one colour, as a desktop environment's wallpaper would."""
        def paint() -> None:
            self._root.change_attributes(background_pixel=rgb)
            self._root.clear_area(0, 0, self.width, self.height)
            self._x.sync()

        self._retrying(paint)

    def activate(self, window_id: int) -> None:
        """Ask the window manager to raise and focus a window (EWMH _NET_ACTIVE_WINDOW)."""
        def send() -> None:
            win = self._x.create_resource_object("window", window_id)
            message = event.ClientMessage(window=win, client_type=self._atom("_NET_ACTIVE_WINDOW"),
                                          data=(32, [2, X.CurrentTime, 0, 0, 0]))
            self._root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            self._x.sync()

        self._retrying(send)

    def kill_client(self, window_id: int) -> None:
        """Disconnect the X client that owns a window (XKillClient): its windows go at once and the
        program, having lost its display, exits. For a window whose program is not one we started
        (an app that handed its window to an instance activated over D-Bus)."""
        with self._lock:
            try:
                self._x.create_resource_object("window", window_id).kill_client()
                self._x.sync()
            except XError:
                pass  # already gone

    def capture_state(self, background: int) -> XState:
        """The X server's state as it is now (see blindact.desktop.xstate)."""
        return self._retrying(lambda: XState.capture(self._x, background))

    def restore_state(self, state: XState, keep_pids: set[int]) -> list[str]:
        """Put the X server back as `state` (disconnecting every client but ours and `keep_pids`'); returns
        what was changed. Our own connections are reopened: the agent may have cut them."""
        import os

        with self._lock:
            self._reconnect()
            changed = state.restore(self._x, keep_pids, os.getpid())
            if "keyboard mapping" in changed:
                # this connection's keysym table was read before the restore (with the agent's keymap, or our
                # own spare-key bindings the restore just removed): read it again, or a letter typed next
                # goes to a keycode that no longer holds it
                self._reconnect()
            self._remapped.clear()
            self._spare_keycodes = self._find_spare_keycodes()
            return changed

    def root_property(self, name: str) -> str | None:
        prop = self._retrying(lambda: self._root.get_full_property(self._atom(name), X.AnyPropertyType))
        if not prop:
            return None
        value = prop.value
        return value.decode() if isinstance(value, bytes) else str(value)

    def close(self) -> None:
        with self._lock:
            if self._grabber is not None:
                try:
                    self._grabber.close()
                except Exception:  # noqa: BLE001 - the X server may already be gone at close
                    pass
                self._grabber = None
            try:
                self._x.close()
            except Exception:  # noqa: BLE001 - same: closing a dead connection
                pass


def _char_keysym(char: str) -> int:
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code  # Latin-1 keysyms equal their code points
    return 0x01000000 | code


def _bgra_to_rgb(raw: bytes, width: int, height: int) -> np.ndarray:
    frame = np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 4)
    return np.ascontiguousarray(frame[:, :, 2::-1])
