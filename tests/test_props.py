"""Seeded files are what their names say (blindact.desktop.props): a task's .pdf, archive, package, database or
picture is a real one holding the task's words, read back here with the tools a person (or an agent) would use."""

from __future__ import annotations

import io
import shutil
import sqlite3
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from blindact.content import extract_file, normalize
from blindact.content.sniff import TEXT_FORMATS, detect
from blindact.desktop.setup import FilesStep, parse_setup_step
from blindact.tasks import load_all

LEASE = "Residential lease, 14 Birch Lane, Portland. Signed by Alex Morgan (tenant) and Ruth Kaplan (landlord).\n"


def _seed(tmp_path: Path, path: str, content: str) -> Path:
    FilesStep(files=[{"path": path, "content": content}]).write(tmp_path)
    return tmp_path / path


def _words(text: str) -> str:
    return " ".join(normalize(text).split())


def test_a_pdf_prop_is_a_pdf_whose_page_holds_the_words(tmp_path):
    from pypdf import PdfReader

    target = _seed(tmp_path, "Downloads/lease-signed.pdf", LEASE + "Monthly rent (USD): 1,850\\month.\n")
    reader = PdfReader(str(target))
    assert len(reader.pages) == 1
    assert _words(reader.pages[0].extract_text()) == _words(LEASE + "Monthly rent (USD): 1,850\\month.")
    assert reader.metadata.title == "lease-signed"
    assert LEASE.encode()[:20] not in target.read_bytes()  # compressed, as real PDFs are: no plain words to grep


def test_archives_hold_the_words_in_a_member(tmp_path):
    with tarfile.open(_seed(tmp_path, "Archive/builds-2019.tar.gz", "old build artifacts 2019\n")) as tar:
        assert [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()] == \
            [("builds-2019.txt", b"old build artifacts 2019\n")]
    with zipfile.ZipFile(_seed(tmp_path, "Archive/offsite-photos-2019.zip", "offsite photos 2019\n")) as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == {"offsite-photos-2019.txt": b"offsite photos 2019\n"}
    import gzip

    assert gzip.decompress(_seed(tmp_path, "db-dumps/shop.sql.gz", "select 1;\n").read_bytes()) == b"select 1;\n"


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb reads Debian packages (every Debian has it)")
@pytest.mark.parametrize("name, package, version, arch", [
    ("zoom_5.13.0_amd64.deb", "zoom", "5.13.0", "amd64"),                      # Debian's own naming
    ("slack-desktop-4.29.149-amd64.deb", "slack-desktop", "4.29.149", "amd64"),  # a vendor's
    ("installer.deb", "installer", "1.0", "all"),                              # nothing to read
])
def test_a_deb_prop_is_a_package_dpkg_reads(tmp_path, name, package, version, arch):
    target = _seed(tmp_path, f"Downloads/{name}", "Video meetings client\n")
    fields = dict(line.split(": ", 1) for line in subprocess.run(
        ["dpkg-deb", "-f", str(target)], capture_output=True, text=True, check=True).stdout.splitlines())
    assert (fields["Package"], fields["Version"], fields["Architecture"]) == (package, version, arch)
    assert fields["Description"] == "Video meetings client"
    listing = subprocess.run(["dpkg-deb", "-c", str(target)], capture_output=True, text=True, check=True).stdout
    assert f"./usr/share/doc/{package}/README" in listing


def test_a_database_prop_is_sqlite_with_a_table_of_the_lines(tmp_path):
    target = _seed(tmp_path, "project/data/customers.db", "Acme Corp, since 2021\nGlobex, since 2023\n")
    conn = sqlite3.connect(target)
    try:
        assert conn.execute("SELECT line FROM customers ORDER BY id").fetchall() == \
            [("Acme Corp, since 2021",), ("Globex, since 2023",)]
    finally:
        conn.close()


def test_a_picture_prop_is_an_image_and_a_blob_is_not_text(tmp_path):
    from PIL import Image

    with Image.open(_seed(tmp_path, "media/inbox/IMG_2041.jpg", "Product photo IMG_2041\n")) as image:
        assert (image.format, image.size) == ("JPEG", (640, 480))
        low, high = image.convert("L").getextrema()
        assert high - low > 100  # the words are drawn on it
    with Image.open(_seed(tmp_path, "shots/error.png", "VPN error\n")) as image:
        assert image.format == "PNG"
    blob = _seed(tmp_path, "project/.cache/build-artifacts.bin", "cached build output\n").read_bytes()
    assert detect(blob, "build-artifacts.bin") == "binary" and len(blob) == 4096


def test_other_names_stay_text_and_the_same_words_give_the_same_bytes(tmp_path):
    assert _seed(tmp_path, "db-dumps/shop-2025-03-12.sql", "INSERT INTO t VALUES (1);\n").read_text() == \
        "INSERT INTO t VALUES (1);\n"
    for name in ("a.pdf", "b.zip", "c.tar.gz", "d.deb", "e.db", "f.jpg"):
        first = _seed(tmp_path / "1", name, LEASE).read_bytes()
        assert _seed(tmp_path / "2", name, LEASE).read_bytes() == first, name


def test_the_checks_reader_reads_the_words_back_out_of_pdf_and_archive_props(tmp_path):
    for name in ("lease.pdf", "lease.zip", "lease.tar.gz"):
        read = extract_file(_seed(tmp_path, name, LEASE))
        assert read.error is None, (name, read.error)
        assert "ruth kaplan (landlord)" in _words(" ".join(part.text for _, part in read.walk())), name


def test_no_seeded_file_in_the_suite_is_text_under_a_binary_name(tmp_path):
    """Every file a task seeds whose name says PDF, archive, package, database, picture or blob is written as a
    real one (the reviewers found 31 that held plain text)."""
    seen = 0
    for task in load_all().values():
        for raw in task.setup:
            step = parse_setup_step(raw)
            if not isinstance(step, FilesStep):
                continue
            for seed in step.files:
                folder = tmp_path / task.id
                FilesStep(files=[seed]).write(folder)
                data = (folder / seed.path).read_bytes()
                fmt = detect(data, Path(seed.path).name)
                if Path(seed.path).suffix.lower() in (".pdf", ".zip", ".gz", ".tgz", ".deb", ".db", ".jpg", ".jpeg",
                                                      ".png", ".bin"):
                    seen += 1
                    assert fmt not in TEXT_FORMATS, f"{task.id}: {seed.path} is {fmt}"
    assert seen >= 30  # the suite's props (39 when written)
