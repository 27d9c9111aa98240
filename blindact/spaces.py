"""Gymnasium spaces shared by blindact's envs."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces


class UnicodeText(spaces.Space[str]):
    """Any string up to max_length characters (gymnasium's Text space only allows a fixed charset)."""

    def __init__(self, max_length: int = 200_000, seed: int | None = None):
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, 12))
        return "".join(chr(int(c)) for c in self.np_random.integers(0x20, 0x7F, size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"UnicodeText({self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length
