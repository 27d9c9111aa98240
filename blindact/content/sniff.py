"""What format a file is in: by its first bytes (its magic) first, by its name second. A .docx renamed
.odt is a .docx; a text file is told apart by its name (.json, .yaml, .csv...) or, for HTML, by its start.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import PurePosixPath

from blindact.content.archives import open_zip

# formats that hold text in their bytes, told apart by name only
TEXT_FORMATS = ("text", "html", "json", "yaml", "ini", "toml", "csv", "xml")
OFFICE_FORMATS = ("odt", "ods", "odp", "docx", "xlsx", "pptx")
ARCHIVE_FORMATS = ("zip", "tar", "gzip", "bzip2", "xz")
IMAGE_FORMATS = ("png", "jpeg", "gif", "webp", "bmp", "tiff")

_TEXT_SUFFIX = {
    ".html": "html", ".htm": "html", ".xhtml": "html", ".eml": "text", ".json": "json", ".yaml": "yaml",
    ".yml": "yaml", ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".properties": "ini", ".env": "ini",
    ".toml": "toml", ".csv": "csv", ".tsv": "csv", ".xml": "xml", ".svg": "xml",
}
_ODF_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": "odt", "application/vnd.oasis.opendocument.text-template": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.spreadsheet-template": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/vnd.oasis.opendocument.presentation-template": "odp",
}
_OOXML_MAIN = {"word/document.xml": "docx", "xl/workbook.xml": "xlsx", "ppt/presentation.xml": "pptx"}
_NAME_FORMATS = {".odt": "odt", ".ott": "odt", ".ods": "ods", ".ots": "ods", ".odp": "odp", ".otp": "odp",
                 ".docx": "docx", ".docm": "docx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".pptx": "pptx",
                 ".pdf": "pdf", ".zip": "zip", ".tar": "tar", ".gz": "gzip", ".tgz": "gzip", ".bz2": "bzip2",
                 ".tbz2": "bzip2", ".xz": "xz", ".txz": "xz"}
_HTML_START = re.compile(rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)


def suffix(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


def _zip_kind(data: bytes) -> str:
    """An OpenDocument or Office Open XML file by its members, else a plain zip."""
    try:
        zf, _ = open_zip(data, 10_000)
        with zf:
            names = set(zf.namelist())
            if "mimetype" in names:
                info = zf.getinfo("mimetype")
                if info.file_size < 200:
                    kind = _ODF_MIMETYPES.get(zf.read(info).decode("ascii", "replace").strip())
                    if kind:
                        return kind
            if "[Content_Types].xml" in names:
                for main, kind in _OOXML_MAIN.items():
                    if main in names:
                        return kind
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, NotImplementedError, RuntimeError):
        pass  # a broken zip is still a zip: the archive reader says what is wrong with it
    return "zip"


def detect(data: bytes, name: str = "") -> str:
    """The format of `data`: one of the OFFICE, ARCHIVE and IMAGE formats, "pdf", a TEXT format, or
    "binary" (anything else: its printable strings are what a person could read)."""
    head = data[:1024]
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_kind(data)
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh") and head[3:4].isdigit():
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if data[257:262] == b"ustar":
        return "tar"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "tiff"
    if head.startswith(b"BM") and len(head) >= 26 and int.from_bytes(head[2:6], "little") == len(data):
        return "bmp"
    by_name = _NAME_FORMATS.get(suffix(name))
    if looks_like_text(head):
        # text named .pdf or .docx is text: what a person opening it reads (a "lease.pdf" that holds a
        # lease's words leaks them as surely as a real PDF)
        return text_format(head, name)
    if by_name in ("tar", "pdf", "zip") or by_name in OFFICE_FORMATS:
        # the name promises a binary format its magic does not show: an old tar without "ustar", a
        # broken PDF or zip; its reader says what is wrong
        return by_name
    return "binary"


def text_format(head: bytes, name: str) -> str:
    fmt = _TEXT_SUFFIX.get(suffix(name))
    if fmt is None and _HTML_START.match(head.lstrip(b"\xef\xbb\xbf")):
        return "html"
    return fmt or "text"


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes read as text in some common encoding: a BOM, UTF-16 without one (every
    other byte 0), or few control characters."""
    if not head:
        return True
    if head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return True
    if utf16_order(head):
        return True
    if b"\x00" in head:
        return False
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls <= len(head) // 100


def utf16_order(head: bytes) -> str | None:
    """"utf-16-le"/"utf-16-be" for UTF-16 text without a BOM (mostly ASCII: one byte of each pair 0)."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even = sum(1 for i in range(0, pairs * 2, 2) if head[i] == 0)
    odd = sum(1 for i in range(1, pairs * 2, 2) if head[i] == 0)
    if odd >= 0.7 * pairs and even <= 0.1 * pairs:
        return "utf-16-le"
    if even >= 0.7 * pairs and odd <= 0.1 * pairs:
        return "utf-16-be"
    return None
