"""Office files: write a task's seed documents, spreadsheets and presentations; read what the agent saved.

Seeds are OpenDocument (.odt, .ods, .odp) through odfpy, and Office Open XML (.docx through python-docx,
.xlsx through openpyxl; no .pptx: python-pptx is only a test dependency). Context can hide where a person
would have to look for it: a hidden row or sheet, a cell comment, a comment in the margin, a tracked change
(.odt only: python-docx cannot write them), a slide's speaker notes, a hidden slide. The readers live in
blindact.content.office (they read any of these formats, and .csv and .pptx, from a path or from bytes;
a presentation's slides one by one); they are imported here for the checks and the apps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blindact.content.office import DocumentText, Sheet, Slide, cell_index, read_document, read_sheets, text_lines
from blindact.desktop.paths import home_relative

__all__ = ["DOCUMENT_SUFFIXES", "PRESENTATION_SUFFIXES", "DocumentSpec", "DocumentText", "MarginComment",
           "PresentationSpec", "Sheet", "SheetSpec", "Slide", "SlideSpec", "SpreadsheetSpec", "TrackedChange",
           "cell_index", "read_document", "read_sheets", "text_lines", "write_document", "write_presentation",
           "write_spreadsheet"]

DOCUMENT_SUFFIXES = (".odt", ".docx")  # what a task can seed
PRESENTATION_SUFFIXES = (".odp", ".pptx")  # what the readers read (a task seeds .odp)
_AUTHOR_DATE = "2025-03-03T09:00:00"


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


class SlideSpec(_Spec):
    title: str = Field(min_length=1)
    bullets: list[str] = []  # one line each, in the slide's outline box
    notes: str | None = None  # the speaker's notes (View > Notes; not shown in the slide show)
    hidden: bool = False  # left out of the slide show (Slide > Hide Slide), still in the file and the editor


class PresentationSpec(_Spec):
    path: str
    slides: list[SlideSpec] = Field(min_length=1)
    _home = field_validator("path")(classmethod(lambda cls, v: home_relative(v)))

    @model_validator(mode="after")
    def _fits(self) -> "PresentationSpec":
        if Path(self.path).suffix.lower() != ".odp":
            raise ValueError(f"path {self.path!r}: a seeded presentation is .odp")
        if all(s.hidden for s in self.slides):
            raise ValueError("slides: at least one slide must be shown")
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


def _write_odp(spec: PresentationSpec, target: Path) -> None:
    from odf.draw import Frame, Page, PageThumbnail, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import (DrawingPageProperties, GraphicProperties, MasterPage, PageLayout, PageLayoutProperties,
                           ParagraphProperties, Style, TextProperties)
    from odf.text import List, ListItem, P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="slide-layout")
    layout.addElement(PageLayoutProperties(margin="0cm", pagewidth="28cm", pageheight="15.75cm",
                                           printorientation="landscape"))
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    pages = {}
    for hidden in (False, True):
        style = Style(name=f"dp-{'hidden' if hidden else 'shown'}", family="drawing-page")
        style.addElement(DrawingPageProperties(qattributes={(PRESENTATIONNS, "visibility"): "hidden" if hidden else "visible"}))
        doc.automaticstyles.addElement(style)
        pages[hidden] = style
    # presentation objects (a title, an outline, notes) take a presentation style: LibreOffice drops the
    # class of a frame with a graphic style, and the title would be a plain text box
    boxes = Style(name="pr-box", family="presentation")
    boxes.addElement(GraphicProperties(stroke="none", fill="none", autogrowheight="false"))
    doc.automaticstyles.addElement(boxes)
    text = {}
    for name, size, weight in (("title", "32pt", "bold"), ("line", "20pt", "normal"), ("note", "12pt", "normal")):
        style = Style(name=f"p-{name}", family="paragraph")
        style.addElement(ParagraphProperties(marginbottom="0.2cm"))
        style.addElement(TextProperties(fontsize=size, fontweight=weight))
        doc.automaticstyles.addElement(style)
        text[name] = style
    for n, slide in enumerate(spec.slides, 1):
        # no draw:name: LibreOffice then calls it "Slide <n>" (a name with a space would show as "Slide_20_1")
        page = Page(masterpagename=master, stylename=pages[slide.hidden])
        title = Frame(stylename=boxes, width="25cm", height="2.6cm", x="1.5cm", y="0.8cm")
        title.setAttrNS(PRESENTATIONNS, "class", "title")
        box = TextBox()
        box.addElement(P(stylename=text["title"], text=slide.title))
        title.addElement(box)
        page.addElement(title)
        if slide.bullets:
            outline = Frame(stylename=boxes, width="25cm", height="10.5cm", x="1.5cm", y="4cm")
            outline.setAttrNS(PRESENTATIONNS, "class", "outline")
            box = TextBox()
            items = List()
            for line in slide.bullets:
                item = ListItem()
                item.addElement(P(stylename=text["line"], text=line))
                items.addElement(item)
            box.addElement(items)
            outline.addElement(box)
            page.addElement(outline)
        if slide.notes:
            notes = Notes()
            thumbnail = PageThumbnail(width="14cm", height="7.9cm", x="3.5cm", y="2cm")
            thumbnail.setAttrNS(PRESENTATIONNS, "class", "page")
            notes.addElement(thumbnail)
            frame = Frame(stylename=boxes, width="17cm", height="10cm", x="2cm", y="11cm")
            frame.setAttrNS(PRESENTATIONNS, "class", "notes")
            box = TextBox()
            for line in slide.notes.splitlines() or [""]:
                box.addElement(P(stylename=text["note"], text=line))
            frame.addElement(box)
            notes.addElement(frame)
            page.addElement(notes)
        doc.presentation.addElement(page)
    doc.save(str(target))


def write_presentation(spec: PresentationSpec, home: Path) -> Path:
    target = home / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_odp(spec, target)
    return target


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
