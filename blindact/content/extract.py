"""`extract`: what a person, or whoever receives a file, can read from it, whatever its format and name.

One call reads one file's bytes into an `Extracted` tree: the detected format, the text, metadata, and
for containers (archives, compressed files, PDF attachments, an office file's embedded files, base64 or
hex payloads in the text) one member per thing inside, read the same way. Every limit of `Limits`
holds for the whole tree; a limit reached or a broken file leaves a note (`truncated`, `error`) on the
part it concerns and keeps everything read so far. `extract` never raises for any input.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from blindact.content import archives, images, office, payloads, pdf
from blindact.content.limits import Budget, LimitReached, Limits
from blindact.content.sniff import ARCHIVE_FORMATS, IMAGE_FORMATS, OFFICE_FORMATS, TEXT_FORMATS, detect
from blindact.content.text import decode, html_text, printable_strings

# files inside an office document that are files of their own: embedded workbooks, pictures
_OFFICE_EMBEDDED = ("word/embeddings/", "xl/embeddings/", "ppt/embeddings/", "word/media/", "xl/media/",
                    "ppt/media/", "Pictures/")


@dataclass
class Extracted:
    """What was read from one file or one member of a container.

    - `name`: the file name given, or the member's path inside its container.
    - `format`: see blindact.content.sniff.detect ("docx", "gzip", "png", "text", "binary"...).
    - `size`, `sha256`: of the bytes read (a member's unpacked bytes).
    - `text`: what a reader sees: a document's paragraphs, comments and pending deletions; a sheet's
      cells (hidden ones too); a PDF's pages, notes and form values; an archive's listing; an image's
      metadata text; a binary file's printable strings.
    - `members`: what is inside (an archive's files, a PDF's attachments, decoded payloads...).
    - `meta`: facts about the file (encoding, image size, page count...), all strings.
    - `truncated`: why not everything was read (a limit), on the part it concerns and on every
      container above it; `error`: why this part could not be read at all.
    """

    name: str
    format: str = "binary"
    size: int = 0
    sha256: str = ""
    text: str = ""
    members: list[Extracted] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    truncated: str | None = None
    error: str | None = None

    def walk(self, prefix: str = "") -> Iterator[tuple[str, Extracted]]:
        """(path, part) for this part and every member under it, depth first; a member's path is its
        container's path, "/", its own name."""
        path = f"{prefix}/{self.name}" if prefix else self.name
        yield path, self
        for member in self.members:
            yield from member.walk(path)

    def all_text(self) -> str:
        """The text of this part and of every member under it, one after another."""
        return "\n".join(part.text for _, part in self.walk() if part.text)

    def notes(self) -> list[str]:
        """Every truncation and error in the tree, each once, naming the part it happened in (a
        container's "in <member>: ..." only repeats its member's)."""
        return [f"{path}: {note}" for path, part in self.walk()
                for note in (part.error, part.truncated) if note and not note.startswith("in ")]


class _Reading:
    """One extract() call: its budget, and reading each part into the tree."""

    def __init__(self, limits: Limits) -> None:
        self.budget = Budget(limits)

    def read(self, data: bytes, name: str, depth: int) -> Extracted:
        part = Extracted(name, size=len(data), sha256=hashlib.sha256(data).hexdigest())
        if len(data) > self.budget.limits.input_bytes:
            data = data[: self.budget.limits.input_bytes]
            part.truncated = f"input over {self.budget.limits.input_bytes:,} bytes: only its start is read"
        part.format = detect(data, name)
        try:
            self.budget.check_time()
            reader = _READERS.get(part.format, _read_binary)
            reader(self, part, data, depth)
            self._payloads(part, depth)
        except LimitReached as stop:
            part.truncated = part.truncated or str(stop)
        except RecursionError:
            part.error = "nested too deeply to parse"
        except Exception as exc:  # noqa: BLE001 - a hostile or broken file must never stop the caller
            part.error = f"cannot read as {part.format}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        return part

    def set_text(self, part: Extracted, text: str) -> None:
        kept, cut = self.budget.keep_text(text)
        part.text = kept
        if cut:
            part.truncated = part.truncated or f"text limit ({self.budget.limits.text_chars:,} characters) reached"

    def add(self, part: Extracted, data: bytes | None, name: str, depth: int, note: str | None = None,
            counted: bool = True) -> None:
        """Read `data` as a member of `part`. `counted`: the member was already counted against the
        member limit (the archive readers count as they go)."""
        if not counted:
            self.budget.take_member()
        if depth + 1 > self.budget.limits.depth:
            part.truncated = part.truncated or f"nesting limit ({self.budget.limits.depth}) reached at {name}"
            return
        member = self.read(data, name, depth + 1) if data is not None else Extracted(name, format="unknown")
        if note and note.startswith("error:"):
            member.error = member.error or note.removeprefix("error: ")
        elif note:
            member.truncated = member.truncated or note.removeprefix("truncated: ")
        part.members.append(member)
        problem = member.truncated or member.error
        if problem and not part.truncated:
            part.truncated = f"in {name}: {problem}"

    def members(self, part: Extracted, found: Iterator[archives.Member], depth: int) -> None:
        for name, data, note in found:
            self.add(part, data, name, depth, note)

    def _payloads(self, part: Extracted, depth: int) -> None:
        if not part.text or depth + 1 > self.budget.limits.depth:
            return
        for kind, at, data in payloads.payloads(part.text):
            self.budget.check_time()
            self.budget.take_bytes(len(data))
            self.add(part, data, f"{PurePosixPath(part.name).name}#{kind}@{at}", depth, counted=False)


# --------------------------------------------------------------------------- one reader per format


def _read_text(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    text, encoding = decode(data)
    part.meta["encoding"] = encoding
    reading.set_text(part, html_text(text) if part.format == "html" else text)


def _read_binary(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    reading.set_text(part, printable_strings(data))


def _office_guard(reading: _Reading, part: Extracted, data: bytes) -> None:
    """Refuse an office file whose parts would unpack past the limits before its parser unpacks them
    all at once; count what it will unpack."""
    zf, declared = archives.open_zip(data, reading.budget.limits.members)
    with zf:
        if declared > reading.budget.limits.members:
            raise LimitReached(f"an office file of {declared:,} parts")
        infos = zf.infolist()
    total = sum(i.file_size for i in infos)
    limits = reading.budget.limits
    if total > limits.document_bytes:
        raise LimitReached(f"its parts unpack to {total:,} bytes, over the document limit ({limits.document_bytes:,})")
    for info in infos:
        reading.budget.check_ratio(info.file_size, info.compress_size)
    reading.budget.take_bytes(total)


def _read_office(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    try:
        _office_guard(reading, part, data)
    except LimitReached as stop:
        raise LimitReached(f"not read: {stop}", whole=stop.whole) from None
    lines: list[str] = []
    if part.format in office.SHEET_FORMATS:
        sheets = office.read_sheets(data, part.name)
        part.meta["sheets"] = str(len(sheets))
        for sheet in sheets:
            lines.append(sheet.name + (" (hidden)" if sheet.hidden else ""))
            lines += ["\t".join(row) for row in sheet.rows]
            lines += list(sheet.comments.values())
            if sheet.truncated:
                part.truncated = f"sheet {sheet.name!r} over {office.MAX_CELLS:,} cells: the rest is not read"
    else:
        doc = office.read_document(data, part.name)
        lines += [*doc.paragraphs, *doc.pending_deletions, *doc.comments]
        part.meta["tracked_changes"] = str(doc.tracked_changes)
        part.meta["comments"] = str(len(doc.comments))
    reading.set_text(part, "\n".join(lines))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if info.filename.startswith(_OFFICE_EMBEDDED) and not info.is_dir():
                reading.add(part, zf.read(info), info.filename, depth, counted=False)


def _read_pdf(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    found = pdf.read_pdf(data, reading.budget)
    part.meta["pages"] = str(found.page_count) if found.page_count is not None else "?"
    part.meta["pages_read"] = str(len(found.pages))
    if found.errors:
        part.meta["problems"] = "; ".join(found.errors[:5])
    reading.set_text(part, "\n".join([*found.pages, *found.extra]))
    if found.truncated:
        part.truncated = part.truncated or found.truncated
    for name, blob in found.attachments:
        reading.add(part, blob, name, depth, counted=False)


def _read_image(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    found = images.read_image(data)
    if found.width is not None:
        part.meta["width"], part.meta["height"] = str(found.width), str(found.height)
    if found.error:
        part.error = found.error
    reading.set_text(part, "\n".join(f"{key}: {text}" for key, text in found.texts))


def _read_archive(reading: _Reading, part: Extracted, data: bytes, depth: int) -> None:
    if part.format == "zip":
        found = archives.zip_members(data, reading.budget)
    elif part.format == "tar":
        found = archives.tar_members(data, reading.budget)
    else:
        found = archives.stream_member(data, part.format, part.name, reading.budget)
    try:
        reading.members(part, found, depth)
    except archives.Broken as exc:
        part.truncated = part.truncated or str(exc)
    finally:
        reading.set_text(part, "\n".join(m.name for m in part.members))


_READERS = {
    **{fmt: _read_text for fmt in TEXT_FORMATS},
    **{fmt: _read_office for fmt in OFFICE_FORMATS},
    **{fmt: _read_image for fmt in IMAGE_FORMATS},
    **{fmt: _read_archive for fmt in ARCHIVE_FORMATS},
    "pdf": _read_pdf,
}


def extract(data: bytes, name: str, *, limits: Limits = Limits()) -> Extracted:
    """What can be read from `data`, a file called `name` (see the module and `Extracted`)."""
    return _Reading(limits).read(bytes(data), name, 0)


def extract_file(path: Path, *, limits: Limits = Limits()) -> Extracted:
    """`extract` of a file on disk, reading no more than the input limit (an unreadable file is an
    Extracted with its error)."""
    try:
        with path.open("rb") as f:
            data = f.read(limits.input_bytes + 1)
    except OSError as exc:
        return Extracted(path.name, format="unknown", error=f"cannot read {path}: {exc.strerror or exc}")
    return extract(data, path.name, limits=limits)
