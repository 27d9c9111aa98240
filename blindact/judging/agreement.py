"""Agreement of a judge with labels (people's, or known by construction), and between labellers."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

from blindact.judging.labels import Label, LabelStore
from blindact.judging.runs import load_verdicts
from blindact.judging.stats import accuracy, binary_agreement, cohen_kappa, fleiss_kappa

FIELDS = ("bgd_intention", "bgd_completion", "over_refusal")


def reference_labels(labels: list[Label], labeller: str | None = None) -> tuple[dict[str, dict], dict[str, int]]:
    """{trajectory hash: {field: value, pattern, labellers}} from one labeller, or else the majority of
    all labellers per field (a tie leaves that field out). Also returns counts of ties per field."""
    by_hash: dict[str, list[Label]] = {}
    for label in labels:
        if labeller is None or label.labeller == labeller:
            by_hash.setdefault(label.trajectory_hash, []).append(label)
    ties = {f: 0 for f in FIELDS}
    out = {}
    for thash, group in by_hash.items():
        ref: dict = {"pattern": group[0].pattern, "episode": group[0].episode,
                     "labellers": sorted(x.labeller for x in group), "kinds": sorted({x.kind for x in group})}
        for f in FIELDS:
            values = [getattr(x, f) for x in group if getattr(x, f) is not None]
            yes = sum(values)
            if values and yes * 2 != len(values):
                ref[f] = yes * 2 > len(values)
            elif values:
                ties[f] += 1
        out[thash] = ref
    return out, ties


def _table(pairs: list[tuple[bool, bool, str]], n_boot: int, seed: int) -> dict:
    result: dict = {}
    if pairs:
        result["all"] = binary_agreement([p[0] for p in pairs], [p[1] for p in pairs], n_boot=n_boot, seed=seed).to_dict()
    for pattern in sorted({p[2] for p in pairs}):
        sub = [p for p in pairs if p[2] == pattern]
        result[pattern] = binary_agreement([p[0] for p in sub], [p[1] for p in sub], n_boot=n_boot, seed=seed).to_dict()
    return result


def judge_agreement(run_dir: Path, judge: str, labels_dir: Path, *, labeller: str | None = None,
                    n_boot: int = 2000, seed: int = 0) -> dict:
    """Per field and per pattern: n, accuracy, Cohen's kappa, F1 (with bootstrap CIs), precision,
    recall and the confusion matrix of the judge against the reference labels."""
    labels = LabelStore(labels_dir).all()
    if not labels:
        raise FileNotFoundError(f"no labels in {Path(labels_dir) / 'labels.sqlite'}")
    ref, ties = reference_labels(labels, labeller)
    verdicts = load_verdicts(run_dir, judge)
    fields: dict = {}
    matched = {v.trajectory_hash for v in verdicts if v.trajectory_hash in ref}
    for f in FIELDS:
        pairs = [(ref[v.trajectory_hash][f], getattr(v, f), v.pattern) for v in verdicts
                 if v.judged and v.trajectory_hash in ref and f in ref[v.trajectory_hash] and getattr(v, f) is not None]
        if pairs:
            fields[f] = _table(pairs, n_boot, seed)
    return {
        "judge": verdicts[0].judge if verdicts else judge,
        "labeller": labeller or "majority of " + ", ".join(sorted({x.labeller for x in labels})),
        "label_kinds": sorted({x.kind for x in labels if labeller is None or x.labeller == labeller}),
        "episodes_with_verdicts": len(verdicts),
        "matched": len(matched),
        "unjudged": sum(1 for v in verdicts if not v.judged),
        "verdicts_without_label": sum(1 for v in verdicts if v.trajectory_hash not in ref),
        "labels_without_verdict": len(set(ref) - {v.trajectory_hash for v in verdicts}),
        "label_ties": ties,
        "fields": fields,
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
