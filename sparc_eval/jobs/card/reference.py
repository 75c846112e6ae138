"""What the words alone give, and the card's tests against it (issue 25).

**Words-only attackers** read what the speech says and not its sound (``needs.words`` and not
``needs.audio``) and score the card's utterance trials (``needs.split``): the phone-only ECAPA on
G2P, TF-IDF on the same trials (:mod:`attackers.text_utterances`), the bag of phones. Each one's
EER is at best an upper bound on what the words allow, so an audio attacker is read against every
one of them, on the same trials (paired bootstrap over the run's unit: speakers on both sides):

- **finds more than every words-only attacker here** (the voice leaks): the paired 95% CI of
  (audio - words) lies below 0 for *every* words-only attacker: an intersection-union test, at 5%
  without correction (:func:`below_all`);
- **bounded by content**: *some* words-only attacker has the lower EER: a union over K hypotheses,
  Holm-corrected at 5% on the two-sided bootstrap p-values, only differences in that direction
  counting (:func:`holm`);
- **within** otherwise.

A selected minimum is biased low and its own CI ignores the selection: :func:`cross_fitted` picks
the best cell on half the test speakers and reads it on the other half, both ways, and averages.
"""

from __future__ import annotations

import numpy as np

LEVEL = 0.05


def words_only(cell: dict) -> bool:
    """A finished cell of an attacker that reads the words, not the sound, on the card's utterance trials."""
    needs = cell.get("needs") or {}
    return (
        cell.get("status") == "ok"
        and bool(needs.get("words"))
        and not needs.get("audio")
        and bool(needs.get("split", True))
    )


def probe_level(cell: dict) -> bool:
    """A text attacker on trials of its own (P-word probes against L utterances, SPARC's design)."""
    needs = cell.get("needs") or {}
    return bool(needs.get("words")) and needs.get("split") is False


def holm(p_values: list, level: float = LEVEL) -> list:
    """Holm's step-down test: which of K hypotheses are rejected at family-wise ``level`` (a
    missing p-value counts as 1: it is never rejected and K stays K)."""
    order = sorted((1.0 if p is None else p, i) for i, p in enumerate(p_values))
    rejected = [False] * len(p_values)
    for rank, (p, i) in enumerate(order):
        if p > level / (len(order) - rank):
            break
        rejected[i] = True
    return rejected


def below_all(comparisons: list) -> bool:
    """Intersection-union: every paired CI of (audio - words) lies below 0."""
    return bool(comparisons) and all(
        c["ci95"][1] is not None and c["ci95"][1] < 0 for c in comparisons
    )


def words_better(comparisons: list, level: float = LEVEL) -> list:
    """The words-only attackers with a significantly lower EER than the audio attacker (Holm over K;
    a difference in the other direction is never counted)."""
    p = [c["p_value"] if c["diff"] is not None and c["diff"] > 0 else 1.0 for c in comparisons]
    return [c["attacker"] for c, hit in zip(comparisons, holm(p, level)) if hit]


def beyond_words_verdict(comparisons: list) -> str:
    """The sentence for one audio cell against the K words-only attackers on its trials."""
    if not comparisons:
        return "no words-only attacker on these trials"
    small = next((c["small"] for c in comparisons if c.get("small")), None)
    if small:
        return f"no verdict: {small}"
    if any(c["ci95"][0] is None for c in comparisons):
        return "no interval (too few valid resamples)"
    k = len(comparisons)
    if below_all(comparisons):
        return (
            f"finds more than every words-only attacker here ({k}): the voice leaks "
            "(every paired CI below 0)"
        )
    better = words_better(comparisons)
    if better:
        return (
            f"bounded by content: {', '.join(better)} finds more from the words alone "
            f"(Holm-corrected over {k})"
        )
    return f"within: not below every words-only attacker ({k}), and none finds significantly more"


def _eer(scores, labels) -> float | None:
    from ...metrics.core import eer

    if labels.all() or not labels.any():
        return None
    return float(eer(scores, labels).eer)


def cross_fitted(trials: dict, seed: int = 0) -> dict | None:
    """``trials``: {cell label: scored Trials} of one anonymizer on the same test speakers. Pick the
    lowest-EER cell on one half of the speakers (seeded), read its EER on the other half, both ways;
    the mean is the cross-fitted headline (None with fewer than 4 shared speakers)."""
    shared = None
    for t in trials.values():
        spk = set(t.test_speaker.tolist())
        shared = spk if shared is None else shared & spk
    speakers = sorted(shared or [])
    if len(trials) < 1 or len(speakers) < 4:
        return None
    order = np.random.default_rng(seed).permutation(len(speakers))
    halves = [
        {speakers[i] for i in order[: len(order) // 2]},
        {speakers[i] for i in order[len(order) // 2 :]},
    ]
    values, picked = [], []
    for fit, read in ((halves[0], halves[1]), (halves[1], halves[0])):
        on = {k: _on(t, fit) for k, t in trials.items()}
        best = min((k for k in on if on[k] is not None), key=lambda k: on[k], default=None)
        if best is None:
            return None
        value = _on(trials[best], read)
        if value is None:
            return None
        values.append(value)
        picked.append(best)
    return {
        "eer": float(np.mean(values)),
        "halves": [values[0], values[1]],
        "picked": picked,
        "n_speakers": [len(halves[1]), len(halves[0])],
        "seed": seed,
    }


def _on(t, speakers: set) -> float | None:
    mask = np.isin(t.test_speaker.astype(str), np.array(sorted(map(str, speakers))))
    return _eer(t.score[mask], t.label[mask])
