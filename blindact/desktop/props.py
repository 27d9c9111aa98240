"""Seeded files that are what their names say. A task gives a file's words (a home file's `content`, a mail
attachment's or a drive file's); a file named .pdf, .zip, .tar.gz, .gz, .deb, .db, .jpg, .png, .odt, .docx or
.bin is made a real file of that type holding them: a one-page PDF with the words on it, an archive with a text
member, a Debian package whose control file names the package (from the file name) and whose documentation holds
the words, a SQLite database with a table of the lines, a picture showing them, a document of their paragraphs, an
opaque build blob. An agent that opens, lists, extracts or inspects such a prop (`file`,
`tar tzf`, `dpkg-deb -I`, `sqlite3`, a PDF viewer, the file manager's thumbnails) sees a real one, and a check that
reads content (blindact.content) reads the words back. Every other name is written as text.

Deterministic: the same words give the same bytes (fixed timestamps), so a task's files are the same on every
desktop and every reset."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import sqlite3
import tarfile
import tempfile
import textwrap
import zipfile
import zlib
from functools import lru_cache
from pathlib import Path

# 2025-01-01T00:00:00Z: every archive member's and header's time
_EPOCH = 1735689600


# what a file name's ending makes it, longest endings first (.tar.gz before .gz)
_TYPES = ((".tar.gz", "tgz"), (".tgz", "tgz"), (".tar", "tar"), (".gz", "gz"), (".zip", "zip"), (".pdf", "pdf"),
          (".deb", "deb"), (".db", "db"), (".sqlite", "db"), (".sqlite3", "db"), (".jpg", "image"), (".jpeg", "image"),
          (".png", "image"), (".odt", "document"), (".docx", "document"), (".bin", "bin"))


def _type(name: str) -> tuple[str, str] | None:
    """(kind, the name without its type's ending) for a name of one of the types, else None."""
    lower = name.lower()
    for suffix, kind in _TYPES:
        if lower.endswith(suffix):
            return kind, name[: -len(suffix)]
    return None


# ------------------------------------------------------------------------------------------------ PDF
def _pdf_string(line: str) -> str:
    # WinAnsi covers the tasks' Latin text; anything else becomes "?" rather than a broken string
    text = line.encode("cp1252", errors="replace").decode("latin-1")
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def pdf_bytes(text: str, title: str) -> bytes:
    """A one-page US Letter PDF 1.4 with `text` in Helvetica 11 pt, lines wrapped at 90 characters (a page holds
    60 lines: longer text is cut with a note), its content stream compressed as real PDFs' are."""
    lines = [piece for line in text.splitlines() for piece in (textwrap.wrap(line, 90) or [""])]
    if len(lines) > 60:
        lines = lines[:59] + ["[...]"]
    ops = ["BT", "/F1 11 Tf", "14 TL", "56 736 Td"] + [f"{_pdf_string(line)} Tj T*" for line in lines] + ["ET"]
    stream = zlib.compress("\n".join(ops).encode("latin-1"))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Title " + _pdf_string(title).encode("latin-1") + b" /Producer (blindact) /CreationDate (D:20250101000000Z) >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# ------------------------------------------------------------------------------------------------ archives
def _tar(members: dict[str, bytes], compress: bool) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uname, info.gname = len(data), _EPOCH, 0o644, "root", "root"
            tar.addfile(info, io.BytesIO(data))
    return _gzip(raw.getvalue(), None) if compress else raw.getvalue()


def _gzip(data: bytes, name: str | None) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(filename=name or "", mode="wb", fileobj=out, mtime=_EPOCH) as gz:
        gz.write(data)
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2025, 1, 1, 0, 0, 0)), data,
                             compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _ar(members: dict[str, bytes]) -> bytes:
    out = bytearray(b"!<arch>\n")
    for name, data in members.items():
        out += f"{name:<16}{_EPOCH:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode("ascii") + data
        if len(data) % 2:
            out += b"\n"
    return bytes(out)


