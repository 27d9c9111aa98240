"""Canonical key names, their aliases in the APIs we parse, and their X keysym names.

Canonical names are lowercase: modifiers (ctrl, alt, shift, super), named keys (enter, tab, esc,
backspace, delete, space, up, down, left, right, home, end, pageup, pagedown, insert, f1..f12,
capslock, printscreen, menu) and single characters ("a", "A", "1", "/").
"""

from __future__ import annotations

# canonical name -> X keysym name
_KEYSYMS: dict[str, str] = {
    "ctrl": "Control_L",
    "alt": "Alt_L",
    "shift": "Shift_L",
    "super": "Super_L",
    "enter": "Return",
    "tab": "Tab",
    "esc": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "space": "space",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
    "insert": "Insert",
    "capslock": "Caps_Lock",
    "printscreen": "Print",
    "menu": "Menu",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}

_ALIASES: dict[str, str] = {
    "control": "ctrl", "control_l": "ctrl", "control_r": "ctrl", "ctrlleft": "ctrl", "ctrlright": "ctrl",
    "lctrl": "ctrl", "rctrl": "ctrl",
    "option": "alt", "alt_l": "alt", "alt_r": "alt", "altleft": "alt", "altright": "alt", "meta": "alt",
    "shift_l": "shift", "shift_r": "shift", "shiftleft": "shift", "shiftright": "shift",
    "win": "super", "windows": "super", "cmd": "super", "command": "super", "super_l": "super",
    "super_r": "super", "winleft": "super", "winright": "super",
    "return": "enter", "kp_enter": "enter", "\n": "enter", "\r": "enter",
    "escape": "esc",
    "back_space": "backspace", "bksp": "backspace",
    "del": "delete",
    "arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
    "page_up": "pageup", "prior": "pageup", "pgup": "pageup",
    "page_down": "pagedown", "next": "pagedown", "pgdn": "pagedown",
    "caps_lock": "capslock", "print": "printscreen", "prtsc": "printscreen", "prtscr": "printscreen",
    " ": "space", "\t": "tab",
    # pyautogui spellings
    "apps": "menu", "prntscrn": "printscreen", "optionleft": "alt", "optionright": "alt",
    # xdotool / X keysym names of punctuation, used by Anthropic's `key` action ("ctrl+minus")
    "minus": "-", "plus": "+", "equal": "=", "period": ".", "comma": ",", "slash": "/",
    "backslash": "\\", "semicolon": ";", "colon": ":", "apostrophe": "'", "quotedbl": '"', "grave": "`",
    "bracketleft": "[", "bracketright": "]", "braceleft": "{", "braceright": "}",
    "parenleft": "(", "parenright": ")", "less": "<", "greater": ">", "bar": "|", "underscore": "_",
    "asterisk": "*", "exclam": "!", "at": "@", "numbersign": "#", "dollar": "$", "percent": "%",
    "ampersand": "&", "question": "?", "asciitilde": "~", "asciicircum": "^",
    # numpad digits type the same character as the main row (xdotool KP_0, pyautogui num0)
    **{f"kp_{d}": str(d) for d in range(10)},
    **{f"num{d}": str(d) for d in range(10)},
}


class UnknownKeyError(ValueError):
    pass


def normalize_key(name: str) -> str:
    """Map any spelling of a key (Return, ENTER, Control_L, cmd, 'a') to its canonical name."""
    if not isinstance(name, str) or name == "":
        raise UnknownKeyError(f"a key name must be a non-empty string, got {name!r}")
    if len(name) == 1 and name not in _ALIASES:
        return name  # a character key keeps its case: "A" means shift+a
    low = name.strip().lower().replace("-", "_") if len(name) > 1 else name
    low = _ALIASES.get(low, low)
    if low in _KEYSYMS:
        return low
    if len(low) == 1:
        return low
    raise UnknownKeyError(
        f"unknown key {name!r}; known keys: {', '.join(sorted(_KEYSYMS))} or a single character"
    )


def keysym_name(canonical: str) -> str:
    """The X keysym name of a canonical key (single characters map to themselves)."""
    return _KEYSYMS.get(canonical, canonical)


KNOWN_KEYS: tuple[str, ...] = tuple(sorted(_KEYSYMS))
