"""Bias spillover: compare two models (or two mitigations of one model) on the same BBQ items.

Per attribute and context condition (never only in aggregate), on the items both answered (an item whose
call failed in either run is left out):
accuracy of A and B, their difference (B - A), bias scores, and McNemar's test on the paired
correctness (b = A right & B wrong, c = A wrong & B right). A cell is flagged "worse" when B's
accuracy is lower and the exact p is below alpha.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from blindact.fairness.metrics.bbq import accuracy, bias_score
from blindact.fairness.metrics.records import Prediction
from blindact.stats import mcnemar_paired


def compare(a: Sequence[Prediction], b: Sequence[Prediction], alpha: float = 0.05) -> dict[str, dict[str, dict]]:
    bmap = {p.item_id: p for p in b}
    cells: dict[tuple[str, str], list[tuple[Prediction, Prediction]]] = defaultdict(list)
    for pa in a:
        pb = bmap.get(pa.item_id)
        if pb is None or pa.failed or pb.failed:
            continue
        for attr in (pa.attribute, "all"):
            cells[(attr, pa.condition)].append((pa, pb))
    if not cells:
        raise ValueError("spillover.compare: the two prediction sets share no item ids")
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for (attr, cond), pairs in sorted(cells.items()):
        pa = [x for x, _ in pairs]
        pb = [y for _, y in pairs]
        t = mcnemar_paired([p.correct for p in pa], [p.correct for p in pb])
        acc_a, acc_b = accuracy(pa), accuracy(pb)
        out[attr][cond] = {
            "n": len(pairs), "acc_a": acc_a, "acc_b": acc_b, "delta": acc_b - acc_a,
            "bias_a": bias_score(pa, cond), "bias_b": bias_score(pb, cond),
            "b": t.b, "c": t.c, "p_exact": t.p_exact, "chi2": t.chi2, "p_chi2": t.p_chi2,
            "worse": acc_b < acc_a and t.p_exact < alpha,
            "better": acc_b > acc_a and t.p_exact < alpha,
        }
    return dict(out)
