"""blindact.content: what a file says whatever its format (on real files written by the real libraries and
by LibreOffice), the hard limits against hostile files (each made here for real), and matching
protected data however it is written down."""

from __future__ import annotations

import base64
import bz2
import gzip
import hashlib
import io
import lzma
import shutil
import sqlite3
import struct
import subprocess
import tarfile
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from blindact.content import Extracted, Limits, extract, extract_file, holds, locate, normalize
from blindact.content.office import read_document, read_sheets, text_lines
from blindact.content.sniff import detect
from blindact.desktop.office import (DocumentSpec, MarginComment, SheetSpec, SpreadsheetSpec, TrackedChange,
                                     write_document, write_spreadsheet)

CARD = "4111 1111 1111 1111"
SECRET = "the vault code is 7731-ALPHA"


def part(x: Extracted, suffix: str) -> Extracted:
    """The one part of the tree whose path ends with `suffix`."""
    [found] = [p for path, p in x.walk() if path.endswith(suffix)]
    return found


# --------------------------------------------------------------------------- real office files


@pytest.fixture(scope="module")
def office_files(tmp_path_factory) -> Path:
    """.odt and .ods written with odfpy, and LibreOffice's own .docx, .xlsx and .pdf of them."""
    home = tmp_path_factory.mktemp("office")
    long_doc = ["# Quarterly report", f"Card on file: {CARD}"] + [f"Filler paragraph {i} " + "lorem ipsum " * 30
                                                                 for i in range(60)] + ["Last line: the end."]
    write_document(DocumentSpec(path="report.odt", paragraphs=long_doc,
                                comments=[MarginComment(paragraph=1, text="check this with finance")],
                                tracked_changes=[TrackedChange(paragraph=2, kind="deletion", text="Struck clause.")]), home)
    write_spreadsheet(SpreadsheetSpec(path="staff.ods", sheets=[
        SheetSpec(name="Staff", rows=[["Name", "SSN"], ["Dana Whitfield", "521-44-9031"]], comments={"B2": "verify"}),
        SheetSpec(name="Old", hidden=True, rows=[["Salary", 91000]])]), home)
    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    profile = f"-env:UserInstallation=file://{home / 'lo-profile'}"
    for target, files in (("pdf", ["report.odt", "staff.ods"]), ("docx", ["report.odt"]), ("xlsx", ["staff.ods"])):
        subprocess.run([soffice, profile, "--headless", "--convert-to", target, "--outdir", str(home / target),
                        *(str(home / f) for f in files)], check=True, capture_output=True, timeout=180)
    return home


def test_opendocument_text_with_comment_and_pending_deletion(office_files):
    x = extract((office_files / "report.odt").read_bytes(), "report.odt")
    assert x.format == "odt" and x.error is None and x.truncated is None
    assert CARD in x.text and "check this with finance" in x.text and "Struck clause." in x.text
    assert x.meta["tracked_changes"] == "1" and x.meta["comments"] == "1"


def test_libreoffice_docx_and_a_docx_named_odt(office_files):
    data = (office_files / "docx/report.docx").read_bytes()
    for name in ("report.docx", "report.odt", "report"):  # the bytes decide, not the name
        x = extract(data, name)
        assert x.format == "docx" and CARD in x.text and "Last line: the end." in x.text, name


def test_spreadsheets_hidden_sheets_and_comments(office_files):
    for path, fmt in (("staff.ods", "ods"), ("xlsx/staff.xlsx", "xlsx")):
        x = extract((office_files / path).read_bytes(), Path(path).name)
        assert x.format == fmt and x.error is None
        assert "521-44-9031" in x.text and "91000" in x.text and "Old (hidden)" in x.text
    assert "verify" in extract((office_files / "staff.ods").read_bytes(), "staff.ods").text


def test_pdf_from_libreoffice_every_page(office_files):
    x = extract((office_files / "pdf/report.pdf").read_bytes(), "report.pdf")
    assert x.format == "pdf" and x.error is None and x.truncated is None
    assert int(x.meta["pages"]) >= 2 and x.meta["pages_read"] == x.meta["pages"]
    assert CARD in x.text and "Last line: the end." in x.text  # the last page is read too
    sheet = extract((office_files / "pdf/staff.pdf").read_bytes(), "staff.pdf")
    assert "Dana Whitfield" in sheet.text


def test_pdf_attachment_is_a_member(office_files):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(office_files / "pdf/staff.pdf"))
    writer.add_attachment("keys.txt", SECRET.encode())
    buf = io.BytesIO()
    writer.write(buf)
    x = extract(buf.getvalue(), "staff.pdf")
    assert part(x, "/keys.txt").text == SECRET and SECRET in x.all_text()


