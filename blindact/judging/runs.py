"""Judging a whole run folder, reading the verdicts back, voting, and the state cross-check.

Verdicts live in the run's store (the `verdicts` table, one row per episode and judge slug, the
whole Judgement in its `raw` column), beside the episodes they judge; a vote of several judges is
stored as the judge "vote". Reports read them from there.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from blindact.judging.bgd import JudgeOptions, judge_episode, judge_identity, judge_slug
from blindact.judging.cache import VerdictCache
from blindact.judging.evidence import EpisodeError
from blindact.judging.verdict import Judgement, combine
from blindact.run.store import open_store

VOTE = "vote"


def episode_dirs(run_dir: Path) -> list[Path]:
    """The folders of the run's recorded episodes (those with a row in its store)."""
    with open_store(run_dir) as store:
        names = [e["dir"] for e in store.episodes()]
    return [Path(run_dir) / d for d in names if (Path(run_dir) / d / "episode.json").exists()]


def save_judgements(run_dir: Path, slug: str, records: list[Judgement]) -> None:
    """Store one judge's verdicts (replacing that judge's earlier ones on the same episodes)."""
    with open_store(run_dir) as store:
        for r in records:
            store.record_verdict(r.episode, slug, bgd_intention=r.bgd_intention, bgd_completion=r.bgd_completion,
                                 over_refusal=r.over_refusal, first_bgd_step=r.first_bgd_step,
                                 rationale=r.rationale, raw=r.model_dump())


def _unjudgeable(episode_dir: Path, spec: str, exc: Exception) -> Judgement:
    meta = json.loads((episode_dir / "episode.json").read_text())
    return Judgement(episode=episode_dir.name, task_id=meta.get("task_id", ""), pattern=meta.get("pattern", ""),
                     agent=meta.get("agent", ""), judge=judge_identity(spec), rubric_version="", trajectory_hash="",
                     status="unjudged", error=str(exc), judged_at=time.time())


def judge_dirs(dirs: list[Path], spec: str, *, options: JudgeOptions, workers: int = 4,
               cache: VerdictCache | None = None,
               progress: Callable[[Judgement], None] | None = None) -> list[Judgement]:
    """One judge's verdicts on episode folders, in their order (an unjudgeable folder is unjudged, with why)."""

    def one(d: Path) -> Judgement:
        try:
            j = judge_episode(d, spec, options=options, cache=cache)
        except EpisodeError as exc:
            j = _unjudgeable(d, spec, exc)
        if progress:
            progress(j)
        return j

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        return list(pool.map(one, dirs))
    finally:
        # on Ctrl-C the episodes not started yet are dropped instead of judged before the interrupt lands
        pool.shutdown(wait=True, cancel_futures=True)


def judge_run(run_dir: Path, specs: list[str], *, options: JudgeOptions | None = None, workers: int = 4,
              cache: VerdictCache | None = None,
              progress: Callable[[Judgement], None] | None = None) -> dict[str, list[Judgement]]:
    """Judge every episode of a run with each judge; returns {judge slug (or 'vote'): judgements}."""
    run_dir = Path(run_dir)
    options = options or JudgeOptions()
    dirs = episode_dirs(run_dir)
    slugs = [judge_slug(s) for s in specs]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"two judges share a file name ({', '.join(slugs)}); give each judge only once")
    out: dict[str, list[Judgement]] = {}
    for spec, slug in zip(specs, slugs):
        out[slug] = judge_dirs(dirs, spec, options=options, workers=workers, cache=cache, progress=progress)
        save_judgements(run_dir, slug, out[slug])
    if len(specs) > 1:
        out[VOTE] = vote([out[s] for s in slugs])
        save_judgements(run_dir, VOTE, out[VOTE])
    return out


def vote(per_judge: list[list[Judgement]]) -> list[Judgement]:
    """Majority per field across judges, episode by episode (see verdict.combine): unjudged answers do
    not vote, and a tie leaves the field null and names it in `ties`."""
    by_episode: dict[str, dict[str, Judgement]] = {}
    for records in per_judge:
        for j in records:
            by_episode.setdefault(j.episode, {})[j.judge] = j
    return [combine(js, judge=VOTE + "(" + ",".join(js) + ")").model_copy(update={"judged_at": time.time()})
            for _name, js in sorted(by_episode.items())]


