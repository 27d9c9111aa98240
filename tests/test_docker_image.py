"""The image build's pure parts: reading the host's apt sources, the cache keys, the build context.

The example mirror names are placeholders (example.invalid); the real one is read at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from blindact.desktop import image


def _etc_apt(tmp_path: Path, *, one_line: str = "", deb822: str = "") -> Path:
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    if one_line:
        (etc / "sources.list").write_text(one_line)
    if deb822:
        (etc / "sources.list.d" / "debian.sources").write_text(deb822)
    return etc


DEB822 = """\
Types: deb
# a comment line
URIs: http://mirror.example.invalid/debian/
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://mirror.example.invalid/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://mirror.example.invalid/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://other.example.invalid/debian
Suites: trixie
Components: main
Enabled: no
"""


def test_deb822_sources_pick_the_suite_its_updates_and_security(tmp_path):
    etc = _etc_apt(tmp_path, deb822=DEB822)
    sources = image.apt_sources_for("bookworm", etc_apt=etc)
    assert [(s.uri, s.suites) for s in sources] == [
        ("http://mirror.example.invalid/debian", ("bookworm", "bookworm-updates")),
        ("http://mirror.example.invalid/debian-security", ("bookworm-security",)),
    ]
    assert all(s.components == ("main",) for s in sources)
    assert sources[0].signed_by == "/usr/share/keyrings/debian-archive-keyring.gpg"


def test_one_line_sources_with_options(tmp_path):
    etc = _etc_apt(tmp_path, one_line=(
        "# deb http://commented.example.invalid/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example.invalid/debian bookworm main non-free\n"
        "deb-src http://mirror.example.invalid/debian bookworm main\n"
        "deb http://mirror.example.invalid/debian-security bookworm-security main\n"))
    sources = image.apt_sources_for("bookworm", etc_apt=etc)
    assert [(s.uri, s.suites, s.signed_by) for s in sources] == [
        ("http://mirror.example.invalid/debian", ("bookworm",), "/k.gpg"),
        ("http://mirror.example.invalid/debian-security", ("bookworm-security",), None),
    ]


def test_a_mirror_option_overrides_the_host(tmp_path):
    sources = image.apt_sources_for("bookworm", "https://m.example.invalid/debian/", etc_apt=_etc_apt(tmp_path))
    assert [(s.uri, s.suites) for s in sources] == [
        ("https://m.example.invalid/debian", ("bookworm", "bookworm-updates")),
        ("https://m.example.invalid/debian-security", ("bookworm-security",)),
    ]


def test_no_source_for_the_suite_says_what_to_do(tmp_path):
    etc = _etc_apt(tmp_path, deb822=DEB822)
    with pytest.raises(image.ImageBuildError, match="--mirror"):
        image.apt_sources_for("bullseye", etc_apt=etc)


def test_written_sources_round_trip(tmp_path):
    sources = image.apt_sources_for("bookworm", etc_apt=_etc_apt(tmp_path, deb822=DEB822))
    again = image._parse_deb822(image._sources_deb822(sources))
    assert again == sources


def test_the_base_tag_follows_the_package_list_not_its_order():
    a = image.base_tag("bookworm", ("xvfb", "openbox"))
    assert a == image.base_tag("bookworm", ("openbox", "xvfb"))
    assert a != image.base_tag("bookworm", ("xvfb", "openbox", "xterm"))
    assert a != image.base_tag("trixie", ("xvfb", "openbox"))
    assert a.startswith(f"{image.BASE_REPO}:bookworm-")


def test_the_build_context_holds_the_project_without_host_only_parts():
    root = image.project_root()
    deps = image.image_dependencies(root)
    names = {d.split(">")[0].split("=")[0].split("[")[0].lower() for d in deps}
    assert {"numpy", "starlette", "uvicorn", "mss", "python-xlib"} <= names
    assert not names & {"anthropic", "openai", "docker", "matplotlib"}
    files = list(image._source_files(root))
    assert Path("blindact/desktop/server.py") in files
    assert not [f for f in files if "__pycache__" in f.parts or f.suffix == ".pyc"]


def test_every_program_the_session_starts_is_in_the_image():
    from blindact.desktop import session

    package_of = {"soffice": "libreoffice-writer"}  # binaries shipped by a package of another name
    needed = {"xvfb", "openbox", "dbus", "at-spi2-core", "socat",
              *(package_of.get(b, b) for b in session._APP_BINARIES.values())}
    assert needed <= set(image.DESKTOP_PACKAGES)
    assert {"libreoffice-calc", "libreoffice-impress", "libreoffice-gtk3", "tumbler"} <= set(image.DESKTOP_PACKAGES)


def test_make_deps_and_the_image_install_the_same_packages():
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = image.project_root()
    out = subprocess.run(["make", "-s", "--no-print-directory", "--eval", "print-apt-desktop: ; @echo $(APT_DESKTOP)",
                          "print-apt-desktop"], cwd=root, capture_output=True, text=True, check=True).stdout
    assert tuple(out.split()) == image.DESKTOP_PACKAGES == image.desktop_packages()
    assert "curl" in image.DESKTOP_PACKAGES and "git" in image.DESKTOP_PACKAGES


def test_a_bad_package_list_names_the_file_and_line(tmp_path):
    listing = tmp_path / "packages.txt"
    listing.write_text("# comment\nxvfb  # the X server\nchromium sakura\n")
    with pytest.raises(image.ImageBuildError, match=r"packages.txt:3: one package a line"):
        image.desktop_packages(listing)
    listing.write_text("# nothing\n\n")
    with pytest.raises(image.ImageBuildError, match="lists no package"):
        image.desktop_packages(listing)
    listing.write_text("xvfb  # the X server\n\nopenbox\n")
    assert image.desktop_packages(listing) == ("xvfb", "openbox")
