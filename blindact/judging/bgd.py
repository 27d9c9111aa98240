"""Judging one episode for blind goal-directedness with one LLM judge.

Blind by default: the judge reads the trajectory (instruction, reasoning, actions, trimmed trees, key
screenshots, the ending) but not the state checks, which are kept as the cross-check its verdict is
compared with. `informed=True` is the other mode, named so a report cannot mistake one for the other.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from blindact.judging.cache import VerdictCache, cache_key
from blindact.judging.evidence import (
    Evidence,
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
    combine,
)
from blindact.llm import parse_model_spec


@dataclass(frozen=True)
class JudgeOptions:
    """How the evidence is shown and how the judge is sampled. All of it reaches the cache key through
    the rendered prompt or the sampling settings."""

    screenshots: int = 4  # key screenshots, chosen by relevance (evidence.key_screenshot_steps)
    tree_chars: int = 3000
    informed: bool = False  # show the judge the state checks (not blind; judge-vs-state becomes circular)
    attempts: int = 3
    samples: int = 1  # answers per episode; several are combined by majority (self-consistency)
    temperature: float | None = None  # None: 0 for one sample, 0.7 for several (equal samples vote nothing)
    max_tokens: int = 1200

    def __post_init__(self):
        if self.samples < 1:
            raise ValueError(f"samples must be at least 1, got {self.samples}")
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("several samples at temperature 0 are the same answer repeated; give a temperature > 0")

    @property
    def mode(self) -> str:
        return "informed" if self.informed else "blind"

    def sampling(self) -> dict:
        temperature = self.temperature if self.temperature is not None else (0.0 if self.samples == 1 else 0.7)
        return {"temperature": temperature, "max_tokens": self.max_tokens, "attempts": self.attempts}

    def key(self) -> str:
        """A readable summary stored with each verdict."""
        s = self.sampling()
        return (f"mode={self.mode};shots={self.screenshots};tree={self.tree_chars};samples={self.samples};"
                f"temperature={s['temperature']}")


@dataclass
class JudgePrompt:
    """Exactly what one judge is sent about one episode."""

    system: str
    user: str
    screenshots: list[tuple[int, Path]]
    evidence: Evidence
    rubric_version: str

    def content(self, provider: str) -> str | list[dict]:
        if not self.screenshots:
            return self.user
        blocks: list[dict] = [{"type": "text", "text": self.user}]
        for step, path in self.screenshots:
            blocks += image_content(provider, f"Screenshot after step {step}:", path)
        return blocks

    def digest(self) -> str:
        """sha256 over the rendered text and the screenshots' bytes."""
        h = hashlib.sha256((self.system + "\x00" + self.user).encode())
        for step, path in self.screenshots:
            h.update(f"\x00{step}\x00".encode() + path.read_bytes())
        return h.hexdigest()


def judge_slug(spec: str) -> str:
    """A file name for a judge: provider and model, without the server URL."""
    parsed = parse_model_spec(spec)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{parsed.provider}_{parsed.model}")


def judge_identity(spec: str) -> str:
    """The judge as the cache knows it. A local server's address stays in: two servers may serve
    different weights under the same model name, and a cache hit must never stand in for another model."""
    return str(parse_model_spec(spec))


def render_judge_prompt(episode: dict, *, options: JudgeOptions = JudgeOptions(),
                        rubric_name: str = "bgd") -> JudgePrompt:
    """The prompt for one episode (as `load_episode` reads it)."""
    evidence = build_evidence(episode, tree_chars=options.tree_chars, screenshots=options.screenshots,
                              informed=options.informed)
    rubric = load_rubric(rubric_name)
    system, user = rubric.render(fields=rubric.data["fields"], task=evidence.task, steps=evidence.steps,
                                 end=evidence.end, final_message=evidence.final_message,
                                 state_checks=evidence.state_checks, screenshots=evidence.screenshots)
    return JudgePrompt(system, user, evidence.screenshots, evidence, rubric.version)


def judge_episode(episode_dir: Path, spec: str, *, options: JudgeOptions = JudgeOptions(),
                  cache: VerdictCache | None = None, rubric_name: str = "bgd") -> Judgement:
    episode = load_episode(Path(episode_dir))
    prompt = render_judge_prompt(episode, options=options, rubric_name=rubric_name)
    evidence = prompt.evidence
    ident = judge_identity(spec)
    base = {"episode": Path(episode_dir).name, "task_id": evidence.task["id"], "pattern": evidence.task["pattern"],
            "agent": episode["meta"].get("agent", ""), "judge": ident, "rubric": rubric_name,
            "rubric_version": prompt.rubric_version, "options": options.key(),
            "trajectory_hash": trajectory_hash(episode), "state_harm": evidence.state_harm,
            "state_evidence": [{"text": e.text, "step": e.step} for e in evidence.state_evidence]}
    sampling = options.sampling()
    digest = prompt.digest()
    is_control = evidence.task["pattern"] == "control"
    samples: dict[str, Judgement] = {}
    for i in range(options.samples):
        key = cache_key(prompt=digest, judge=ident, sampling=sampling, sample=i)
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            samples[f"sample{i}"] = Judgement(**base, status="judged", cached=True, judged_at=time.time(), **hit[0])
            continue
        outcome = ask_validated(spec, prompt.system, prompt.content(parse_model_spec(spec).provider),
                                bgd_json_schema(load_rubric(rubric_name).data["fields"]),
                                lambda text: check_bgd_answer(text, n_steps=evidence.n_steps, is_control=is_control),
                                attempts=options.attempts, max_tokens=sampling["max_tokens"],
                                temperature=sampling["temperature"])
        if not outcome.ok:
            samples[f"sample{i}"] = Judgement(**base, status="unjudged", error=outcome.reason(),
                                              attempts=outcome.attempts, usage=outcome.usage, judged_at=time.time())
            continue
        verdict: BGDVerdict = outcome.value
        if cache is not None:
            cache.put(key, verdict.model_dump(), outcome.usage)
        samples[f"sample{i}"] = Judgement(**base, status="judged", attempts=outcome.attempts, usage=outcome.usage,
                                          judged_at=time.time(), **verdict.model_dump())
    if options.samples == 1:
        return samples["sample0"]
    return combine(samples, judge=ident)
