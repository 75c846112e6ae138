"""What the words alone give, and the card's tests against it (issue 25).

**Words-only attackers** read what the speech says and not its sound (``needs.words`` and not
``needs.audio``) and score the card's utterance trials (``needs.split``): the phone-only ECAPA on
G2P, TF-IDF on the same trials (:mod:`attackers.text_utterances`), the bag of phones. Each one's
EER is at best an upper bound on what the words allow, so an audio attacker is read against every
one of them, on the same trials (paired bootstrap over the run's unit: speakers on both sides):

- **finds more than every words-only attacker here** (the voice leaks): the paired two-sided 95%
  CI of (audio - words) lies below 0 for *every* words-only attacker: an intersection-union test,
  each comparison one-sided at 2.5%, without correction (:func:`below_all`);
- **<words attacker> finds more than <audio attacker> here**: *some* words-only attacker has the
  lower EER, a union over K hypotheses, Holm-corrected at 5% on the two-sided bootstrap p-values
  with only differences in that direction counting (one-sided 2.5% family-wise,
  :func:`words_better`). It shows this attacker is weaker than the words here, nothing about the
  voice beyond them, and it is withheld when no semi-informed audio attack ran on the anonymizer
  (the attack that could find more is missing) or a cell or attacker involved is flagged;
- **within** otherwise.

A selected minimum is biased low and its own CI ignores the selection: :func:`cross_fitted` picks
the best cell on half the test speakers and reads it on the other half, both ways, and averages.
"""

from __future__ import annotations

import numpy as np

from ...metrics.small import MIN_VERDICT_SPEAKERS, few_speakers_reason

LEVEL = 0.05  # two-sided: a claim in one direction is at 2.5%
#: ``cross_fitted``'s ``enrollment_side``: each half's trials enrol and test its own speakers only.
SAME_HALF = "same half: enrolled and tested speakers both in the half"
#: ... or, for cells that did not write their enrolled speakers, test speakers only.
ENROLLED_UNKNOWN = "not restricted: enrolled speakers unknown"


def words_only(cell: dict) -> bool:
    """A finished cell of an attacker that reads the words, not the sound, on the card's utterance trials."""
    needs = cell.get("needs") or {}
    return (
        cell.get("status") == "ok"
        and bool(needs.get("words"))
        and not needs.get("audio")
        and bool(needs.get("split", True))
    )


def reads_words(cell: dict) -> bool:
    """A finished cell of an attacker that reads the words, not the sound, on any trials (the
    card's utterance trials or probe-level trials of its own): the words-only rules apply."""
    needs = cell.get("needs") or {}
    return cell.get("status") == "ok" and bool(needs.get("words")) and not needs.get("audio")


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


def beyond_words_verdict(
    comparisons: list, attacker: str = "this attacker", semi_informed=True
) -> str:
    """The sentence for one audio cell against the K words-only attackers on its trials;
    ``semi_informed``: whether a semi-informed audio attack ran on this anonymizer's speech."""
    if not comparisons:
        return "no words-only attacker on these trials"
    small = next((c["small"] for c in comparisons if c.get("small")), None)
    if small:
        return f"no verdict: {small}"
    withheld = next((c["withheld"] for c in comparisons if c.get("withheld")), None)
    if withheld:
        return withheld
    if any(c["ci95"][0] is None for c in comparisons):
        return "no interval (too few valid resamples)"
    k = len(comparisons)
    if below_all(comparisons):
        return (
            f"finds more than every words-only attacker here ({k}): the voice leaks "
            "(every paired 95% CI below 0: one-sided 2.5% each)"
        )
    better = words_better(comparisons)
    if better and not semi_informed:
        return (
            f"no verdict: {', '.join(better)} finds more than {attacker} here, but no semi-informed "
            "audio attack ran on this speech, so a stronger attack on the voice is missing"
        )
    if better:
        return (
            f"{', '.join(better)} finds more than {attacker} here; this says nothing about the voice "
            f"beyond the words (Holm over {k}, one-sided 2.5%)"
        )
    return f"within: not below every words-only attacker ({k}), and none finds significantly more"


def _eer(scores, labels) -> float | None:
    from ...metrics.core import eer

    if labels.all() or not labels.any():
        return None
    return float(eer(scores, labels).eer)


def cross_fitted(
    trials: dict, seed: int = 0, min_verdict_speakers: int = MIN_VERDICT_SPEAKERS
) -> dict | None:
    """``trials``: {cell label: scored Trials} of one anonymizer on the same test speakers. Pick the
    lowest-EER cell on one half of the speakers (seeded), read its EER on the other half, both ways;
    the mean is the cross-fitted headline (None with fewer than 4 shared speakers).

    Each half keeps only the trials whose enrolled and tested speakers are both in it, so the
    selection half never sees the reading half's enrollment; where some cell's enrolled speakers
    are unknown (cells written before ``enroll2spk``) every cell is split on its test speakers
    alone, and ``enrollment_side`` says so. ``small`` says why no verdict rests on the value when
    a half has fewer than ``min_verdict_speakers`` test speakers (else None)."""
    shared = None
    for t in trials.values():
        spk = set(t.test_speaker.tolist())
        shared = spk if shared is None else shared & spk
    speakers = sorted(shared or [])
    if len(trials) < 1 or len(speakers) < 4:
        return None
    enrolled = all(t.enrolled_known() for t in trials.values())
    order = np.random.default_rng(seed).permutation(len(speakers))
    halves = [
        {speakers[i] for i in order[: len(order) // 2]},
        {speakers[i] for i in order[len(order) // 2 :]},
    ]
    values, picked = [], []
    for fit, read in ((halves[0], halves[1]), (halves[1], halves[0])):
        on = {k: _on(t, fit, enrolled) for k, t in trials.items()}
        best = min((k for k in on if on[k] is not None), key=lambda k: on[k], default=None)
        if best is None:
            return None
        value = _on(trials[best], read, enrolled)
        if value is None:
            return None
        values.append(value)
        picked.append(best)
    n_speakers = [len(halves[1]), len(halves[0])]
    return {
        "eer": float(np.mean(values)),
        "halves": [values[0], values[1]],
        "picked": picked,
        "n_speakers": n_speakers,
        "seed": seed,
        "enrollment_side": SAME_HALF if enrolled else ENROLLED_UNKNOWN,
        "small": few_speakers_reason(*n_speakers, min_verdict_speakers),
    }


def _on(t, speakers: set, enrolled: bool = True) -> float | None:
    """The EER of ``t`` on the trials whose test speaker is in ``speakers`` and, with ``enrolled``,
    whose enrolled speaker is too."""
    wanted = np.array(sorted(map(str, speakers)))
    mask = np.isin(t.test_speaker.astype(str), wanted)
    if enrolled:
        mask &= np.isin(t.enroll_speakers.astype(str), wanted)
    return _eer(t.score[mask], t.label[mask])
