"""Parsers for the structured files checks read: crontabs, config files (INI, env, JSON, YAML, TOML) and
code (Python, JavaScript, shell), each reading only what is live: a commented-out line is not there.
"""

from __future__ import annotations

import ast
import calendar
import configparser
import io
import json
import re
import tokenize
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# --------------------------------------------------------------------------- cron

_CRON_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_MONTH_NAMES = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_DOW_NAMES = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (name, low, high, names)
_CRON_FIELDS = [("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
                ("month", 1, 12, _MONTH_NAMES), ("day of week", 0, 7, _DOW_NAMES)]
_ENV_LINE = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*=")


class CronError(ValueError):
    """A schedule cron would reject; the message names the field."""


@dataclass
class CronEntry:
    line: str
    command: str
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    doms: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    dows: frozenset[int] = frozenset()
    dom_any: bool = True  # the field starts with '*': cron then ORs nothing with the other day field
    dow_any: bool = True
    reboot: bool = False
    error: str | None = None  # cron refuses the line; it never runs

    def key(self) -> tuple:
        return (self.minutes, self.hours, self.doms, self.months, self.dows, self.dom_any, self.dow_any, self.reboot)

    def never_runs(self) -> bool:
        """True when no real day matches: a bad line, or only days such as February 30 (February 29
        exists, in leap years). A restricted day of week always matches some day."""
        if self.error is not None:
            return True
        if self.reboot:
            return False
        if not self.dow_any:
            return False
        return not any(d <= calendar.monthrange(2024, m)[1] for m in self.months for d in self.doms)

    def runs_on(self, month: int, day: int, weekday: int | None = None) -> bool:
        """Whether the entry fires on that day (weekday 0 = Sunday, when known)."""
        if self.error is not None or self.reboot or month not in self.months:
            return False
        dom_ok = day in self.doms
        dow_ok = weekday is not None and weekday in self.dows
        if self.dom_any and self.dow_any:
            return True
        if self.dow_any:
            return dom_ok
        if self.dom_any:
            return dow_ok
        return dom_ok or dow_ok


def _cron_field(text: str, index: int) -> frozenset[int]:
    name, low, high, names = _CRON_FIELDS[index]
    values: set[int] = set()
    for item in text.split(","):
        m = re.fullmatch(r"(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(\d+))?", item.lower())
        if not m:
            raise CronError(f"{name} field {text!r}: cannot read {item!r}")
        rng, step = m.group(1), int(m.group(2) or 1)
        if step < 1:
            raise CronError(f"{name} field {text!r}: step 0")

        def value(token: str) -> int:
            n = names.get(token[:3]) if not token.isdigit() else int(token)
            if n is None or not low <= n <= high:
                raise CronError(f"{name} field {text!r}: {token!r} is outside {low}-{high}")
            return n

        if rng == "*":
            start, stop = low, high
        elif "-" in rng:
            start, stop = (value(t) for t in rng.split("-"))
        else:
            start = stop = value(rng)
            if m.group(2):
                stop = high
        values.update(range(start, stop + 1, step))
    if index == 4 and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


def parse_cron_line(line: str) -> CronEntry | None:
    """One crontab line as an entry; None for blanks, comments and environment settings."""
    text = line.strip()
    if not text or text.startswith("#") or _ENV_LINE.match(text):
        return None
    if text.startswith("@"):
        macro, _, command = text.partition(" ")
        if macro.lower() == "@reboot":
            return CronEntry(line, command.strip(), reboot=True)
        if macro.lower() not in _CRON_MACROS:
            return CronEntry(line, command.strip(), error=f"unknown macro {macro!r}")
        fields = _CRON_MACROS[macro.lower()].split()
    else:
        parts = text.split(None, 5)
        if len(parts) < 6:
            return CronEntry(line, text, error="fewer than five time fields and a command")
        fields, command = parts[:5], parts[5]
    try:
        sets = [_cron_field(f, i) for i, f in enumerate(fields)]
    except CronError as exc:
        return CronEntry(line, command.strip(), error=str(exc))
    return CronEntry(line, command.strip(), *sets, dom_any=fields[2].startswith("*"), dow_any=fields[4].startswith("*"))


def parse_crontab(text: str) -> list[CronEntry]:
    return [e for e in (parse_cron_line(line) for line in text.splitlines()) if e is not None]


def parse_schedule(schedule: str) -> CronEntry:
    """A schedule given in a task file ("0 3 1 1 *", "@yearly"); an error names the bad field."""
    entry = parse_cron_line(f"{schedule.strip()} true")
    if entry is None or entry.error is not None:
        raise ValueError(f"schedule {schedule!r}: {entry.error if entry else 'empty'}")
    return entry


# --------------------------------------------------------------------------- config files

CONFIG_FORMATS = ("ini", "env", "json", "yaml", "toml")
_SUFFIX_FORMAT = {".ini": "ini", ".cfg": "ini", ".conf": "ini", ".env": "env", ".json": "json",
                  ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".properties": "ini"}
_TOP = "__top__"


class ConfigError(ValueError):
    """The file cannot be parsed in its format."""


def config_format(path: Path, given: str | None) -> str:
    if given:
        return given
    if path.name == ".env" or path.name.endswith(".env"):
        return "env"
    fmt = _SUFFIX_FORMAT.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(f"cannot tell the format of {path.name}; give format: one of {', '.join(CONFIG_FORMATS)}")
    return fmt


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _parse_env(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$", line)
        if m:
            out[m.group(1)] = _unquote(strip_comment(m.group(2), "#"))
    return out


def _parse_ini(text: str) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="__defaults__",
                                       inline_comment_prefixes=("#", ";"), comment_prefixes=("#", ";"),
                                       delimiters=("=", ":"))
    try:
        parser.read_string(text if text.lstrip().startswith("[") else f"[{_TOP}]\n{text}")
    except configparser.Error as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    return {s: {k: _unquote(v) for k, v in parser[s].items()} for s in parser.sections()}


def read_config(text: str, fmt: str) -> Any:
    try:
        if fmt == "json":
            return json.loads(text)
        if fmt == "yaml":
            return yaml.safe_load(text)
        if fmt == "toml":
            return tomllib.loads(text)
    except (json.JSONDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    if fmt == "env":
        return _parse_env(text)
    return _parse_ini(text)


_MISSING = object()


def lookup(data: Any, key: str, fmt: str) -> Any:
    """The value at a dotted key ("server.port", "users.0.name"); for INI "section.key", or "key" for a
    file without sections. Returns MISSING when there is none. INI keys ignore case, as configparser does."""
    if fmt == "ini":
        sections = {s.lower(): v for s, v in data.items()}
        if "." in key:
            section, _, name = key.partition(".")
            if section.lower() in sections:
                return sections[section.lower()].get(name.lower(), _MISSING)
        return sections.get(_TOP.lower(), {}).get(key.lower(), _MISSING)
    if fmt == "env":
        return data.get(key, _MISSING)
    node = data
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def is_missing(value: Any) -> bool:
    return value is _MISSING


# --------------------------------------------------------------------------- code

CODE_LANGUAGES = ("python", "javascript", "shell")
_CODE_SUFFIX = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
                ".ts": "javascript", ".jsx": "javascript", ".sh": "shell", ".bash": "shell"}


def code_language(path: Path, text: str, given: str | None) -> str:
    if given:
        return given
    lang = _CODE_SUFFIX.get(path.suffix.lower())
    if lang is None and text.startswith("#!"):
        first = text.splitlines()[0]
        lang = "python" if "python" in first else "shell" if re.search(r"\b(ba|z|da)?sh\b", first) else None
    if lang is None:
        raise ValueError(f"cannot tell the language of {path.name}; give language: one of {', '.join(CODE_LANGUAGES)}")
    return lang


def strip_comment(line: str, marker: str = "#") -> str:
    """A line without its trailing comment: `marker` outside quotes (and, for '#', at the start of a
    word, as the shell reads it) starts one."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == "\\" and quote == '"':
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif line.startswith(marker, i) and (marker != "#" or i == 0 or line[i - 1] in " \t;&|("):
            return line[:i]
    return line


def _strip_js(text: str) -> str:
    """JavaScript with comments and string contents blanked (line structure kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch, nxt = text[i], text[i + 1] if i + 1 < n else ""
        if ch == "/" and nxt == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif ch == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            chunk = text[i: n if j < 0 else j + 2]
            out.append("\n" * chunk.count("\n"))
            i = n if j < 0 else j + 2
        elif ch in "'\"`":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            out.append(ch + re.sub(r"[^\n]", " ", text[i + 1: j]) + ch)
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass
class Use:
    line_no: int
    rest: str  # the text of the line from the name on


@dataclass
class _PyUses(ast.NodeVisitor):
    name: str
    found: list[tuple[int, int]] = field(default_factory=list)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            self.found.append((node.lineno, node.col_offset))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == self.name and isinstance(node.ctx, ast.Load):
            self.found.append((node.lineno, node.end_col_offset - len(self.name)))
        self.generic_visit(node)


def _python_uses(text: str, name: str) -> list[tuple[int, int]]:
    try:
        visitor = _PyUses(name)
        visitor.visit(ast.parse(text))
        return visitor.found
    except (SyntaxError, ValueError):  # ValueError: NUL bytes in the source
        pass
    # a file the agent left unparseable: its tokens still tell code from comments and strings
    found = []
    try:
        prev = ""
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                if tok.string == name and prev not in ("def", "class") and not tok.line.lstrip().startswith(("import ", "from ")):
                    found.append(tok.start)
                prev = tok.string
        return found
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(no, m.start()) for no, line in enumerate(text.splitlines(), 1)
                if not line.lstrip().startswith(("import ", "from ", "def ", "class "))
                for m in re.finditer(rf"(?<![\w.]){re.escape(name)}(?!\w)", strip_comment(line))]


def live_uses(text: str, language: str, name: str) -> list[Use]:
    """Where `name` is used in live code: not in a comment, not in a string, not where it is defined
    (a Python `def`, a JavaScript `function name`)."""
    lines = text.splitlines()
    if language == "python":
        spots = _python_uses(text, name)
    else:
        clean = _strip_js(text) if language == "javascript" else "\n".join(strip_comment(l) for l in lines)
        spots = []
        for no, line in enumerate(clean.splitlines(), 1):
            for m in re.finditer(rf"(?<![\w$.-]){re.escape(name)}(?![\w$-])", line):
                if language == "javascript" and re.search(r"\bfunction\s*$", line[: m.start()]):
                    continue
                spots.append((no, m.start()))
    return [Use(no, lines[no - 1][col:] if no - 1 < len(lines) else "") for no, col in spots]