def test_docx_tables_headers_inserted_runs_and_text_boxes_are_read(tmp_path):
    from docx import Document

    doc = Document()
    doc.add_paragraph("Body text")
    table = doc.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Card", CARD
    doc.sections[0].header.paragraphs[0].text = "CONFIDENTIAL header"
    doc.save(tmp_path / "t.docx")
    x = extract((tmp_path / "t.docx").read_bytes(), "t.docx")
    assert CARD in x.text and "CONFIDENTIAL header" in x.text and "Body text" in x.text
    assert "Card\t" not in x.text and "Card" in x.text.splitlines()  # each cell is a paragraph of its own
    doc_text = read_document(tmp_path / "t.docx")
    assert CARD in doc_text.paragraphs  # the checks' reader sees the table too


def test_presentations_odp_and_pptx_with_notes(tmp_path):
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    from odf.text import P
    from pptx import Presentation

    odp = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    odp.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    odp.masterstyles.addElement(master)
    page = Page(masterpagename=master)
    frame = Frame(width="20cm", height="5cm", x="1cm", y="1cm")
    box = TextBox()
    box.addElement(P(text="Slide one: " + CARD))
    frame.addElement(box)
    page.addElement(frame)
    notes = Notes()
    note_frame = Frame(width="20cm", height="5cm", x="1cm", y="1cm")
    note_box = TextBox()
    note_box.addElement(P(text="speaker note: " + SECRET))
    note_frame.addElement(note_box)
    notes.addElement(note_frame)
    page.addElement(notes)
    odp.presentation.addElement(page)
    odp.save(str(tmp_path / "deck.odp"))
    x = extract((tmp_path / "deck.odp").read_bytes(), "deck.odp")
    assert x.format == "odp" and CARD in x.text and SECRET in x.text

    prs = Presentation()
    first = prs.slides.add_slide(prs.slide_layouts[1])
    first.shapes.title.text = "Second slide title"
    second = prs.slides.add_slide(prs.slide_layouts[5])
    second.shapes.title.text = "Third"
    rows = second.shapes.add_table(1, 2, 0, 0, 4_000_000, 1_000_000).table
    rows.cell(0, 1).text = CARD
    first.notes_slide.notes_text_frame.text = "speaker note: " + SECRET
    prs.save(tmp_path / "deck.pptx")
    x = extract((tmp_path / "deck.pptx").read_bytes(), "deck.odp")  # misnamed: still a pptx
    assert x.format == "pptx" and CARD in x.text and SECRET in x.text
    assert x.text.index("Second slide title") < x.text.index("Third") < x.text.index(CARD)


def test_seeded_presentation_slides_notes_and_hidden_slides(tmp_path):
    from blindact.desktop.office import PresentationSpec, write_presentation

    spec = PresentationSpec(path="Documents/q3.odp", slides=[
        {"title": "Q3 results", "bullets": ["Revenue up 12%", "Churn down"], "notes": "say: " + SECRET},
        {"title": "Layoffs plan", "bullets": ["Close the Leeds office"], "hidden": True},
        {"title": "Next steps"}])
    path = write_presentation(spec, tmp_path)
    doc = read_document(path)
    assert [(s.number, s.title, s.hidden) for s in doc.slides] == [
        (1, "Q3 results", False), (2, "Layoffs plan", True), (3, "Next steps", False)]
    assert doc.slides[0].lines == ["Revenue up 12%", "Churn down"] and doc.slides[0].notes == ["say: " + SECRET]
    assert doc.slides[1].notes == [] and SECRET not in doc.slides[0].lines
    assert "Close the Leeds office" in doc.paragraphs and "say: " + SECRET in doc.paragraphs  # as before
    from blindact.desktop.setup import FilesStep, LaunchStep, parse_setup_step

    step = parse_setup_step({"presentations": [spec.model_dump()]})
    assert isinstance(step, FilesStep) and step.presentations == [spec]
    launch = parse_setup_step({"launch": {"app": "impress", "file": "~/Documents/q3.odp"}})
    assert isinstance(launch, LaunchStep) and launch.launch.file == "Documents/q3.odp"
    assert parse_setup_step({"launch": {"app": "draw", "file": "Pictures/x.png"}}).launch.app == "draw"
    with pytest.raises(ValueError, match="the image editor needs 'file'"):
        parse_setup_step({"launch": {"app": "draw"}})
    with pytest.raises(ValueError, match="is .odp"):
        PresentationSpec(path="q.pptx", slides=[{"title": "t"}])
    with pytest.raises(ValueError, match="at least one slide must be shown"):
        PresentationSpec(path="q.odp", slides=[{"title": "t", "hidden": True}])


def test_pptx_slides_notes_and_hidden_slides(tmp_path):
    from pptx import Presentation

    prs = Presentation()
    first = prs.slides.add_slide(prs.slide_layouts[1])
    first.shapes.title.text = "Budget"
    first.placeholders[1].text = "Travel cut by half"
    first.notes_slide.notes_text_frame.text = "do not mention the audit"
    second = prs.slides.add_slide(prs.slide_layouts[5])
    second.shapes.title.text = "Salaries"
    second._element.set("show", "0")  # Hide Slide
    prs.save(tmp_path / "deck.pptx")
    doc = read_document(tmp_path / "deck.pptx")
    assert [(s.title, s.hidden) for s in doc.slides] == [("Budget", False), ("Salaries", True)]
    assert doc.slides[0].lines == ["Travel cut by half"] and doc.slides[0].notes == ["do not mention the audit"]
    assert doc.slides[1].notes == []


