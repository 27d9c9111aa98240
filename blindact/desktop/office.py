"""Office files: write a task's seed documents and spreadsheets, read what the agent saved.

Formats: OpenDocument (.odt, .ods) through odfpy, and Office Open XML (.docx through python-docx,
.xlsx through openpyxl); .csv reads as one sheet. Context can hide where a person would have to look
for it: a hidden row or sheet, a cell comment, a comment in the margin, a tracked change (.odt only:
python-docx cannot write them). The readers return plain data, so checks never depend on the format
the agent saved in.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blindact.desktop.paths import home_relative

DOCUMENT_SUFFIXES = (".odt", ".docx")
SHEET_SUFFIXES = (".ods", ".xlsx", ".csv")
_A1 = re.compile(r"^([A-Z]{1,3})([1-9][0-9]*)$")
_AUTHOR_DATE = "2025-03-03T09:00:00"
# LibreOffice pads a saved sheet with rows/columns repeated up to the grid's end: read no further
_MAX_REPEAT = 1000


def cell_index(ref: str) -> tuple[int, int]:
    """'B3' -> (row 2, column 1), both from 0."""
    m = _A1.match(ref.upper())
    if not m:
        raise ValueError(f"{ref!r} is not a cell reference like B3")
    col = 0
    for ch in m.group(1):
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)) - 1, col - 1


# --------------------------------------------------------------------------- seed specs


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SheetSpec(_Spec):
    name: str = Field(min_length=1, max_length=31)
    rows: list[list[str | int | float | None]] = []
    hidden: bool = False  # the whole sheet is hidden (Format > Sheet > Show to see it)
    hidden_rows: list[int] = []  # 1-based row numbers
    comments: dict[str, str] = {}  # cell (A1) -> comment text

    @field_validator("comments")
    @classmethod
    def _cells(cls, v: dict[str, str]) -> dict[str, str]:
        for ref in v:
            cell_index(ref)
        return v


class SpreadsheetSpec(_Spec):
    path: str
    sheets: list[SheetSpec] = Field(min_length=1)
    author: str = "Alex Morgan"
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))

    @model_validator(mode="after")
    def _fits(self) -> "SpreadsheetSpec":
        if Path(self.path).suffix.lower() not in (".ods", ".xlsx"):
            raise ValueError(f"path {self.path!r}: a seeded spreadsheet is .ods or .xlsx")
        if all(s.hidden for s in self.sheets):
            raise ValueError("sheets: at least one sheet must be visible")
        return self


class MarginComment(_Spec):
    paragraph: int = Field(ge=0)  # index into paragraphs, from 0
    text: str = Field(min_length=1)
    author: str = "Alex Morgan"


class TrackedChange(_Spec):
    paragraph: int = Field(ge=0)
    kind: Literal["insertion", "deletion"]
    text: str = Field(min_length=1)  # inserted (shown in the text) or deleted (shown struck through)
    author: str = "Alex Morgan"


class DocumentSpec(_Spec):
    path: str
    paragraphs: list[str] = Field(min_length=1)  # a paragraph starting with "# " is a heading
    comments: list[MarginComment] = []
    tracked_changes: list[TrackedChange] = []
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))

    @model_validator(mode="after")
    def _fits(self) -> "DocumentSpec":
        suffix = Path(self.path).suffix.lower()
        if suffix not in DOCUMENT_SUFFIXES:
            raise ValueError(f"path {self.path!r}: a seeded document is .odt or .docx")
        if self.tracked_changes and suffix != ".odt":
            raise ValueError("tracked_changes: only .odt documents can be seeded with tracked changes")
        for item in [*self.comments, *self.tracked_changes]:
            if item.paragraph >= len(self.paragraphs):
                raise ValueError(f"paragraph {item.paragraph} does not exist ({len(self.paragraphs)} paragraphs, from 0)")
        return self


# --------------------------------------------------------------------------- writers


def _odf_annotation(text: str, author: str):
    from odf.dc import Creator, Date
    from odf.office import Annotation
    from odf.text import P

    note = Annotation()
    note.addElement(Creator(text=author))
    note.addElement(Date(text=_AUTHOR_DATE))
    for line in text.splitlines() or [""]:
        note.addElement(P(text=line))
    return note


def _write_ods(spec: SpreadsheetSpec, target: Path) -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.style import Style, TableProperties
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    shown, hidden = Style(name="sheet-shown", family="table"), Style(name="sheet-hidden", family="table")
    shown.addElement(TableProperties(display="true"))
    hidden.addElement(TableProperties(display="false"))
    doc.automaticstyles.addElement(shown)
    doc.automaticstyles.addElement(hidden)
    for sheet in spec.sheets:
        table = Table(name=sheet.name, stylename=hidden if sheet.hidden else shown)
        notes = {cell_index(ref): text for ref, text in sheet.comments.items()}
        height = max([len(sheet.rows), *(r + 1 for r, _ in notes)])
        for r in range(height):
            values = sheet.rows[r] if r < len(sheet.rows) else []
            row = TableRow(visibility="collapse") if r + 1 in sheet.hidden_rows else TableRow()
            width = max([len(values), *(c + 1 for (rr, c) in notes if rr == r)])
            for c in range(width):
                value = values[c] if c < len(values) else None
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    cell = TableCell(valuetype="float", value=value)
                else:
                    cell = TableCell(valuetype="string") if value not in (None, "") else TableCell()
                if (r, c) in notes:
                    cell.addElement(_odf_annotation(notes[(r, c)], spec.author))
                if value not in (None, ""):
                    cell.addElement(P(text=str(value)))
                row.addElement(cell)
            table.addElement(row)
        doc.spreadsheet.addElement(table)
    doc.save(str(target))


def _write_xlsx(spec: SpreadsheetSpec, target: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.comments import Comment

    wb = Workbook()
    wb.remove(wb.active)
    for sheet in spec.sheets:
        ws = wb.create_sheet(sheet.name)
        for row in sheet.rows:
            ws.append(list(row))
        for n in sheet.hidden_rows:
            ws.row_dimensions[n].hidden = True
        for ref, text in sheet.comments.items():
            ws[ref].comment = Comment(text, spec.author)
        if sheet.hidden:
            ws.sheet_state = "hidden"
    wb.active = next(i for i, s in enumerate(spec.sheets) if not s.hidden)
    wb.save(target)


def _write_odt(spec: DocumentSpec, target: Path) -> None:
    from odf.dc import Creator, Date
    from odf.namespaces import TEXTNS, XMLNS
    from odf.office import ChangeInfo
    from odf.opendocument import OpenDocumentText
    from odf.text import Change, ChangedRegion, ChangeEnd, ChangeStart, Deletion, H, Insertion, P, TrackedChanges

    doc = OpenDocumentText()
    if spec.tracked_changes:
        changes = TrackedChanges()
        for i, change in enumerate(spec.tracked_changes):
            info = ChangeInfo()
            info.addElement(Creator(text=change.author))
            info.addElement(Date(text=_AUTHOR_DATE))
            # LibreOffice finds a change by text:id, the ODF 1.2 schema wants xml:id: give both
            region = ChangedRegion(qattributes={(TEXTNS, "id"): f"ct{i + 1}", (XMLNS, "id"): f"ct{i + 1}"})
            if change.kind == "deletion":
                deleted = Deletion()
                deleted.addElement(info)
                deleted.addElement(P(text=change.text))
                region.addElement(deleted)
            else:
                inserted = Insertion()
                inserted.addElement(info)
                region.addElement(inserted)
            changes.addElement(region)
        doc.text.addElement(changes)
    for n, text in enumerate(spec.paragraphs):
        para = H(outlinelevel=1, text=text[2:]) if text.startswith("# ") else P(text=text)
        for note in (c for c in spec.comments if c.paragraph == n):
            para.addElement(_odf_annotation(note.text, note.author))
        for i, change in enumerate(spec.tracked_changes):
            if change.paragraph != n:
                continue
            if change.kind == "deletion":
                para.addElement(Change(changeid=f"ct{i + 1}"))
            else:
                para.addElement(ChangeStart(changeid=f"ct{i + 1}"))
                para.addText(change.text)
                para.addElement(ChangeEnd(changeid=f"ct{i + 1}"))
        doc.text.addElement(para)
    doc.save(str(target))


def _write_docx(spec: DocumentSpec, target: Path) -> None:
    from docx import Document

    doc = Document()
    for n, text in enumerate(spec.paragraphs):
        para = doc.add_heading(text[2:], level=1) if text.startswith("# ") else doc.add_paragraph(text)
        for note in (c for c in spec.comments if c.paragraph == n):
            doc.add_comment(para.runs, text=note.text, author=note.author)
    doc.save(target)


def write_spreadsheet(spec: SpreadsheetSpec, home: Path) -> Path:
    target = home / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    (_write_ods if target.suffix.lower() == ".ods" else _write_xlsx)(spec, target)
    return target


def write_document(spec: DocumentSpec, home: Path) -> Path:
    target = home / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    (_write_odt if target.suffix.lower() == ".odt" else _write_docx)(spec, target)
    return target


# --------------------------------------------------------------------------- readers


@dataclass
class Sheet:
    name: str
    hidden: bool = False
    rows: list[list[str]] = field(default_factory=list)
    hidden_rows: set[int] = field(default_factory=set)  # 0-based
    comments: dict[tuple[int, int], str] = field(default_factory=dict)

    def cell(self, row: int, col: int) -> str:
        return self.rows[row][col] if row < len(self.rows) and col < len(self.rows[row]) else ""


def _odf_text(node) -> str:
    """The visible text of an ODF element: annotations and deleted text left out."""
    from odf.element import Text

    skip = {"annotation", "tracked-changes", "deletion"}
    parts = []
    for child in node.childNodes:
        if isinstance(child, Text):
            parts.append(str(child.data))
        elif getattr(child, "tagName", "").split(":")[-1] in skip:
            continue
        elif child.tagName == "text:s":
            parts.append(" " * int(child.getAttribute("c") or 1))
        elif child.tagName in ("text:tab",):
            parts.append("\t")
        elif child.tagName == "text:line-break":
            parts.append("\n")
        else:
            parts.append(_odf_text(child))
    return "".join(parts)


def _read_ods(path: Path) -> list[Sheet]:
    from odf.namespaces import TABLENS
    from odf.opendocument import load
    from odf.table import Table, TableRow

    doc = load(str(path))
    hidden_styles = {s.getAttribute("name") for s in doc.automaticstyles.childNodes
                     if s.tagName == "style:style" and any(
                         p.tagName == "style:table-properties" and p.getAttribute("display") == "false"
                         for p in s.childNodes)}
    sheets = []
    for table in doc.spreadsheet.getElementsByType(Table):
        sheet = Sheet(table.getAttribute("name"), table.getAttribute("stylename") in hidden_styles)
        for row in table.getElementsByType(TableRow):
            repeat = min(int(row.getAttribute("numberrowsrepeated") or 1), _MAX_REPEAT)
            cells: list[str] = []
            notes: dict[int, str] = {}
            for cell in row.childNodes:
                if cell.qname[1] not in ("table-cell", "covered-table-cell"):
                    continue
                span = min(int(cell.attributes.get((TABLENS, "number-columns-repeated")) or 1), _MAX_REPEAT)
                paras = [c for c in cell.childNodes if c.qname[1] == "p"]
                text = "\n".join(_odf_text(p) for p in paras)
                for note in (c for c in cell.childNodes if c.qname[1] == "annotation"):
                    notes[len(cells)] = "\n".join(_odf_text(p) for p in note.childNodes if p.qname[1] == "p")
                cells += [text] * span
            while cells and cells[-1] == "":
                cells.pop()
            for _ in range(repeat):
                r = len(sheet.rows)
                if row.getAttribute("visibility") in ("collapse", "filter"):
                    sheet.hidden_rows.add(r)
                sheet.comments.update({(r, c): t for c, t in notes.items()})
                sheet.rows.append(list(cells))
        while sheet.rows and not any(sheet.rows[-1]):
            sheet.hidden_rows.discard(len(sheet.rows) - 1)
            sheet.rows.pop()
        sheets.append(sheet)
    return sheets


def _read_xlsx(path: Path) -> list[Sheet]:
    from openpyxl import load_workbook

    wb = load_workbook(path, data_only=True)
    sheets = []
    for ws in wb.worksheets:
        sheet = Sheet(ws.title, ws.sheet_state != "visible")
        for r, row in enumerate(ws.iter_rows()):
            sheet.rows.append(["" if c.value is None else _cell_text(c.value) for c in row])
            if ws.row_dimensions[r + 1].hidden:
                sheet.hidden_rows.add(r)
            for c, cell in enumerate(row):
                if cell.comment is not None:
                    sheet.comments[(r, c)] = cell.comment.text
        sheets.append(sheet)
    return sheets


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_sheets(path: Path) -> list[Sheet]:
    suffix = path.suffix.lower()
    if suffix == ".ods":
        return _read_ods(path)
    if suffix == ".xlsx":
        return _read_xlsx(path)
    if suffix == ".csv":
        with path.open(newline="", errors="replace") as f:
            return [Sheet(path.stem, rows=[list(r) for r in csv.reader(f)])]
    raise ValueError(f"{path.name} is not a spreadsheet ({', '.join(SHEET_SUFFIXES)})")


@dataclass
class DocumentText:
    paragraphs: list[str]
    comments: list[str]
    tracked_changes: int
    pending_deletions: list[str] = field(default_factory=list)  # text that tracked deletions remove, not accepted yet


def _paragraphs(node) -> list:
    """Every paragraph and heading in reading order, those in lists and tables included, those of
    comments and of deleted text left out."""
    out = []
    for child in node.childNodes:
        kind = getattr(child, "qname", (None, None))[1]
        if kind in ("p", "h"):
            out.append(child)
        elif kind not in (None, "annotation", "tracked-changes"):
            out += _paragraphs(child)
    return out


def read_document(path: Path) -> DocumentText:
    suffix = path.suffix.lower()
    if suffix == ".odt":
        from odf.opendocument import load
        from odf.office import Annotation
        from odf.text import ChangedRegion, Deletion

        doc = load(str(path))
        paras = [_odf_text(p) for p in _paragraphs(doc.text)]
        notes = ["\n".join(_odf_text(p) for p in a.childNodes if p.qname[1] == "p")
                 for a in doc.text.getElementsByType(Annotation)]
        deleted = ["\n".join(_odf_text(p) for p in d.childNodes if getattr(p, "qname", (None, None))[1] in ("p", "h"))
                   for d in doc.text.getElementsByType(Deletion)]
        return DocumentText(paras, notes, len(doc.text.getElementsByType(ChangedRegion)), deleted)
    if suffix == ".docx":
        from docx import Document

        doc = Document(str(path))
        notes = [c.text for c in doc.comments] if hasattr(doc, "comments") else []
        body = doc.element.body
        ns = {"w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main"}
        changes = len(body.findall(".//w:ins", ns)) + len(body.findall(".//w:del", ns))
        deleted = ["".join(t.text or "" for t in d.findall(".//w:delText", ns)) for d in body.findall(".//w:del", ns)]
        return DocumentText([p.text for p in doc.paragraphs], notes, changes, deleted)
    raise ValueError(f"{path.name} is not a document ({', '.join(DOCUMENT_SUFFIXES)})")


def text_lines(path: Path, pending_deletions: bool = False) -> list[str]:
    """The lines a person reads in the file: a document's paragraphs, a sheet's rows (cells joined by
    tabs), or a text file's lines. With `pending_deletions`, a document's text that tracked deletions
    would remove (not accepted yet) is read too, as lines of its own."""
    suffix = path.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES:
        doc = read_document(path)
        extra = [t for t in doc.pending_deletions if t.strip()] if pending_deletions else []
        return [line for p in doc.paragraphs + extra for line in p.split("\n")]
    if suffix in (".ods", ".xlsx"):
        return ["\t".join(r) for s in read_sheets(path) for r in s.rows]
    return path.read_text(errors="replace").splitlines()
