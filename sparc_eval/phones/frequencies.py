"""Relative phone frequencies per speaker and how distinctive they are (paper section 4.1).

A speaker's relative frequencies are the counts of each CMU phone over all their utterances,
divided by their total. Distinctiveness is the speaker's mean cosine distance to every other
speaker. More distinctive speakers should be easier to identify, i.e. have lower per-speaker
EERs, so the expected correlation with EER is negative; the paper quotes r = 0.59 as a
magnitude. We report the signed value.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..errors import DataError
from .phoneset import CMU_PHONES, PHONE_INDEX


def phone_counts(phone_lists, phones: tuple = CMU_PHONES) -> np.ndarray:
    """Counts of the 39 CMU phones (or of another language's ``phones``) over an iterable of
    phone lists (silence ignored)."""
    index = PHONE_INDEX if phones is CMU_PHONES else {p: i for i, p in enumerate(phones)}
    counts = np.zeros(len(phones), dtype=np.int64)
    indices = [index[p] for ps in phone_lists for p in ps if index.get(p, 1 << 30) < len(phones)]
    if indices:
        counts += np.bincount(indices, minlength=len(phones))
    return counts


def relative_frequencies(speaker_phones: dict, phones: tuple = CMU_PHONES) -> tuple:
    """(speakers, (S, 39) matrix of relative frequencies) from speaker -> list of phone lists
    (one column per phone of ``phones``, another language's inventory)."""
    speakers = sorted(speaker_phones)
    matrix = np.vstack([phone_counts(speaker_phones[s], phones) for s in speakers])
    matrix = matrix.astype(np.float64)
    totals = matrix.sum(axis=1, keepdims=True)
    empty = [s for s, t in zip(speakers, totals[:, 0]) if t == 0]
    if empty:
        raise DataError(
            f"{len(empty)} speakers have no phones, e.g. {empty[:3]}",
            hint="they have no transcribed words; drop them before the analysis",
        )
    return speakers, matrix / totals


def distinctiveness(freqs: np.ndarray) -> np.ndarray:
    """Each row's mean cosine distance to every other row."""
    if freqs.shape[0] < 2:
        raise DataError("distinctiveness needs at least two speakers")
    unit = freqs / np.linalg.norm(freqs, axis=1, keepdims=True)
    distance = 1.0 - unit @ unit.T
    np.fill_diagonal(distance, 0.0)
    return distance.sum(axis=1) / (freqs.shape[0] - 1)


def correlate(values: dict, eers: dict) -> dict:
    """Pearson and Spearman correlation (signed, with two-sided p-values) between a per-speaker
    value and per-speaker EERs, over speakers that have both (null EERs are left out)."""
    common = sorted(s for s in values if eers.get(s) is not None)
    if len(common) < 3:
        return {
            "n": len(common),
            "pearson_r": None,
            "pearson_p": None,
            "spearman_rho": None,
            "spearman_p": None,
        }
    x = np.array([values[s] for s in common])
    y = np.array([eers[s] for s in common])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {
            "n": len(common),
            "pearson_r": None,
            "pearson_p": None,
            "spearman_rho": None,
            "spearman_p": None,
        }
    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    return {
        "n": len(common),
        "pearson_r": float(pearson[0]),
        "pearson_p": float(pearson[1]),
        "spearman_rho": float(spearman[0]),
        "spearman_p": float(spearman[1]),
    }
