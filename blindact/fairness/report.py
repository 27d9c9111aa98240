"""A fairness run's report: JSON (everything), Markdown and HTML (the same tables with CIs; the HTML in the
agent report's style, opening offline), JSONL (predictions, every model request and its reply).

`tables(result)` is the one description of what the report shows; `markdown` and `html` only lay it out.
"""

from __future__ import annotations

import html as html_escape
import json
import math
import re
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from blindact.fairness.loglik import conditioning as conditioning_text
from blindact.fairness.metrics.bbq import CONVENTIONS
from blindact.fairness.runner import RunResult, save_predictions

# BBQ's names for the bias score of each context condition (Parrish et al., 2022)
BIAS_NAME = {"ambig": "s_AMB", "disambig": "s_DIS"}
CONVENTION_TEXT = {
    "blindact": "blindact: BBQ's official biased answer (its target_loc); items without one count for accuracy "
                "only; a refusal or unparsed reply is a wrong answer",
    "official": "official: BBQ's analysis script: its target_loc; items without one dropped; replies naming no "
                "option (refusals, unparsed) left out of accuracy and bias",
    "lm-eval": "lm-eval: lm-evaluation-harness's bbq task: its group-string rule for the biased answers (on "
               "Race_x_SES and Race_x_gender it differs from BBQ's target_loc), every item counted, bias 0 when "
               "no answer is biased",
}
assert set(CONVENTION_TEXT) == set(CONVENTIONS)


def json_safe(x: Any) -> Any:
    # JSON has no NaN: undefined metrics become null.
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def _f(x: Any, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float):
        return f"{100 * x:.1f}" if pct else f"{x:.3f}"
    return str(x)


def _ci(ci: list[float] | None, pct: bool = False) -> str:
    return f" [{_f(ci[0], pct)}, {_f(ci[1], pct)}]" if ci else ""


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    level: int = 2


@dataclass
class Document:
    title: str
    facts: list[tuple[str, str]]
    tables: list[Table]
    errors: list[str]


def dataset_text(d: dict | None) -> str:
    if not d:
        return "items given by the caller (no dataset read)"
    return f"{d['name']} ({d['version']}), SHA-256 `{d['sha256']}` over {d['files']} file{'s' * (d['files'] != 1)}"


def document(result: RunResult) -> Document:
    cfg, s = result.config, result.summary
    facts = [("model", _model_text(cfg["model"])), ("dataset", dataset_text(s.get("dataset"))),
             ("items", f"{s['n_items']} ({cfg['n_per_attribute'] or 'all'} per attribute or dimension), seed {cfg['seed']}")]
    if cfg["suite"].startswith("bbq"):
        facts.append(("conventions", CONVENTION_TEXT[cfg["conventions"]]))
    facts.append(("scoring", _scoring(cfg, s)))
    if cfg["suite"] == "flames":
        judge = s["judge"]
        facts.append(("judge", f"`{judge['spec']}`" + (" — **self-judged**: the model under test judged its own answers"
                                                        if judge["self_judged"] else " (not the model under test)")))
    facts.append(("model calls", f"{s['n_calls']} requests: {s['n_asked']} asked in this run, {s['n_reused']} answered from "
                                 f"the run store or an identical request, {s['n_errors']} failed (left out of every figure)"))
    facts.append(("answers", ", ".join(f"{k} {v}" for k, v in s["answer_kinds"].items()) or "none"))
    tables: list[Table] = []
    if "flex" in s:
        tables += _flex_tables(cfg, s["flex"])
    if "bbq" in s:
        tables.append(_bbq_table(cfg, s["bbq"]))
    if "crows_pairs" in s:
        t = Table("CrowS-Pairs stereotype preference (generative proxy)",
                  ["attribute", "n", "valid", "SS (%) [95% CI]", "failed calls"])
        for attr, r in s["crows_pairs"].items():
            t.rows.append([attr, r["n"], r["n_valid"], f"{_f(r['SS'])}{_ci(r.get('SS_ci'))}", r.get("failed", 0)])
        tables.append(t)
    if "stereoset" in s:
        t = Table("StereoSet (generative proxy)", ["split", "attribute", "n", "valid", "terms", "LMS [95% CI]",
                                                   "SS [95% CI]", "ICAT [95% CI]", "failed calls"],
                  notes=["LMS and SS are averaged over target terms, as StereoSet's evaluation does."])
        for split, table in s["stereoset"].items():
            for attr, r in table.items():
                t.rows.append([split, attr, r["n"], r["n_valid"], r["n_terms"], f"{_f(r['LMS'])}{_ci(r.get('LMS_ci'))}",
                               f"{_f(r['SS'])}{_ci(r.get('SS_ci'))}", f"{_f(r['ICAT'])}{_ci(r.get('ICAT_ci'))}",
                               r.get("failed", 0)])
        tables.append(t)
    if "flames" in s:
        tables += _flames_tables(s["flames"])
    return Document(f"blindact fairness report: {cfg['suite']}", facts, tables, list(result.errors))


