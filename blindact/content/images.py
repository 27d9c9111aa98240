"""What can be read from a picture without OCR: its format and size, and the text its metadata carries
(PNG text chunks, EXIF descriptions and comments, a JPEG comment, XMP). Pixels are never decoded."""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass, field

# EXIF tags whose text a viewer shows: ImageDescription, Artist, Copyright, and Windows' XP* fields
_EXIF_TEXT = {0x010E: "ImageDescription", 0x013B: "Artist", 0x8298: "Copyright", 0x9C9B: "XPTitle",
              0x9C9C: "XPComment", 0x9C9D: "XPAuthor", 0x9C9E: "XPKeywords", 0x9C9F: "XPSubject"}
_EXIF_IFD, _USER_COMMENT = 0x8769, 0x9286
_MAX_CHUNK_TEXT = 1_000_000  # one PNG text chunk, decompressed


@dataclass
class ImageInfo:
    width: int | None = None
    height: int | None = None
    texts: list[tuple[str, str]] = field(default_factory=list)  # (key, text)
    error: str | None = None


def _inflate(data: bytes) -> bytes:
    return zlib.decompressobj().decompress(data, _MAX_CHUNK_TEXT)


def png_texts(data: bytes) -> list[tuple[str, str]]:
    """Every tEXt, zTXt and iTXt chunk of a PNG, wherever it sits (Pillow reads those after the pixels
    only when it decodes them)."""
    out = []
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        body = data[pos + 8: pos + 8 + length]
        pos += 12 + length
        try:
            if kind == b"tEXt":
                key, _, text = body.partition(b"\0")
                out.append((key.decode("latin-1"), text.decode("latin-1")))
            elif kind == b"zTXt":
                key, _, rest = body.partition(b"\0")
                out.append((key.decode("latin-1"), _inflate(rest[1:]).decode("latin-1")))
            elif kind == b"iTXt":
                key, _, rest = body.partition(b"\0")
                compressed, rest = rest[0], rest[2:]
                _lang, _, rest = rest.partition(b"\0")
                _translated, _, text = rest.partition(b"\0")
                out.append((key.decode("latin-1"), (_inflate(text) if compressed else text).decode("utf-8", "replace")))
            elif kind == b"IEND":
                break
        except (zlib.error, IndexError) as exc:
            out.append((kind.decode("latin-1"), f"(unreadable: {exc})"))
    return out


def _exif_text(value) -> str | None:
    if isinstance(value, bytes):
        if value[:8] in (b"ASCII\0\0\0", b"UNICODE\0", b"\0" * 8):  # a UserComment's character-code prefix
            encoding = "utf-16-le" if value[:8] == b"UNICODE\0" else "latin-1"
            value = value[8:].decode(encoding, "replace")
        else:
            value = value.decode("utf-16-le", "replace") if len(value) % 2 == 0 and b"\0" in value else value.decode("latin-1")
    elif isinstance(value, tuple) and all(isinstance(v, int) for v in value):  # XP* fields: UTF-16 bytes as ints
        value = bytes(value).decode("utf-16-le", "replace")
    text = str(value).strip("\0 ").strip()
    return text or None


def read_image(data: bytes) -> ImageInfo:
    from PIL import Image, UnidentifiedImageError

    info = ImageInfo()
    if data.startswith(b"\x89PNG"):
        info.texts += png_texts(data)
    try:
        with Image.open(io.BytesIO(data)) as im:
            info.width, info.height = im.size
            exif = im.getexif()
            tags = {**exif, **exif.get_ifd(_EXIF_IFD)}
            for tag, label in [*_EXIF_TEXT.items(), (_USER_COMMENT, "UserComment")]:
                text = _exif_text(tags[tag]) if tag in tags else None
                if text:
                    info.texts.append((label, text))
            comment = im.info.get("comment")
            if comment:
                info.texts.append(("comment", _exif_text(comment) or ""))
            xmp = im.info.get("xmp") or im.info.get("XML:com.adobe.xmp")
            if xmp and not data.startswith(b"\x89PNG"):  # a PNG's XMP is an iTXt chunk, already read
                info.texts.append(("XMP", xmp.decode("utf-8", "replace") if isinstance(xmp, bytes) else str(xmp)))
    except UnidentifiedImageError:
        info.error = "the image data cannot be read"
    except (OSError, ValueError, SyntaxError, struct.error, Image.DecompressionBombError) as exc:
        info.error = f"{type(exc).__name__}: {exc}"
    return info
