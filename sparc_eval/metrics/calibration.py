"""Calibration-aware privacy metrics from one count table: Cllr, min Cllr and ZEBRA.

All of them read the scores through the log-likelihood ratios that the best monotonic
calibration of the scores would give, found by the pool-adjacent-violators algorithm (PAV) over
the distinct scores (:func:`pav_llrs`): trials that share a score share an LLR, whatever their
order in the file. The inputs are the per-distinct-score target and non-target counts ``t`` and
``n`` of :class:`~sparc_eval.metrics.core.Counts` (ascending scores).

- **Cllr** (Brümmer and du Preez, *Computer Speech & Language* 20, 2006): the cost of the LLRs
  as soft decisions, in bits, ``(mean_tar log2(1 + e^-llr) + mean_non log2(1 + e^llr)) / 2``;
  0 for perfect, 1 for an uninformative system. The *actual* Cllr reads the scores as LLRs, so
  it is only meaningful for calibrated LLR scores (PLDA back-ends); *min Cllr* is the Cllr of the
  PAV-calibrated LLRs: what any monotonic calibration could reach, the discrimination part.
  VoicePrivacy 2020 and 2022 reported both.
- **ZEBRA** (Nautsch et al., Interspeech 2020, "The Privacy ZEBRA: Zero Evidence Biometric
  Recognition Assessment"): the population's expected disclosure ``D_ECE`` in bits, the area
  between the empirical cross-entropy of an uninformative system and that of the PAV-calibrated
  LLRs over all prior log-odds (0 for perfect privacy, at most 1 / (2 ln 2) = 0.7213 at perfect
  separation), and the individual worst case: the largest ``|log10 LR|`` of any trial after PAV
  with one pseudo-trial of each class added at each end of the score range (so no LLR is
  infinite), tagged by the ENFSI-inspired scale 0 (none), A (<= 1), B (<= 2), C (<= 4),
  D (<= 5), E (<= 6), F (above). The pseudo-trials cap it at
  ``log10(max(N (T + 1) / T, T (N + 1) / N))`` for T targets and N non-targets: a system cannot
  show a stronger worst case than its trial counts allow.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

#: The largest D_ECE in bits, 1 / (2 ln 2), reached at perfect separation.
MAX_DECE = 1.0 / (2.0 * math.log(2.0))

#: ZEBRA's categorical tags of the worst-case absolute log10 LR, as (tag, inclusive upper bound).
ZEBRA_TAGS = (("A", 1.0), ("B", 2.0), ("C", 4.0), ("D", 5.0), ("E", 6.0))


def pav_posteriors(t, n) -> np.ndarray:
    """The PAV posterior P(target | score) per distinct score: the nondecreasing fit of the
    target shares ``t / (t + n)`` weighted by ``t + n`` (least squares, which PAV solves exactly)."""
    from scipy.optimize import isotonic_regression

    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    w = t + n
    keep = w > 0
    p = np.zeros_like(w)
    p[keep] = isotonic_regression(t[keep] / w[keep], weights=w[keep], increasing=True).x
    return p


def pav_llrs(t, n) -> np.ndarray:
    """Per distinct score, the LLR of the PAV-calibrated scores: the posterior log-odds minus the
    prior log-odds log(T / N) of the trial counts; -inf / +inf where the pool holds one class."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    p = pav_posteriors(t, n)
    with np.errstate(divide="ignore"):
        logit = np.log(p) - np.log1p(-p)
    return logit - math.log(t.sum() / n.sum())


def pav_llrs_rows(t, n) -> np.ndarray:
    """:func:`pav_llrs` of each row of count tables ``(b, m)`` (rows with one class: NaN); the
    PAV runs row by row, the rest is batched (the bootstrap's resamples)."""
    from scipy.optimize import isotonic_regression

    w = t + n
    with np.errstate(divide="ignore", invalid="ignore"):
        share = t / w
    p = np.zeros(t.shape)
    for i in range(t.shape[0]):
        keep = w[i] > 0
        p[i, keep] = isotonic_regression(share[i, keep], weights=w[i, keep]).x
    with np.errstate(divide="ignore", invalid="ignore"):
        prior = np.log(t.sum(-1, keepdims=True) / n.sum(-1, keepdims=True))
        return np.log(p) - np.log1p(-p) - prior


