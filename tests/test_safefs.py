"""The controller's reads and writes in the agent's folders never leave them, never block and never
read without bound (blindact.desktop.safefs)."""

from __future__ import annotations

import os
import time

import pytest

from blindact.desktop.safefs import NotRegular, OutsideError, SafeFolder


@pytest.fixture()
def home(tmp_path):
    root = tmp_path / "home"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("the controller's own")
    return root


def test_a_symlink_that_stays_inside_is_followed_one_that_leaves_is_not(home, tmp_path):
    os.symlink("b/x.txt", home / "a" / "in")
    os.symlink(str(tmp_path / "secret.txt"), home / "abs")
    os.symlink("../../secret.txt", home / "a" / "rel")
    os.symlink("../..", home / "a" / "b" / "up")
    folder = SafeFolder(home)
    assert folder.read_text("a/in") == "inside"
    for rel in ("abs", "a/rel", "a/b/up/secret.txt"):
        with pytest.raises((OutsideError, FileNotFoundError)):
            folder.read_text(rel)
        assert folder.stat(rel) is None or not folder.is_file(rel)


def test_special_files_are_refused_at_once(home):
    os.mkfifo(home / "fifo")
    os.symlink("/dev/zero", home / "zero")
    folder = SafeFolder(home)
    t0 = time.monotonic()
    with pytest.raises(NotRegular):
        folder.read_bytes("fifo")  # an open() without O_NONBLOCK would wait forever for a writer
    with pytest.raises(OutsideError):
        folder.read_bytes("zero")
    with pytest.raises(NotRegular):
        folder.read_bytes("a")
    assert time.monotonic() - t0 < 5  # generous: the point is that it returns at all


def test_reads_stop_at_the_cap(home):
    with open(home / "big", "wb") as f:
        f.truncate(3 << 30)  # 3 GiB, sparse
    assert len(SafeFolder(home, read_cap=1 << 20).read_bytes("big")) == 1 << 20


def test_a_walk_never_follows_links_and_stops_at_its_limit(home, tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("o")
    os.symlink(str(tmp_path / "outside"), home / "link")
    rels = {e.rel for e in SafeFolder(home).walk()}
    assert "link" in rels and "link/o.txt" not in rels and "a/b/x.txt" in rels
    assert len(list(SafeFolder(home, walk_limit=2).walk())) == 2


def test_writes_refuse_a_symlink_on_the_way_or_at_the_end(home, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    os.symlink(str(target), home / "dirlink")
    os.symlink(str(tmp_path / "secret.txt"), home / "filelink")
    folder = SafeFolder(home)
    with pytest.raises(OSError):
        folder.write_bytes("dirlink/planted", b"x")
    with pytest.raises(OSError):
        folder.write_bytes("filelink", b"x")
    assert not list(target.iterdir()) and (tmp_path / "secret.txt").read_text() == "the controller's own"
    folder.write_bytes("new/dir/y.txt", b"ok", mode=0o600)
    assert (home / "new" / "dir" / "y.txt").read_bytes() == b"ok"
    assert (home / "new" / "dir" / "y.txt").stat().st_mode & 0o777 == 0o600