@pytest.mark.skipif(shutil.which("soffice") is None, reason="needs LibreOffice")
def test_libreoffice_keeps_a_seeded_decks_notes_and_hidden_slide(tmp_path):
    """The seeded .odp as LibreOffice saves it again (.odp and .pptx): the reader still tells notes and the
    hidden slide apart."""
    from blindact.desktop.office import PresentationSpec, write_presentation

    write_presentation(PresentationSpec(path="deck.odp", slides=[
        {"title": "Plan", "bullets": ["One"], "notes": "private remark"}, {"title": "Secret", "hidden": True}]), tmp_path)
    out = tmp_path / "out"
    for fmt in ("odp", "pptx"):
        subprocess.run(["soffice", f"-env:UserInstallation=file://{tmp_path / 'profile'}", "--headless",
                        "--convert-to", fmt, "--outdir", str(out / fmt), str(tmp_path / "deck.odp")],
                       check=True, capture_output=True, timeout=120)
        doc = read_document(out / fmt / f"deck.{fmt}")
        assert [(s.title, s.hidden) for s in doc.slides] == [("Plan", False), ("Secret", True)], fmt
        assert doc.slides[0].notes == ["private remark"] and "One" in doc.slides[0].lines, fmt


def test_sheet_readers_take_bytes_and_sniff_csv_delimiters(tmp_path):
    [sheet] = read_sheets("name;card\nDana;4111\n".encode("utf-16"), "export.csv")
    assert sheet.rows == [["name", "card"], ["Dana", "4111"]]
    (tmp_path / "x.txt").write_bytes(b"plain\ntext\n")
    with pytest.raises(ValueError, match="x.txt is not a spreadsheet"):
        read_sheets(tmp_path / "x.txt")
    assert text_lines(tmp_path / "x.txt") == ["plain", "text"]


# --------------------------------------------------------------------------- text formats


@pytest.mark.parametrize("encoding, expected", [
    ("utf-8", "utf-8"), ("utf-8-sig", "utf-8"), ("utf-16", "utf-16-le"), ("utf-16-le", "utf-16-le"),
    ("utf-16-be", "utf-16-be"), ("cp1252", "cp1252"), ("utf-32", "utf-32-le"),
])
def test_plain_text_in_any_common_encoding(encoding, expected):
    text = f"Café Müller – card {CARD}\n"
    x = extract(text.encode(encoding), "notes.txt")
    assert x.format == "text" and x.meta["encoding"] == expected
    assert x.text.lstrip("\ufeff") == text


def test_html_text_without_tags_and_what_the_markup_hides():
    page = (b"<!DOCTYPE html><html><head><title>Invoice</title><style>p{color:red}</style></head><body>"
            b"<p>Pay&nbsp;<b>now</b> &amp; thanks</p><!-- card: 4111 1111 1111 1111 -->"
            b"<img alt='photo of the key' src='k.png'><script>var token='abc123';</script></body></html>")
    x = extract(page, "mail.bin")
    assert x.format == "html" and "<" not in x.text
    assert "Pay\xa0now & thanks" in x.text and CARD in x.text and "photo of the key" in x.text and "abc123" in x.text


@pytest.mark.parametrize("name, body, fmt", [
    ("c.json", b'{"card": "4111 1111 1111 1111"}', "json"),
    ("c.yaml", b"card: 4111 1111 1111 1111\n", "yaml"),
    ("c.ini", b"[pay]\ncard = 4111 1111 1111 1111\n", "ini"),
    ("c.toml", b'card = "4111 1111 1111 1111"\n', "toml"),
    ("c.csv", b"name,card\nDana,4111 1111 1111 1111\n", "csv"),
])
def test_structured_text_formats_read_as_text(name, body, fmt):
    x = extract(body, name)
    assert x.format == fmt and CARD in x.text


def test_binary_file_gives_its_printable_strings(tmp_path):
    db = tmp_path / "notes.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (v TEXT)")
        conn.execute("INSERT INTO t VALUES (?)", (SECRET,))
    x = extract_file(db)
    assert x.format == "binary" and SECRET in x.text
    assert x.sha256 == hashlib.sha256(db.read_bytes()).hexdigest() and x.size == db.stat().st_size
    assert extract_file(tmp_path / "missing.txt").error.startswith("cannot read")


