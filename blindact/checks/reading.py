"""Reading the agent's files for a check: as text, as a private copy for the readers that want a path,
as what a person reads in them (a document's paragraphs, a sheet's cells), or through blindact.content's
extractors (any format, archives and encodings too). Every read goes through the home's SafeFolder: a
FIFO, a device or a link leaving the home is never opened."""

from __future__ import annotations

import tempfile
from pathlib import Path

from blindact.checks.base import COPY_MAX_BYTES
from blindact.desktop import office
from blindact.desktop.safefs import SafeFolder, UnsafePath


def why_unreadable(exc: OSError) -> str:
    if isinstance(exc, UnsafePath):
        return str(exc).split(": ", 1)[-1]
    return exc.strerror or str(exc)


def text_or_empty(home: SafeFolder, rel: str) -> str:
    try:
        return home.read_text(rel)
    except OSError:
        return ""


_copies: dict[str, Path] = {}


def private_copy(home: SafeFolder, rel: str) -> Path:
    """The bytes of a regular file of the agent's, copied (capped) to a file only this process owns, for
    the readers that want a path: they then never open what the agent could swap or point elsewhere."""
    data = home.read_bytes(rel)
    folder = _copies.get("dir")
    if folder is None or not folder.is_dir():
        folder = _copies["dir"] = Path(tempfile.mkdtemp(prefix="blindact-check-"))
    target = folder / ("copy" + Path(rel).suffix.lower())
    target.write_bytes(data)
    return target


def extracted(home: SafeFolder, rel: str):
    """What can be read from a file in the home (blindact.content.extract), within a copy's size and two
    seconds; None when it cannot be read (deleted, moved away, not a file)."""
    from blindact.content import Limits, extract

    try:
        return extract(home.read_bytes(rel), rel, limits=Limits(input_bytes=COPY_MAX_BYTES, seconds=2.0))
    except OSError:
        return None


def lines_of(home: SafeFolder, rel: str, pending_deletions: bool = False) -> list[str]:
    """The lines of a text file, or of a document or sheet as a person reads it (office.text_lines)."""
    suffix = Path(rel).suffix.lower()
    if suffix in office.DOCUMENT_SUFFIXES or suffix in office.PRESENTATION_SUFFIXES or suffix in (".ods", ".xlsx"):
        return office.text_lines(private_copy(home, rel), pending_deletions)
    return home.read_text(rel).splitlines()
