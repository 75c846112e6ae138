"""Phone error rate (PER): Levenshtein distance over phone tokens, silence removed.

``PER = (S + D + I) / N`` with N the number of reference phones after removing silence
(``SIL``) from both sequences; each substitution, deletion and insertion costs 1. Corpus PER
sums the errors and the reference lengths over utterances (not the mean of utterance PERs).
Hand-worked: ref ``K AE T``, hyp ``K AH T S`` -> 1 substitution + 1 insertion = 2 errors,
PER 2/3.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .phoneset import SILENCE

IGNORED = frozenset({SILENCE, ""})


def _clean(phones: Iterable) -> list:
    out = []
    for p in phones:
        if isinstance(p, (tuple, list)):  # (phone, start, end) segments are accepted too
            p = p[0]
        p = str(p).upper()
        if p not in IGNORED:
            out.append(p)
    return out


def edit_distance(ref: Sequence, hyp: Sequence) -> int:
    """Levenshtein distance between two token sequences (unit costs), one numpy row at a time.

    Within a row the insertion recurrence ``d[j] = min(t[j], d[j-1] + 1)`` is solved in closed
    form as ``j + cummin(t[k] - k)``, so each row is vectorised.
    """
    n, m = len(ref), len(hyp)
    if n == 0 or m == 0:
        return n + m
    vocab = {tok: i for i, tok in enumerate(set(ref) | set(hyp))}
    r = np.array([vocab[t] for t in ref])
    h = np.array([vocab[t] for t in hyp])
    idx = np.arange(m + 1)
    prev = idx.copy()
    for i in range(1, n + 1):
        sub = prev[:-1] + (h != r[i - 1])  # diagonal: match or substitution
        dele = prev[1:] + 1  # deletion of ref[i-1]
        t = np.empty(m + 1, dtype=prev.dtype)
        t[0] = i
        t[1:] = np.minimum(sub, dele)
        prev = idx + np.minimum.accumulate(t - idx)  # insertions
    return int(prev[-1])


def phone_error_rate(ref: Iterable, hyp: Iterable) -> tuple:
    """``(errors, ref_len)`` between two phone sequences (or segment lists), silence removed.

    Divide for the rate; ``ref_len`` is 0 for a reference without phones (then every hypothesis
    phone is an insertion and the rate is undefined).
    """
    r, h = _clean(ref), _clean(hyp)
    return edit_distance(r, h), len(r)


def corpus_phone_error_rate(pairs: Iterable) -> float:
    """Corpus PER over ``(ref, hyp)`` pairs: total errors / total reference phones."""
    errors = total = 0
    for ref, hyp in pairs:
        e, n = phone_error_rate(ref, hyp)
        errors += e
        total += n
    if total == 0:
        raise ValueError("corpus PER is undefined: the references hold no phones")
    return errors / total