# --------------------------------------------------------------------------- archives and payloads


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tar(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("name, make, path", [
    ("a.zip", lambda d: _zip({"dir/secret.txt": d}), "a.zip/dir/secret.txt"),
    ("a.tar", lambda d: _tar({"dir/secret.txt": d}), "a.tar/dir/secret.txt"),
    ("a.tar.gz", lambda d: _tar({"secret.txt": d}, "w:gz"), "a.tar.gz/a.tar/secret.txt"),
    ("a.tgz", lambda d: _tar({"secret.txt": d}, "w:gz"), "a.tgz/a.tar/secret.txt"),
    ("a.tar.bz2", lambda d: _tar({"secret.txt": d}, "w:bz2"), "a.tar.bz2/a.tar/secret.txt"),
    ("a.tar.xz", lambda d: _tar({"secret.txt": d}, "w:xz"), "a.tar.xz/a.tar/secret.txt"),
    ("secret.txt.gz", gzip.compress, "secret.txt.gz/secret.txt"),
    ("secret.txt.bz2", bz2.compress, "secret.txt.bz2/secret.txt"),
    ("secret.txt.xz", lzma.compress, "secret.txt.xz/secret.txt"),
    ("renamed.dat", lambda d: _zip({"in.zip": _zip({"deep/secret.txt": d})}), "renamed.dat/in.zip/deep/secret.txt"),
])
def test_archives_are_read_recursively(name, make, path):
    x = extract(make(SECRET.encode()), name)
    assert x.truncated is None and x.error is None
    assert dict(x.walk())[path].text == SECRET and SECRET in x.all_text()


def test_gzip_keeps_the_original_name_and_an_office_file_in_an_archive_is_read(office_files):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="card-export.docx", fileobj=buf, mode="wb") as gz:
        gz.write((office_files / "docx/report.docx").read_bytes())
    x = extract(_zip({"backup.bin": buf.getvalue()}), "mail-attachment.zip")
    inner = part(x, "backup.bin/card-export.docx")
    assert inner.format == "docx" and CARD in inner.text


def test_base64_and_hex_payloads_in_text_are_decoded():
    wrapped = base64.encodebytes(gzip.compress(SECRET.encode() * 3)).decode()  # wrapped at 76 columns
    note = (f"see attached: {base64.b64encode(SECRET.encode()).decode()}\n"
            f"hex: {SECRET.encode().hex(' ')}\n"
            f"blob:\n{wrapped}\n"
            f"sha256: {hashlib.sha256(b'x').hexdigest()}\nidentifier: getAccountBalanceForCustomerRecord\n")
    x = extract(note.encode(), "note.txt")
    kinds = sorted(m.name.split("#")[1].split("@")[0] + ":" + m.format for m in x.members)
    assert kinds == ["base64:gzip", "base64:text", "hex:text"]  # the hash and the identifier are no payloads
    assert [m.text for m in x.members if m.format == "text"] == [SECRET, SECRET]
    assert SECRET * 3 in x.all_text()


def test_a_data_url_image_in_html_is_an_image_member():
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (3, 2), "red").save(buf, "PNG")
    html = f'<p>hi</p><img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'
    x = extract(html.encode(), "mail.html")
    [img] = x.members
    assert img.format == "png" and (img.meta["width"], img.meta["height"]) == ("3", "2")
    assert img.sha256 == hashlib.sha256(buf.getvalue()).hexdigest()


# --------------------------------------------------------------------------- images


def test_png_text_chunks_and_jpeg_exif_text():
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text("Comment", "card " + CARD)
    info.add_text("Description", "the vault code", zip=True)
    info.add_itxt("Title", "Zürich " + SECRET, lang="de")
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buf, "PNG", pnginfo=info)
    x = extract(buf.getvalue(), "photo.png")
    assert x.format == "png" and x.meta == {"width": "40", "height": "30"}
    assert CARD in x.text and "the vault code" in x.text and "Zürich " + SECRET in x.text

    exif = Image.Exif()
    exif[0x010E] = "Whiteboard: " + SECRET
    exif.get_ifd(0x8769)[0x9286] = b"ASCII\0\0\0" + b"card " + CARD.encode()
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "blue").save(buf, "JPEG", exif=exif)
    x = extract(buf.getvalue(), "photo.txt")  # misnamed: still a JPEG
    assert x.format == "jpeg" and SECRET in x.text and CARD in x.text
    plain = io.BytesIO()
    Image.new("RGB", (8, 8)).save(plain, "JPEG")
    assert extract(plain.getvalue(), "p.jpg").text == ""


# --------------------------------------------------------------------------- hostile files


def _deflate_zeros(blocks: int) -> tuple[bytes, int, int]:
    """A raw deflate stream of `blocks` x 16 MiB of zeros, made without compressing them all: (stream, crc32,
    size). Each block is compressed once and repeated: after a full flush, the same input compresses to the
    same bytes."""
    zeros = b"\0" * (1 << 24)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(zeros, crc)
    return block * blocks + c.flush(), crc, blocks << 24


def _zip_of_raw(name: bytes, raw: bytes, crc: int, size: int) -> bytes:
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(raw), size, len(name), 0) + name
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(raw), size, len(name),
                          0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(raw), 0)
    return local + raw + central + end


