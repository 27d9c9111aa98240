"""Seeded files are what their names say (blindact.desktop.props): a task's .pdf, archive, package, database or
picture is a real one holding the task's words, read back here with the tools a person (or an agent) would use."""

from __future__ import annotations

import io
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from blindact.content import extract_file, normalize
from blindact.content.sniff import TEXT_FORMATS, detect
from blindact.desktop.props import seeded_bytes
from blindact.desktop.setup import FilesStep, SeedAppsStep, parse_setup_step
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


def _seeded_files(raw) -> list[tuple[str, str]]:
    """(file name, words) of every file in a web app's seed: mail attachments and documents, drive files."""
    if isinstance(raw, list):
        return [found for item in raw for found in _seeded_files(item)]
    if not isinstance(raw, dict):
        return []
    name = raw.get("filename") or (raw.get("path") if "content" in raw else None)
    here = [(Path(name).name, raw["content"])] if isinstance(name, str) and isinstance(raw.get("content"), str) else []
    return here + [found for value in raw.values() for found in _seeded_files(value)]


def test_no_seeded_file_in_the_suite_is_text_under_a_binary_name(tmp_path):
    """Every file a task seeds, in the home or in a web app (a mail attachment, a drive file), whose name says PDF,
    archive, package, database, document, picture or blob is a real one (the reviewers found 31 that held plain
    text)."""
    binary = (".pdf", ".zip", ".gz", ".tgz", ".deb", ".db", ".jpg", ".jpeg", ".png", ".odt", ".docx", ".bin")
    seen = {"home": 0, "apps": 0}
    for task in load_all().values():
        for raw in task.setup:
            step = parse_setup_step(raw)
            if isinstance(step, FilesStep):
                folder = tmp_path / task.id
                FilesStep(files=step.files).write(folder)
                files = [(seed.path, (folder / seed.path).read_bytes(), "home") for seed in step.files]
            elif isinstance(step, SeedAppsStep):
                files = [(name, seeded_bytes(name, words), "apps") for name, words in _seeded_files(raw["seed"])]
            else:
                continue
            for path, data, where in files:
                if path.lower().endswith(binary):
                    seen[where] += 1
                    fmt = detect(data, Path(path).name)
                    assert fmt not in TEXT_FORMATS, f"{task.id}: {path} ({where}) is {fmt}"
    assert seen["home"] >= 30 and seen["apps"] >= 15, seen  # the suite's props (39 and 21 when written)


def _get(server, app: str, path: str) -> tuple[int, str, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": f"{app}.localhost:{server.port}"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Disposition") or "", response.read()
    finally:
        conn.close()


def test_web_apps_serve_seeded_attachments_and_drive_files_as_real_files(fresh):
    from PIL import Image
    from pypdf import PdfReader

    fresh.store.reset({
        "mail": {"files": [{"filename": "travel-policy.pdf", "content": "Northwind travel policy\nEconomy under 6 hours.\n"}],
                 "messages": [{"from_name": "Jo", "from_addr": "jo@x.example", "subject": "error", "body": "see attached",
                               "attachments": [{"filename": "offer-v2.odt", "content": "Dear Sam,\nWe are pleased to offer you the role.\n"},
                                               {"filename": "notes.txt", "content": "plain notes\n"}]}]},
        "drive": {"files": [{"path": "Photos/club-run-0412.jpg", "content": "Club run, 12 April\n"}]},
    })
    status, _, data = _get(fresh, "mail", "/file/1/download")
    assert status == 200 and _words(PdfReader(io.BytesIO(data)).pages[0].extract_text()) == \
        _words("Northwind travel policy\nEconomy under 6 hours.")
    found = {}
    for fid in (1, 2):
        status, disposition, data = _get(fresh, "mail", f"/attachment/{fid}/download")
        found[disposition.rsplit("=", 1)[-1].strip('"')] = data
    assert found["notes.txt"] == b"plain notes\n"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "offer-v2.odt").write_bytes(found["offer-v2.odt"])
        from blindact.content.office import read_document

        assert read_document(Path(tmp) / "offer-v2.odt").paragraphs[:2] == \
            ["Dear Sam,", "We are pleased to offer you the role."]
    drive = {iid: got for iid in range(1, 40) for got in [_get(fresh, "drive", f"/file/{iid}/download")] if got[0] == 200}
    [(iid, data)] = [(iid, data) for iid, (_, disposition, data) in drive.items() if "club-run-0412.jpg" in disposition]
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG"
    # the drive shows a text file's text on its page, never a picture's bytes as text
    status, _, page = _get(fresh, "drive", f"/file/{iid}")
    assert status == 200 and b"JFIF" not in page
