"""The members of archives and compressed files, unpacked within the limits: zip, tar, and gzip/bzip2/xz
streams (so .tar.gz is a gzip holding a tar). Each reader yields (name, bytes, note) per member; the
note says why a member was cut short or not read, and reading goes on with the next one."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

from blindact.content.limits import Budget, LimitReached

_CHUNK = 1 << 16
_EOCD = struct.Struct("<4s4H2LH")  # end of central directory: sig, disks, entries here, entries, size, offset, comment
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central directory header (46 bytes)

Member = tuple[str, bytes | None, str | None]
_CORRUPT = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError, NotImplementedError)


def read_stream(stream: BinaryIO, budget: Budget, consumed=lambda: 0, cap: int | None = None) -> tuple[bytes, str | None, bool]:
    """Everything `stream` gives, in chunks, counting each against the budget: what was read, a note when
    something stopped it before its end (a limit, or corrupt data after a good start), and whether that
    was a limit of the whole call. `consumed()` tells how many compressed bytes produced it (for the
    ratio); `cap` stops at a declared size."""
    out = bytearray()
    read = getattr(stream, "read1", stream.read)  # one decompression step at a time: a later error keeps the earlier data
    try:
        while cap is None or len(out) < cap:
            budget.check_time()
            chunk = read(_CHUNK if cap is None else min(_CHUNK, cap - len(out)))
            if not chunk:
                break
            budget.take_bytes(len(chunk))
            out += chunk
            budget.check_ratio(len(out), consumed())
    except LimitReached as stop:
        return bytes(out), f"truncated: {stop}", stop.whole
    except _CORRUPT as exc:
        if not out:
            raise
        return bytes(out), f"truncated: corrupt after {len(out):,} bytes ({type(exc).__name__}: {exc})", False
    return bytes(out), None, False


# --------------------------------------------------------------------------- compressed streams

_OPENERS = {"gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"), "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}
_INNER_SUFFIX = {".tgz": ".tar", ".tbz2": ".tar", ".tbz": ".tar", ".txz": ".tar"}


def _gzip_name(data: bytes) -> str | None:
    """The original file name a gzip header may carry (FNAME)."""
    if len(data) < 10 or not data[3] & 0x08:
        return None
    pos = 10
    if data[3] & 0x04:
        pos += 2 + int.from_bytes(data[10:12], "little")
    end = data.find(b"\0", pos, pos + 1024)
    return data[pos:end].decode("latin-1") if end > pos else None


def inner_name(data: bytes, fmt: str, name: str) -> str:
    """The name of what a gzip/bzip2/xz file holds: its header's, or its own without the suffix."""
    path = PurePosixPath(name or "data")
    if fmt == "gzip" and (original := _gzip_name(data)):
        return PurePosixPath(original).name
    if path.suffix.lower() in _INNER_SUFFIX:
        return path.stem + _INNER_SUFFIX[path.suffix.lower()]
    return path.stem if path.suffix else path.name + ".out"


def stream_member(data: bytes, fmt: str, name: str, budget: Budget) -> Iterator[Member]:
    """The one member of a gzip, bzip2 or xz file (every concatenated stream of it, as the tools read it)."""
    raw = io.BytesIO(data)
    inner = inner_name(data, fmt, name)
    try:
        with _OPENERS[fmt](raw) as stream:
            content, note, whole = read_stream(stream, budget, consumed=raw.tell)
    except _CORRUPT as exc:
        yield inner, None, f"error: {fmt} data is corrupt: {exc}"
        return
    yield inner, content, note
    if whole:
        raise LimitReached(note.removeprefix("truncated: "))


# --------------------------------------------------------------------------- zip


