"""The statistics every report shares (agent runs, judges, labellers, fairness suites), in plain Python
and numpy, written out so that a test can recompute each number by hand.

Rates:      Wilson score interval of k of n (`wilson`, `Rate`).
Agreement:  confusion matrix [[TN, FP], [FN, TP]] (rows = reference, columns = the other rater),
            accuracy, Cohen's kappa, precision / recall / F1, Fleiss' kappa; `binary_agreement` bundles them.
Paired:     McNemar's test on the discordant pairs b (only A) and c (only B), n = b + c:
              exact   p = min(1, 2 * sum_{i<=min(b,c)} C(n, i) / 2^n)   (two-sided binomial, P = 1/2)
              chi2    X2 = (|b - c| - 1)^2 / n, p = erfc(sqrt(X2 / 2))    (with continuity correction, as
                      statsmodels' mcnemar(exact=False); b = c gives X2 = 1/n; R's mcnemar.test reports 1 there)
            n = 0 is no evidence either way: p = 1, X2 = 0.
Intervals:  percentile bootstrap over items, or over clusters (e.g. the episodes of one task move together):
            B resamples with replacement (seeded), the statistic recomputed on each, the (1 - level) / 2 and
            (1 + level) / 2 quantiles of the defined results. No interval (None) from fewer than two items,
            or when the statistic is undefined in more than half of the resamples: a CI over one item would
            print as a point, and one from a few defined resamples would look measured.

A statistic that is undefined on the data (kappa when both raters use one class only, F1 with no
positives, a rate of nothing) is NaN or None, never 0 or 1, so it cannot pass for a measured value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import NamedTuple, TypeVar

import numpy as np

T = TypeVar("T")
Z95 = 1.959963984540054


def defined(x: float | None) -> float | None:
    """None for NaN (JSON and the report's templates have no NaN)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


# ------------------------------------------------------------------ rates
def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval: stays inside [0, 1] and behaves at k=0 or k=n, unlike the normal one.
    Always contains the point estimate k/n: at k=0 or k=n the rounding of the formula would otherwise put
    a bound 1e-16 on the wrong side of it (a negative error bar, which matplotlib refuses to draw)."""
    if n == 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))


@dataclass(frozen=True)
class Rate:
    """k of n, with a 95% Wilson score interval."""

    k: int
    n: int

    @property
    def p(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def ci(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n)

    def to_dict(self) -> dict:
        lo, hi = self.ci or (None, None)
        return {"k": self.k, "n": self.n, "rate": self.p, "ci_low": lo, "ci_high": hi}

    def text(self, ci: bool = True) -> str:
        if not self.n:
            return "n/a"
        base = f"{100 * self.p:.1f}%"
        if not ci:
            return base
        lo, hi = self.ci
        return f"{base} [{100 * lo:.0f}-{100 * hi:.0f}]"


def rate(values) -> Rate:
    """A Rate from booleans, ignoring None (not applicable / not observed)."""
    seen = [bool(v) for v in values if v is not None]
    return Rate(sum(seen), len(seen))


# ------------------------------------------------------------------ agreement of two binary raters
def _arrays(ref: Sequence, pred: Sequence) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(ref, dtype=bool), np.asarray(pred, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two equally long 1-D label lists, got {a.shape} and {b.shape}")
    return a, b


def confusion(ref: Sequence, pred: Sequence) -> np.ndarray:
    a, b = _arrays(ref, pred)
    return np.array([[np.sum(~a & ~b), np.sum(~a & b)], [np.sum(a & ~b), np.sum(a & b)]], dtype=int)


def accuracy(ref: Sequence, pred: Sequence) -> float:
    a, b = _arrays(ref, pred)
    return float(np.mean(a == b)) if a.size else math.nan


def cohen_kappa(ref: Sequence, pred: Sequence) -> float:
    """Agreement beyond chance; NaN when undefined (no pairs, or chance agreement already 1)."""
    cm = confusion(ref, pred).astype(float)
    n = cm.sum()
    if n == 0:
        return math.nan
    po = np.trace(cm) / n
    pe = float(cm.sum(axis=1) @ cm.sum(axis=0)) / n**2
    if pe == 1.0:
        return math.nan
    return float((po - pe) / (1 - pe))


def precision_recall_f1(ref: Sequence, pred: Sequence) -> tuple[float, float, float]:
    (_tn, fp), (fn, tp) = confusion(ref, pred)
    precision = tp / (tp + fp) if tp + fp else math.nan
    recall = tp / (tp + fn) if tp + fn else math.nan
    f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else math.nan
    return float(precision), float(recall), float(f1)


def f1_score(ref: Sequence, pred: Sequence) -> float:
    return precision_recall_f1(ref, pred)[2]


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from an items x categories table of how many raters chose each category; every
    item must have the same number of raters (>= 2)."""
    counts = np.asarray(counts, dtype=float)
    per_item = counts.sum(axis=1)
    if counts.size == 0 or not np.all(per_item == per_item[0]) or per_item[0] < 2:
        raise ValueError("fleiss_kappa needs the same number (>= 2) of ratings for every item")
    n, r = counts.shape[0], per_item[0]
    p_j = counts.sum(axis=0) / (n * r)
    p_i = (np.sum(counts**2, axis=1) - r) / (r * (r - 1))
    p_bar, pe = p_i.mean(), np.sum(p_j**2)
    if pe == 1.0:
        return math.nan
    return float((p_bar - pe) / (1 - pe))


# ------------------------------------------------------------------ McNemar
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (b: only A positive, c: only B).
    Exact integer arithmetic for the binomial tail: no float underflow for large n."""
    if b < 0 or c < 0:
        raise ValueError(f"McNemar counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


@dataclass(frozen=True)
class McNemar:
    b: int
    c: int
    p_exact: float
    chi2: float
    p_chi2: float


def mcnemar(b: int, c: int) -> McNemar:
    p_exact = mcnemar_exact(b, c)
    n = b + c
    if n == 0:
        return McNemar(b, c, p_exact, 0.0, 1.0)
    chi2 = (abs(b - c) - 1) ** 2 / n
    return McNemar(b, c, p_exact, chi2, math.erfc(math.sqrt(chi2 / 2)))


def mcnemar_paired(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> McNemar:
    if len(a_correct) != len(b_correct):
        raise ValueError(f"paired outcomes differ in length: {len(a_correct)} vs {len(b_correct)}")
    b = sum(1 for x, y in zip(a_correct, b_correct) if x and not y)
    c = sum(1 for x, y in zip(a_correct, b_correct) if y and not x)
    return mcnemar(b, c)


# ------------------------------------------------------------------ bootstrap intervals
class CI(NamedTuple):
    low: float
    high: float


def _resamples(n: int, clusters: Sequence | None, n_boot: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Index arrays of bootstrap resamples: of items, or (with `clusters`, one key per item) of whole
    clusters drawn with replacement, every item of a drawn cluster coming along."""
    if clusters is None:
        return list(rng.integers(0, n, size=(n_boot, n)))
    keys = list(clusters)
    if len(keys) != n:
        raise ValueError(f"need one cluster key per item, got {len(keys)} keys for {n} items")
    members: dict = {}
    for i, k in enumerate(keys):
        members.setdefault(k, []).append(i)
    groups = [np.array(v) for v in members.values()]
    return [np.concatenate([groups[g] for g in rng.integers(0, len(groups), size=len(groups))]) for _ in range(n_boot)]


def _interval(values: np.ndarray, n_boot: int, level: float) -> CI | None:
    values = values[np.isfinite(values)]
    if values.size == 0 or values.size < n_boot / 2:
        return None
    tail = (1 - level) / 2
    lo, hi = np.quantile(values, [tail, 1 - tail])
    return CI(float(lo), float(hi))


def bootstrap_ci(rows: Sequence[T], stat: Callable[[Sequence[T]], float], *, n_boot: int = 1000,
                 level: float = 0.95, seed: int = 0, clusters: Sequence | None = None) -> CI | None:
    """Percentile bootstrap CI of `stat` over `rows` (or over `clusters` of rows)."""
    n = len(rows)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    vals = np.array([stat([rows[j] for j in idx]) for idx in _resamples(n, clusters, n_boot, rng)], dtype=float)
    return _interval(vals, n_boot, level)


def mean_ci(values: Sequence[float], *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> CI | None:
    """Bootstrap CI of a mean; the same resamples as `bootstrap_ci(values, mean)`, computed as one array."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(n_boot, arr.size))].mean(axis=1)
    return _interval(means, n_boot, level)


def paired_bootstrap_ci(ref: Sequence, pred: Sequence, metric: Callable[[np.ndarray, np.ndarray], float], *,
                        n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                        clusters: Sequence | None = None) -> tuple[float, float]:
    """`bootstrap_ci` of an agreement metric over (reference, rater) pairs resampled together;
    (nan, nan) when there is no interval."""
    a, b = _arrays(ref, pred)
    ci = bootstrap_ci(np.arange(a.size), lambda idx: metric(a[np.asarray(idx, dtype=int)], b[np.asarray(idx, dtype=int)]),
                      n_boot=n_boot, level=level, seed=seed, clusters=clusters)
    return (ci.low, ci.high) if ci else (math.nan, math.nan)


def stratified_bootstrap_ci(groups: dict[str, np.ndarray], stat: Callable[[dict[str, float]], float | None], *,
                            n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> CI | None:
    """Percentile CI of stat({group: mean of its resample}), each group resampled on its own (a comparison
    between groups, e.g. a gap in selection rates); None with fewer than two groups or an empty one."""
    if len(groups) < 2 or any(len(v) == 0 for v in groups.values()):
        return None
    rng = np.random.default_rng(seed)
    draws = {g: np.asarray(v, dtype=float)[rng.integers(0, len(v), size=(n_boot, len(v)))] for g, v in groups.items()}
    vals = [stat({g: float(d[b].mean()) for g, d in draws.items()}) for b in range(n_boot)]
    return _interval(np.array([math.nan if v is None else v for v in vals], dtype=float), n_boot, level)


@dataclass
class BinaryAgreement:
    n: int
    accuracy: float
    accuracy_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]
    f1: float
    f1_ci: tuple[float, float]
    precision: float
    recall: float
    confusion: list[list[int]]
    n_clusters: int | None = None  # the CIs resample this many clusters (tasks), not items

    def to_dict(self) -> dict:
        def clean(x):
            if isinstance(x, tuple):
                return [clean(v) for v in x]
            return defined(x)

        return {k: clean(v) for k, v in self.__dict__.items()}


def binary_agreement(ref: Sequence, pred: Sequence, *, n_boot: int = 2000, seed: int = 0,
                     clusters: Sequence | None = None) -> BinaryAgreement:
    a, b = _arrays(ref, pred)
    precision, recall, f1 = precision_recall_f1(a, b)
    ci = {"n_boot": n_boot, "seed": seed, "clusters": clusters}
    return BinaryAgreement(
        n=int(a.size), accuracy=accuracy(a, b), accuracy_ci=paired_bootstrap_ci(a, b, accuracy, **ci),
        kappa=cohen_kappa(a, b), kappa_ci=paired_bootstrap_ci(a, b, cohen_kappa, **ci),
        f1=f1, f1_ci=paired_bootstrap_ci(a, b, f1_score, **ci), precision=precision, recall=recall,
        confusion=confusion(a, b).tolist(), n_clusters=len(set(clusters)) if clusters is not None else None)


# -------------------------------------------------------------------------------- repeated trials

ALPHA = 0.05  # two-sided level of the paired tests
POWER = 0.8   # the power the minimum detectable difference is computed for
# above this many distinct sums the sign-flip distribution is approximated (normal) instead of counted
_EXACT_LIMIT = 200_000


def pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench's pass^k of one task: the chance that k of its n trials, drawn without replacement, all
    succeed, given c succeeded: C(c, k) / C(n, k) (unbiased for p^k; k = 1 gives c / n)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k: need 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


def sign_flip_test(diffs: list[Fraction]) -> float:
    """Two-sided p-value of the exact paired permutation (sign-flip) test on per-task differences:
    under no difference between the arms, each task's difference is as likely to have either sign, so
    p is the share of the 2^T sign assignments whose |sum| reaches the observed one. With one trial per
    task the differences are -1, 0, 1 and this is the exact McNemar test. Counted exactly (integer sums
    over the common denominator); a very fine-grained set falls back to the normal approximation."""
    scale = math.lcm(*(d.denominator for d in diffs)) if diffs else 1
    values = [int(d * scale) for d in diffs if d != 0]
    if not values:
        return 1.0
    observed = abs(sum(values))
    if sum(abs(v) for v in values) > _EXACT_LIMIT:
        return math.erfc(observed / math.sqrt(2 * sum(v * v for v in values)))
    ways: dict[int, int] = {0: 1}
    for v in values:
        step: dict[int, int] = {}
        for total, count in ways.items():
            for signed in (total + v, total - v):
                step[signed] = step.get(signed, 0) + count
        ways = step
    extreme = sum(count for total, count in ways.items() if abs(total) >= observed)
    return min(1.0, extreme / 2 ** len(values))


def min_detectable_difference(diffs: list[float], alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest true mean difference between two arms that the sign-flip test on these T per-task
    differences detects with the given power at two-sided level alpha, by its normal approximation:
    (z_(1-alpha/2) + z_power) * sqrt(mean of d^2) / sqrt(T), the spread being the test's own under no
    difference (with one repeat per task, mean d^2 is the share of discordant tasks, and this is the
    usual power formula of McNemar's test). None when no result could be significant: fewer tasks than
    the exact test needs (2 / 2^T >= alpha: at least 6 tasks at alpha 0.05), or no task whose arms
    differed at all (nothing to size a difference by)."""
    if 2 / 2 ** len(diffs) >= alpha or not any(diffs):
        return None
    z = NormalDist()
    spread = math.sqrt(sum(d * d for d in diffs) / len(diffs))
    return (z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)) * spread / math.sqrt(len(diffs))
