"""Run a fairness suite against a model and compute every metric.

Suites:
  bbq            BBQ items unattacked: accuracy and bias scores per attribute x context.
  bbq-flex       the above, plus FLEX: by default on the frozen set (frozen.py: fixed items and attacked
                 prompts, the same for every model; coverage restriction per model); with
                 flex_set="resample", on the sample's ambiguous items with every attack tried k times
                 and targeted selection per model (figures not comparable across models).
  crows-pairs    CrowS-Pairs as "which sentence is more likely?" (stereotype preference, SS).
  stereoset      StereoSet as "which option is most natural?" (LMS, SS, ICAT).
  crows-flex / stereoset-flex   FLEX on the three-way "neutral option is right" versions.
  flames         our Flames-style adversarial prompts, answers judged per value dimension (flames.py).

The model is any `answer(prompt) -> reply text` callable; `chat_answerer(spec)` wraps blindact.llm.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from blindact.fairness import flames, frozen, loglik
from blindact.fairness.attacks import ALL_ATTACKS, get_attacks, run_attack, select_targeted
from blindact.fairness.datasets import load_bbq, load_crows_pairs, load_stereoset
from blindact.fairness.datasets import bbq as bbq_data
from blindact.fairness.items import MCItem
from blindact.fairness.loglik import Scorer
from blindact.fairness.metrics import bbq as bbq_metrics
from blindact.fairness.metrics import flex as flex_metrics
from blindact.fairness.metrics import stereo as stereo_metrics
from blindact.fairness.metrics.records import FlexRecord, Prediction
from blindact.fairness.metrics.stats import bootstrap_ci, mean_ci
from blindact.fairness.parsing import ParsedAnswer, parse_answer
from blindact.fairness.prompts import Prompt, build_prompt
from blindact.fairness.sampling import sample_per_attribute

SUITES = ("bbq", "bbq-flex", "crows-pairs", "stereoset", "crows-flex", "stereoset-flex", "flames")
CONVENTIONS = ("blindact", "official")
SCORINGS = ("generative", "loglik")
FLEX_SETS = ("frozen", "resample")
Answerer = Callable[[Prompt], str]


@dataclass
class RunConfig:
    model: str
    suite: str = "bbq-flex"
    source: str = ""  # "" = the suite's default (real BBQ when its wheel is cached, else templates; wheel otherwise)
    path: str | None = None
    n_per_attribute: int | None = 10
    attributes: list[str] | None = None
    attacks: list[str] | None = None
    tries: int = 5
    seed: int = 0
    coverage: bool = True
    max_tokens: int = 0  # 0 = the suite's default: 48 for a choice, 256 for a Flames answer
    temperature: float = 0.0
    workers: int = 1
    n_boot: int = 1000
    # "official": BBQ's own analysis conventions (items without a bias-aligned answer dropped; refusals
    # left out of the accuracy term of s_AMB). "blindact": kept for accuracy, refusals count as wrong.
    conventions: str = "blindact"
    # "generative": the model's reply is parsed; "loglik": options ranked by log-likelihood (loglik.py)
    scoring: str = "generative"
    shots: int = 0  # solved examples before each item (log-likelihood scoring)
    judge: str = ""  # Flames: the harmlessness judge's model spec ("" = the model itself)
    # FLEX items: "frozen" = the shipped set (frozen.py), "resample" = selected per run from the sample;
    # "" = the suite's default (frozen for bbq-flex; the CrowS/StereoSet FLEX suites have no frozen set)
    flex_set: str = ""

    def __post_init__(self) -> None:
        self.max_tokens = self.max_tokens or (256 if self.suite == "flames" else 48)
        if self.suite not in SUITES:
            raise ValueError(f"unknown suite {self.suite!r}; choose from {SUITES}")
        if self.conventions not in CONVENTIONS:
            raise ValueError(f"unknown conventions {self.conventions!r}; choose from {CONVENTIONS}")
        if self.scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {self.scoring!r}; choose from {SCORINGS}")
        if self.scoring == "loglik" and self.suite != "bbq":
            raise ValueError(f"log-likelihood scoring is implemented for the bbq suite only, not {self.suite!r}")
        if self.shots < 0 or (self.shots and self.scoring != "loglik"):
            raise ValueError(f"shots must be >= 0 and needs scoring=loglik, got shots={self.shots}")
        if self.tries < 1:
            raise ValueError(f"tries must be >= 1, got {self.tries}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        get_attacks(self.attacks)  # fail early on a misspelt attack name
        if self.suite.endswith("flex"):
            self.flex_set = self.flex_set or ("frozen" if self.suite == "bbq-flex" else "resample")
            if self.flex_set not in FLEX_SETS:
                raise ValueError(f"unknown flex_set {self.flex_set!r}; choose from {FLEX_SETS}")
            if self.flex_set == "frozen" and self.suite != "bbq-flex":
                raise ValueError(f"the frozen FLEX set is BBQ; {self.suite} needs flex_set='resample'")


@dataclass
class Exchange:
    """One model call, kept for the audit trail."""

    item_id: str
    phase: str  # "source" or "attack"
    attack: str | None
    try_index: int | None
    reply: str
    choice: int | None
    kind: str
    correct: bool | None
    loglik: list[float] | None = None  # log-likelihood scoring: one per scored choice


@dataclass
class RunResult:
    config: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    predictions: list[Prediction] = field(default_factory=list)
    flex_records: list[FlexRecord] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    # attack_tries[item_id][attack] = per-try correctness on the attacked items
    attack_tries: dict[str, dict[str, list[bool]]] = field(default_factory=dict)
    flames_records: list[flames.FlamesRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    flex_set: dict[str, Any] = field(default_factory=dict)  # which FLEX item set was used (name, SHA-256)


def chat_answerer(spec: str, *, max_tokens: int = 48, temperature: float = 0.0) -> Answerer:
    from blindact import llm  # imported here so metrics/datasets work without the SDKs

    llm.parse_model_spec(spec)  # raises ModelSpecError with the reason before any call is made

    def answer(prompt: Prompt) -> str:
        return llm.chat(spec, prompt.as_messages(), system=prompt.system or None,
                        max_tokens=max_tokens, temperature=temperature).text

    return answer


def load_suite_items(cfg: RunConfig) -> list[MCItem]:
    if cfg.suite in ("bbq", "bbq-flex"):
        cfg.source = cfg.source or bbq_data.default_source()
        items = load_bbq(cfg.source, path=cfg.path, categories=cfg.attributes)
        return bbq_data.official_items(items) if cfg.conventions == "official" else items
    mode = "flex" if cfg.suite.endswith("-flex") else "preference"
    if cfg.suite.startswith("crows"):
        return load_crows_pairs(cfg.source or "wheel", path=cfg.path, mode=mode)
    return load_stereoset(cfg.source or "wheel", path=cfg.path, mode=mode)


class _Asker:
    """Calls the model (optionally in threads), memoising identical requests and tracking progress.

    `call(request)` is the model call; `key(request)` what makes two requests identical."""

    def __init__(self, call: Callable[[Any], Any], workers: int, progress: Callable[[int], None] | None,
                 key: Callable[[Any], Any] = lambda p: (p.system, p.user)):
        self.answer, self.workers, self.progress, self.key = call, workers, progress, key
        self.cache: dict[Any, Any] = {}
        self.lock = threading.Lock()
        self.errors: list[str] = []

    def _one(self, prompt: Any) -> Any:
        key = self.key(prompt)
        try:
            with self.lock:
                if key in self.cache:
                    return self.cache[key]
            try:
                reply = self.answer(prompt)
            except Exception as e:  # a failed call must not abort a long run; it is recorded and reported
                with self.lock:
                    self.errors.append(f"{type(e).__name__}: {e}")
                return None
            with self.lock:
                self.cache[key] = reply
            return reply
        finally:
            if self.progress:  # cached prompts count too, so the bar ends at its total
                self.progress(1)

    def ask(self, prompts: Sequence[Any]) -> list[Any]:
        if self.workers == 1:
            return [self._one(p) for p in prompts]
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(self._one, prompts))


def _score(item: MCItem, reply: str | None):
    return parse_answer(reply or "", item.options, item.unknown_index)


def run_suite(cfg: RunConfig, answer: Answerer | Scorer, *, items: Sequence[MCItem] | None = None,
              progress_factory: Callable[[str, int], Callable[[int], None]] | None = None,
              judge: flames.Judge | None = None) -> RunResult:
    """Run `cfg.suite` with `answer` as the model: an Answerer for generative scoring, a Scorer
    (loglik.py) for log-likelihood scoring. `items` overrides the loaded dataset (tests); `judge`
    judges Flames answers (default: the harmlessness judge on `cfg.judge or cfg.model`).

    `progress_factory(label, total)` returns a callback advanced once per model call.
    """
    mk = progress_factory or (lambda label, total: None)
    if cfg.suite == "flames":
        return _run_flames(cfg, answer, judge or harmlessness_judge(cfg.judge or cfg.model), mk)  # type: ignore[arg-type]
    pool = list(items) if items is not None else load_suite_items(cfg)
    sample = sample_per_attribute(pool, cfg.n_per_attribute, cfg.seed, cfg.attributes)
    result = RunResult(config=asdict(cfg))
    if cfg.scoring == "loglik":
        _run_loglik(cfg, sample, pool, result, answer, mk)  # type: ignore[arg-type]
        result.summary = summarise(cfg, result)
        return result

    asker = _Asker(answer, cfg.workers, mk("source items", len(sample)))
    replies = asker.ask([build_prompt(it) for it in sample])
    for it, reply in zip(sample, replies):
        parsed = _score(it, reply)
        pred = Prediction.of(it, parsed)
        result.predictions.append(pred)
        result.exchanges.append(Exchange(it.id, "source", None, None, reply or "", parsed.choice, parsed.kind,
                                         pred.correct if it.label is not None else None))

    if cfg.suite.endswith("flex") and cfg.flex_set == "frozen":
        _run_flex_frozen(cfg, frozen.load(), result, answer, mk)
    elif cfg.suite.endswith("flex"):
        _run_flex(cfg, sample, result, answer, mk)
    result.errors = asker.errors + result.errors
    result.summary = summarise(cfg, result)
    return result


def harmlessness_judge(spec: str) -> flames.Judge:
    """The Flames judge of blindact.judging on `spec`, with the shared verdict cache."""
    from blindact.judging.cache import VerdictCache
    from blindact.judging.fairness import judge_harmlessness

    cache = VerdictCache()
    return lambda prompt, response, dimension: judge_harmlessness(spec, prompt=prompt, response=response,
                                                                  dimension=dimension, cache=cache)


def _run_flames(cfg: RunConfig, answer: Answerer, judge: flames.Judge, mk) -> RunResult:
    prompts = flames.sample(flames.load_prompts(cfg.attributes), cfg.n_per_attribute, cfg.seed)
    result = RunResult(config=asdict(cfg))
    asker = _Asker(answer, cfg.workers, mk("answers", len(prompts)))
    replies = asker.ask([Prompt("", p.prompt, []) for p in prompts])
    judge_asker = _Asker(lambda pr: flames.record(pr[0], pr[1], judge), cfg.workers, mk("judgements", len(prompts)),
                         key=lambda pr: (pr[0].id, pr[1]))
    result.flames_records = judge_asker.ask(list(zip(prompts, replies)))
    for r in result.flames_records:
        result.exchanges.append(Exchange(r.id, "answer", None, None, r.response, None, r.status, None))
    result.errors = asker.errors + judge_asker.errors
    result.summary = {"n_items": len(prompts), "n_calls": len(prompts), "n_errors": len(result.errors),
                      "answer_kinds": _count(r.status for r in result.flames_records),
                      "flames": flames.summarise(result.flames_records, cfg.n_boot, cfg.seed)}
    return result


def _run_loglik(cfg: RunConfig, sample: Sequence[MCItem], pool: Sequence[MCItem], result: RunResult,
                scorer: Scorer, mk) -> None:
    queries = [loglik.build_query(it, loglik.pick_shots(it, pool, cfg.shots, cfg.seed)) for it in sample]
    requests = [(q.context, " " + c) for q in queries for c in q.choices]
    asker = _Asker(lambda r: scorer(*r), cfg.workers, mk("choices scored", len(requests)), key=lambda r: r)
    lls = iter(asker.ask(requests))
    for it, q in zip(sample, queries):
        scores = [next(lls) for _ in q.choices]
        if any(x is None for x in scores):
            pred = Prediction.of(it, ParsedAnswer(None, "error"))
        else:
            picked = loglik.pick(q, scores)
            pred = Prediction.of(it, ParsedAnswer(picked.choice, "loglik"))
            pred.choice_norm = picked.choice_norm
        result.predictions.append(pred)
        result.exchanges.append(Exchange(it.id, "source", None, None, "", pred.choice, pred.kind,
                                         pred.correct if it.label is not None else None, scores))
    result.errors += asker.errors


def _run_flex(cfg: RunConfig, sample: Sequence[MCItem], result: RunResult, answer: Answerer, mk) -> None:
    by_id = {it.id: it for it in sample}
    # FLEX items are the ones whose right answer is the neutral option (BBQ's ambiguous contexts).
    source = [p for p in result.predictions if p.label is not None and p.label == p.unknown_index]
    attacked = [p for p in source if p.correct or not cfg.coverage]
    attacks = get_attacks(cfg.attacks)
    jobs = [(p.item_id, a, t) for p in attacked for a in attacks for t in range(cfg.tries)]
    prompts = [run_attack(a, by_id[iid], cfg.seed, t).prompt for iid, a, t in jobs]
    asker = _Asker(answer, cfg.workers, mk("attacks", len(prompts)))
    replies = asker.ask(prompts)
    tries: dict[str, dict[str, list[bool]]] = {}
    for (iid, a, t), reply in zip(jobs, replies):
        it = by_id[iid]
        parsed = _score(it, reply)
        ok = parsed.choice == it.label
        tries.setdefault(iid, {}).setdefault(a.name, []).append(ok)
        result.exchanges.append(Exchange(iid, "attack", a.name, t, reply or "", parsed.choice, parsed.kind, ok))
    order = [a.name for a in attacks]
    for p in source:
        rec = FlexRecord(p.item_id, p.attribute, p.correct)
        if p.item_id in tries:
            sel = select_targeted(p.item_id, tries[p.item_id], order)
            rec.attack, rec.category, rec.tied = sel.attack, ALL_ATTACKS[sel.attack].category, sel.tied
            rec.attacked_correct = not sel.broken
        result.flex_records.append(rec)
    result.attack_tries = tries
    result.flex_set = {"name": "per-run selection", "sha256": None, "n_items": len(source), "frozen": False}
    result.errors += asker.errors


def _run_flex_frozen(cfg: RunConfig, fset: frozen.FrozenSet, result: RunResult, answer: Answerer, mk) -> None:
    """FLEX on the frozen set: each item unattacked, then (if covered) its one fixed attacked prompt.
    `--attributes` and `--attacks` narrow the set; `tries` does not apply (the variant is fixed)."""
    keep_attr = set(cfg.attributes) if cfg.attributes else None
    keep_attack = set(cfg.attacks) if cfg.attacks else None
    entries = [e for e in fset.items if (keep_attr is None or e.item.attribute in keep_attr)
               and (keep_attack is None or e.attack in keep_attack)]
    if not entries:
        raise ValueError(f"the frozen FLEX set {fset.name} has no items for attributes {cfg.attributes} "
                         f"and attacks {cfg.attacks}")
    asker = _Asker(answer, cfg.workers, mk("FLEX source items", len(entries)))
    source_ok: dict[str, bool] = {}
    for e, reply in zip(entries, asker.ask([build_prompt(e.item) for e in entries])):
        parsed = _score(e.item, reply)
        source_ok[e.item.id] = parsed.choice == e.item.label
        result.exchanges.append(Exchange(e.item.id, "flex_source", None, None, reply or "", parsed.choice,
                                         parsed.kind, source_ok[e.item.id]))
    attacked = [e for e in entries if source_ok[e.item.id] or not cfg.coverage]
    attack_asker = _Asker(answer, cfg.workers, mk("attacks", len(attacked)))
    attacked_ok: dict[str, bool] = {}
    for e, reply in zip(attacked, attack_asker.ask([e.prompt for e in attacked])):
        parsed = _score(e.item, reply)
        attacked_ok[e.item.id] = parsed.choice == e.item.label
        result.attack_tries.setdefault(e.item.id, {})[e.attack] = [attacked_ok[e.item.id]]
        result.exchanges.append(Exchange(e.item.id, "attack", e.attack, e.try_index, reply or "", parsed.choice,
                                         parsed.kind, attacked_ok[e.item.id]))
    for e in entries:
        rec = FlexRecord(e.item.id, e.item.attribute, source_ok[e.item.id])
        if e.item.id in attacked_ok:
            rec.attack, rec.category, rec.tied = e.attack, e.family, (e.attack,)
            rec.attacked_correct = attacked_ok[e.item.id]
        result.flex_records.append(rec)
    result.flex_set = {**fset.describe(), "n_used": len(entries)}
    result.errors += asker.errors + attack_asker.errors


def _ci(ci) -> list[float] | None:
    return [ci.low, ci.high] if ci else None


def summarise(cfg: RunConfig, result: RunResult) -> dict[str, Any]:
    preds, recs = result.predictions, result.flex_records
    tries = result.attack_tries
    kw = {"n_boot": cfg.n_boot, "seed": cfg.seed}
    out: dict[str, Any] = {"n_items": len(preds), "n_calls": sum(len(e.loglik or [None]) for e in result.exchanges), "n_errors": len(result.errors),
                           "answer_kinds": _count(p.kind for p in preds)}
    if cfg.suite.startswith("bbq"):
        official = cfg.conventions == "official"
        table = bbq_metrics.bbq_table(preds, official)
        for attr, conds in table.items():
            for cond, row in conds.items():
                ps = [p for p in preds if p.condition == cond and (attr == "all" or p.attribute == attr)]
                row["accuracy_ci"] = _ci(mean_ci([p.correct for p in ps], **kw))
                if cfg.scoring == "loglik":
                    row["accuracy_norm"] = sum(p.correct_norm for p in ps) / len(ps)
                    row["accuracy_norm_ci"] = _ci(mean_ci([p.correct_norm for p in ps], **kw))
                row["bias_ci"] = _ci(bootstrap_ci(ps, lambda s, c=cond: bbq_metrics.bias_score(s, c, official), **kw))
        out["bbq"] = table
    if cfg.suite in ("crows-pairs",):
        out["crows_pairs"] = _stereo_with_ci(preds, stereo_metrics.crows_scores, ("SS",), kw)
    if cfg.suite in ("stereoset",):
        splits = {"overall": preds, **{k: [p for p in preds if p.subset == k] for k in ("intrasentence", "intersentence")}}
        out["stereoset"] = {k: _stereo_with_ci(ps, stereo_metrics.stereoset_scores, ("LMS", "SS", "ICAT"), kw)
                            for k, ps in splits.items() if ps}
    if cfg.suite.endswith("flex"):
        att = [r for r in recs if r.attacked_correct is not None]
        out["flex"] = {
            "overall": _with_ci({"all": flex_metrics.flex_scores(recs)}, recs, lambda r: "all", kw)["all"],
            "by_category": _with_ci(flex_metrics.by_category(recs), recs, lambda r: r.category, kw),
            "by_attribute": _with_ci(flex_metrics.by_attribute(recs), recs, lambda r: r.attribute, kw),
            "per_attack": flex_metrics.per_attack_asr(tries),
            "selected_attacks": _count(r.attack for r in att),
            # per attack: items where it was among the strongest (several attacks share a tied item)
            "tied_strongest": _count(a for r in att for a in r.tied),
            "n_tied_items": sum(len(r.tied) > 1 for r in att),
            "tries": 1 if cfg.flex_set == "frozen" else cfg.tries,
            "set": result.flex_set,
        }
    return out


def _with_ci(table: dict, recs: Sequence[FlexRecord], key, kw) -> dict:
    """AccS, AccF and ASR CIs on every row of a FLEX table."""
    for k, row in table.items():
        sub = [r for r in recs if key(r) == k]
        row["AccS_ci"] = _ci(mean_ci([r.source_correct for r in sub], **kw))
        row["AccF_ci"] = _ci(mean_ci([bool(r.attacked_correct) for r in flex_metrics.covered_attacked(sub)], **kw))
        row["ASR_ci"] = _ci(bootstrap_ci(sub, flex_metrics.asr, **kw))
    return table


def _stereo_with_ci(preds: Sequence[Prediction], fn, names: Sequence[str], kw) -> dict:
    """CrowS-Pairs / StereoSet scores per attribute and "all", with a CI for each named score on every row."""
    table = stereo_metrics.per_attribute(preds, fn)
    for attr, row in table.items():
        sub = [p for p in preds if attr == "all" or p.attribute == attr]
        for name in names:
            row[f"{name}_ci"] = _ci(bootstrap_ci(sub, lambda s, n=name: fn(s)[n], **kw))
    return table


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


def save_predictions(result: RunResult, path: Path) -> None:
    import json

    with open(path, "w", encoding="utf-8") as f:
        for p in result.predictions:
            f.write(json.dumps(p.to_dict()) + "\n")


def load_predictions(path: Path) -> list[Prediction]:
    import json

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"predictions file {p} does not exist")
    return [Prediction.from_dict(json.loads(line)) for line in p.read_text("utf-8").splitlines() if line.strip()]
