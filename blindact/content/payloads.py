"""Data hidden in text as base64 or hex: a secret pasted encoded into a note, a file sent as a data: URL,
`base64 key.pem > key.txt`. A run is kept only when it decodes to text or to a known file format, so a
hash, an identifier or a long word is not mistaken for one."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from blindact.content.sniff import ARCHIVE_FORMATS, IMAGE_FORMATS, OFFICE_FORMATS, detect

# a run of base64 (standard or URL-safe alphabet), wrapped over lines as encoders wrap it (a mail's
# quoting marks kept out); at least 20 characters, 15 bytes decoded
_B64_CHAR = r"[A-Za-z0-9+/_-]"
# each line break inside a run leads to more of it, so a run starts and ends on a base64 character and
# blank lines never make one
_BASE64 = re.compile(rf"(?<![A-Za-z0-9+/_-]){_B64_CHAR}(?:{_B64_CHAR}|\r?\n[ \t>]*(?={_B64_CHAR})){{19,}}(?:={{1,2}})?(?![A-Za-z0-9+/_=-])")
# hex: at least 16 bytes, written together or separated ("de ad be ef", "de:ad:be:ef")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}(?:[ :]?(?=[0-9A-Fa-f]{2}))?){16,}(?![0-9A-Za-z])")
_KNOWN = {"pdf", *ARCHIVE_FORMATS, *IMAGE_FORMATS, *OFFICE_FORMATS}
_MIN_TEXT = 6


def _readable(data: bytes) -> bool:
    """Text a person could read: UTF-8, nearly all printable."""
    if len(data) < _MIN_TEXT:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t")
    return printable >= 0.95 * len(text)


def _accept(data: bytes) -> bool:
    return _readable(data) or (len(data) >= 4 and detect(data, "") in _KNOWN)


def _b64(run: str) -> bytes | None:
    lines = run.split("\n")
    # a wrapped block is whole when its length is a multiple of 4; a short word on the line after it
    # ("sha256:") is not part of it
    while len(lines) > 1 and len(re.sub(r"[\s>]", "", "".join(lines))) % 4:
        lines.pop()
    compact = re.sub(r"[\s>]", "", "".join(lines))
    altchars = b"-_" if ("-" in compact or "_" in compact) else None
    if altchars and ("+" in compact or "/" in compact):
        return None  # both alphabets at once: not base64
    compact += "=" * (-len(compact) % 4)
    try:
        return base64.b64decode(compact, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None


def payloads(text: str) -> Iterator[tuple[str, int, bytes]]:
    """("base64" or "hex", where it starts in `text`, the decoded bytes) for every encoded run in the text
    that decodes to readable text or to a file of a known format."""
    for m in _BASE64.finditer(text):
        run = m.group()
        if not re.search(r"[0-9+/=_-]", run) and not (re.search(r"[a-z]", run) and re.search(r"[A-Z]", run)):
            continue  # letters of one case only: a word, not an encoding
        if re.fullmatch(r"[0-9A-Fa-f\s>]+", run):
            continue  # hex digits only: the hex pass reads it
        data = _b64(run)
        if data and _accept(data):
            yield "base64", m.start(), data
    for m in _HEX.finditer(text):
        try:
            data = bytes.fromhex(re.sub(r"[ :]", "", m.group()))
        except ValueError:
            continue
        if _accept(data):
            yield "hex", m.start(), data
