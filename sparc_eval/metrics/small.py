"""What a small evaluation can claim: a bootstrap that cannot show the uncertainty is not a narrow CI.

With few test speakers, or trials that every resample separates alike, the percentile interval
collapses (10 speakers with no error give 0.0% [0.0%, 0.0%]): it is narrow because the resamples
cannot vary, not because the EER is known. An evaluation is **small** when

- it has fewer than ``min_verdict_speakers`` test speakers (default 20, :data:`MIN_VERDICT_SPEAKERS`), or
- its bootstrap is degenerate: the EER interval has no width (every resample gave one value), or
  the EER is 0 (no resample of the same trials can show an error).

A small evaluation's EER interval is reported with its speaker and trial counts, a note, and a
resampling-free bound; no verdict is drawn from it ("too few speakers for a verdict").

The bound (:func:`eer_bound`) is the Clopper-Pearson 95% interval of a proportion whose estimate
is the EER and whose sample size is the **effective number of test speakers**
(:func:`effective_speakers`): for each class, with w_i the trials (summed trial weights) of test
speaker i in that class, n_eff = (sum w)^2 / sum w^2 (Kish's effective sample size of speakers
weighted by their share of the trials), and the smaller over the two classes. Every speaker with
as many trials gives n_eff = the number of test speakers, each speaker one unit; unequal speakers
give fewer: 10 speakers whose trials split 40 + 9 x 1 count as n_eff = 49^2 / (40^2 + 9) = 1.49,
because one speaker carries most of the EER. With no error among n units the upper end is
1 - 0.025^(1/n) (about 3.7/n; the "rule of three" is its one-sided 3/n): 30.8% for 10 speakers.

The bound is an approximation, not a guarantee: it treats the EER as a proportion of n_eff
independent units, and trials that share a speaker are not independent. In
``benchmarks/bench_small_bound.py`` (10 speakers, per-speaker target offsets sd 2.0, noise sd
0.2, true EER 18.3%; issue 61), counting each speaker as one unit covered the true EER in 99% of
2,000 balanced 10 x 10 evaluations but in 85% when the trials split 40 + 9 x 1; n_eff (1.49)
covers that case in 100%, at the price of a wide bound (upper end 94% on average). Without
speakers (a bare score file) it counts the smaller class's trials instead, which is optimistic
when trials share speakers, and says so.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

#: fewer test speakers than this make an evaluation small (``min_verdict_speakers``'s default;
#: results.json says it as ``small_evaluation.min_speakers``).
MIN_VERDICT_SPEAKERS = 20
LEVEL = 0.95


def eer_bound(eer: float, n: float, level: float = LEVEL) -> list:
    """[lo, hi]: the Clopper-Pearson interval of a proportion ``eer`` observed on ``n`` units (the
    continuous beta form, so a fractional count ``eer * n`` is allowed)."""
    from scipy.special import betaincinv

    alpha = 1.0 - level
    x = min(max(float(eer), 0.0), 1.0) * n
    lo = 0.0 if x <= 0 else float(betaincinv(x, n - x + 1, alpha / 2))
    hi = 1.0 if x >= n else float(betaincinv(x + 1, n - x, 1 - alpha / 2))
    return [lo, hi]


def effective_n(weights) -> Optional[float]:
    """(sum w)^2 / sum w^2 of per-unit weights ``w`` (Kish's effective sample size): the number of
    units when all weigh alike, fewer when some weigh more; None when no unit weighs anything."""
    w = np.asarray(weights, dtype=np.float64)
    w = w[w > 0]
    if not w.size:
        return None
    n = float(w.sum() ** 2 / np.square(w).sum())
    return float(round(n)) if abs(n - round(n)) < 1e-9 else n


def effective_speakers(test_speakers, labels, weights=None) -> Optional[float]:
    """The effective number of test speakers of a trial list: per class (target, non-target),
    :func:`effective_n` of each test speaker's trial count (summed trial ``weights`` when given),
    then the smaller of the two; a class without trials is left out (None when neither has any)."""
    spk = np.asarray(test_speakers)
    y = np.asarray(labels, dtype=bool)
    _, codes = np.unique(spk, return_inverse=True)
    w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=np.float64)
    per_class = [
        effective_n(np.bincount(codes[mask], weights=w[mask])) for mask in (y, ~y) if mask.any()
    ]
    found = [n for n in per_class if n is not None]
    return min(found) if found else None


def small_evaluation(
    overall: dict,
    n_speakers: Optional[int],
    min_verdict_speakers: int = MIN_VERDICT_SPEAKERS,
    n_eff: Optional[float] = None,
) -> Optional[dict]:
    """``overall["small_evaluation"]``: None when the evaluation is large enough and its EER interval
    not degenerate, else why, the counts, and the resampling-free bound.

    ``n_eff`` (:func:`effective_speakers`) is the bound's sample size; without it, ``n_speakers``
    counts each test speaker as one unit (right when every speaker has as many trials), and
    without either the smaller class's trial count (optimistic when trials share speakers)."""
    eer = overall.get("eer")
    if eer is None:
        return None
    ci = (overall.get("ci95") or {}).get("eer")
    reasons = []
    if n_speakers is not None and n_speakers < min_verdict_speakers:
        reasons.append(f"only {n_speakers} test speakers (fewer than {min_verdict_speakers})")
    if eer in (0, 1):
        reasons.append(
            f"EER {eer:.0%}: every trial ordered alike, no resample can show otherwise (degenerate bootstrap)"
        )
    elif ci and ci[0] is not None and ci[0] == ci[1]:
        reasons.append("every resample gave the same EER (degenerate bootstrap)")
    if not reasons:
        return None
    n_target, n_nontarget = overall.get("n_target") or 0, overall.get("n_nontarget") or 0
    if n_eff is not None:
        units = n_eff
        counts = (
            "the effective number of test speakers, n_eff = (sum w)^2 / sum w^2 over the trials w "
            "of each test speaker, the smaller over the two classes"
        )
    elif n_speakers is not None:
        units = n_speakers
        counts = "test speakers, each one unit (trials per speaker not given)"
    else:
        units = int(min(n_target, n_nontarget))
        counts = "trials of the smaller class (no utt2spk: optimistic when trials share speakers)"
    return {
        "reasons": reasons,
        "n_speakers": n_speakers,
        "n_eff": n_eff,
        "n_target": n_target,
        "n_nontarget": n_nontarget,
        "eer_bound95": eer_bound(eer, max(units, 1)),
        "bound_counts": counts,
        "min_speakers": min_verdict_speakers,
    }


def small_note(small: dict) -> str:
    """One sentence for reports: the counts, why the interval cannot be trusted, the bound."""
    lo, hi = small["eer_bound95"]
    who = f"{small['n_speakers']} test speakers, " if small.get("n_speakers") is not None else ""
    n_eff = small.get("n_eff")
    counted = f" ({n_eff:.3g} of {small.get('n_speakers')})" if n_eff is not None else ""
    return (
        f"small evaluation ({who}{small['n_target']} target / {small['n_nontarget']} non-target trials): "
        f"{'; '.join(small['reasons'])}; resampling-free 95% bound on the EER, counting "
        f"{small['bound_counts']}{counted}: [{100 * lo:.1f}%, {100 * hi:.1f}%]; {no_verdict(small)}"
    )


def small_reason(overall: Optional[dict]) -> Optional[str]:
    """Why a cell's evaluation is small ("small evaluation: <reasons>"), or None: the flag that
    withholds every verdict resting on it (the card's and the leakage comparison's)."""
    small = (overall or {}).get("small_evaluation")
    return "small evaluation: " + "; ".join(small["reasons"]) if small else None


def small_label(small: dict) -> str:
    """The short form reports put beside a small evaluation's interval: its speakers and bound, and
    the bound's effective number of speakers where it is not the speaker count."""
    lo, hi = small["eer_bound95"]
    n_eff, n = small.get("n_eff"), small.get("n_speakers")
    counted = f", n_eff {n_eff:.3g}" if n_eff is not None and n_eff != n else ""
    return f"small: {n or 'n/a'} speakers, bound {100 * lo:.1f}%-{100 * hi:.1f}%{counted}"


def too_few(small: Optional[dict]) -> bool:
    """True when the evaluation has fewer test speakers than a verdict needs."""
    return (
        bool(small)
        and small.get("n_speakers") is not None
        and small["n_speakers"] < small["min_speakers"]
    )


def no_verdict(small: dict) -> str:
    """Why no verdict is drawn: too few speakers, or an interval that cannot show uncertainty."""
    return (
        "too few speakers for a verdict"
        if too_few(small)
        else "no verdict rests on a degenerate interval"
    )


def few_speakers_reason(
    n_a: Optional[int], n_b: Optional[int], min_verdict_speakers: int = MIN_VERDICT_SPEAKERS
) -> Optional[str]:
    """For a comparison of two cells: why no verdict is drawn from it (None when both have enough
    test speakers; unknown counts never block)."""
    few = [n for n in (n_a, n_b) if n is not None and n < min_verdict_speakers]
    if not few:
        return None
    return f"too few speakers for a verdict ({min(few)} test speakers, fewer than {min_verdict_speakers})"
