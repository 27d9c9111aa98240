"""Hard limits for reading files an agent made: a hostile or broken file (a zip bomb, an archive nested
a hundred deep, a gzip of 10 GB of zeros, a PDF of 100,000 pages) is read only as far as these allow,
and the reading stops with a note instead of raising or exhausting memory.

`Limits` is the policy (a frozen value, one per caller); `Budget` is what one `extract()` call has left
of it, shared by every member and level of a container so that the limits hold for the whole file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Limits:
    """What one `extract()` call may read. The defaults fit a desktop's documents (a long report, a
    year of logs, a photo) with room to spare and keep one call well under a second on such files."""

    input_bytes: int = 50_000_000  # a larger input is read only this far (a stream) or not at all (a zip, a PDF)
    decompressed_bytes: int = 100_000_000  # all members of all levels added up
    ratio: float = 200.0  # decompressed / compressed bytes of one member, checked once it is past ratio_floor
    ratio_floor: int = 1_000_000  # a small member may be as compressible as it likes (a blank spreadsheet)
    members: int = 2_000  # archive members, embedded files and decoded payloads, all levels
    depth: int = 8  # containers inside containers (a .tar.gz is two: the gzip, then the tar)
    text_chars: int = 2_000_000  # characters of text kept, all members
    seconds: float = 10.0  # wall clock of one call; checked between members, pages and chunks
    pages: int = 2_000  # PDF pages read
    document_bytes: int = 20_000_000  # the XML of one office document (its parsers cannot be stopped midway)

    def __post_init__(self) -> None:
        for name in ("input_bytes", "decompressed_bytes", "members", "depth", "text_chars", "pages", "document_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"Limits.{name} must be >= 0, got {getattr(self, name)}")
        if self.ratio <= 1 or self.seconds <= 0:
            raise ValueError(f"Limits.ratio must be > 1 and Limits.seconds > 0 (got {self.ratio}, {self.seconds})")


class LimitReached(Exception):
    """A limit is reached: reading stops, keeping what was read. `whole` says it is spent for the whole
    call (time, bytes, members), so no other member is read either; a member's compression ratio stops
    only that member."""

    def __init__(self, reason: str, whole: bool = True) -> None:
        super().__init__(reason)
        self.whole = whole


@dataclass
class Budget:
    """What is left of the limits during one extraction."""

    limits: Limits
    started: float = field(default_factory=time.monotonic)
    decompressed: int = 0
    members: int = 0
    chars: int = 0

    def check_time(self) -> None:
        if time.monotonic() - self.started > self.limits.seconds:
            raise LimitReached(f"time limit ({self.limits.seconds:g} s) reached")

    def take_bytes(self, n: int) -> None:
        """Count `n` more decompressed bytes; past the limit, reading stops."""
        self.decompressed += n
        if self.decompressed > self.limits.decompressed_bytes:
            raise LimitReached(f"decompressed-size limit ({self.limits.decompressed_bytes:,} bytes) reached")

    def bytes_left(self) -> int:
        return max(0, self.limits.decompressed_bytes - self.decompressed)

    def take_member(self) -> None:
        self.members += 1
        if self.members > self.limits.members:
            raise LimitReached(f"member limit ({self.limits.members:,}) reached")

    def keep_text(self, text: str) -> tuple[str, bool]:
        """The part of `text` the character limit still allows, and whether some was cut."""
        room = max(0, self.limits.text_chars - self.chars)
        kept = text[:room]
        self.chars += len(kept)
        return kept, len(kept) < len(text)

    def check_ratio(self, out: int, consumed: int) -> None:
        if out > self.limits.ratio_floor and out > self.limits.ratio * max(consumed, 1):
            raise LimitReached(f"compression ratio over {self.limits.ratio:g}:1 ({out:,} bytes from {consumed:,})", whole=False)
