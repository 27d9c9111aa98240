"""Agents: the protocol, the registry of agent kinds, and the built-in adapters.

An agent spec is `<kind>:<rest>`:

    scripted:<oracle>                        replays a task's oracle (scripted:A/B: A on BGD tasks, B on controls)
    anthropic:<model>                        Anthropic computer use
    openai:<model>                           OpenAI computer use (Responses API)
    openai-compatible:<model>@<base_url>     any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp)
    <module.path>:<ClassName>                your own agent class, importable from Python

A package can add a kind without touching blindact: an entry point in the group `blindact.agents`
named after the kind, pointing at a factory `(spec, *, mitigation, **options) -> Agent`; or call
`register_agent` before running.

Options common to all API agents: episode_timeout (s), token_budget, max_retries, request_timeout,
client (a ready SDK client). The rest are the adapter's own (see each class).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from blindact.agents.base import Agent, AgentError, AgentTurn, BudgetExceeded, TaskBrief
from blindact.agents.mitigations import (
    Mitigation,
    UnknownMitigation,
    builtin_mitigations,
    load_mitigation,
)

__all__ = [
    "Agent", "AgentError", "AgentKind", "AgentTurn", "BudgetExceeded", "Mitigation", "TaskBrief",
    "UnknownMitigation", "agent_kinds", "agent_options", "builtin_mitigations", "factory_of", "load_mitigation",
    "make_agent", "register_agent",
]

ENTRY_POINT_GROUP = "blindact.agents"


@dataclass(frozen=True)
class AgentKind:
    """A kind of agent: its spec prefix, a line of help, and its factory as "module:callable" (imported
    only when an agent of this kind is made, so listing kinds stays cheap). The factory is called
    with the whole spec, the mitigation and the options; a kind that `sees_task` (the oracle
    replays, never a model) also gets the Task being played, hidden parts and all."""

    prefix: str
    summary: str
    factory: str | Callable[..., Agent]
    sees_task: bool = False

    def load(self) -> Callable[..., Agent]:
        if callable(self.factory):
            return self.factory
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)


_KINDS: dict[str, AgentKind] = {}


def register_agent(prefix: str, factory: str | Callable[..., Agent], summary: str, *, sees_task: bool = False) -> None:
    """Add an agent kind: `make_agent("<prefix>:<rest>")` then calls `factory("<prefix>:<rest>", ...)`."""
    prefix = prefix.strip().lower()
    if not prefix or ":" in prefix:
        raise ValueError(f"agent kind {prefix!r}: a kind is a name without ':'")
    _KINDS[prefix] = AgentKind(prefix, summary, factory, sees_task)


register_agent("scripted", "blindact.agents.scripted:make_scripted",
               "replays a task's oracle: scripted:<oracle>, or scripted:A/B (A on BGD tasks, B on controls)",
               sees_task=True)
register_agent("anthropic", "blindact.agents.anthropic_cu:AnthropicComputerUse",
               "Anthropic computer use: anthropic:<model> (needs ANTHROPIC_API_KEY)")
register_agent("openai", "blindact.agents.openai_cu:OpenAIComputerUse",
               "OpenAI computer use (Responses API): openai:<model> (needs OPENAI_API_KEY)")
register_agent("openai-compatible", "blindact.agents.openai_compat:OpenAICompatAgent",
               "any OpenAI-compatible chat server: openai-compatible:<model>@<base_url>")


def agent_kinds() -> dict[str, AgentKind]:
    """Every kind: the built-in ones, those registered in this process, and installed plug-ins."""
    kinds = dict(_KINDS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        kinds.setdefault(ep.name.lower(), AgentKind(ep.name.lower(), f"plug-in from {ep.value}", ep.value))
    return kinds


def _plugin_class(module: str, attr: str) -> Callable[..., Agent]:
    # like `python -m`, a user's own module in the current folder is importable (the `blindact`
    # script's own folder is the venv's bin, not where the user works)
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"agent spec '{module}:{attr}': no agent kind {module!r} and no importable module of "
                         f"that name ({exc}); kinds: {', '.join(agent_kinds())}") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise ValueError(f"agent spec '{module}:{attr}': module {module} has no {attr!r}") from None


def factory_of(spec: str) -> tuple[Callable[..., Agent], AgentKind | None]:
    """What builds the agent a spec names: a registered kind's factory, or a plug-in class (kind None)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"agent spec {spec!r} must look like <kind>:<rest> (kinds: {', '.join(agent_kinds())}) "
                         "or <module.path>:<ClassName>")
    prefix, rest = spec.split(":", 1)
    kind = agent_kinds().get(prefix.strip().lower())
    if kind is not None:
        return kind.load(), kind
    return _plugin_class(prefix.strip(), rest.strip()), None


def make_agent(spec: str, *, mitigation: str = "none", task: Any = None, **options: Any) -> Agent:
    """Build the agent a spec names. Raises ValueError for a bad spec or an unknown kind, MissingAPIKey
    when the provider's key variable is unset, UnknownMitigation, or TypeError for an option the
    adapter lacks."""
    factory, kind = factory_of(spec)
    load_mitigation(mitigation)  # an unknown mitigation is refused for every agent, plug-ins included
    if kind is not None:
        if kind.sees_task:
            options["task"] = task
        return factory(spec, mitigation=mitigation, **options)
    if _accepts(factory, "mitigation"):
        return factory(mitigation=mitigation, **options)
    if mitigation != "none":
        raise ValueError(f"agent {spec} takes no `mitigation` argument, so it cannot run with mitigation "
                         f"{mitigation!r}: add a `mitigation` parameter to its constructor, or use --mitigation none")
    return factory(**options)


def agent_options(spec: str, pairs: list[str]) -> dict[str, Any]:
    """`--agent-opt key=value` pairs as the typed options the spec's agent takes (ValueError otherwise)."""
    from blindact.agents.options import parse_agent_options

    factory, _ = factory_of(spec)
    return parse_agent_options(factory, pairs, what=spec)


def _accepts(cls: Callable, name: str) -> bool:
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
