"""What a small evaluation can claim: a bootstrap that cannot show the uncertainty is not a narrow CI.

With few test speakers, or trials that every resample separates alike, the percentile interval
collapses (10 speakers with no error give 0.0% [0.0%, 0.0%]): it is narrow because the resamples
cannot vary, not because the EER is known. An evaluation is **small** when

- it has fewer than ``min_speakers`` test speakers (default 20, :data:`MIN_SPEAKERS`), or
- its bootstrap is degenerate: the EER interval has no width (every resample gave one value), or
  the EER is 0 (no resample of the same trials can show an error).

A small evaluation's EER interval is reported with its speaker and trial counts, a note, and a
resampling-free bound; no verdict is drawn from it ("too few speakers for a verdict").

The bound (:func:`eer_bound`) is the Clopper-Pearson 95% interval of a proportion whose estimate
is the EER and whose sample size is the number of **test speakers**: each speaker counted as one
independent unit, the conservative end of trials that share a speaker (were they independent, the
trial count would be the sample size). With no error among n speakers the upper end is
1 - 0.025^(1/n) (about 3.7/n; the "rule of three" is its one-sided 3/n): 30.8% for 10 speakers.
Without speakers (a bare score file) it counts the smaller class's trials instead, which is
optimistic when trials share speakers, and says so.
"""

from __future__ import annotations

from typing import Optional

#: fewer test speakers than this make an evaluation small (``min_speakers``'s default).
MIN_SPEAKERS = 20
LEVEL = 0.95


def eer_bound(eer: float, n: int, level: float = LEVEL) -> list:
    """[lo, hi]: the Clopper-Pearson interval of a proportion ``eer`` observed on ``n`` units (the
    continuous beta form, so a fractional count ``eer * n`` is allowed)."""
    from scipy.special import betaincinv

    alpha = 1.0 - level
    x = min(max(float(eer), 0.0), 1.0) * n
    lo = 0.0 if x <= 0 else float(betaincinv(x, n - x + 1, alpha / 2))
    hi = 1.0 if x >= n else float(betaincinv(x + 1, n - x, 1 - alpha / 2))
    return [lo, hi]


def small_evaluation(
    overall: dict, n_speakers: Optional[int], min_speakers: int = MIN_SPEAKERS
) -> Optional[dict]:
    """``overall["small_evaluation"]``: None when the evaluation is large enough and its EER interval
    not degenerate, else why, the counts, and the resampling-free bound."""
    eer = overall.get("eer")
    if eer is None:
        return None
    ci = (overall.get("ci95") or {}).get("eer")
    reasons = []
    if n_speakers is not None and n_speakers < min_speakers:
        reasons.append(f"only {n_speakers} test speakers (fewer than {min_speakers})")
    if eer in (0, 1):
        reasons.append(
            f"EER {eer:.0%}: every trial ordered alike, no resample can show otherwise (degenerate bootstrap)"
        )
    elif ci and ci[0] is not None and ci[0] == ci[1]:
        reasons.append("every resample gave the same EER (degenerate bootstrap)")
    if not reasons:
        return None
    n_target, n_nontarget = overall.get("n_target") or 0, overall.get("n_nontarget") or 0
    units = n_speakers if n_speakers is not None else int(min(n_target, n_nontarget))
    return {
        "reasons": reasons,
        "n_speakers": n_speakers,
        "n_target": n_target,
        "n_nontarget": n_nontarget,
        "eer_bound95": eer_bound(eer, max(units, 1)),
        "bound_counts": "test speakers"
        if n_speakers is not None
        else "trials of the smaller class (no utt2spk: optimistic when trials share speakers)",
        "min_speakers": min_speakers,
    }


def small_note(small: dict) -> str:
    """One sentence for reports: the counts, why the interval cannot be trusted, the bound."""
    lo, hi = small["eer_bound95"]
    who = f"{small['n_speakers']} test speakers, " if small.get("n_speakers") is not None else ""
    return (
        f"small evaluation ({who}{small['n_target']} target / {small['n_nontarget']} non-target trials): "
        f"{'; '.join(small['reasons'])}; resampling-free 95% bound on the EER, counting "
        f"{small['bound_counts']}: [{100 * lo:.1f}%, {100 * hi:.1f}%]; {no_verdict(small)}"
    )


def small_label(small: dict) -> str:
    """The short form reports put beside a small evaluation's interval: its speakers and bound."""
    lo, hi = small["eer_bound95"]
    return (
        f"small: {small.get('n_speakers') or 'n/a'} speakers, bound {100 * lo:.1f}%-{100 * hi:.1f}%"
    )


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
    n_a: Optional[int], n_b: Optional[int], min_speakers: int = MIN_SPEAKERS
) -> Optional[str]:
    """For a comparison of two cells: why no verdict is drawn from it (None when both have enough
    test speakers; unknown counts never block)."""
    few = [n for n in (n_a, n_b) if n is not None and n < min_speakers]
    if not few:
        return None
    return f"too few speakers for a verdict ({min(few)} test speakers, fewer than {min_speakers})"