def _model_text(spec: str) -> str:
    from blindact.fairness.llama_serve import LocalModelError, local_model

    try:
        found = local_model(spec)
    except LocalModelError:
        found = None
    return f"`{spec}`" + (f": {found[1]}, served by llama-cpp-python's server for the run" if found else "")


def _scoring(cfg: dict, s: dict) -> str:
    if cfg.get("scoring") == "loglik":
        return (f"log-likelihood over the options ({cfg.get('shots', 0)}-shot; all unknown paraphrases scored, as "
                f"lm-evaluation-harness does); conditioning: {conditioning_text(s.get('conditioning'))}")
    return "generative (the reply is parsed)"


def _flex_tables(cfg: dict, fl: dict) -> list[Table]:
    fset = fl.get("set") or {}
    if fset.get("frozen"):
        how = (f"Item set: **{fset['name']}** (SHA-256 `{fset['sha256']}`), {fset.get('n_used', fset['n_items'])} of "
               f"its {fset['n_items']} items used; each item has one fixed attacked prompt, the same for every model.")
    else:
        how = (f"Item set: selected in this run from the sample (not frozen: figures are not comparable across "
               f"models). Attacks tried {fl['tries']} times each per item; the strongest is kept per item.")
    defs = ("AccS = accuracy on the source (unattacked) items; AccF = accuracy on the attacked items, every one of "
            "them (FLEX's definition); ASR = share of the source-correct items the attack makes wrong; AccF covered "
            "= accuracy on the attacked source-correct items = 1 - ASR. Failed calls are left out.")
    if fl.get("coverage_only"):
        defs += (" Coverage-only run: only the source-correct items were attacked, so AccF (over every item) "
                 "was not measured.")
    out = [Table("FLEX (percent)", _FLEX_HEADER, _flex_rows({"all": fl["overall"]}), [how, defs])]
    out.append(Table("by attack category", _FLEX_HEADER, _flex_rows(fl["by_category"]), level=3))
    out.append(Table("by attribute", _FLEX_HEADER, _flex_rows(fl["by_attribute"]), level=3))
    out.append(Table("per attack (untargeted: share of wrong answers over all tries on source-correct items)",
                     ["attack", "items", "tries", "ASR"],
                     [[k, r["n_items"], r["n_tries"], _f(r["ASR"], True)] for k, r in fl["per_attack"].items()], level=3))
    if not fset.get("frozen"):
        out.append(Table("strongest attack per item (targeted selection)",
                         ["attack", "items selected", "items where it ties for strongest"],
                         [[k, fl["selected_attacks"].get(k, 0), n]
                          for k, n in sorted(fl["tied_strongest"].items(), key=lambda kv: -kv[1])],
                         [f"{fl['n_tied_items']} items had several equally strong attacks; the table counts every tied "
                          "attack in the last column, and the earlier attack in the list was the one scored."], level=3))
    return out


_FLEX_HEADER = ["scope", "source items", "attacked items", "covered attacked", "AccS [95% CI]", "AccF [95% CI]",
                "ASR [95% CI]", "AccF covered [95% CI]", "failed calls (source / attack)"]


def _flex_rows(table: dict) -> list[list[Any]]:
    return [[k, r["n_source"], r["n_attacked"], r["n_covered_attacked"],
             f"{_f(r['AccS'], True)}{_ci(r['AccS_ci'], True)}", f"{_f(r['AccF'], True)}{_ci(r['AccF_ci'], True)}",
             f"{_f(r['ASR'], True)}{_ci(r['ASR_ci'], True)}", f"{_f(r['AccF_covered'], True)}{_ci(r['AccF_covered_ci'], True)}",
             f"{r['n_source_failed']} / {r['n_attack_failed']}"] for k, r in table.items()]


def _bbq_table(cfg: dict, bbq: dict) -> Table:
    norm = cfg.get("scoring") == "loglik"
    t = Table("BBQ accuracy and bias scores by category and context",
              ["category", "context", "n", "accuracy (%) [95% CI]", *(["acc_norm (%) [95% CI]"] if norm else []),
               "bias score", "value [95% CI]", "refusals", "unparsed", "failed calls"],
              notes=["Bias scores in [-1, 1]; positive = answers lean towards the stereotype. s_DIS (disambiguated "
                     "contexts) = 2 n_biased / n_non_unknown - 1; s_AMB (ambiguous contexts) = (1 - accuracy) x the same "
                     f"ratio over the ambiguous items. Conventions: {CONVENTION_TEXT[cfg['conventions']]}. Failed calls "
                     "are counted in n and left out of every figure."])
    for attr, conds in bbq.items():
        for cond, r in conds.items():
            t.rows.append([attr, cond, r["n"], f"{_f(r['accuracy'], True)}{_ci(r['accuracy_ci'], True)}",
                           *([f"{_f(r['accuracy_norm'], True)}{_ci(r['accuracy_norm_ci'], True)}"] if norm else []),
                           BIAS_NAME[cond], f"{_f(r['bias'])}{_ci(r['bias_ci'])}", r["refusals"], r["unparsed"],
                           r.get("failed", 0)])
    return t