def open_zip(data: bytes, max_entries: int) -> tuple[zipfile.ZipFile, int]:
    """A ZipFile over `data` that lists at most `max_entries` members, and how many it declares. The
    central directory is cut before zipfile reads it, so a zip declaring millions of entries costs no
    more memory than one of `max_entries`."""
    found = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if found < 0 or found + _EOCD.size > len(data):
        return zipfile.ZipFile(io.BytesIO(data)), -1  # zipfile says what is wrong
    _, _, _, _, total, cd_size, cd_offset, _ = _EOCD.unpack_from(data, found)
    if (total == 0xFFFF or cd_offset == 0xFFFFFFFF) and found >= _ZIP64_LOCATOR.size:
        sig, _, z64_at, _ = _ZIP64_LOCATOR.unpack_from(data, found - _ZIP64_LOCATOR.size)
        if sig == b"PK\x06\x07" and z64_at + _ZIP64_EOCD.size <= len(data):
            fields = _ZIP64_EOCD.unpack_from(data, z64_at)
            if fields[0] == b"PK\x06\x06":
                total, cd_size, cd_offset = fields[7], fields[8], fields[9]
    if total <= max_entries:
        return zipfile.ZipFile(io.BytesIO(data)), total
    start = found - cd_size if cd_offset + cd_size > found else cd_offset
    pos, kept = start, 0
    while kept < max_entries and pos + _CENTRAL.size <= len(data) and data[pos:pos + 4] == b"PK\x01\x02":
        fields = _CENTRAL.unpack_from(data, pos)
        pos += _CENTRAL.size + fields[12] + fields[13] + fields[14]  # name, extra field, comment
        kept += 1
    eocd = _EOCD.pack(b"PK\x05\x06", 0, 0, kept, kept, pos - start, min(start, 0xFFFFFFFE), 0)
    return zipfile.ZipFile(io.BytesIO(data[:pos] + eocd)), total


def zip_members(data: bytes, budget: Budget) -> Iterator[Member]:
    """Each file in a zip (folders skipped), read within the budget. An encrypted member or one in a
    compression zipfile cannot read is listed with a note."""
    room = max(0, budget.limits.members - budget.members)
    zf, declared = open_zip(data, room)
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            budget.take_member()
            budget.check_time()
            if info.flag_bits & 0x1:
                yield info.filename, None, "error: encrypted (no password)"
                continue
            try:
                with zf.open(info) as stream:
                    content, note, whole = read_stream(stream, budget, consumed=lambda: info.compress_size, cap=info.file_size)
            except _CORRUPT as exc:
                yield info.filename, None, f"error: {type(exc).__name__}: {exc}"
                continue
            yield info.filename, content, note
            if whole:
                raise LimitReached(note.removeprefix("truncated: "))
    if declared > room:
        raise LimitReached(f"member limit ({budget.limits.members:,}) reached: the zip lists {declared:,}")


# --------------------------------------------------------------------------- tar


class Broken(Exception):
    """A container that breaks off after some of its members (a tar cut short): those read are kept."""


def tar_members(data: bytes, budget: Budget) -> Iterator[Member]:
    """Each regular file in an (uncompressed) tar, in order; links and devices are skipped. A member cut
    short by the end of the data is yielded as far as it goes."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        while True:
            budget.check_time()
            try:
                info = tf.next()
            except tarfile.TarError as exc:
                raise Broken(f"the tar breaks off: {exc}") from None
            if info is None:
                return
            if not info.isfile():
                continue
            budget.take_member()
            if info.issparse():
                try:
                    content, note, whole = read_stream(tf.extractfile(info), budget, cap=info.size)
                except _CORRUPT as exc:
                    yield info.name, None, f"error: {type(exc).__name__}: {exc}"
                    continue
            else:  # the tar is in memory: a member is a slice of it
                content = data[info.offset_data: info.offset_data + info.size]
                budget.take_bytes(len(content))
                note = None if len(content) == info.size else f"truncated: the tar ends {info.size - len(content):,} bytes into it"
                whole = False
            yield info.name, content, note
            if whole:
                raise LimitReached(note.removeprefix("truncated: "))