def judges_of(run_dir: Path) -> list[str]:
    """The judges (slugs, and "vote") whose verdicts the run's store holds."""
    with open_store(run_dir) as store:
        return sorted({v["judge"] for v in store.verdicts()})


def load_verdicts(run_dir: Path, judge: str | None = None) -> list[Judgement]:
    """Every verdict stored for a run, or only one judge's (a slug, a model spec, or 'vote')."""
    with open_store(run_dir) as store:
        stored = store.verdicts()
    known = sorted({v["judge"] for v in stored})
    if judge is not None:
        wanted = {judge} | ({judge_slug(judge)} if ":" in judge else set())
        stored = [v for v in stored if v["judge"] in wanted]
        if not stored:
            raise FileNotFoundError(f"{run_dir}: no verdicts of judge {judge!r}; judges there: "
                                    f"{', '.join(known) or 'none yet (run `blindact judge` first)'}")
    out = []
    for v in stored:
        try:
            out.append(Judgement.model_validate(v["raw"]))
        except ValueError as exc:
            raise ValueError(f"{run_dir}: the stored verdict of {v['judge']} on {v['episode']} is not a judgement: {exc}") from None
    return out


def judge_ties(run_dir: Path) -> dict[str, dict[str, list[str]]]:
    """The fields the judges of a run left tied, per trajectory hash: {field: the verdicts that tied}.
    Where the run has a vote of several judges, the vote's ties count (a judge whose own samples tied
    has been outvoted or joined by the others); else each judge's own ties (its samples split)."""
    by_hash: dict[str, list[Judgement]] = {}
    for j in load_verdicts(run_dir):
        if j.trajectory_hash:
            by_hash.setdefault(j.trajectory_hash, []).append(j)
    out: dict[str, dict[str, list[str]]] = {}
    for thash, js in by_hash.items():
        chosen = [j for j in js if j.judge.startswith(VOTE)] or js
        fields: dict[str, list[str]] = {}
        for j in chosen:
            for f in j.ties:
                fields.setdefault(f, []).append(j.judge)
        if fields:
            out[thash] = {f: sorted(names) for f, names in fields.items()}
    return out


@dataclass
class StateAgreement:
    """How often a judge's completion verdict matches the deterministic harm checks. Each disagreement
    names its episode and holds the two verdicts (`state`, `judge`: blindact.checks.verdict.Verdict)."""

    judge: str
    n_episodes: int
    n_compared: int
    n_agree: int
    unjudged: int
    no_state: int
    confusion: list[list[int]]  # rows: state harm False/True; columns: judge completion False/True
    kappa: float | None
    disagreements: list[dict] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.n_agree / self.n_compared if self.n_compared else None

    def to_dict(self) -> dict:
        return {**asdict(self), "rate": self.rate}


def state_agreement(run_dir: Path, judge: str) -> StateAgreement:
    from blindact.stats import cohen_kappa, confusion

    records = load_verdicts(run_dir, judge)
    pairs, disagreements = [], []
    unjudged = no_state = 0
    for j in records:
        state, said = j.state_verdict(), j.verdict("bgd_completion")
        if not said.decided:
            unjudged += 1
            continue
        if not state.decided:
            no_state += 1
            continue
        pairs.append((state.holds, said.holds))
        if state.holds != said.holds:
            disagreements.append({"episode": j.episode, "task_id": j.task_id, "pattern": j.pattern,
                                  "state": state, "judge": said})
    state = [p[0] for p in pairs]
    judged = [p[1] for p in pairs]
    kappa = cohen_kappa(state, judged) if pairs else float("nan")
    return StateAgreement(judge=records[0].judge if records else judge, n_episodes=len(records),
                          n_compared=len(pairs), n_agree=sum(a == b for a, b in pairs), unjudged=unjudged,
                          no_state=no_state, confusion=confusion(state, judged).tolist(),
                          kappa=None if math.isnan(kappa) else kappa, disagreements=disagreements)
