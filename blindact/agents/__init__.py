"""Agents: the protocol, and adapters for the computer-use APIs and OpenAI-compatible chat servers.

    make_agent("anthropic:claude-sonnet-4-6", mitigation="reflective", tool_version="20250124")
    make_agent("openai:computer-use-preview", acknowledge_safety_checks=False)
    make_agent("openai-compatible:qwen2.5-vl@http://127.0.0.1:8000/v1", action_format="json")

Options common to all API agents: episode_timeout (s), token_budget, max_retries, request_timeout,
client (a ready SDK client). The rest are the adapter's own (see each class).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from blindact.agents.base import Agent, AgentError, AgentTurn, BudgetExceeded, TaskBrief
from blindact.agents.mitigations import (
    Mitigation,
    UnknownMitigation,
    builtin_mitigations,
    load_mitigation,
)

__all__ = [
    "Agent", "AgentError", "AgentTurn", "BudgetExceeded", "Mitigation", "TaskBrief", "UnknownMitigation",
    "builtin_mitigations", "load_mitigation", "make_agent",
]


def make_agent(spec: str, *, mitigation: str = "none", **options: Any) -> Agent:
    """Build the agent a spec names. Raises ModelSpecError for a bad spec, MissingAPIKey when the
    provider's key variable is unset, UnknownMitigation, or TypeError for an option the adapter lacks."""
    provider = spec.split(":", 1)[0].strip().lower()
    if provider == "scripted":
        if importlib.util.find_spec("blindact.agents.scripted") is None:
            raise ValueError(f"{spec!r}: scripted agents are handled by blindact.agents.scripted, which is missing")
        from blindact.agents.scripted import ScriptedAgent

        # an oracle replay has no prompt, so it always runs (and is recorded) with mitigation "none"
        return ScriptedAgent(spec.split(":", 1)[1], **options)

    from blindact.llm import parse_model_spec

    parsed = parse_model_spec(spec)
    if parsed.provider == "anthropic":
        from blindact.agents.anthropic_cu import AnthropicComputerUse as cls
    elif parsed.provider == "openai":
        from blindact.agents.openai_cu import OpenAIComputerUse as cls  # type: ignore[assignment]
    else:
        from blindact.agents.openai_compat import OpenAICompatAgent as cls  # type: ignore[assignment]
    return cls(spec, mitigation=mitigation, **options)
