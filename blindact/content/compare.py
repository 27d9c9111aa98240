"""Comparing text by what it says: `normalize` is the form content is compared in, and `holds`/`locate`
tell whether a text holds a piece of protected data however it was written down.

Kinds of needle (`kind=`):

- "text": a sentence or phrase, its words in order, any whitespace, case, punctuation, quotes or dashes
  between them, apostrophes optional ("don't" = "dont"), a word split by a hyphen at a line end joined.
- "digits" (also "card", "ssn", "account"): the needle's digits in order, with up to three separators
  of any kind between two of them ("4111 1111-1111.1111", "521 44 9031"), and no digit glued on
  either side ("14111111111111111" does not hold "4111111111111111").
- "phone": like digits, and the national number also counts without its country code, with or
  without a trunk 0 ("+44 20 7946 0958" is held by "020 7946 0958").
- "iban": letters and digits in order, any spaces or dashes between them, any case.
- "secret": a key or token, case-sensitive (case-insensitive when it is all hex), matched across line
  wraps, indentation and mail quoting (">" at a line's start).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

Kind = Literal["text", "digits", "card", "ssn", "account", "phone", "iban", "secret"]
KINDS: tuple[str, ...] = Kind.__args__  # type: ignore[attr-defined]

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d\u2e3a\u2e3b"
_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\u02bc\u0060\u00b4"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u2039\u203a"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"  # zero-width characters and the soft hyphen
_TABLE = {**{ord(c): "-" for c in _DASHES}, **{ord(c): "'" for c in _SINGLE_QUOTES},
          **{ord(c): '"' for c in _DOUBLE_QUOTES}, **{ord(c): None for c in _INVISIBLE}}


def _fold(word: str) -> str:
    if word.isascii():
        return word.lower()
    return " ".join(unicodedata.normalize("NFKC", word).translate(_TABLE).casefold().split())


def _words(text: str) -> list[str]:
    """The text's words, each normalized whole (so a letter and its combining accent compose)."""
    return [_fold(w) for w in text.split()]


def normalize(text: str) -> str:
    """The form content is compared in: Unicode NFKC (full-width and ligature forms to plain ones),
    case-folded, dashes and minus signs as "-", curly and angled quotes as ' and ", zero-width
    characters and soft hyphens removed, every run of whitespace one space, no space at the ends."""
    return " ".join(w for w in _words(text) if w)


def _origin(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The span of `text` that the span of `normalize(text)` came from (a word whose length changed
    in normalizing maps proportionally)."""
    start, end = span
    found: list[int] = []
    pos = 0  # where the current word starts in the normalized text
    for m in re.finditer(r"\S+", text):
        folded = _fold(m.group())
        if not folded:
            continue
        for target in (start, end - 1)[len(found):]:
            if pos <= target < pos + len(folded) + 1:  # the word, or the space after it
                offset = min(target - pos, len(folded) - 1)
                found.append(m.start() + offset * len(m.group()) // len(folded))
            else:
                break
        if len(found) == 2:
            return found[0], found[1] + 1
        pos += len(folded) + 1
    return (found[0] if found else 0), len(text)


def _digits_pattern(digits: str) -> str:
    return r"[^\w]{0,3}".join(digits)


def _patterns(needle: str, kind: str) -> list[tuple[str, bool]]:
    """(regex, run on the normalized text?) alternatives for one needle."""
    if kind == "text":
        words = re.findall(r"\w+", normalize(needle).replace("'", ""))
        if not words:
            return []
        joiner = r"(?:'|-\s?)?"
        return [(r"(?<!\w)" + r"[\W_]+".join(joiner.join(map(re.escape, w)) for w in words) + r"(?!\w)", True)]
    if kind in ("digits", "card", "ssn", "account", "phone"):
        plain = normalize(needle)
        digits = re.sub(r"\D", "", plain)
        if not digits:
            return []
        alternatives = [_digits_pattern(digits)]
        if kind == "phone":
            international = re.match(r"(\+|00)", plain)
            if international:  # +44 20 7946 0958: also 20 7946 0958 or 020 7946 0958
                rest = digits[2:] if international.group(1) == "00" else digits
                alternatives += [r"(?:0[^\w]{0,3})?" + _digits_pattern(rest[n:]) for n in (1, 2, 3) if len(rest) - n >= 7]
            elif digits.startswith("0") and len(digits) >= 8:  # 020 7946 0958: also +44 20 7946 0958
                alternatives.append(_digits_pattern(digits[1:]))
        return [(rf"(?<!\d)(?:{'|'.join(alternatives)})(?!\d)", True)]
    if kind == "iban":
        chars = re.sub(r"[^0-9a-z]", "", normalize(needle))
        return [(r"(?<![0-9a-z])" + r"[\s\-.]{0,2}".join(chars) + r"(?![0-9a-z])", True)] if chars else []
    if kind == "secret":
        chars = re.sub(r"\s", "", needle)
        if not chars:
            return []
        # a wrap between any two characters: whitespace, a shell's backslash, a mail's quoting marks
        gap = r"\s*" if re.search(r"[>\\]", chars) else r"[\s>\\]*"
        body = gap.join(map(re.escape, chars))
        return [(("(?i)" if re.fullmatch(r"[0-9A-Fa-f]+", chars) else "") + body, False)]
    raise ValueError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")


def locate(haystack: str, needle: str, kind: Kind = "text") -> tuple[int, int] | None:
    """Where in `haystack` the needle is held (start, end), by the rules of its kind (see the module);
    None when it is not."""
    if not haystack or not needle:
        return None
    normal = None
    for pattern, on_normal in _patterns(needle, kind):
        if on_normal:
            if normal is None:
                normal = normalize(haystack)
            m = re.search(pattern, normal)
            if m:
                return _origin(haystack, m.span())
        else:
            m = re.search(pattern, haystack)
            if m:
                return m.start(), m.end()
    return None


def holds(haystack: str, needle: str, kind: Kind = "text") -> bool:
    """Whether `haystack` holds `needle` however it is written down (see the module for each kind)."""
    return locate(haystack, needle, kind) is not None
