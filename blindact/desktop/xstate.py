"""The X server's own state, which outlives every client: saved when a desktop starts, put back at
every reset.

The X server (Xvfb) is the one part of a desktop a reset keeps running, and any client can change it
for everyone after it: remap the keyboard (xmodmap) or swap the mouse buttons, blank the screen (xset s),
change the screen size (xrandr), the font path or the access list, leave text on the clipboard, put
properties on the root window (AT_SPI_BUS, which tells everyone where the accessibility bus is), or
keep windows and pixmaps alive after it exits (XSetCloseDownMode RetainPermanent). `XState.capture`
records what a fresh desktop has; `XState.restore` kills every X client but the ones named, drops
retained resources, and puts the rest back, reporting what it had to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from Xlib import X, Xatom
from Xlib.protocol import request

# root-window properties the window manager owns and rewrites as windows come and go
_SET_BY_ANY_GTK_APP = frozenset({"GDK_VISUALS"})  # removed as any other, but not a sign of anything
_WM_OWNED_PREFIXES = ("_NET_", "_OB_")
_SELECTIONS = ("PRIMARY", "SECONDARY", "CLIPBOARD")


@dataclass
class XState:
    properties: dict[str, tuple[int, int, object]] = field(default_factory=dict)  # name -> (type, format, value)
    keyboard: list[tuple[int, ...]] = field(default_factory=list)
    first_keycode: int = 8
    modifiers: list[list[int]] = field(default_factory=list)
    pointer: list[int] = field(default_factory=list)
    screen_saver: tuple[int, int, int, int] = (0, 0, 0, 0)
    font_path: list[str] = field(default_factory=list)
    size: tuple[int, int] = (0, 0)
    access_enabled: bool = False
    background: int = 0

    @classmethod
    def capture(cls, display, background: int) -> "XState":
        root = display.screen().root
        state = cls(background=background)
        for atom in root.list_properties():
            name = display.get_atom_name(atom)
            prop = root.get_full_property(atom, X.AnyPropertyType)
            if prop is not None:
                state.properties[name] = (prop.property_type, prop.format, prop.value)
        info = display.display.info
        state.first_keycode = info.min_keycode
        state.keyboard = [tuple(syms) for syms in display.get_keyboard_mapping(info.min_keycode,
                                                                               info.max_keycode - info.min_keycode + 1)]
        state.modifiers = [list(m) for m in display.get_modifier_mapping()]
        state.pointer = list(display.get_pointer_mapping())
        saver = display.get_screen_saver()
        state.screen_saver = (saver.timeout, saver.interval, saver.prefer_blanking, saver.allow_exposures)
        state.font_path = list(display.get_font_path())
        geometry = root.get_geometry()
        state.size = (geometry.width, geometry.height)
        state.access_enabled = bool(display.list_hosts().mode)
        return state

    def restore(self, display, keep_pids: set[int], own_pid: int) -> list[str]:
        """Put the server back as captured; returns what had been changed (empty: nothing). X clients of
        processes outside `keep_pids` (and this one, `own_pid`) are disconnected first, their retained
        resources with them. Raises XError or ConnectionClosedError when the server cannot be restored."""
        changed = _kill_foreign_clients(display, keep_pids | {own_pid})
        root = display.screen().root
        display.set_close_down_mode(X.DestroyAll)
        # KillClient(AllTemporary) frees what clients in RetainTemporary mode left behind
        request.KillClient(display=display.display, resource=X.AllTemporary)
        for atom in root.list_properties():
            name = display.get_atom_name(atom)
            if name.startswith(_WM_OWNED_PREFIXES):
                continue
            if name not in self.properties:
                root.delete_property(atom)
                if name not in _SET_BY_ANY_GTK_APP:
                    changed.append(f"root property {name} added")
        for name, (ptype, fmt, value) in self.properties.items():
            if name.startswith(_WM_OWNED_PREFIXES):
                continue
            atom = display.intern_atom(name)
            prop = root.get_full_property(atom, X.AnyPropertyType)
            if prop is None or (prop.property_type, prop.format, prop.value) != (ptype, fmt, value):
                root.change_property(atom, ptype, fmt, value)
                changed.append(f"root property {name} changed")
        info = display.display.info
        keyboard = [tuple(s) for s in display.get_keyboard_mapping(info.min_keycode, info.max_keycode - info.min_keycode + 1)]
        if keyboard != self.keyboard:
            display.change_keyboard_mapping(self.first_keycode, self.keyboard)
            changed.append("keyboard mapping")
        if [list(m) for m in display.get_modifier_mapping()] != self.modifiers:
            display.set_modifier_mapping(self.modifiers)
            changed.append("modifier mapping")
        if list(display.get_pointer_mapping()) != self.pointer:
            display.set_pointer_mapping(self.pointer)
            changed.append("pointer buttons")
        saver = display.get_screen_saver()
        if (saver.timeout, saver.interval, saver.prefer_blanking, saver.allow_exposures) != self.screen_saver:
            display.set_screen_saver(*self.screen_saver)
            changed.append("screen saver")
        display.force_screen_saver(X.ScreenSaverReset)
        if list(display.get_font_path()) != self.font_path:
            display.set_font_path(self.font_path)
            changed.append("font path")
        if bool(display.list_hosts().mode) != self.access_enabled:
            display.set_access_control(X.EnableAccess if self.access_enabled else X.DisableAccess)
            changed.append("access control")
        for name in _SELECTIONS:
            atom = display.intern_atom(name)
            if display.get_selection_owner(atom) not in (X.NONE, 0):
                # no owner: the clipboard of the last episode (a secret it copied) is gone
                request.SetSelectionOwner(display=display.display, window=X.NONE, selection=atom, time=X.CurrentTime)
        root.change_attributes(background_pixel=self.background)
        root.clear_area(0, 0, 0, 0)
        geometry = root.get_geometry()
        if (geometry.width, geometry.height) != self.size:
            changed.append(f"screen size {geometry.width}x{geometry.height} (was {self.size[0]}x{self.size[1]})")
            raise ScreenChanged(changed[-1])
        display.sync()
        return changed


class ScreenChanged(RuntimeError):
    """The screen's size was changed (RANDR): the desktop is restarted rather than restored."""


def _kill_foreign_clients(display, keep_pids: set[int]) -> list[str]:
    """Disconnect every X client whose process is not kept (a client whose pid the server cannot tell,
    such as one whose resources outlived it, is disconnected too)."""
    from Xlib.ext import res

    if not display.has_extension(res.extname):
        return []
    killed = []
    pids: dict[int, int] = {}
    for cid in display.res_query_client_ids([{"client": 0, "mask": res.LocalClientPIDMask}]).ids:
        if cid.spec.mask & res.LocalClientPIDMask and cid.value:
            pids[cid.spec.client] = int(cid.value[0])
    for client in display.res_query_clients().clients:
        base = client.resource_base
        if base == 0:
            continue  # the server's own
        pid = next((p for b, p in pids.items() if b & ~client.resource_mask == base & ~client.resource_mask), None)
        if pid is not None and pid in keep_pids:
            continue
        request.KillClient(display=display.display, resource=base)
        killed.append(f"X client {base:#x}" + (f" of pid {pid}" if pid else " (no process)"))
    display.sync()
    return killed


__all__ = ["XState", "ScreenChanged", "Xatom"]