def _package(stem: str) -> tuple[str, str, str]:
    """Package, version and architecture from a .deb's name: `name_version_arch` (Debian's own) or
    `name-version-arch`; what cannot be read is `stem`, "1.0", "all"."""
    m = re.fullmatch(r"([a-z0-9][a-z0-9+.-]*?)[_-](\d[\w.+~:-]*?)(?:[_-](amd64|arm64|i386|armhf|all))?", stem)
    if m is None:
        return re.sub(r"[^a-z0-9+.-]", "-", stem.lower()) or "package", "1.0", "all"
    return m.group(1), m.group(2), m.group(3) or "all"


def deb_bytes(text: str, stem: str) -> bytes:
    """A Debian binary package (what `dpkg-deb -I/-c` reads): its control names the package, and its one file is
    /usr/share/doc/<package>/README holding `text`."""
    package, version, arch = _package(stem)
    summary = (text.strip().splitlines() or [package])[0][:70]
    control = (f"Package: {package}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: Vendor <packages@example.com>\n"
               f"Installed-Size: {max(1, len(text) // 1024)}\nSection: misc\nPriority: optional\n"
               f"Description: {summary}\n").encode()
    return _ar({"debian-binary": b"2.0\n",
                "control.tar.gz": _tar({"./control": control}, compress=True),
                "data.tar.gz": _tar({f"./usr/share/doc/{package}/README": text.encode()}, compress=True)})


# ------------------------------------------------------------------------------------------------ others
def sqlite_bytes(text: str, stem: str) -> bytes:
    """A SQLite database with one table named after the file (`customers.db`: customers) holding the lines."""
    table = re.sub(r"\W", "_", stem) or "records"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "db"
        conn = sqlite3.connect(path)
        try:
            conn.execute(f'CREATE TABLE "{table}" (id INTEGER PRIMARY KEY, line TEXT NOT NULL)')
            conn.executemany(f'INSERT INTO "{table}" (line) VALUES (?)', [(line,) for line in text.splitlines()])
            conn.commit()
        finally:
            conn.close()
        return path.read_bytes()


def blob_bytes(text: str, size: int = 4096) -> bytes:
    """Opaque bytes (a build output, a cache): the same for the same words."""
    out, block = bytearray(), text.encode()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:size])


def image_bytes(text: str, name: str) -> bytes:
    """A 640x480 picture (JPEG or PNG, by `name`) showing `text`."""
    from blindact.desktop.pictures import ImageSpec, Shape, render_image

    out = io.BytesIO()
    render_image(ImageSpec(path=name, width=640, height=480, background="#f4f1ea",
                           shapes=[Shape(text=text.strip() or Path(name).stem, at=(24, 24), size=20)])
                 ).save(out, format="PNG" if name.lower().endswith(".png") else "JPEG")
    return out.getvalue()


def document_bytes(text: str, name: str) -> bytes:
    """An .odt or .docx (by `name`) whose paragraphs are the lines of `text`."""
    from blindact.desktop.office import DocumentSpec, write_document

    with tempfile.TemporaryDirectory() as tmp:
        return write_document(DocumentSpec(path=name, paragraphs=text.rstrip("\n").split("\n")), Path(tmp)).read_bytes()


@lru_cache(maxsize=256)
def prop_bytes(name: str, text: str) -> bytes | None:
    """`text` as a real file of the type the file name `name` says; None for a name of no such type (text)."""
    typed = _type(name)
    if typed is None:
        return None
    kind, stem = typed
    member = f"{stem}.txt"
    return {"pdf": lambda: pdf_bytes(text, stem),
            "zip": lambda: _zip({member: text.encode()}),
            "tgz": lambda: _tar({member: text.encode()}, compress=True),
            "tar": lambda: _tar({member: text.encode()}, compress=False),
            "gz": lambda: _gzip(text.encode(), stem),
            "deb": lambda: deb_bytes(text, stem),
            "db": lambda: sqlite_bytes(text, stem),
            "image": lambda: image_bytes(text, name),
            "document": lambda: document_bytes(text, name),
            "bin": lambda: blob_bytes(text)}[kind]()


def seeded_bytes(name: str, text: str) -> bytes:
    """What a seeded file called `name` holding `text` is made of: a real file of its type, else the text."""
    data = prop_bytes(name, text)
    return text.encode() if data is None else data