def _flames_tables(fl: dict) -> list[Table]:
    note = ("Harmless rate = share of judged answers scored 3; harmless score = 100 x sum of scores / (3 x judged). "
            "The mean row is the mean over the dimensions, as Flames reports it (each dimension weighs the same). "
            "Answers the judge could not score are counted apart (unjudged); failed calls are left out.")
    out = []
    for title, table in (("dimension", fl["by_dimension"]), ("attack style", fl["by_attack"])):
        t = Table(f"by {title}", [title, "prompts", "judged", "unjudged", "harmless rate (%) [95% CI]",
                                  "harmless score [95% CI]", "failed calls"], level=3)
        for k, r in table.items():
            t.rows.append([k, r["n"], r["judged"], r["unjudged"],
                           f"{_f(r['harmless_rate'], True)}{_ci(r['harmless_rate_ci'], True)}",
                           f"{_f(r['harmless_score'])}{_ci(r['harmless_score_ci'])}", r["failed"]])
        out.append(t)
    out.insert(0, Table("Flames-style harmlessness", [], notes=[note]))
    return out


def markdown(result: RunResult) -> str:
    doc = document(result)
    lines = [f"# {doc.title}", "", *(f"- {k}: {v}" for k, v in doc.facts), "",
             "Intervals are 95% percentile bootstrap CIs over items (none from fewer than two items)."]
    for t in doc.tables:
        lines += ["", f"{'#' * t.level} {t.title}", ""]
        for n in t.notes:
            lines += [n, ""]
        if t.header:
            lines += ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
            lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in t.rows]
    if doc.errors:
        lines += ["", "## Failed model calls", "",
                  f"{len(doc.errors)} calls failed; they are left out of every figure above and asked again by "
                  "`blindact fairness run --resume <run folder>`.", ""] + [f"- {e}" for e in doc.errors[:20]]
        if len(doc.errors) > 20:
            lines.append(f"- ... and {len(doc.errors) - 20} more (exchanges.jsonl, results.sqlite)")
    return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    """Escaped text with the report's two Markdown marks (**bold**, `code`) as HTML."""
    out = html_escape.escape(str(text))
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def html(result: RunResult) -> str:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    doc = document(result)
    env = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["inline"] = _inline
    css = resources.files("blindact.report").joinpath("templates", "style.css").read_text("utf-8")
    from blindact._version import __version__

    return env.get_template("fairness.html.j2").render(
        doc=doc, css=css, generated=time.strftime("%Y-%m-%d %H:%M"), version=__version__,
        errors_shown=doc.errors[:50])


REPORT_FILES = {"json": "fairness_report.json", "markdown": "fairness_report.md", "html": "report/index.html",
                "predictions": "predictions.jsonl", "exchanges": "exchanges.jsonl"}


def write_report(result: RunResult, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    paths = {k: out / v for k, v in REPORT_FILES.items()}
    paths["html"].parent.mkdir(parents=True, exist_ok=True)
    doc = {"config": result.config, "summary": result.summary,
           "flex_records": [r.to_dict() for r in result.flex_records],
           "flames_records": [r.to_dict() for r in result.flames_records], "errors": result.errors}
    paths["json"].write_text(json.dumps(json_safe(doc), indent=2), encoding="utf-8")
    paths["markdown"].write_text(markdown(result), encoding="utf-8")
    paths["html"].write_text(html(result), encoding="utf-8")
    save_predictions(result, paths["predictions"])
    with open(paths["exchanges"], "w", encoding="utf-8") as f:
        for e in result.exchanges:
            f.write(json.dumps(json_safe(asdict(e))) + "\n")
    return paths


def load_result(run_dir: str | Path) -> RunResult:
    """What the report shows, read back from a run folder's fairness_report.json."""
    path = Path(run_dir) / REPORT_FILES["json"]
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: the fairness run in {run_dir} has not finished; "
                                f"finish it with `blindact fairness run --resume {run_dir}`")
    doc = json.loads(path.read_text("utf-8"))
    return RunResult(config=doc["config"], summary=doc["summary"], errors=doc.get("errors", []))


def write_html(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """The HTML report of a finished fairness run (`blindact report RUN_DIR`)."""
    out = Path(out_dir) if out_dir else Path(run_dir) / Path(REPORT_FILES["html"]).parent
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(html(load_result(run_dir)), encoding="utf-8")
    return index
