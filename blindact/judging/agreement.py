"""Agreement of a judge with labels (people's gold labels, or labels known by construction), beside its
agreement with the state checks, and agreement between labellers."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

from blindact.judging.labels import LABEL_FIELDS, Label, LabelStore, gold_labels
from blindact.judging.runs import load_verdicts
from blindact.stats import accuracy, binary_agreement, cohen_kappa, fleiss_kappa
from blindact.judging.verdict import Judgement

FIELDS = LABEL_FIELDS


def reference_labels(labels: list[Label], labeller: str | None = None) -> tuple[dict[str, dict], dict[str, list[Label]]]:
    """The reference to compare a judge with: {trajectory hash: gold label} (labels.gold_labels) from all
    labellers, or from one; and the trajectories whose labels disagree and await adjudication."""
    gold = gold_labels([x for x in labels if labeller is None or x.labeller == labeller])
    return gold.labels, gold.queue


def _errors_name(field: str) -> str:
    return "bgd" if field.startswith("bgd") else "over_refusal"


def _field_table(field: str, rows: list[tuple[bool, Judgement]], n_boot: int, seed: int) -> dict:
    """Agreement of the judge with the reference on one field, over every labelled episode: n counts
    them all; a judge tie or an unjudged episode is counted and named, never dropped from n. The
    kappa, F1 and their CIs are over the decided ones (CIs resample tasks); `accuracy_all` counts
    ties and unjudged episodes as errors, a lower bound."""
    said = [(ref, v, v.verdict(field)) for ref, v in rows]
    decided = [(ref, verdict.holds, v) for ref, v, verdict in said if verdict.decided]
    ties = sorted(v.episode for _ref, v in rows if field in v.ties)
    out: dict = {"n": len(rows), "n_decided": len(decided), "ties": ties,
                 "unjudged": sorted(v.episode for _ref, v, verdict in said if not verdict.decided and field not in v.ties)}
    if decided:
        agreement = binary_agreement([d[0] for d in decided], [d[1] for d in decided], n_boot=n_boot, seed=seed,
                                     clusters=[d[2].task_id for d in decided]).to_dict()
        agreement.pop("n")
        out.update(agreement)
    name = _errors_name(field)
    out["accuracy_all"] = sum(r == p for r, p, _v in decided) / len(rows) if rows else None
    out["errors"] = {f"false_{name}": sorted(v.episode for r, p, v in decided if p and not r),
                     f"missed_{name}": sorted(v.episode for r, p, v in decided if r and not p)}
    return out


def _versus(a: list[bool], b: list[bool]) -> dict:
    kappa = cohen_kappa(a, b) if a else math.nan
    return {"accuracy": accuracy(a, b) if a else None, "kappa": None if math.isnan(kappa) else kappa}


def _side_by_side(field: str, rows: list[tuple[bool, Judgement]]) -> dict:
    """On the same episodes (reference known, judge decided, state known): the judge against the
    reference, the judge against the state's harm outcome, and the state against the reference."""
    verdicts = [(ref, v.verdict(field), v.state_verdict()) for ref, v in rows]
    same = [(ref, said.holds, state.holds) for ref, said, state in verdicts if said.decided and state.decided]
    ref, judge, state = ([x[i] for x in same] for i in range(3))
    return {"n": len(same), "judge_vs_reference": _versus(ref, judge), "judge_vs_state": _versus(state, judge),
            "state_vs_reference": _versus(ref, state)}


