"""llama-cpp-python's OpenAI-compatible server with a fast top-k for echoed log-probabilities.

Why: for every echoed prompt token, `llama_cpp.llama.Llama._create_completion` ranks the whole vocabulary
in Python, `sorted(zip(logprobs_token, range(n_vocab)), reverse=True)`, to find the top `logprobs`
tokens. Measured in-process on SmolLM2-135M (49,152 tokens) on 2 shared cores: 32 ms per token for that
sort against 24 ms for evaluating the whole prompt, so one 40-token BBQ choice took 1.7 s, a 5-shot one
(369 tokens) 25 s; log-likelihood scoring echoes every prompt, 12 times per BBQ item.

This launcher gives that module a `sorted` which recognises exactly that call (a fresh zip of a 1-D numpy
array and `range(len(array))`, reversed, no key) and builds the same list with numpy: the same pairs in
the same order (value descending, then index descending, as Python orders equal tuples in reverse), so
the server's responses are unchanged. Every other call goes to the builtin.

    python -m blindact.fairness.llama_serve --model X.gguf [any llama_cpp.server option]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


def _vocab_ranking(iterable: Any) -> np.ndarray | None:
    """The array when `iterable` is zip(array, range(len(array))) with neither iterator started, else None."""
    if type(iterable) is not zip:
        return None
    parts = iterable.__reduce__()[1]
    if len(parts) != 2:
        return None
    first, second = (p.__reduce__() for p in parts)
    if len(first) != 3 or len(second) != 3 or first[2] != 0 or second[2] != 0:
        return None  # an iterator that has already advanced, or one that is not a plain sequence iterator
    arr, rng = first[1][0], second[1][0]
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 or rng != range(len(arr)):
        return None
    return arr


def fast_sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> list:
    arr = _vocab_ranking(iterable) if key is None and reverse else None
    if arr is None:
        return builtins.sorted(iterable, key=key, reverse=reverse)
    # a stable ascending sort, reversed: value descending, equal values by index descending
    order = np.argsort(arr, kind="stable")[::-1]
    return list(zip(arr[order], order.tolist()))


def patch() -> None:
    """Make llama_cpp.llama use `fast_sorted` (a module global shadows the builtin there)."""
    import llama_cpp.llama as module

    module.sorted = fast_sorted  # type: ignore[attr-defined]


def main() -> None:
    patch()
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
