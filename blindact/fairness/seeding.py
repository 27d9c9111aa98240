"""Stable, seedable randomness: every random choice derives from a string key, never global state.

Python's hash() is salted per process, so keys are hashed with SHA-256 to keep runs reproducible
across processes and machines.
"""

from __future__ import annotations

import hashlib
import random


def stable_int(*parts: object) -> int:
    key = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def rng_for(*parts: object) -> random.Random:
    """A private Random seeded from the parts (e.g. seed, item id, attack name, try number)."""
    return random.Random(stable_int(*parts))


def stable_permutation(n: int, *parts: object) -> list[int]:
    order = list(range(n))
    rng_for("perm", *parts).shuffle(order)
    return order