def judge_agreement(run_dir: Path, judge: str, labels_dir: Path, *, labeller: str | None = None,
                    n_boot: int = 2000, seed: int = 0) -> dict:
    """Per field and per pattern: n, ties, unjudged, accuracy, Cohen's kappa, F1 (with bootstrap CIs
    clustered by task), precision, recall, the confusion matrix and the episodes of each kind of error;
    beside it, judge vs state and state vs reference on the same episodes."""
    labels = LabelStore(labels_dir).all()
    if not labels:
        raise FileNotFoundError(f"no labels in {Path(labels_dir) / 'labels.sqlite'}")
    ref, queue = reference_labels(labels, labeller)
    verdicts = load_verdicts(run_dir, judge)
    matched = [v for v in verdicts if v.trajectory_hash in ref]
    fields: dict = {}
    side: dict = {}
    for f in FIELDS:
        rows = [(ref[v.trajectory_hash][f], v) for v in matched if ref[v.trajectory_hash].get(f) is not None]
        if not rows:
            continue
        fields[f] = {"all": _field_table(f, rows, n_boot, seed)}
        for pattern in sorted({v.pattern for _r, v in rows}):
            fields[f][pattern] = _field_table(f, [r for r in rows if r[1].pattern == pattern], n_boot, seed)
        if f != "over_refusal":
            side[f] = {p: _side_by_side(f, [r for r in rows if p == "all" or r[1].pattern == p])
                       for p in fields[f]}
    in_queue = {v.episode for v in verdicts if v.trajectory_hash in queue}
    kinds = sorted({x.kind for x in labels if labeller is None or x.labeller == labeller})
    return {
        "judge": verdicts[0].judge if verdicts else judge,
        "modes": sorted({v.options.split(";")[0].removeprefix("mode=") for v in verdicts if v.options}),
        "labeller": labeller or "gold labels of " + ", ".join(sorted({x.labeller for x in labels})),
        "label_kinds": kinds,
        "episodes_with_verdicts": len(verdicts),
        "matched": len(matched),
        "unjudged": sum(1 for v in verdicts if not v.judged),
        "verdicts_without_label": sum(1 for v in verdicts if v.trajectory_hash not in ref and v.trajectory_hash not in queue),
        "labels_without_verdict": len(set(ref) - {v.trajectory_hash for v in verdicts}),
        "to_adjudicate": {"judge_ties": sorted(v.episode for v in matched if v.ties),
                          "label_disagreements": sorted(in_queue)},
        "fields": fields,
        "judge_vs_state": side,
    }


def labeller_agreement(labels_dir: Path) -> dict:
    """Between people: pairwise accuracy and Cohen's kappa on the trajectories both labelled, and
    Fleiss' kappa on those every labeller labelled. Labels known by construction are left out."""
    labels = [x for x in LabelStore(labels_dir).all() if x.kind == "human"]
    names = sorted({x.labeller for x in labels})
    out: dict = {"labellers": names, "fields": {}}
    if len(names) < 2:
        return out
    table = {(x.labeller, x.trajectory_hash): x for x in labels}
    hashes = sorted({x.trajectory_hash for x in labels})
    for f in FIELDS:
        pairwise = []
        for a, b in itertools.combinations(names, 2):
            common = [h for h in hashes if getattr(table.get((a, h)), f, None) is not None
                      and getattr(table.get((b, h)), f, None) is not None]
            va = [getattr(table[(a, h)], f) for h in common]
            vb = [getattr(table[(b, h)], f) for h in common]
            kappa = cohen_kappa(va, vb) if common else math.nan
            pairwise.append({"a": a, "b": b, "n": len(common), "accuracy": accuracy(va, vb) if common else None,
                             "kappa": None if math.isnan(kappa) else kappa})
        everyone = [h for h in hashes if all(getattr(table.get((n, h)), f, None) is not None for n in names)]
        fleiss = None
        if everyone:
            counts = np.array([[sum(not getattr(table[(n, h)], f) for n in names),
                                sum(bool(getattr(table[(n, h)], f)) for n in names)] for h in everyone])
            value = fleiss_kappa(counts)
            fleiss = None if math.isnan(value) else value
        if any(p["n"] for p in pairwise):
            out["fields"][f] = {"pairwise": pairwise, "fleiss_kappa": fleiss, "fleiss_n": len(everyone)}
    return out
