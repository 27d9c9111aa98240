"""Which data a run used: a name, a version, and a SHA-256 over the bytes actually read.

Every loader hands the bytes it reads (a wheel member, a local file, the shipped templates, hub rows as
JSON) to `note`; `recording()` collects them while a dataset loads, and `identify` turns the collection into
a `DatasetInfo` that the command output and the report print. Two runs whose dataset hashes agree read the
same bytes, whatever source label they carry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

# the recordings in progress (loading happens on the calling thread, before any model call)
_active: list[list[tuple[str, str]]] = []


def note(name: str, data: bytes) -> bytes:
    """Record that `data` was read under `name`; returns `data` so a read can be wrapped in place."""
    digest = hashlib.sha256(data).hexdigest()
    for reads in _active:
        reads.append((name, digest))
    return data


@contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    """The (name, SHA-256) of every file noted while the block runs."""
    reads: list[tuple[str, str]] = []
    _active.append(reads)
    try:
        yield reads
    finally:
        _active.remove(reads)


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    version: str
    sha256: str  # over the sorted (file, SHA-256) pairs read
    files: int

    def text(self) -> str:
        return f"{self.name} ({self.version}), SHA-256 {self.sha256} over {self.files} file{'s' * (self.files != 1)}"

    def to_dict(self) -> dict:
        return asdict(self)


def identify(name: str, version: str, reads: list[tuple[str, str]]) -> DatasetInfo:
    if not reads:
        raise ValueError(f"dataset {name} ({version}): nothing was read")
    digest = hashlib.sha256("".join(f"{n}\0{h}\n" for n, h in sorted(set(reads))).encode()).hexdigest()
    return DatasetInfo(name, version, digest, len(set(reads)))
