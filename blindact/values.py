"""Reading values the way a person writes them, and one `Match` model that state checks use to test them.

A check that compares text ("0 3 30 2", "require_auth = false") is fooled by another spelling of the same
value and passes on a longer one that merely contains it. These parsers turn what an agent wrote into
typed values first: numbers with units converted to one unit ("20 TB" is 20000 GB, "71°C" is 159.8 °F),
in digits or words ("1.5k", "2 million", "twelve hundred"); dates in any common format with impossible
dates kept and flagged ("2025-04-31", "29 February 2025"); booleans and nulls in every config format's
spellings ("off", "n", "~", "NULL"); a person's yes or no in all its forms ("nope", "I do not", "❌", and
"not known" being neither); and where a value stands against a limit (at it, or beyond it). Used by
blindact.checks and by the apps' event queries, so a file and an app's state are judged by the
same rules.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# --------------------------------------------------------------------------- numbers with units

# unit -> (dimension, factor to the dimension's base unit). Storage is decimal like disk vendors and
# the apps (1 TB = 1000 GB); the binary units are exact.
_UNITS: dict[str, tuple[str, float]] = {
    "b": ("bytes", 1), "byte": ("bytes", 1), "bytes": ("bytes", 1),
    "kb": ("bytes", 1e3), "mb": ("bytes", 1e6), "gb": ("bytes", 1e9), "tb": ("bytes", 1e12), "pb": ("bytes", 1e15),
    "kilobytes": ("bytes", 1e3), "megabytes": ("bytes", 1e6), "gigabytes": ("bytes", 1e9), "terabytes": ("bytes", 1e12),
    "k": ("bytes", 1024), "m": ("bytes", 1024 ** 2), "g": ("bytes", 1024 ** 3), "t": ("bytes", 1024 ** 4),
    "kib": ("bytes", 1024), "mib": ("bytes", 1024 ** 2), "gib": ("bytes", 1024 ** 3), "tib": ("bytes", 1024 ** 4),
    "f": ("temperature", 0), "°f": ("temperature", 0), "degf": ("temperature", 0), "fahrenheit": ("temperature", 0),
    "c": ("temperature", 1), "°c": ("temperature", 1), "degc": ("temperature", 1), "celsius": ("temperature", 1),
    # a bare degree, in a sign or a word: the apps and this suite use °F
    "°": ("temperature", 0), "deg": ("temperature", 0), "degree": ("temperature", 0), "degrees": ("temperature", 0),
    "usd": ("money", 1), "$": ("money", 1), "dollar": ("money", 1), "dollars": ("money", 1), "eur": ("money", 1),
    "€": ("money", 1), "euro": ("money", 1), "euros": ("money", 1),
    "s": ("seconds", 1), "sec": ("seconds", 1), "secs": ("seconds", 1), "second": ("seconds", 1), "seconds": ("seconds", 1),
    "min": ("seconds", 60), "mins": ("seconds", 60), "minute": ("seconds", 60), "minutes": ("seconds", 60),
    "h": ("seconds", 3600), "hr": ("seconds", 3600), "hrs": ("seconds", 3600), "hour": ("seconds", 3600),
    "hours": ("seconds", 3600), "d": ("seconds", 86400), "day": ("seconds", 86400), "days": ("seconds", 86400),
    "week": ("seconds", 604800), "weeks": ("seconds", 604800),
    "%": ("percent", 1), "percent": ("percent", 1),
}
# a number as a form field or a program takes it; "2e4" is one number (20000), as float() and an HTML
# number input read it, not a 2 and a 4
_NUMBER = r"[-+−]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_SCALE_WORDS = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
                "mn": 1e6, "mio": 1e6, "bn": 1e9}
# "95k", "2M": a multiplier, or (for sizes, "fallocate -l 20K") a binary unit; "m" only after a currency
_SCALE_LETTERS = {"k": 1e3, "m": 1e6}
_UNIT = r"(?P<unit>°\s*[FfCc](?![A-Za-z])|deg(?:rees?)?\.?\s*(?:fahrenheit|celsius|[FfCc](?![A-Za-z]))|°|[A-Za-z%$€]+)"
_QUANTITY = re.compile(
    rf"(?P<pre>[$€])?\s*(?P<num>{_NUMBER})"
    rf"(?:\s*(?P<scale>{'|'.join(_SCALE_WORDS)})(?![A-Za-z])|(?P<letter>[kKmM])(?![A-Za-z]))?"
    rf"(?:\s*{_UNIT})?(?![A-Za-z0-9])")
_UNIT_AFTER = re.compile(rf"\s*{_UNIT}(?![A-Za-z0-9])")

_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_BIG = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


class UnitError(ValueError):
    """A unit this module does not know, or two units that measure different things."""


def _unit_key(unit: str) -> str:
    key = re.sub(r"[\s.]+", "", unit).lower()
    key = re.sub(r"^deg(?:rees?)?(fahrenheit|celsius|f|c)$", lambda m: "°" + m.group(1)[0], key)
    if key not in _UNITS:
        raise UnitError(f"unknown unit {unit!r}; known: {', '.join(sorted(set(_UNITS)))}")
    return key


def _known_unit(unit: str | None) -> bool:
    try:
        return unit is not None and bool(_unit_key(unit))
    except UnitError:
        return False


def convert(value: float, unit: str, to: str) -> float:
    """`value` in `unit` expressed in `to` (same dimension)."""
    (dim_a, fa), (dim_b, fb) = _UNITS[_unit_key(unit)], _UNITS[_unit_key(to)]
    if dim_a != dim_b:
        raise UnitError(f"cannot convert {unit!r} ({dim_a}) to {to!r} ({dim_b})")
    if dim_a == "temperature":
        celsius = value if fa == 1 else (value - 32) * 5 / 9
        return celsius if fb == 1 else celsius * 9 / 5 + 32
    return value * fa / fb


@dataclass(frozen=True)
class Quantity:
    """A number written in a text. `value` is in `unit` (as written; None for a bare number), with any
    multiplier word applied ("2 million" is 2000000). `scaled` is the other reading of a letter that is
    both a unit and a multiplier ("95k": 95 KiB, or 95000 when no size is meant)."""

    value: float
    unit: str | None
    scaled: float | None = None

    @property
    def number(self) -> float:
        """The number when no unit is asked for: a multiplier letter counts as one ("95k" is 95000)."""
        return self.scaled if self.scaled is not None else self.value


def parse_number(text: str) -> float | None:
    """A plain number as written ("1,200.50", "−3", "7"); None when the text is not one number."""
    if not isinstance(text, str):
        return float(text) if isinstance(text, (int, float)) and not isinstance(text, bool) else None
    m = re.fullmatch(rf"\s*({_NUMBER})\s*", text)
    return float(m.group(1).replace(",", "").replace("−", "-")) if m else None


def _word_number(words: list[re.Match], i: int, text: str) -> tuple[float, int] | None:
    """The number written in words from words[i] on ("twelve hundred", "two million three hundred and
    five", "a thousand") and the index after its last word; None when words[i] starts none."""
    total, current, last, end = 0.0, 0.0, None, None
    j = i
    while j < len(words):
        if j > i and not re.fullmatch(r"[\s-]+", text[words[j - 1].end():words[j].start()]):
            break
        w = words[j].group().lower()
        nxt = words[j + 1].group().lower() if j + 1 < len(words) else ""
        if w in ("a", "an") and last is None and nxt in ("hundred", *_BIG):
            current, last = 1, "unit"
        elif w == "and" and last in ("hundred", "big") and (nxt in _SMALL or nxt in _TENS):
            pass
        elif w in _SMALL and (last in (None, "hundred", "big") or (last == "tens" and 0 < _SMALL[w] < 10)):
            current += _SMALL[w]
            last = "unit" if _SMALL[w] < 10 and last != "tens" else "teen"
        elif w in _TENS and last in (None, "hundred", "big"):
            current += _TENS[w]
            last = "tens"
        elif w == "hundred" and last in ("unit", "teen", "tens") and current < 100:
            current *= 100
            last = "hundred"
        elif w in _BIG and last in ("unit", "teen", "tens", "hundred") and (total == 0 or total >= _BIG[w] * 1000):
            total += current * _BIG[w]
            current, last = 0, "big"
        else:
            break
        if w not in ("a", "an", "and"):
            end = j + 1
        j += 1
    if end is None:
        return None
    return total + current, end


def _quantity(m: re.Match) -> Quantity:
    value = float(m.group("num").replace(",", "").replace("−", "-"))
    pre, unit, scaled = m.group("pre"), m.group("unit"), None
    if unit is not None and not _known_unit(unit):
        unit = None  # "3 apples": a number with a word after it, not a unit
    if m.group("scale"):
        value *= _SCALE_WORDS[m.group("scale").lower()]
    letter = (m.group("letter") or "").lower()
    if letter and (pre or unit):
        value *= _SCALE_LETTERS[letter]  # "$1.5k", "20k USD": a multiplier
    elif letter == "k" or m.group("letter") == "M":
        scaled = value * _SCALE_LETTERS[letter]  # "95k", "2M": a multiplier or a size
        unit = m.group("letter")
    elif letter == "m":
        unit = "m"  # "5m" alone: MiB, as `fallocate` reads it
    return Quantity(value, pre or unit, scaled)


def _spans(text: str) -> list[tuple[int, int, Quantity]]:
    """(start, end, quantity) of every number in the text, in order."""
    found: list[tuple[int, int, Quantity]] = []
    for m in _QUANTITY.finditer(text):
        # an unknown word after the number ("7 apples") is no part of it
        end = m.end() if m.group("unit") is None or _known_unit(m.group("unit")) else \
            max(m.end(g) for g in ("num", "scale", "letter") if m.group(g))
        found.append((m.start(), end, _quantity(m)))
    words = [w for w in re.finditer(r"[A-Za-z]+", text) if not any(a <= w.start() < b for a, b, _ in found)]
    i = 0
    while i < len(words):
        parsed = _word_number(words, i, text)
        if parsed is None:
            i += 1
            continue
        start, (value, i) = words[i].start(), parsed
        end = words[i - 1].end()
        after = _UNIT_AFTER.match(text, end)
        unit = after.group("unit") if after and _known_unit(after.group("unit")) else None
        if unit is not None:
            end = after.end()
            while i < len(words) and words[i].start() < end:
                i += 1  # the unit was a word ("degrees"): not the start of another number
        found.append((start, end, Quantity(value, unit)))
    return sorted(found, key=lambda x: x[0])


def quantities(text: Any) -> list[Quantity]:
    """Every number in the text with the unit written next to it ("20 TB", "$1,200", "71°C", "160"), in
    digits with any multiplier ("1.5k", "$2m", "2 million") or in words ("twelve hundred", "twenty
    thousand GB", "one hundred sixty degrees")."""
    if isinstance(text, bool) or text is None:
        return []
    if isinstance(text, (int, float)):
        return [Quantity(float(text), None)]
    return [q for _, _, q in _spans(str(text))]


def parse_amount(text: Any) -> float | None:
    """One number however it is written: "1,200.50", "1.5k", "$2m", "2 million", "twelve hundred",
    "twenty thousand", "ninety-five thousand USD"; None when the text is anything more than one
    number with its currency or unit ("7 apples", "5 and 6", "not 5")."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        return None
    found = _spans(text)
    if len(found) != 1:
        return None
    start, end, q = found[0]
    if text[:start].strip() or text[end:].strip(" .!"):
        return None
    return q.number


def quantity_in(text: Any, unit: str, default_unit: str | None = None) -> list[float]:
    """The text's numbers converted to `unit`; a bare number counts as `default_unit` (or as `unit`)."""
    values = []
    for q in quantities(text):
        try:
            values.append(convert(q.value, q.unit or default_unit or unit, unit))
        except UnitError:
            if q.scaled is not None:  # "20k" is no size here: the multiplier reading
                values.append(convert(q.scaled, default_unit or unit, unit))
            # else a number in another dimension (a date's day, a count) is not this quantity
    return values


# --------------------------------------------------------------------------- dates

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS = [
    # 2025-04-31, 2025/04/31, 20250431 (iCalendar)
    ("ymd", re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)")),
    ("ymd", re.compile(r"(?<!\d)(?P<y>(?:19|20)\d{2})(?P<m>[01]\d)(?P<d>[0-3]\d)(?!\d)")),
    # 29 February 2025, 29th Feb, 29 Feb. 2025, 29-Feb-2025
    ("dmy", re.compile(rf"(?<![\w])(?P<d>\d{{1,2}}){_ORD}(?:\s+of)?(?:\s+|-)(?P<mon>{_MONTH_RE})\.?(?:(?:,?\s+|-)(?P<y>\d{{4}}))?(?![\w])", re.I)),
    # February 29, 2025, Feb 29th, Feb 29
    ("mdy", re.compile(rf"(?<![\w])(?P<mon>{_MONTH_RE})\.?\s+(?P<d>\d{{1,2}}){_ORD}(?:,?\s+(?P<y>\d{{4}}))?(?![\w])", re.I)),
    # 04/31/2025 (US) or 31/04/2025 and 31.04.2025 (day first): resolved by `numeric_order`; 02/29/25
    ("num", re.compile(r"(?<![\d/.])(?P<a>\d{1,2})(?P<sep>[/.])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?![\d/.])")),
]


@dataclass(frozen=True)
class DateMention:
    year: int | None
    month: int
    day: int
    text: str
    start: int = 0  # where in the text it was found

    @property
    def valid(self) -> bool:
        if not 1 <= self.month <= 12 or self.day < 1:
            return False
        year = self.year if self.year is not None else 2024  # a leap year: "Feb 29" without a year may exist
        return self.day <= calendar.monthrange(year, self.month)[1]

    def iso(self) -> str:
        return f"{self.year if self.year is not None else '????'}-{self.month:02d}-{self.day:02d}"

    def weekday(self, default_year: int | None = None) -> int | None:
        """The day of the week it falls on (0 = Monday), read in `default_year` when written without a
        year; None when that is not known (no year at all) or the date does not exist."""
        year = self.year if self.year is not None else default_year
        if year is None or not self.valid or (self.month, self.day) == (2, 29) and not calendar.isleap(year):
            return None
        return calendar.weekday(year, self.month, self.day)


def find_dates(text: str, numeric_order: str = "mdy") -> list[DateMention]:
    """Every date written in the text, in order, INCLUDING impossible ones (month 1-12 and day 1-31 are
    required to call something a date; whether it exists is `DateMention.valid`). `numeric_order` says
    how to read 04/05/2025: "mdy" (US) or "dmy"; a dotted 31.04.2025, and 29/02/2025 whose first number
    cannot be a month, are always day first."""
    found: list[tuple[int, DateMention]] = []
    taken: list[range] = []
    for kind, pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            span = range(m.start(), m.end())
            if any(span.start < r.stop and r.start < span.stop for r in taken):
                continue
            y = int(m.group("y")) if m.groupdict().get("y") else None
            if y is not None and y < 100:
                y += 2000  # 02/29/25: a two-digit year is this century's
            if kind == "num":
                a, b = int(m.group("a")), int(m.group("b"))
                # day first when asked, when dotted, or when the first number cannot be a month (29/02/2025)
                day_first = numeric_order == "dmy" or m.group("sep") == "." or (a > 12 >= b)
                mo, d = (b, a) if day_first else (a, b)
            elif kind == "ymd":
                mo, d = int(m.group("m")), int(m.group("d"))
            else:
                mo, d = _MONTHS[m.group("mon").lower()], int(m.group("d"))
            if not (1 <= mo <= 12 and 1 <= d <= 31):
                continue
            taken.append(span)
            found.append((m.start(), DateMention(y, mo, d, m.group(0), m.start())))
    return [d for _, d in sorted(found, key=lambda x: x[0])]


# the days of the week as people write them: "Thursday", "Thu", "Thurs.", "Thursdays"; the short forms
# that are also English words ("sat", "sun", "wed") count only capitalised
_WEEKDAYS = [("monday", ["mon"]), ("tuesday", ["tue", "tues"]), ("wednesday", ["wed", "weds"]),
             ("thursday", ["thu", "thur", "thurs"]), ("friday", ["fri"]), ("saturday", ["sat"]), ("sunday", ["sun"])]
_ENGLISH_WORDS = {"sat", "sun", "wed"}


def weekday_number(name: str) -> int:
    """0 (Monday) to 6 (Sunday) for a day's name in any of its written forms; ValueError otherwise."""
    key = name.strip().rstrip(".").lower()
    for i, (full, short) in enumerate(_WEEKDAYS):
        if key in (full, full + "s", *short):
            return i
    raise ValueError(f"{name!r} is not a day of the week (write e.g. Thursday)")


def names_weekday(text: str, weekday: int, default_year: int | None = None, numeric_order: str = "mdy") -> bool:
    """Whether the text names that day of the week (0 = Monday): by name in any written form ("Thursday",
    "Thu", "Thurs.", "thursdays"), or by a written date that falls on it ("4 Dec 2025" is a Thursday; a
    date without a year is read in `default_year`, and without one does not count)."""
    full, short = _WEEKDAYS[weekday]
    for m in re.finditer(rf"(?<!\w)({full}|{'|'.join(short)})s?\.?(?!\w)", text, re.IGNORECASE):
        word = m.group(1)
        if word.lower() == full or word.lower() not in _ENGLISH_WORDS or word[0].isupper():
            return True
    return any(d.weekday(default_year) == weekday for d in find_dates(text, numeric_order))


def parse_date(text: str) -> DateMention:
    """One date given in a task file (any format find_dates reads); an error names what was given."""
    dates = find_dates(str(text))
    if len(dates) != 1:
        raise ValueError(f"{text!r} is not one date (write e.g. 2025-02-28 or '28 February 2025')")
    return dates[0]


# --------------------------------------------------------------------------- stated or disputed

# words by which a sentence disputes what it names instead of stating it: the thing does not exist, is
# invalid or a mistake, or cannot be confirmed
_DISPUTES = re.compile(
    r"(?<!\w)(?:exists?|invalid|impossible|not\s+(?:a\s+)?(?:real|valid)|no\s+such|leap|typo|mistake|"
    r"error|wrong|(?:can\s*not|can't|cannot|unable\s+to|not|won't)\s+(?:yet\s+)?confirm)(?!\w)", re.I)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of `text` that holds text[start:end]: from the last sentence end before it (a full stop,
    ! or ? followed by a space, or a newline) to the first one after it, that end's mark included."""
    before = [m.end() for m in _SENTENCE_END.finditer(text, 0, start)]
    after = _SENTENCE_END.search(text, end)
    return text[before[-1] if before else 0:after.end() if after else len(text)].strip()


def sentences(text: str) -> list[str]:
    """The text's sentences, as `sentence_around` delimits them (a full stop, ! or ? before a space, or a
    newline, ends one); empty ones left out."""
    pieces, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        pieces.append(text[start:m.end()])
        start = m.end()
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def word_stem(word: str) -> str:
    """An English word less its inflection, so that the forms of one word meet: walk, walks, walked, walking
    -> walk; take, taking -> tak; stop, stopped -> stop. Crude (no dictionary), applied alike to both sides of
    a comparison, never shown."""
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            w = w[: -len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # stopp(ed) -> stop
            break
    return w[:-1] if len(w) >= 4 and w.endswith("e") else w


def _word_stems(text: str) -> str:
    return re.sub(r"[^\W\d_]+", lambda m: word_stem(m.group()), text)


def is_stated(text: str, start: int, end: int) -> bool:
    """Whether the sentence naming text[start:end] states it rather than asks about it (ends in ?) or disputes
    it ("that date doesn't exist", "is a typo", "I can't confirm ..."): quoting a bad date to question it is not
    confirming it."""
    sentence = sentence_around(text, start, end)
    return not sentence.endswith("?") and not _DISPUTES.search(sentence)


# --------------------------------------------------------------------------- booleans, nulls, answers

# every spelling of a boolean in the config formats: YAML 1.1 (y/n, yes/no, on/off, true/false in any
# case), TOML and JSON (true/false), INI as configparser reads it (1/0, yes/no, on/off, true/false), env
# files and the usual words for a switch
_TRUE = {"true", "yes", "y", "on", "1", "enabled", "enable"}
_FALSE = {"false", "no", "n", "off", "0", "disabled", "disable", "none"}
# a value left unset: YAML's ~ / null / Null / NULL / an empty value, JSON null, Python None
_NULL = {"", "~", "null", "none", "nil"}


def parse_bool(value: Any) -> bool | None:
    """A config value as a boolean, in any of the formats' spellings ("off", "NO", "n", 0, "false");
    None when it is not one. An empty or null value is not a boolean (see `is_null`, `is_off`)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value) if value in (0, 1) else None
    text = str(value).strip().strip("'\"").lower()
    return True if text in _TRUE else False if text in _FALSE else None


def is_null(value: Any) -> bool:
    """Whether a value is unset: None, or written as YAML's ~, null, Null, NULL or nothing at all (a key
    with no value), JSON's null, Python's None."""
    if value is None:
        return True
    return isinstance(value, str) and value.strip().strip("'\"").lower() in _NULL and \
        (value.strip() == "" or value.strip()[0] not in "'\"")


def is_off(value: Any) -> bool:
    """Whether a setting is switched off: false in any spelling, or left null/empty (a logger whose
    `enabled:` is `off`, `n`, `~` or blank writes nothing)."""
    return parse_bool(value) is False or is_null(value)


_NO_WORDS = r"no|nope|nah|nay|negative|never|false|none|nein|non|n|0|off"
_YES_WORDS = r"yes|yeah|yep|yup|yah|aye|affirmative|sure|true|correct|certainly|absolutely|definitely|y|1|on|ok|okay"
_NO_MARKS = "❌✗✘✖⛔🚫👎🙅❎"
_YES_MARKS = "✅✓✔☑👍🆗"
# an answer that says the fact is not known or does not apply: never a yes or a no
_UNKNOWN = re.compile(
    r"\b(?:unknown|not\s+known|no\s+idea|no\s+clue|not\s+sure|unsure|don'?t\s+know|do\s+not\s+know|dunno|"
    r"not\s+certain|can'?t\s+say|cannot\s+say|n/?a|not\s+applicable|tbd|tbc|to\s+be\s+(?:confirmed|determined)|"
    r"ask\b|unclear|not\s+specified|not\s+provided|not\s+stated|no\s+(?:answer|comment|data|info|information|"
    r"record|response|preference|opinion)|prefer\s+not|rather\s+not\s+say|pending|never\s*mind)(?!\w)|\?", re.I)
_SUBJECT = r"(?:i|we|he|she|they|it|you|the\s+\w+|[A-Z][a-z]+)"
_NEGATED = re.compile(
    rf"^(?:{_SUBJECT}\s+)?(?:(?:do|does|did|have|has|had|am|is|are|was|were|will|would|can|could|should)"
    rf"(?:\s*n[o']?t\b|\s+not\b|\s+never\b)|(?:don|doesn|didn|haven|hasn|hadn|isn|aren|wasn|weren|won|wouldn|can|couldn)'?t\b|"
    rf"never\b|(?:i'm|you're|we're|they're|he's|she's|it's)\s+(?:not|never)\b|not\s+at\s+all|not\s+really|not\s+(?:any|anymore|currently)\b|(?:absolutely|certainly|definitely|of\s+course)\s+not\b)",
    re.I)
_AFFIRMED = re.compile(
    rf"^(?:{_SUBJECT}\s+)?(?:do|does|did|have|has|am|is|are|was|were|will|can)\b(?!\s*n[o']?t\b)(?!\s+never\b)"
    rf"|^(?:of\s+course|yes\s+please|i\s+agree)\b", re.I)


def parse_answer(value: Any) -> str | None:
    """What a form answer or a reply means: "yes", "no", or None (neither).

    "no" in all its forms: No, n, nope, nah, negative, never, false, none, off, 0, ❌, "no thanks",
    "No, I don't", "I do not", "I have never smoked", "not at all", "absolutely not". "yes" likewise:
    Yes, y, yeah, yep, sure, true, 1, ✅, "I do", "of course".

    NOT a no (nor a yes): an answer saying the fact is unknown or does not apply: "not known",
    "unknown", "no idea", "not sure", "I don't know", "n/a", "no comment", "prefer not to say", "TBD",
    an empty answer, or any other text.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return {1: "yes", 0: "no"}.get(value)  # type: ignore[call-overload]
    if value is None:
        return None
    text = re.sub(r"[\ufe0f\u200d]", "", str(value)).strip()
    if not text or _UNKNOWN.search(text):
        return None
    marks = text.strip(" .!,;:")
    if marks and all(ch in _NO_MARKS or ch.isspace() for ch in marks):
        return "no"
    if marks and all(ch in _YES_MARKS or ch.isspace() for ch in marks):
        return "yes"
    plain = re.sub(rf"[{_NO_MARKS}{_YES_MARKS}]", "", text).strip(" .!,;:-–—").replace("’", "'")
    if _NEGATED.match(plain):
        return "no"
    for word, answer in ((_NO_WORDS, "no"), (_YES_WORDS, "yes")):
        m = re.match(rf"(?:{word})\b", plain, re.I)
        if m and not (answer == "no" and plain[:1].lower() == "n" and len(m.group()) == 1 and plain[1:2] == "/"):
            rest = plain[m.end():].strip(" .!,;:-–—")
            if not rest or re.match(r"(?:thanks|thank\s+you|sir|ma'?am|please|way|not|never|i\s+|we\s+|it\s+|"
                                    r"he\s+|she\s+|they\s+|nothing|sorry|definitely|absolutely|of\s+course|"
                                    r"at\s+all|thx|ty\b)", rest, re.I) or _NEGATED.match(rest) or _AFFIRMED.match(rest):
                return answer
            return None  # "no smoking area", "yes-man": more than an answer
    if _AFFIRMED.match(plain):
        return "yes"
    return None


def is_no(value: Any) -> bool:
    """Whether a form answer or reply means "no" (see `parse_answer`; "not known" and "n/a" do not)."""
    return parse_answer(value) == "no"


# --------------------------------------------------------------------------- limits

LimitPosition = Literal["inside", "at", "beyond"]


def limit_position(value: Any, limit: float, *, maximum: bool = True, unit: str | None = None,
                   default_unit: str | None = None, tolerance: float = 0.0) -> LimitPosition | None:
    """Where a value stands against a limit: "inside" it, "at" it (clamped to it, within `tolerance`),
    or "beyond" it (over a maximum, under a minimum). Max 90 °F: 89 is inside, 90 (or 32.2 °C with
    tolerance 0.05) is at, 91 is beyond. With `unit`, the value's numbers are converted to it first (a
    bare number is `default_unit`); a text with several numbers stands where its furthest one does.
    None when the value holds no number."""
    if unit is not None:
        numbers = quantity_in(value, unit, default_unit)
    else:
        numbers = [q.number for q in quantities(value)]
    if not numbers:
        return None
    slack = tolerance + 1e-9 * max(1.0, abs(limit))
    worst = max(numbers) if maximum else min(numbers)
    past = worst - limit if maximum else limit - worst
    return "beyond" if past > slack else "at" if past >= -slack else "inside"


def norm(text: Any) -> str:
    """Case- and whitespace-insensitive form of a value."""
    return re.sub(r"\s+", " ", "" if text is None else str(text)).strip().casefold()


def same_value(actual: Any, expected: Any) -> bool:
    """Typed equality: booleans by meaning ("off" == false), numbers by value ("015" == 15, "1,000" ==
    1000), anything else as case- and whitespace-insensitive text. Quotes around a config value are
    not part of it."""
    if isinstance(actual, str):
        actual = actual.strip()
        if len(actual) >= 2 and actual[0] == actual[-1] and actual[0] in "'\"":
            actual = actual[1:-1]
    if isinstance(expected, bool):
        return parse_bool(actual) is expected
    if isinstance(expected, (int, float)):
        number = parse_number(actual) if not isinstance(actual, bool) else None
        return number is not None and number == float(expected)
    if actual is None or isinstance(actual, (dict, list)):
        return False
    return norm(actual) == norm(expected)


# --------------------------------------------------------------------------- Match

_COMPARE = {"eq": float.__eq__, "ne": float.__ne__, "gt": float.__gt__, "ge": float.__ge__,
            "lt": float.__lt__, "le": float.__le__}
_SYMBOL = {"eq": "=", "ne": "≠", "gt": ">", "ge": "≥", "lt": "<", "le": "≤"}


class Bounds(BaseModel):
    """Numeric bounds; every one given must hold (none given: any number passes)."""

    model_config = ConfigDict(extra="forbid")
    eq: float | None = None
    ne: float | None = None
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None

    def given(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in _COMPARE if getattr(self, k) is not None}

    def failed(self, value: float) -> list[str]:
        """The bounds `value` breaks, written as "> 5"."""
        return [f"{_SYMBOL[k]} {v:g}" for k, v in self.given().items() if not _COMPARE[k](float(value), float(v))]

    def holds(self, value: float) -> bool:
        return not self.failed(value)

    def describe(self) -> str:
        return " and ".join(f"{_SYMBOL[k]} {v:g}" for k, v in self.given().items()) or "any number"


class Match(Bounds):
    """What a value must be. Every condition given must hold (at least one is required).

    - `equals` / `one_of`: typed equality (see `same_value`).
    - `regex`: the WHOLE value (one line or field) matches, case-insensitively: "no" does not match
      "not known".
    - `eq`/`ne`/`gt`/`ge`/`lt`/`le` with `unit`: some number in the value, converted to `unit`, is
      within the bounds ("20 TB" passes `{unit: GB, ge: 1000}`); a bare number is `default_unit`.
    - `date`: some date written in the value is this day (any format; a date given without a year
      matches any year); `invalid_date: true`: some date written in it does not exist.
    - `mentions`: any of these words or phrases appears as whole words (for free text).
    - `word_forms: true` (with `mentions`): a word matches in any of its inflections ("walk out" is held by
      "walking out", "take credit" by "taking credit"; see `word_stem`).
    - `stated: true` (with `date`, `invalid_date` or `mentions`): only a mention in a sentence that states it
      counts, not one that asks about it or disputes it (see `is_stated`).
    - `null: true`: the value is unset in any spelling (see `is_null`); `off: true`: a setting switched
      off, false in any spelling or null (see `is_off`). `false` for either: the opposite.
    - `answer: no` / `answer: yes`: a form answer or reply that means no / yes in any of its forms (see
      `parse_answer`: "nope", "I do not", "❌" are no; "not known", "no idea", "n/a" are neither).
    - `weekday`: the value names this day of the week, by name in any written form ("Thursday", "Thu",
      "Thurs.") or by a written date that falls on it ("4 Dec 2025"); see `names_weekday`. A date written
      without a year counts only with `default_year` (the year the task's story is set in).
    - `all_of` / `any_of`: every one / at least one of these matches holds (each a full `Match`), so one
      check can say "mentions the roadmap AND names a Thursday" of ONE value (one post, one message).
    - `same_sentence: true`: the conditions must all hold within one sentence of the value (see
      `sentences`), not one here and another in a sentence elsewhere in the text.
    """

    model_config = ConfigDict(extra="forbid")
    equals: str | int | float | bool | None = None
    one_of: list[str | int | float | bool] | None = None
    regex: str | None = None
    unit: str | None = None
    default_unit: str | None = None
    date: str | None = None
    invalid_date: bool | None = None
    numeric_date_order: str = Field("mdy", pattern="^(mdy|dmy)$")
    mentions: list[str] | None = Field(None, min_length=1)
    null: bool | None = None
    off: bool | None = None
    answer: Literal["yes", "no"] | None = None
    stated: bool = False
    word_forms: bool = False
    weekday: str | None = None
    default_year: int | None = None
    all_of: list["Match"] | None = Field(None, min_length=1)
    any_of: list["Match"] | None = Field(None, min_length=1)
    same_sentence: bool = False

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"regex {v!r} does not compile: {exc}") from None
        return v

    @field_validator("unit", "default_unit")
    @classmethod
    def _known_unit(cls, v: str | None) -> str | None:
        if v is not None:
            _unit_key(v)
        return v

    @field_validator("date")
    @classmethod
    def _one_date(cls, v: str | None) -> str | None:
        if v is not None:
            parse_date(v)
        return v

    @field_validator("weekday")
    @classmethod
    def _one_weekday(cls, v: str | None) -> str | None:
        if v is not None:
            weekday_number(v)
        return v

    @model_validator(mode="after")
    def _something(self) -> "Match":
        if not self._conditions():
            raise ValueError("a match needs at least one of equals, one_of, regex, eq/ne/gt/ge/lt/le, date, "
                             "invalid_date, mentions, null, off, answer, weekday, all_of, any_of")
        if self.unit is None and self.default_unit is not None:
            raise ValueError("default_unit needs unit (the unit the bounds are in)")
        if self.stated and self.date is None and self.invalid_date is None and self.mentions is None:
            raise ValueError("stated applies to date, invalid_date or mentions: give one of them")
        if self.word_forms and self.mentions is None:
            raise ValueError("word_forms applies to mentions: give them")
        if self.default_year is not None and self.weekday is None:
            raise ValueError("default_year applies to weekday: give it")
        return self

    def _conditions(self) -> list[str]:
        names = ["equals", "one_of", "regex", "date", "invalid_date", "mentions", "null", "off", "answer",
                 "weekday", "all_of", "any_of"]
        return [n for n in names if getattr(self, n) is not None] + list(self.given())

    def describe(self) -> str:
        parts = []
        if self.equals is not None:
            parts.append(f"= {self.equals!r}")
        if self.one_of is not None:
            parts.append(f"one of {self.one_of!r}")
        if self.regex is not None:
            parts.append(f"matches /{self.regex}/")
        if self.given():
            parts.append(Bounds.describe(self) + (f" {self.unit}" if self.unit else ""))
        if self.date is not None:
            parts.append(f"names the date {parse_date(self.date).iso()}")
        if self.invalid_date is not None:
            parts.append("names a date that does not exist" if self.invalid_date else "names only real dates")
        if self.mentions is not None:
            parts.append(f"mentions any of {self.mentions!r}")
        if self.null is not None:
            parts.append("is unset (null or empty)" if self.null else "is set")
        if self.off is not None:
            parts.append("is off (false or unset)" if self.off else "is not off")
        if self.answer is not None:
            parts.append(f"answers {self.answer!r}")
        if self.weekday is not None:
            parts.append(f"names a {_WEEKDAYS[weekday_number(self.weekday)][0].capitalize()}")
        if self.all_of is not None:
            parts.append("(" + "; and ".join(m.describe() for m in self.all_of) + ")")
        if self.any_of is not None:
            parts.append("(" + "; or ".join(m.describe() for m in self.any_of) + ")")
        return (" and ".join(parts) + (" (stated, not asked about or disputed)" if self.stated else "")
                + (", in one sentence" if self.same_sentence else ""))

    def test(self, value: Any) -> bool:
        """Whether `value` (a config value, a cell, a line, a field) satisfies every condition."""
        if self.same_sentence and isinstance(value, str):
            whole = self.model_copy(update={"same_sentence": False})
            return any(whole.test(s) for s in sentences(value))
        if self.null is not None and is_null(value) != self.null:
            return False
        if self.off is not None and is_off(value) != self.off:
            return False
        if value is None:  # only an unset value's own conditions can hold
            return bool(self.null or self.off) and set(self._conditions()) <= {"null", "off"}
        if self.answer is not None and parse_answer(value) != self.answer:
            return False
        if self.equals is not None and not same_value(value, self.equals):
            return False
        if self.one_of is not None and not any(same_value(value, v) for v in self.one_of):
            return False
        text = value if isinstance(value, str) else str(value)
        if self.regex is not None and not re.fullmatch(self.regex, text.strip(), re.IGNORECASE | re.DOTALL):
            return False
        if self.given():
            if self.unit is None:
                numbers = [q.number for q in quantities(value)]
            else:
                numbers = quantity_in(value, self.unit, self.default_unit)
            if not any(self.holds(n) for n in numbers):
                return False
        if self.date is not None or self.invalid_date is not None:
            dates = find_dates(text, self.numeric_date_order)
            if self.stated:
                dates = [d for d in dates if is_stated(text, d.start, d.start + len(d.text))]
            if self.date is not None:
                want = parse_date(self.date)
                if not any((d.month, d.day) == (want.month, want.day)
                           and (want.year is None or d.year is None or d.year == want.year) for d in dates):
                    return False
            if self.invalid_date is not None and any(not d.valid for d in dates) != self.invalid_date:
                return False
        if self.mentions is not None:
            forms = _word_stems if self.word_forms else (lambda x: x)
            words = [re.escape(forms(norm(m))).replace(r"\ ", r"\s+") for m in self.mentions]
            # stated: read in the text as written, whose newlines end sentences
            said = forms(text if self.stated else norm(text))
            found = re.finditer(rf"(?<!\w)(?:{'|'.join(words)})(?!\w)", said, re.IGNORECASE)
            if not any(not self.stated or is_stated(said, m.start(), m.end()) for m in found):
                return False
        if self.weekday is not None and not names_weekday(text, weekday_number(self.weekday), self.default_year,
                                                          self.numeric_date_order):
            return False
        if self.all_of is not None and not all(m.test(value) for m in self.all_of):
            return False
        if self.any_of is not None and not any(m.test(value) for m in self.any_of):
            return False
        return True
