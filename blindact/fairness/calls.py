"""Every model call of a fairness run: asked once, recorded in the run store, replayed on resume when it failed.

A request is what is sent (a chat prompt, a context and continuation to score, an answer to judge) as a
JSON-able payload; its key is the SHA-256 of that payload. Before asking, `Calls` looks the key up among the
replies the run folder's store already holds (an earlier, interrupted attempt of the same run), and among
this run's replies (identical prompts are asked once). A call that raises is recorded as an error, never as
an answer: the caller shows it apart and leaves it out of every figure, and `--resume` asks it again.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from blindact.run.store import Store

# progress_factory(label, total) -> advance(n, failed=0), called once per request (cached ones too)
ProgressFactory = Callable[[str, int], Callable[..., None] | None]


@dataclass(frozen=True)
class Request:
    phase: str  # source | flex_source | attack | choice | answer | judgement
    item_id: str
    payload: dict[str, Any]
    arg: Any = field(default=None, compare=False)  # what the call function takes (not part of the key)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Reply:
    value: Any = None
    error: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return not self.error


class Calls:
    def __init__(self, store: Store | None = None, *, workers: int = 1, progress: ProgressFactory | None = None):
        self.store, self.workers, self.progress = store, workers, progress
        self.replies: dict[str, Any] = store.fairness_replies() if store is not None else {}
        self.errors: list[str] = []
        self.asked = 0  # requests sent to the model in this process
        self.reused = 0  # answered from the store or by an identical request
        self.answered = 0  # distinct requests with a reply (asked now or from the store)
        self._lock = threading.Lock()

    def ask(self, label: str, requests: Sequence[Request], call: Callable[[Any], Any]) -> list[Reply]:
        """One reply per request, in order; `call(request.arg)` is the model call. Progress advances once per
        request, a failed one with `failed`."""
        advance = (self.progress(label, len(requests)) if self.progress else None) or (lambda n, failed=0: None)
        copies = Counter(r.key for r in requests)
        first: dict[str, Request] = {}
        for r in requests:
            first.setdefault(r.key, r)
        unique = list(first.values())
        done: dict[str, Reply] = {}

        def one(req: Request) -> None:
            reply = self._ask_one(req, call)
            done[req.key] = reply
            n = copies[req.key]
            if reply.ok:
                advance(n)
            else:
                advance(n, failed=n)

        if self.workers == 1:
            for req in unique:
                one(req)
        else:
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(one, unique))
        with self._lock:
            self.reused += len(requests) - sum(1 for r in unique if not done[r.key].cached)
            self.answered += sum(1 for r in unique if done[r.key].ok)
        return [done[r.key] for r in requests]

    def _ask_one(self, req: Request, call: Callable[[Any], Any]) -> Reply:
        with self._lock:
            if req.key in self.replies:
                return Reply(self.replies[req.key], cached=True)
            self.asked += 1
        started = time.monotonic()
        try:
            value = call(req.arg)
        except Exception as exc:  # one failed call must neither abort the run nor pass for an answer
            error = f"{type(exc).__name__}: {exc}"
            self._record(req, None, error, time.monotonic() - started)
            with self._lock:
                self.errors.append(f"{req.phase} {req.item_id}: {error}")
            return Reply(error=error)
        self._record(req, value, "", time.monotonic() - started)
        with self._lock:
            self.replies[req.key] = value
        return Reply(value)

    def _record(self, req: Request, value: Any, error: str, seconds: float) -> None:
        if self.store is not None:
            self.store.record_fairness_call(req.key, req.phase, req.item_id, req.payload, value, error, seconds)
