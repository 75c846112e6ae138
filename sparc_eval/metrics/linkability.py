"""Linkability: how surely an attacker links two recordings of one speaker.

Two metrics share the word; they get two names.

- **D<->sys** (:func:`linkability`; Gomez-Barrero et al., *IEEE Transactions on Information
  Forensics and Security* 13(6), 2018; for speech Maouche et al., Interspeech 2020): with score
  densities of mated (target) and non-mated (non-target) pairs estimated on common bins and the
  prior ratio omega = P(mated) / P(non-mated) = 1, the local linkability of a bin is
  ``D(s) = 2 omega LR(s) / (1 + omega LR(s)) - 1`` where ``omega LR(s) > 1`` (else 0; 1 where
  only mated pairs fall), and the global one is its expectation over mated pairs: the sum over
  bins of ``D(s)`` times the share of mated pairs in the bin. 1 for perfectly separated scores,
  0 for identical distributions. Bins (the VoicePrivacy rule, fixed here): ``min(T // 10, 100)``
  equal-width bins over the range of all scores, T the number of mated pairs; fewer than 20 mated
  pairs give fewer than two bins, where D is 0 whatever the scores, so they leave it undefined.
- **D<->sys as VoicePrivacy computes it** (:func:`linkability_vpc`): the VoicePrivacy 2020-2024
  code integrates ``D(s)`` times the mated density with the trapezoid rule over the bin
  *centres*, which counts the first and last bins half: a perfectly separated system whose mated
  scores fill the top bin scores 0.5. Its published linkabilities carry that; this value is for
  comparing with them.
- **Top-N' identification** (:func:`linkability_topn`; Vauquier et al., Interspeech 2025, "Legally
  validated evaluation framework for voice anonymization"): the probability that a test
  recording scores highest against its own speaker's enrollment among N' enrollment speakers,
  the true one and N' - 1 drawn at random; computed exactly (no sampling) from the number of
  enrollment speakers that outscore the true one for each test recording, ties going to the true
  speaker. It needs a full enrollment-by-test score matrix.
"""

from __future__ import annotations

import math

import numpy as np

#: Fewer mated pairs than this leave D<->sys undefined (fewer than two bins, where D is 0 anyway).
MIN_MATED = 20


def bin_edges(unique_scores, n_mated: float) -> np.ndarray:
    """The VoicePrivacy bin rule: ``min(T // 10, 100)`` equal-width bins over the score range."""
    n_bins = min(int(n_mated // 10), 100)
    lo, hi = float(unique_scores[0]), float(unique_scores[-1])
    return np.linspace(lo, hi, n_bins + 1)


def bin_index(unique_scores, edges) -> np.ndarray:
    """The bin of each distinct score (the last bin closed on the right, as numpy's histogram)."""
    k = np.searchsorted(edges, unique_scores, side="right") - 1
    return np.clip(k, 0, edges.size - 2)


def local_linkability(mated, non_mated, omega: float = 1.0) -> np.ndarray:
    """D(s) per bin from the mated and non-mated shares (or densities) of each bin."""
    mated = np.asarray(mated, dtype=np.float64)
    non_mated = np.asarray(non_mated, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.where(non_mated > 0, mated / non_mated, 1.0)
    d = np.where(omega * lr > 1.0, 2.0 * omega * lr / (1.0 + omega * lr) - 1.0, 0.0)
    return np.where((non_mated == 0) & (mated > 0), 1.0, d)


def _bin_shares(unique_scores, t, n, edges):
    k = bin_index(unique_scores, edges)
    m = edges.size - 1
    mated = np.bincount(k, weights=t, minlength=m) / t.sum()
    non_mated = np.bincount(k, weights=n, minlength=m) / n.sum()
    return mated, non_mated


def _integrand(unique_scores, t, n, omega: float):
    """D(s) times the mated share of each bin, or None with fewer than 20 mated pairs or one score."""
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if t.sum() < MIN_MATED or len(unique_scores) < 2:
        return None
    mated, non_mated = _bin_shares(unique_scores, t, n, bin_edges(unique_scores, t.sum()))
    return local_linkability(mated, non_mated, omega) * mated


def linkability(unique_scores, t, n, omega: float = 1.0):
    """Global D<->sys (a sum over bins), or None with fewer than 20 mated pairs or one score."""
    f = _integrand(unique_scores, t, n, omega)
    return None if f is None else float(f.sum())


def linkability_vpc(unique_scores, t, n, omega: float = 1.0):
    """D<->sys as the VoicePrivacy code integrates it (trapezoid rule over bin centres: D times
    the mated density, at equal spacing, counts the first and last bins half)."""
    f = _integrand(unique_scores, t, n, omega)
    return None if f is None else float(f.sum() - (f[0] + f[-1]) / 2.0)


def beaters(matrix, true_rows) -> np.ndarray:
    """Per test column, how many enrollment rows score strictly above the true speaker's row."""
    matrix = np.asarray(matrix, dtype=np.float64)
    columns = np.arange(matrix.shape[1])
    true_scores = matrix[true_rows, columns]
    return np.count_nonzero(matrix > true_scores[None, :], axis=0)


def topn_success(beaten_by, n_speakers: int, n_prime: int) -> np.ndarray:
    """The exact probability, per test column, that none of its ``beaten_by`` beaters is among
    N' - 1 speakers drawn without replacement from the n - 1 others."""
    from scipy.special import gammaln

    others, drawn = n_speakers - 1, n_prime - 1
    good = others - np.asarray(beaten_by, dtype=np.float64)
    if drawn <= 0:
        return np.ones_like(good)
    with np.errstate(invalid="ignore"):
        log_p = (
            gammaln(good + 1.0)
            - gammaln(good - drawn + 1.0)
            - gammaln(others + 1.0)
            + gammaln(others - drawn + 1.0)
        )
    return np.where(good >= drawn, np.exp(log_p), 0.0)


def linkability_topn(matrix, true_rows, n_prime: int) -> float:
    """Top-N' linkability: the mean over test columns of the exact success probability."""
    n_speakers = np.asarray(matrix).shape[0]
    n_prime = min(int(n_prime), n_speakers)
    success = topn_success(beaters(matrix, true_rows), n_speakers, n_prime)
    # an exactly rounded sum: the columns' order (hash-factorized ids) varies by process
    return math.fsum(success.tolist()) / success.size