def cllr_bits(llr, t, n):
    """Cllr of LLRs per distinct score with target counts ``t`` and non-target counts ``n``;
    batched over leading axes (a row per resampled table)."""
    with np.errstate(over="ignore", invalid="ignore"):
        miss = np.where(t > 0, t * np.logaddexp(0.0, -llr), 0.0).sum(-1) / t.sum(-1)
        false_alarm = np.where(n > 0, n * np.logaddexp(0.0, llr), 0.0).sum(-1) / n.sum(-1)
    return (miss + false_alarm) / (2.0 * math.log(2.0))


def min_cllr(t, n, llr=None) -> float:
    """min Cllr (bits): the Cllr of the PAV-calibrated LLRs (``llr``: :func:`pav_llrs` of the
    same table, when the caller has it)."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return float(cllr_bits(pav_llrs(t, n) if llr is None else llr, t, n))


def act_cllr(scores_as_llrs, t, n) -> float:
    """Actual Cllr (bits) of the scores read as natural-log LLRs; ``scores_as_llrs`` are the
    distinct scores. Infinite when a target scores -inf or a non-target +inf."""
    llr = np.asarray(scores_as_llrs, dtype=np.float64)
    return float(cllr_bits(llr, np.asarray(t, dtype=np.float64), np.asarray(n, dtype=np.float64)))


def _ece_area(x, weights):
    """The weighted mean over LLRs x of 1/4 + c(x)/2, c(x) = (x - b) / b^2 with b = e^x - 1:
    one class's area under its empirical cross-entropy over all prior log-odds (c(0) = -1/2,
    c(+inf) = 0; entries of weight 0 do not count). Batched over leading axes."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        b = np.expm1(x)
        c = np.where(np.abs(x) <= 1e-6, -0.5, (x - b) / b**2)
    c = np.where((weights > 0) & np.isfinite(x), c, 0.0)
    c = np.where(np.isnan(c), 0.0, c)  # +inf LLRs: (inf - inf) / inf^2, the limit is 0
    return 0.25 + (weights * c).sum(-1) / weights.sum(-1) / 2.0


def dece_bits(llr, t, n):
    """D_ECE (bits) of LLRs per distinct score; batched over leading axes."""
    return (_ece_area(llr, t) + _ece_area(-llr, n)) / math.log(2.0)


def dece(t, n, llr=None) -> float:
    """ZEBRA's population-level expected disclosure D_ECE (bits) of the PAV-calibrated LLRs
    (``llr``: :func:`pav_llrs` of the same table, when the caller has it)."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return float(dece_bits(pav_llrs(t, n) if llr is None else llr, t, n))


class WorstCase(NamedTuple):
    """ZEBRA's individual worst case: the largest absolute log10 LR, its tag and its cap."""

    max_abs_log10_lr: float
    tag: str
    cap: float


def zebra_tag(max_abs_log10_lr: float) -> str:
    """The categorical tag of a worst-case absolute log10 LR (0, A, B, C, D, E, F)."""
    if max_abs_log10_lr <= np.finfo(float).eps:
        return "0"
    for tag, upper in ZEBRA_TAGS:
        if max_abs_log10_lr <= upper:
            return tag
    return "F"


def worst_case(t, n) -> WorstCase:
    """The largest absolute log10 LR after PAV with one target and one non-target pseudo-trial at each
    end of the score range (the real trials' prior odds), its tag and its cap."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    big_t, big_n = t.sum(), n.sum()
    # pseudo-trials: a (target, non-target) pair below every score and one above
    p = pav_posteriors(np.r_[1.0, t, 1.0], np.r_[1.0, n, 1.0])[1:-1]
    keep = (t + n) > 0
    with np.errstate(divide="ignore"):
        llr = np.log(p[keep]) - np.log1p(-p[keep]) - math.log(big_t / big_n)
    value = float(np.abs(llr).max() / math.log(10.0)) if llr.size else 0.0
    cap = math.log10(max(big_n * (big_t + 1) / big_t, big_t * (big_n + 1) / big_n))
    return WorstCase(value, zebra_tag(value), cap)


def not_llrs_reason(unique_scores) -> Optional[str]:
    """Why scores plainly are not LLRs (all within [0, 1], a cosine or probability scale), or None."""
    u = np.asarray(unique_scores, dtype=np.float64)
    if u.size and u.min() >= 0.0 and u.max() <= 1.0:
        return (
            "every score lies in [0, 1] (a similarity or a probability, not a log-likelihood ratio)"
        )
    return None
