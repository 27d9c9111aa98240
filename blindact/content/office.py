"""Reading office files: documents (.odt .docx), presentations (.odp .pptx) and spreadsheets (.ods .xlsx
.csv), from a path or from bytes, whatever their name says (the format is read from the bytes first).

Formats: OpenDocument through odfpy, .docx through python-docx, .xlsx through openpyxl, .pptx from its
XML. Context can hide where a person would have to look for it: a hidden row or sheet, a cell comment,
a comment in the margin, a tracked change, a header or footer, a speaker's note. The readers return
plain data, so checks never depend on the format the agent saved in. Writing seed files is
blindact.desktop.office's job.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from blindact.content.sniff import detect
from blindact.content.text import decode

DOCUMENT_FORMATS = ("odt", "docx", "odp", "pptx")
SHEET_FORMATS = ("ods", "xlsx", "csv")
_A1 = re.compile(r"^([A-Z]{1,3})([1-9][0-9]*)$")
# LibreOffice pads a saved sheet with rows/columns repeated up to the grid's end: read no further
_MAX_REPEAT = 1000
# cells kept from one sheet: repeated rows of repeated cells could otherwise ask for billions
MAX_CELLS = 1_000_000

Source = Path | bytes


def cell_index(ref: str) -> tuple[int, int]:
    """'B3' -> (row 2, column 1), both from 0."""
    m = _A1.match(ref.upper())
    if not m:
        raise ValueError(f"{ref!r} is not a cell reference like B3")
    col = 0
    for ch in m.group(1):
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)) - 1, col - 1


def _open(source: Source) -> tuple[bytes, str]:
    if isinstance(source, Path):
        return source.read_bytes(), source.name
    return source, ""


# --------------------------------------------------------------------------- spreadsheets


@dataclass
class Sheet:
    name: str
    hidden: bool = False
    rows: list[list[str]] = field(default_factory=list)
    hidden_rows: set[int] = field(default_factory=set)  # 0-based
    comments: dict[tuple[int, int], str] = field(default_factory=dict)
    truncated: bool = False  # more than MAX_CELLS cells: the rest is not read

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


def _read_ods(data: bytes) -> list[Sheet]:
    from odf.namespaces import TABLENS
    from odf.opendocument import load
    from odf.table import Table, TableRow

    doc = load(io.BytesIO(data))
    hidden_styles = {s.getAttribute("name") for s in doc.automaticstyles.childNodes
                     if s.tagName == "style:style" and any(
                         p.tagName == "style:table-properties" and p.getAttribute("display") == "false"
                         for p in s.childNodes)}
    sheets = []
    for table in doc.spreadsheet.getElementsByType(Table):
        sheet = Sheet(table.getAttribute("name"), table.getAttribute("stylename") in hidden_styles)
        kept = 0
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
                kept += max(1, len(cells))
                if kept > MAX_CELLS:
                    sheet.truncated = True
                    break
                r = len(sheet.rows)
                if row.getAttribute("visibility") in ("collapse", "filter"):
                    sheet.hidden_rows.add(r)
                sheet.comments.update({(r, c): t for c, t in notes.items()})
                sheet.rows.append(list(cells))
            if sheet.truncated:
                break
        while sheet.rows and not any(sheet.rows[-1]):
            sheet.hidden_rows.discard(len(sheet.rows) - 1)
            sheet.rows.pop()
        sheets.append(sheet)
    return sheets


def _read_xlsx(data: bytes) -> list[Sheet]:
    from openpyxl import load_workbook

    wb = load_workbook(io.BytesIO(data), data_only=True)
    sheets = []
    for ws in wb.worksheets:
        sheet = Sheet(ws.title, ws.sheet_state != "visible")
        # only the cells the file holds: iter_rows would create every empty cell of the sheet's extent,
        # and one cell in its far corner (XFD1048576) makes that seventeen billion
        cells = sorted((rc, c) for rc, c in ws._cells.items() if c.value is not None or c.comment is not None)
        last = cells[-1][0][0] if cells else 0
        rows: list[list[str]] = []
        kept = 0
        for (r, c), cell in cells:
            gap = max(0, r - len(rows))
            kept += 1 + gap
            if kept > MAX_CELLS:
                sheet.truncated = True
                break
            rows.extend([] for _ in range(gap))
            row = rows[r - 1]
            row.extend([""] * (c - len(row)))
            row[c - 1] = "" if cell.value is None else _cell_text(cell.value)
            if cell.comment is not None:
                sheet.comments[(r - 1, c - 1)] = cell.comment.text
        sheet.rows = rows
        sheet.hidden_rows = {n - 1 for n, dim in ws.row_dimensions.items() if dim.hidden and n <= min(last, len(rows))}
        sheets.append(sheet)
    return sheets


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _read_csv(data: bytes, name: str) -> list[Sheet]:
    text, _ = decode(data)
    first = text.split("\n", 1)[0]
    delimiter = "\t" if name.lower().endswith(".tsv") else max(",;\t|", key=first.count) if first else ","
    if not first.count(delimiter):
        delimiter = ","
    rows = [list(r) for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
    return [Sheet(PurePosixPath(name).stem or "Sheet1", rows=rows)]


def read_sheets(source: Source, name: str = "") -> list[Sheet]:
    """Every sheet of a spreadsheet (.ods, .xlsx, or .csv/.tsv: one sheet), hidden ones included. `name`
    names bytes (a path names itself); the format is read from the bytes, then from the name."""
    data, own = _open(source)
    name = name or own
    fmt = detect(data, name)
    if fmt == "ods":
        return _read_ods(data)
    if fmt == "xlsx":
        return _read_xlsx(data)
    if fmt == "csv":
        return _read_csv(data, name)
    raise ValueError(f"{name or 'the file'} is not a spreadsheet (.ods, .xlsx or .csv; it reads as {fmt})")


# --------------------------------------------------------------------------- documents and presentations


@dataclass
class Slide:
    """One slide of a presentation: its title, its other lines (text boxes, outline, tables), its speaker's
    notes (only in the editor's notes view, never in the slide show) and whether it is hidden (left out
    of the slide show, still in the file)."""

    number: int  # from 1, in the presentation's order
    title: str = ""
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hidden: bool = False


@dataclass
class DocumentText:
    paragraphs: list[str]
    comments: list[str]
    tracked_changes: int
    pending_deletions: list[str] = field(default_factory=list)  # text that tracked deletions remove, not accepted yet
    slides: list[Slide] = field(default_factory=list)  # a presentation's slides (paragraphs hold their text too)


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


def _read_odf_document(data: bytes, presentation: bool) -> DocumentText:
    from odf.office import Annotation
    from odf.opendocument import load
    from odf.text import ChangedRegion, Deletion

    doc = load(io.BytesIO(data))
    body = doc.presentation if presentation else doc.text
    # headers and footers (in the master pages) are part of what a reader sees on every page
    paras = [_odf_text(p) for p in _paragraphs(body) + _paragraphs(doc.masterstyles)]
    notes = ["\n".join(_odf_text(p) for p in a.childNodes if p.qname[1] == "p")
             for a in body.getElementsByType(Annotation)]
    deleted = ["\n".join(_odf_text(p) for p in d.childNodes if getattr(p, "qname", (None, None))[1] in ("p", "h"))
               for d in body.getElementsByType(Deletion)]
    slides = _odp_slides(doc) if presentation else []
    return DocumentText(paras, notes, len(body.getElementsByType(ChangedRegion)), deleted, slides)


def _odp_slides(doc) -> list[Slide]:
    """The slides of an .odp: a draw:page each, hidden when its drawing-page style says
    presentation:visibility="hidden" (LibreOffice's Hide Slide)."""
    from odf.draw import Page
    from odf.namespaces import PRESENTATIONNS, STYLENS

    hidden_styles = set()
    for container in (doc.automaticstyles, doc.styles):
        for style in container.childNodes:
            if getattr(style, "qname", (None, None))[1] != "style":
                continue
            if any(getattr(p, "qname", (None, None))[1] == "drawing-page-properties"
                   and p.attributes.get((PRESENTATIONNS, "visibility")) == "hidden" for p in style.childNodes):
                hidden_styles.add(style.attributes.get((STYLENS, "name")))
    slides = []
    for n, page in enumerate(doc.presentation.getElementsByType(Page), 1):
        slide = Slide(n, hidden=page.getAttribute("stylename") in hidden_styles)
        _odp_shapes(page, slide, in_notes=False)
        slides.append(slide)
    return slides


def _odp_shapes(node, slide: Slide, in_notes: bool) -> None:
    from odf.namespaces import PRESENTATIONNS

    for child in node.childNodes:
        kind = getattr(child, "qname", (None, None))[1]
        if kind is None or kind == "annotation":
            continue
        if kind == "notes":
            _odp_shapes(child, slide, in_notes=True)
        elif kind == "frame" and not in_notes and child.attributes.get((PRESENTATIONNS, "class")) == "title" \
                and not slide.title:
            slide.title = "\n".join(_odf_text(p) for p in _paragraphs(child)).strip()
        elif kind in ("p", "h"):
            (slide.notes if in_notes else slide.lines).append(_odf_text(child))
        else:
            _odp_shapes(child, slide, in_notes)


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_DOCX_EXTRA_PARTS = re.compile(r"^/word/(header|footer|footnotes|endnotes)\d*\.xml$")


def _docx_paragraph(p) -> str:
    """The text of one w:p as shown: runs (inserted ones included), tabs and breaks; deleted text, and
    paragraphs nested in its text boxes (read as their own), left out."""
    parts: list[str] = []

    def walk(node) -> None:
        for child in node:
            tag = child.tag if isinstance(child.tag, str) else ""
            local = tag.rsplit("}", 1)[-1]
            if local in ("del", "p", "delText") or tag == _MC_FALLBACK:
                continue
            if local == "t":
                parts.append(child.text or "")
            elif local == "tab":
                parts.append("\t")
            elif local in ("br", "cr"):
                parts.append("\n")
            elif local == "noBreakHyphen":
                parts.append("-")
            else:
                walk(child)

    walk(p)
    return "".join(parts)


def _docx_paragraphs(root) -> list[str]:
    """Every w:p under `root` in document order (tables and text boxes included, the fallback copy of a
    text box left out)."""
    out = []
    for p in root.iter(f"{{{_W}}}p"):
        if any(a.tag == _MC_FALLBACK for a in p.iterancestors()):
            continue
        out.append(_docx_paragraph(p))
    return out


def _read_docx(data: bytes) -> DocumentText:
    from docx import Document
    from lxml import etree

    doc = Document(io.BytesIO(data))
    notes = [c.text for c in doc.comments] if hasattr(doc, "comments") else []
    body = doc.element.body
    ns = {"w": _W}
    changes = len(body.findall(".//w:ins", ns)) + len(body.findall(".//w:del", ns))
    deleted = ["".join(t.text or "" for t in d.findall(".//w:delText", ns)) for d in body.findall(".//w:del", ns)]
    paras = _docx_paragraphs(body)
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    for part in doc.part.package.iter_parts():
        if _DOCX_EXTRA_PARTS.match(str(part.partname)):
            paras += _docx_paragraphs(etree.fromstring(part.blob, parser))
    return DocumentText(paras, notes, changes, deleted)


_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def _drawing_paragraphs(xml: bytes) -> list[str]:
    """The a:p paragraphs of a DrawingML part (a slide, a notes page), one string each."""
    from lxml import etree

    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    out = []
    for p in root.iter(f"{_A}p"):
        out.append("".join((t.text or "") if t.tag in (f"{_A}t",) else "\n" for t in p.iter(f"{_A}t", f"{_A}br")))
    return out


_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"


def _pptx_slide(xml: bytes, number: int) -> Slide:
    """One slide's title (its title placeholder), other lines and hidden state (`<p:sld show="0">`)."""
    from lxml import etree

    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    slide = Slide(number, hidden=root.get("show") in ("0", "false"))
    for shape in root.iter(f"{_P}sp", f"{_P}graphicFrame"):
        ph = shape.find(f"./{_P}nvSpPr/{_P}nvPr/{_P}ph")
        texts = _drawing_paragraphs(etree.tostring(shape))
        if ph is not None and ph.get("type") in ("title", "ctrTitle") and not slide.title:
            slide.title = "\n".join(texts).strip()
        else:
            slide.lines += texts
    return slide


def _pptx_notes(xml: bytes) -> list[str]:
    """The speaker's notes of a notes page: its body placeholder (not the slide image, number or date)."""
    from lxml import etree

    root = etree.fromstring(xml, etree.XMLParser(resolve_entities=False, no_network=True))
    out = []
    for shape in root.iter(f"{_P}sp"):
        ph = shape.find(f"./{_P}nvSpPr/{_P}nvPr/{_P}ph")
        if ph is not None and ph.get("type") == "body":
            out += _drawing_paragraphs(etree.tostring(shape))
    return out


def _read_pptx(data: bytes) -> DocumentText:
    """Slides in the presentation's order (their text frames, tables and notes), then comments."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        rels = etree.fromstring(zf.read("ppt/_rels/presentation.xml.rels"), parser)
        target = {r.get("Id"): r.get("Target") for r in rels.iter(f"{_PKG_REL}Relationship")}
        order = [target.get(s.get(f"{_REL}id")) for s in
                 etree.fromstring(zf.read("ppt/presentation.xml"), parser).iter(
                     "{http://schemas.openxmlformats.org/presentationml/2006/main}sldId")]
        slides = [f"ppt/{t.lstrip('/').removeprefix('ppt/')}" for t in order if t]
        paras: list[str] = []
        read: list[Slide] = []
        for slide in slides:
            if slide not in names:
                continue
            paras += _drawing_paragraphs(zf.read(slide))
            read.append(_pptx_slide(zf.read(slide), len(read) + 1))
            rel_name = f"{PurePosixPath(slide).parent}/_rels/{PurePosixPath(slide).name}.rels"
            if rel_name in names:  # the slide's notes page
                for r in etree.fromstring(zf.read(rel_name), parser).iter(f"{_PKG_REL}Relationship"):
                    if r.get("Type", "").endswith("/notesSlide"):
                        notes = str(PurePosixPath(slide).parent.joinpath(r.get("Target")))
                        notes = re.sub(r"[^/]+/\.\./", "", notes)
                        if notes in names:
                            paras += _drawing_paragraphs(zf.read(notes))
                            read[-1].notes += _pptx_notes(zf.read(notes))
        comments = []
        for name in sorted(n for n in names if n.startswith("ppt/comments/") and n.endswith(".xml")):
            root = etree.fromstring(zf.read(name), parser)
            comments += ["".join(t.itertext()) for t in root.iter() if isinstance(t.tag, str)
                         and t.tag.rsplit("}", 1)[-1] in ("text", "txBody")]
    return DocumentText(paras, comments, 0, slides=read)


def read_document(source: Source, name: str = "") -> DocumentText:
    """The text of a document or presentation (.odt, .docx, .odp, .pptx): paragraphs in reading order
    (tables, headers and footers, slides' notes included), margin comments, tracked changes; for a
    presentation also its slides one by one (title, lines, speaker's notes apart, hidden or not)."""
    data, own = _open(source)
    name = name or own
    fmt = detect(data, name)
    if fmt == "odt":
        return _read_odf_document(data, presentation=False)
    if fmt == "odp":
        return _read_odf_document(data, presentation=True)
    if fmt == "docx":
        return _read_docx(data)
    if fmt == "pptx":
        return _read_pptx(data)
    raise ValueError(f"{name or 'the file'} is not a document (.odt, .docx, .odp or .pptx; it reads as {fmt})")


def text_lines(path: Path, pending_deletions: bool = False) -> list[str]:
    """The lines a person reads in the file: a document's paragraphs, a sheet's rows (cells joined by
    tabs), or a text file's lines. With `pending_deletions`, a document's text that tracked deletions
    would remove (not accepted yet) is read too, as lines of its own."""
    data = path.read_bytes()
    fmt = detect(data, path.name)
    if fmt in DOCUMENT_FORMATS:
        doc = read_document(data, path.name)
        extra = [t for t in doc.pending_deletions if t.strip()] if pending_deletions else []
        return [line for p in doc.paragraphs + extra for line in p.split("\n")]
    if fmt in ("ods", "xlsx"):
        return ["\t".join(r) for s in read_sheets(data, path.name) for r in s.rows]
    return decode(data)[0].splitlines()
