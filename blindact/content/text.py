"""Text as a person reads it from bytes: decoded in whatever common encoding it is in, HTML without its
tags, and the printable strings of a file that is not text at all."""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

from blindact.content.sniff import utf16_order

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding it was read in: a BOM's (UTF-8/16/32), UTF-16 without one, UTF-8, else
    Windows-1252 (Latin-1 for the five bytes it leaves undefined). Never fails."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding, errors="replace"), encoding
    order = utf16_order(data[:1024])
    if order:
        return data.decode(order, errors="replace"), order
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data.decode("utf-8", errors="replace"), "utf-8"  # cut mid-character by a limit
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


# what travels in the markup without being shown, yet a recipient can read (a tooltip, an image's
# alternative text, a link, a form's pre-filled value)
_SHOWN_ATTRIBUTES = ("alt", "title", "value", "placeholder", "content", "href", "src", "aria-label")
_BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "section", "article",
           "header", "footer", "blockquote", "pre", "title", "ul", "ol", "dd", "dt", "hr", "form", "option"}


class _HTMLText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden: list[str] = []
        self.in_code = 0  # inside <script> or <style>: carried, not shown

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.in_code += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append("\t")
        self.hidden += [v for k, v in attrs if k in _SHOWN_ATTRIBUTES and v and v.strip()]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.in_code = max(0, self.in_code - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        (self.hidden if self.in_code else self.parts).append(data)

    def handle_comment(self, data):
        self.hidden.append(data)


def html_text(markup: str) -> str:
    """The text of an HTML page: what it shows, one block a line, then what it carries unshown
    (comments, scripts, alt and title text, links, pre-filled values), so a secret hidden in the markup is read."""
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    shown = re.sub(r"[ \t\r\f\v]*\n\s*", "\n", "".join(parser.parts)).strip()
    return "\n".join([shown, *(h.strip() for h in parser.hidden)]).strip()


_PRINTABLE = re.compile(rb"[\x20-\x7e\t]{8,}")


def printable_strings(data: bytes) -> str:
    """Runs of 8 or more printable ASCII characters, one a line (as `strings` prints them): what can be
    read in a database, an old .doc or any other binary file."""
    return "\n".join(m.group().decode("ascii") for m in _PRINTABLE.finditer(data))