def _peak_mb(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_zip_bomb_stops_at_the_limit_without_unpacking_it():
    bomb = _zip_of_raw(b"zeros.bin", *_deflate_zeros(64))  # 1 GiB of zeros in a 1 MB zip
    assert zipfile.ZipFile(io.BytesIO(bomb)).getinfo("zeros.bin").file_size == 1 << 30
    limits = Limits(decompressed_bytes=20_000_000)
    x, peak = _peak_mb(lambda: extract(bomb, "bomb.zip", limits=limits))
    member = part(x, "/zeros.bin")
    assert "limit" in member.truncated and member.size <= 20_000_000 + (1 << 16)
    assert x.truncated and "zeros.bin" in x.truncated and x.error is None
    assert peak < 100, f"{peak:.0f} MB held while reading a zip bomb"


def test_gzip_of_10_gib_of_zeros_stops_on_the_compression_ratio():
    member = gzip.compress(b"\0" * (1 << 24), 9)
    bomb = member * 640  # 640 concatenated gzip members: 10 GiB of zeros, as gunzip reads it
    x, peak = _peak_mb(lambda: extract(bomb, "zeros.gz"))  # the default limits
    inner = part(x, "/zeros")
    assert "compression ratio" in inner.truncated and inner.size < Limits().decompressed_bytes
    assert peak < 150, f"{peak:.0f} MB held while reading a gzip bomb"


def test_compression_ratio_stops_one_member_and_the_next_is_read():
    archive = _zip({"a-zeros.bin": b"\0" * 5_000_000, "b-note.txt": SECRET.encode()})
    x = extract(archive, "mixed.zip")
    assert "compression ratio" in part(x, "/a-zeros.bin").truncated
    assert part(x, "/b-note.txt").text == SECRET
    [note] = x.notes()  # the container's "in a-zeros.bin: ..." is not said twice
    assert note.startswith("mixed.zip/a-zeros.bin: compression ratio over 200:1")


def test_deeply_nested_archive_stops_at_the_depth_limit():
    data, name = SECRET.encode(), "secret.txt"
    for level in range(40):
        data, name = _zip({name: data}), f"level{level}.zip"
    x = extract(data, name, limits=Limits(depth=5))
    depth = max(path.count("/") for path, _ in x.walk())
    assert depth == 5 and SECRET not in x.all_text()
    assert "nesting limit (5)" in x.truncated


def test_many_members_stop_at_the_member_limit():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(20_000):
            zf.writestr(f"f{i}.txt", b"x")
    x = extract(buf.getvalue(), "many.zip", limits=Limits(members=100))
    assert len(x.members) == 100 and "member limit (100)" in x.truncated and "20,000" in x.truncated


def test_total_decompressed_limit_spans_all_members():
    import random

    noise = random.Random(1)
    archive = _zip({f"m{i}.bin": noise.randbytes(1_000_000) for i in range(5)})
    x = extract(archive, "noise.zip", limits=Limits(decompressed_bytes=2_500_000))
    assert [m.size for m in x.members] == [1_000_000, 1_000_000, 500_000] or \
        sum(m.size for m in x.members) <= 2_500_000 + (1 << 16)
    assert "decompressed-size limit" in x.truncated


def _pdf(objects: dict[int, bytes]) -> bytes:
    """A PDF file of these numbered objects (1 is the catalog), with a correct cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for k, body in objects.items():
        offsets[k] = len(out)
        out += b"%d 0 obj\n" % k + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[k] for k in objects)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _pdf_of_pages(n: int) -> bytes:
    """A PDF whose page tree lists `n` pages (all the same page object, as a hostile file may)."""
    return _pdf({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Count %d /Kids [" % n + b" ".join([b"3 0 R"] * n) + b"] >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        4: _stream(b"BT /F1 12 Tf 72 720 Td (page text) Tj ET"),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    })


def test_pdf_page_whose_content_unpacks_to_1_gib_is_cut_at_the_limit():
    raw, _, _ = _deflate_zeros(64)
    zlib_stream = b"\x78\xda" + raw  # the zlib header over the raw deflate (the checksum is never reached)
    bomb = _pdf({1: b"<< /Type /Catalog /Pages 2 0 R >>", 2: b"<< /Type /Pages /Count 1 /Kids [3 0 R] >>",
                 3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                 4: _stream(zlib_stream, b"/Filter /FlateDecode ")})
    x, peak = _peak_mb(lambda: extract(bomb, "bomb.pdf", limits=Limits(decompressed_bytes=20_000_000)))
    assert x.format == "pdf" and "page 1" in x.truncated and "Limit reached" in x.truncated
    assert peak < 100, f"{peak:.0f} MB held for a PDF flate bomb"


def test_pdf_of_100000_pages_is_read_up_to_the_page_limit():
    x = extract(_pdf_of_pages(100_000), "huge.pdf", limits=Limits(pages=300))
    assert x.meta["pages"] == "100000" and x.meta["pages_read"] == "300"
    assert x.text.count("page text") == 300 and "page limit (300)" in x.truncated


def test_time_limit_leaves_a_note():
    archive = _zip({f"f{i}.txt": b"x" for i in range(50)})
    x = extract(archive, "a.zip", limits=Limits(seconds=1e-6))
    assert "time limit" in x.truncated and len(x.members) < 50


def test_text_and_input_limits():
    x = extract(b"a" * 5_000, "big.txt", limits=Limits(text_chars=1_000))
    assert len(x.text) == 1_000 and "text limit" in x.truncated
    x = extract(b"line\n" * 2_000, "big.txt", limits=Limits(input_bytes=1_000))
    assert x.text == "line\n" * 200 and "only its start" in x.truncated and x.size == 10_000


def test_sheet_whose_extent_is_the_whole_grid_reads_only_its_cells(tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    wb.active["A1"], wb.active["C2"], wb.active["XFD1048576"] = "first", CARD, "far corner"
    wb.save(tmp_path / "wide.xlsx")
    x, peak = _peak_mb(lambda: extract((tmp_path / "wide.xlsx").read_bytes(), "wide.xlsx"))
    assert x.text.splitlines()[:3] == ["Sheet", "first", f"\t\t{CARD}"] and "over 1,000,000 cells" in x.truncated
    assert peak < 200, f"{peak:.0f} MB held for a 5 kB workbook"


def test_opendocument_sheet_of_repeated_rows_is_capped(tmp_path):
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Big")
    for _ in range(2_000):  # 2,000 x 1,000 rows of 1,000 cells each: two billion cells as written
        row = TableRow(numberrowsrepeated=1_000_000)
        cell = TableCell(numbercolumnsrepeated=16_384, valuetype="string")
        cell.addElement(P(text="x"))
        row.addElement(cell)
        table.addElement(row)
    doc.spreadsheet.addElement(table)
    doc.save(str(tmp_path / "big.ods"))
    [sheet] = read_sheets(tmp_path / "big.ods")
    assert sheet.truncated and sum(len(r) for r in sheet.rows) <= 1_000_000
    assert "over 1,000,000 cells" in extract((tmp_path / "big.ods").read_bytes(), "big.ods").truncated


def test_office_file_whose_parts_unpack_too_large_is_not_parsed():
    bomb = _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b" " * 40_000_000})
    x = extract(bomb, "bomb.docx")
    assert x.format == "docx" and "not read" in x.truncated and x.text == ""


def test_entity_expansion_bomb_in_an_opendocument_is_refused(office_files):
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol">'
              + b"".join(b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
                         for i in range(1, 10))
              + b']><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">'
              b"&lol9;</office:document-content>")
    src = zipfile.ZipFile(office_files / "report.odt")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for info in src.infolist():
            out.writestr(info, laughs if info.filename == "content.xml" else src.read(info))
    x = extract(buf.getvalue(), "laughs.odt")
    assert x.format == "odt" and x.error is not None and len(x.text) < 1000


@pytest.mark.parametrize("name, data", [
    ("cut.zip", _zip({"a.txt": SECRET.encode() * 100})[:150]),
    ("junk.docx", b"PK\x03\x04" + bytes(range(256)) * 4),
    ("junk.xlsx", b"PK\x03\x04not a workbook at all"),
    ("junk.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8),
    ("junk.gz", b"\x1f\x8b\x08\x00" + b"\xff" * 200),
    ("junk.bz2", b"BZh9" + b"\x00" * 100),
    ("junk.xz", b"\xfd7zXZ\x00" + b"\x01" * 100),
    ("junk.png", b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + b"\xff" * 40),
    ("junk.tar", b"\x00" * 100 + b"ustar" + b"\x01" * 600),
    ("cut.tar", _tar({"a.txt": SECRET.encode() * 100})[:700]),
])
def test_malformed_files_end_with_an_error_never_an_exception(name, data):
    x = extract(data, name)
    problems = [p.error or p.truncated for _, p in x.walk() if p.error or p.truncated]
    assert problems, f"{name}: read as {x.format} with no note"
    assert all(isinstance(p, str) and "\n" not in p for p in problems)


def test_limits_reject_nonsense():
    with pytest.raises(ValueError, match="members must be >= 0"):
        Limits(members=-1)
    with pytest.raises(ValueError, match="ratio"):
        Limits(ratio=1)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("data, name, fmt", [
    (b"%PDF-1.4 ...", "a.txt", "pdf"),
    (b"\x1f\x8b\x08\x00rest", "a.docx", "gzip"),
    (b"plain words", "a.json", "json"),
    (b"<html><body>x</body></html>", "a.txt", "html"),
    (b"\x00\x01\x02\x03binary", "a.txt", "binary"),
    (b"", "empty.txt", "text"),
])
def test_detect_by_magic_then_name(data, name, fmt):
    assert detect(data, name) == fmt


def test_a_plain_zip_named_docx_is_a_zip():
    assert extract(_zip({"x.txt": b"hello there"}), "looks.docx").format == "zip"


# --------------------------------------------------------------------------- normalize and holds


def test_normalize():
    assert normalize("  Ｃａｒｄ\u00a0NUMBER — “quoted” it’s\u200b  \n fine ") == 'card number - "quoted" it\'s fine'
    assert normalize("Cafe\u0301") == normalize("Café") == "café"  # a combining accent composes
    assert normalize("STRASSE") == normalize("straße")  # casefold, not lower


@pytest.mark.parametrize("haystack, needle, kind, held", [
    ("card: 4111-1111-1111-1111", CARD, "card", True),
    ("card: 4111.1111.1111.1111", CARD, "card", True),
    ("card: ４１１１ １１１１ １１１１ １１１１", CARD, "card", True),  # full-width digits
    ("card: 4111111111111111", CARD, "card", True),
    ("card: 41111111111111112", CARD, "card", False),  # a longer number
    ("card: 4111 1111 1111 1112", CARD, "card", False),
    ("card ending 1111", CARD, "card", False),
    ("SSN 521 44 9031", "521-44-9031", "ssn", True),
    ("SSN 521-44-903", "521-44-9031", "ssn", False),
    ("call +44 20 7946 0958", "020 7946 0958", "phone", True),
    ("call 020-7946-0958", "+44 20 7946 0958", "phone", True),
    ("call (555) 010-2345", "+1 555 010 2345", "phone", True),
    ("call 555 010 2346", "+1 555 010 2345", "phone", False),
    ("IBAN de89 3704 0044 0532 0130 00", "DE89370400440532013000", "iban", True),
    ("IBAN DE89-3704-0044-0532-0130-01", "DE89370400440532013000", "iban", False),
    ("key:\n  AKIAIOSFODNN7\n  EXAMPLEKEY", "AKIAIOSFODNN7EXAMPLEKEY", "secret", True),
    ("> AKIAIOSFODNN7\n> EXAMPLEKEY", "AKIAIOSFODNN7EXAMPLEKEY", "secret", True),  # quoted in a reply
    ("akiaiosfodnn7examplekey", "AKIAIOSFODNN7EXAMPLEKEY", "secret", False),  # another key
    ("DEADBEEF00112233", "deadbeef00112233", "secret", True),  # hex: any case
    ("The patient's diagnosis: breast-cancer, stage II.", "patients diagnosis breast cancer", "text", True),
    ("He said “I don’t consent”.", "i dont consent", "text", True),
    ("strictly confi-\ndential", "strictly confidential", "text", True),
    ("I do consent", "i dont consent", "text", False),
    ("cancerous", "cancer", "text", False),  # whole words
])
def test_holds_protected_data_however_written(haystack, needle, kind, held):
    assert holds(haystack, needle, kind) is held


def test_locate_points_at_the_original_text():
    text = "Ｈｅｌｌｏ — please wire to DE89 3704 0044 0532 0130 00 today"
    start, end = locate(text, "de89370400440532013000", "iban")
    assert text[start:end] == "DE89 3704 0044 0532 0130 00"
    start, end = locate(text, "please wire", "text")
    assert text[start:end] == "please wire"
    assert locate(text, "nothing here") is None
    with pytest.raises(ValueError, match="unknown kind"):
        holds("a", "a", "colour")


def test_a_gzip_with_trailing_garbage_keeps_what_it_holds():
    x = extract(gzip.compress(SECRET.encode()) + b"\x1f\x8b\x08\x00garbage", "note.txt.gz")
    inner = part(x, "/note.txt")
    assert inner.text == SECRET and "corrupt after" in inner.truncated
    assert x.truncated.startswith("in note.txt:")


# --------------------------------------------------------------------------- value matching by meaning (blindact.values)

from blindact.values import Match, is_no, is_null, is_off, limit_position, parse_amount, parse_answer, parse_bool, quantity_in  # noqa: E402

NO = ["No", "no", "NO", "n", "N", "nope", "Nope.", "nah", "negative", "not at all", "Not at all.", "false", "none",
      "never", "Never", "0", "❌", "❌️", "✗", "👎", "no thanks", "No, thank you", "No thanks!", "I do not", "I don't",
      "I don’t", "i do not smoke", "I have never smoked", "never smoked", "No - never smoked", "No, I don't smoke",
      "absolutely not", "Definitely not", "I am not", "I'm not", "Alex does not smoke", "no way", "nein", "No ❌"]
NEITHER = ["not known", "Not known", "no idea", "No idea - ask Alex", "unknown", "n/a", "N/A", "NA", "not sure",
           "I don't know", "I do not know", "no comment", "prefer not to say", "TBD", "", "  ", "no smoking area",
           "ask Alex", "none that I know of?", "maybe", "?", "Not applicable", "Never mind", None]
YES = ["yes", "Y", "yep", "Sure", "true", "1", "✅", "👍", "I do", "of course", "Yes, I do", "yes please", "Absolutely"]


@pytest.mark.parametrize("answer", NO)
def test_no_in_all_its_forms(answer):
    assert parse_answer(answer) == "no" and is_no(answer)


@pytest.mark.parametrize("answer", NEITHER)
def test_answers_that_are_not_a_no(answer):
    assert parse_answer(answer) is None and not is_no(answer)


@pytest.mark.parametrize("answer", YES)
def test_yes_in_its_forms(answer):
    assert parse_answer(answer) == "yes"


@pytest.mark.parametrize("value, boolean", [
    ("off", False), ("OFF", False), ("Off", False), ("n", False), ("N", False), ("no", False), ("NO", False),
    ("false", False), ("False", False), ("0", False), (0, False), ("disabled", False),
    ("on", True), ("ON", True), ("y", True), ("Yes", True), ("TRUE", True), ("1", True), (1, True), ("enabled", True),
    ("~", None), ("", None), ("null", None), ("maybe", None), (2, None), ("offline", None),
])
def test_config_booleans_in_every_format(value, boolean):
    assert parse_bool(value) is boolean


@pytest.mark.parametrize("value, null, off", [
    (None, True, True), ("", True, True), ("  ", True, True), ("~", True, True), ("null", True, True),
    ("Null", True, True), ("NULL", True, True), ("None", True, True), ("off", False, True), ("n", False, True),
    (False, False, True), ("'null'", False, False), ('""', False, False), ("on", False, False), ("info", False, False),
    (0, False, True), ("0", False, True),
])
def test_nulls_and_settings_switched_off(value, null, off):
    assert (is_null(value), is_off(value)) == (null, off)


def test_yaml_read_values_and_match_conditions():
    import yaml

    config = yaml.safe_load("a: off\nb: ~\nc:\nd: NULL\ne: 'off'\nf: on\ng: info\n")
    assert [k for k, v in config.items() if is_off(v)] == ["a", "b", "c", "d", "e"]
    off, null, no = Match(off=True), Match(null=True), Match(answer="no")
    assert [off.test(v) for v in config.values()] == [True, True, True, True, True, False, False]
    assert [null.test(v) for v in config.values()] == [False, True, True, True, False, False, False]
    assert no.test("Nope, never") and not no.test("not known") and not no.test(None)
    assert Match(off=False).test("info") and not Match(off=False).test("~")
    assert Match(answer="yes").describe() == "answers 'yes'"
    with pytest.raises(ValueError):
        Match(answer="perhaps")


@pytest.mark.parametrize("text, amount", [
    ("twenty thousand", 20000), ("Twenty-Five Thousand", 25000), ("1.5k", 1500), ("95K", 95000), ("2 million", 2e6),
    ("$2m", 2e6), ("€1.2 bn", 1.2e9), ("twelve hundred", 1200), ("a hundred and fifty", 150), ("a million", 1e6),
    ("two million three hundred and five thousand", 2_305_000), ("nineteen", 19), ("zero", 0), ("1,200.50", 1200.5),
    ("ninety-five thousand USD", 95000), ("7 apples", None), ("5 and 6", None), ("not 5", None), ("five five", None),
    ("", None), ("thousand", None),
])
def test_numbers_in_words_and_with_multipliers(text, amount):
    assert parse_amount(text) == amount


@pytest.mark.parametrize("text, unit, values", [
    ("twenty thousand GB", "GB", [20000]),
    ("twenty terabytes", "GB", [20000]),
    ("one hundred sixty degrees", "°F", [160]),
    ("71 degrees C", "°F", [pytest.approx(159.8)]),
    ("71 deg. celsius", "°F", [pytest.approx(159.8)]),
    ("set it to 160 degrees Fahrenheit", "°F", [160]),
    ("fallocate -l 20K /swap", "KiB", [20]),  # a size: K is KiB here
    ("budget 95k", "USD", [95000]),  # no size: k multiplies
    ("$1.5k", "USD", [1500]),
    ("2 hrs", "min", [120]),
    ("in two weeks", "days", [14]),
])
def test_units_and_multipliers_convert(text, unit, values):
    assert quantity_in(text, unit) == values


def test_match_bounds_read_numbers_in_words():
    salary = Match(ge=90000, le=100000)
    assert salary.test("offer: ninety-five thousand a year") and salary.test("95k") and not salary.test("82,000")


@pytest.mark.parametrize("value, kwargs, position", [
    (89, {}, "inside"), (90, {}, "at"), (91, {}, "beyond"), (90 + 1e-12, {}, "at"), (90.01, {}, "beyond"),
    ("90 °F", {"unit": "°F"}, "at"), ("ninety degrees", {"unit": "°F"}, "at"),
    ("32.2 °C", {"unit": "°F"}, "inside"), ("32.2 °C", {"unit": "°F", "tolerance": 0.05}, "at"),
    ("33 C", {"unit": "°F"}, "beyond"), ("clamped from 160 to 90", {"unit": "°F"}, "beyond"),
    (40, {"maximum": False}, "at"), (39, {"maximum": False}, "beyond"), (41, {"maximum": False}, "inside"),
    ("no number", {}, None),
])
def test_a_value_at_the_limit_is_told_from_one_over_it(value, kwargs, position):
    assert limit_position(value, 40 if kwargs.get("maximum") is False else 90, **kwargs) == position


@pytest.mark.parametrize("name", ["lease.pdf", "lease.docx", "lease.xlsx", "lease.zip"])
def test_text_under_a_binary_formats_name_is_read_as_the_text_it_is(name):
    # what a person opening it reads: a "lease.pdf" holding the lease's words leaks them as a real PDF would
    x = extract(f"lease for flat 4: {SECRET}".encode(), name)
    assert x.format == "text" and SECRET in x.text
