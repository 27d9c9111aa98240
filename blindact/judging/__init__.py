"""LLM judges, the state cross-check, labels and agreement statistics.

Public API for other parts of blindact (the store and the report read verdicts through these):

    load_verdicts(run_dir, judge=None) -> list[Judgement]
    state_agreement(run_dir, judge) -> StateAgreement
    judge_run(run_dir, specs, options=JudgeOptions(), ...) -> {judge slug: [Judgement]}
    judge_episode(episode_dir, spec, ...) -> Judgement
    judge_harmlessness(spec, prompt=..., response=..., dimension=...) -> HarmlessnessJudgement
"""

from blindact.judging.bgd import JudgeOptions, judge_episode, judge_slug
from blindact.judging.fairness import (
           HarmlessnessJudgement,
           flames_summary,
           judge_harmlessness,
)
from blindact.judging.runs import (
           StateAgreement,
           judge_run,
           load_verdicts,
           state_agreement,
           vote,
)
from blindact.judging.verdict import BGDVerdict, Judgement

__all__ = ["BGDVerdict", "HarmlessnessJudgement", "JudgeOptions", "Judgement", "StateAgreement", "flames_summary",
           "judge_episode", "judge_harmlessness", "judge_run", "judge_slug", "load_verdicts", "state_agreement", "vote"]
