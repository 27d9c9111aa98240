"""Judging one episode for blind goal-directedness with one LLM judge."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from blindact.judging.cache import VerdictCache
from blindact.judging.evidence import (
    build_evidence,
    image_content,
    load_episode,
    trajectory_hash,
)
from blindact.judging.rubric import load_rubric
from blindact.judging.structured import ask_validated
from blindact.judging.verdict import (
    BGDVerdict,
    Judgement,
    bgd_json_schema,
    check_bgd_answer,
)
from blindact.llm import parse_model_spec


@dataclass(frozen=True)
class JudgeOptions:
    """How the evidence is shown; part of the cache key, since each changes what the judge sees."""

    screenshots: int = 0
    tree_chars: int = 3000
    state_checks: bool = True
    attempts: int = 3

    def key(self) -> str:
        return f"shots={self.screenshots};tree={self.tree_chars};state={int(self.state_checks)}"


def judge_slug(spec: str) -> str:
    """A file name for a judge: provider and model, without the server URL."""
    parsed = parse_model_spec(spec)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{parsed.provider}_{parsed.model}")


def judge_identity(spec: str) -> str:
    """The judge as the cache knows it. A local server's address stays in: two servers may serve
    different weights under the same model name, and a cache hit must never stand in for another model."""
    return str(parse_model_spec(spec))


def judge_episode(episode_dir: Path, spec: str, *, options: JudgeOptions = JudgeOptions(),
                  cache: VerdictCache | None = None, rubric_name: str = "bgd") -> Judgement:
    episode = load_episode(Path(episode_dir))
    evidence = build_evidence(episode, tree_chars=options.tree_chars, screenshots=options.screenshots,
                              state_checks=options.state_checks)
    rubric = load_rubric(rubric_name)
    thash = trajectory_hash(episode)
    ident = judge_identity(spec)
    meta = episode["meta"]
    base = {"episode": Path(episode_dir).name, "task_id": evidence.task["id"], "pattern": evidence.task["pattern"],
            "agent": meta.get("agent", ""), "judge": ident, "rubric": rubric.name, "rubric_version": rubric.version,
            "options": options.key(), "trajectory_hash": thash, "state_harm": evidence.state_harm,
            "judged_at": time.time()}
    if cache is not None:
        hit = cache.get(thash, ident, rubric.version, options.key())
        if hit is not None:
            verdict, _usage = hit
            return Judgement(**base, status="judged", cached=True, usage={}, attempts=0, **verdict)
    system, user = rubric.render(fields=rubric.data["fields"], task=evidence.task, steps=evidence.steps,
                                 end=evidence.end, final_message=evidence.final_message,
                                 state_checks=evidence.state_checks, screenshots=evidence.screenshots)
    content: str | list[dict] = user
    if evidence.screenshots:
        provider = parse_model_spec(spec).provider
        content = [{"type": "text", "text": user}]
        for step, path in evidence.screenshots:
            content += image_content(provider, f"Screenshot after step {step}:", path)
    is_control = evidence.task["pattern"] == "control"
    outcome = ask_validated(spec, system, content, bgd_json_schema(rubric.data["fields"]),
                            lambda text: check_bgd_answer(text, n_steps=evidence.n_steps, is_control=is_control),
                            attempts=options.attempts)
    if not outcome.ok:
        return Judgement(**base, status="unjudged", error=outcome.reason(), attempts=outcome.attempts, usage=outcome.usage)
    verdict: BGDVerdict = outcome.value
    if cache is not None:
        cache.put(thash, ident, rubric.version, options.key(), verdict.model_dump(), outcome.usage)
    return Judgement(**base, status="judged", attempts=outcome.attempts, usage=outcome.usage, **verdict.model_dump())
