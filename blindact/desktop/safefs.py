"""Reading and writing inside a folder the agent controls, without ever being led out of it.

The agent owns its home (and its runtime and temp folders) and may put anything there: a symlink to
/etc/shadow or to the controller's own files, a FIFO where a check reads (an `open` that blocks
forever), a 50 GB sparse file, a folder replaced by a link between two calls. The controller runs as
root (host root for the local provider's seeding, container root for Docker), so a careless
`open(home / path)` would follow all of that.

Every path here is resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): a symlink that stays
inside the folder is followed, one that leaves it (absolute, or `..` past the top) or a /proc magic link
fails with `OutsideError`. Files are opened O_NONBLOCK and checked to be regular on the opened fd (never
by a separate stat that a swap could race), and reads stop at a byte cap. Walks never follow symlinks.
Where the kernel has no openat2 (before 5.6) the same is done one path component at a time with
O_NOFOLLOW, refusing every symlink.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_SYS_OPENAT2 = 437  # the same number on every architecture that has it
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_libc = ctypes.CDLL(None, use_errno=True)
_HAVE_OPENAT2: bool | None = None

DEFAULT_READ_CAP = 20_000_000  # bytes read from one file; the rest is never looked at


class UnsafePath(OSError):
    """A path the controller will not use: outside the folder, or not what was asked for."""


class OutsideError(UnsafePath):
    """The path (or a symlink on it) leads outside the folder."""


class NotRegular(UnsafePath):
    """The path is a FIFO, socket, device or folder where a regular file was expected."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _relative(rel: str | os.PathLike) -> str:
    pure = PurePosixPath(os.fspath(rel))
    if pure.is_absolute():
        raise OutsideError(errno.EXDEV, f"{rel}: an absolute path where one inside the folder was expected")
    return str(pure) if str(pure) not in ("", ".") else "."


def _openat2(dirfd: int, rel: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_SYS_OPENAT2, dirfd, rel.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        if err == errno.EXDEV:
            raise OutsideError(err, f"{rel}: leads outside the folder")
        raise OSError(err, os.strerror(err), rel)
    return fd


def _openat2_available() -> bool:
    global _HAVE_OPENAT2
    if _HAVE_OPENAT2 is None:
        fd = os.open("/", os.O_PATH | os.O_DIRECTORY)
        try:
            os.close(_openat2(fd, ".", os.O_PATH, 0))
            _HAVE_OPENAT2 = True
        except OSError as exc:
            _HAVE_OPENAT2 = exc.errno not in (errno.ENOSYS, errno.EPERM)
        finally:
            os.close(fd)
    return _HAVE_OPENAT2


def _open_by_components(dirfd: int, rel: str, flags: int, mode: int) -> int:
    parts = [p for p in PurePosixPath(rel).parts if p != "."]
    if any(p == ".." for p in parts):
        raise OutsideError(errno.EXDEV, f"{rel}: '..' is not followed here")
    fd = os.dup(dirfd)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, dir_fd=fd)
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OutsideError(errno.ELOOP, f"{rel}: a symlink (not followed without openat2)") from None
            raise
    finally:
        os.close(fd)


def open_beneath(root: int | str | os.PathLike, rel: str | os.PathLike, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """An fd for `rel` inside `root` (a path or an open directory fd), resolved without leaving it."""
    rel = _relative(rel)
    own = not isinstance(root, int)
    dirfd = os.open(os.fspath(root), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if own else root
    try:
        if _openat2_available():
            return _openat2(dirfd, rel, flags, mode)
        return _open_by_components(dirfd, rel, flags, mode)
    finally:
        if own:
            os.close(dirfd)


@dataclass(frozen=True)
class Entry:
    """One thing found by `walk`: its path relative to the folder and its lstat."""

    rel: str
    st: os.stat_result

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


class SafeFolder:
    """A folder seen by the controller: lookups, reads and walks that never leave it (see the module doc)."""

    def __init__(self, root: str | os.PathLike, *, read_cap: int = DEFAULT_READ_CAP, walk_limit: int = 20_000,
                 walk_seconds: float = 5.0):
        self.root = Path(root)
        self.read_cap = read_cap
        self.walk_limit = walk_limit
        self.walk_seconds = walk_seconds

    def lstat(self, rel: str | os.PathLike) -> os.stat_result | None:
        """The entry itself (a symlink as a symlink), or None when it is not there or leads outside."""
        rel = _relative(rel)
        parent, name = os.path.split(rel)
        try:
            fd = open_beneath(self.root, parent or ".", os.O_PATH | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            return os.stat(name or ".", dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)

    def stat(self, rel: str | os.PathLike) -> os.stat_result | None:
        """What `rel` resolves to inside the folder; None when missing or when it leads outside."""
        try:
            fd = open_beneath(self.root, rel, os.O_PATH)
        except OSError:
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def is_file(self, rel: str | os.PathLike) -> bool:
        st = self.stat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, rel: str | os.PathLike) -> bool:
        st = self.stat(rel)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def read_bytes(self, rel: str | os.PathLike, cap: int | None = None) -> bytes:
        """The first `cap` bytes of a regular file. Raises FileNotFoundError, OutsideError, NotRegular."""
        fd = open_beneath(self.root, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegular(errno.EINVAL, f"{rel}: not a regular file ({_kind(st.st_mode)})")
            limit = self.read_cap if cap is None else cap
            chunks, left = [], limit
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, rel: str | os.PathLike, cap: int | None = None) -> str:
        return self.read_bytes(rel, cap).decode("utf-8", errors="replace")

    def walk(self, rel: str | os.PathLike = ".") -> Iterator[Entry]:
        """Every entry under `rel` (files, folders, links, special files), never following a symlink,
        at most `walk_limit` entries and `walk_seconds` of walking (then it stops quietly)."""
        try:
            top = open_beneath(self.root, rel, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        base = _relative(rel)
        deadline = time.monotonic() + self.walk_seconds
        count = 0
        try:
            for dirpath, dirnames, filenames, dirfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                for name in sorted(dirnames) + sorted(filenames):
                    if count >= self.walk_limit or time.monotonic() > deadline:
                        return
                    try:
                        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                    except OSError:
                        continue
                    count += 1
                    path = os.path.normpath(os.path.join(base, dirpath, name))
                    yield Entry(path, st)
        finally:
            os.close(top)

    def files(self, rel: str | os.PathLike = ".") -> Iterator[Entry]:
        return (e for e in self.walk(rel) if e.is_file)

    def write_bytes(self, rel: str | os.PathLike, data: bytes, mode: int = 0o644) -> None:
        """Create or replace a regular file, making its folders; never through a symlink."""
        rel = _relative(rel)
        parent = os.path.dirname(rel)
        if parent:
            self.makedirs(parent)
        fd = open_beneath(self.root, rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegular(errno.EINVAL, f"{rel}: not a regular file")
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def makedirs(self, rel: str | os.PathLike, mode: int = 0o755) -> None:
        """Make `rel` and its missing parents as real folders (an existing symlink on the way is refused)."""
        done = ""
        for part in PurePosixPath(_relative(rel)).parts:
            done = os.path.join(done, part) if done else part
            st = self.lstat(done)
            if st is None:
                parent, name = os.path.split(done)
                fd = open_beneath(self.root, parent or ".", os.O_PATH | os.O_DIRECTORY)
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                finally:
                    os.close(fd)
                st = self.lstat(done)
            if st is None or not stat.S_ISDIR(st.st_mode):
                raise NotRegular(errno.ENOTDIR, f"{done}: not a folder (a link or a file is in the way)")

    def chmod(self, rel: str | os.PathLike, mode: int) -> None:
        fd = open_beneath(self.root, rel, os.O_PATH | os.O_NOFOLLOW)
        try:
            os.chmod(f"/proc/self/fd/{fd}", mode)
        finally:
            os.close(fd)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"
