"""The transcript-scorer interface (scikit-learn style).

A scorer turns trials (probe texts vs enrollment texts) into one similarity score each, higher
meaning "same speaker" (or "same attribute label")::

    scorer.fit(texts)            # unlabelled utterance texts of one task and (P, L) configuration
    scores = scorer.score(trials)  # np.ndarray of float, one per trial; NaN = no score (missing)

``trials`` is a :class:`sparc_eval.text_trials.trials.TrialSet` (sides as indices into unique texts, so each
unique side is represented once) or a list of dicts with ``probe_texts`` and
``enroll_texts`` (lists of strings) and ``label``. ``name`` names the scorer in reports and
``settings()`` returns its JSON-ready configuration (never secrets); ``deviations()`` returns
``{name: sentence}`` for each way it departs from the paper's scorers (A.2: SentenceBERT
all-mpnet-base-v2, TF-IDF word 1-2-grams, the three LLMs), empty when it follows them (results.json
``run.deviations``). ``preflight()`` checks,
before any work starts, what the scorer needs (an API key, a model path) and raises a clear
error when it is missing. ``report()`` returns counts worth reporting (missing replies,
cache hits), empty by default.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from sparc_eval.text_trials.trial_set import Sides
from sparc_eval.text_trials.trials import TrialSet


def as_trialset(trials) -> TrialSet:
    if isinstance(trials, TrialSet):
        return trials
    return TrialSet.from_records(list(trials))


def side_matrix(trials: TrialSet) -> sparse.csr_matrix:
    """Sparse (sides x texts) incidence matrix: 1 where a side contains a text (counted)."""
    return incidence(trials.sides, len(trials.texts))


def incidence(sides, n_texts: int) -> sparse.csr_matrix:
    """(sides x texts) incidence of sides given as arrays of text indices (a list, or a
    :class:`~sparc_eval.text_trials.trial_set.Sides` read whole); each row's texts in ascending
    order, a text listed twice counted twice."""
    sides = Sides.of(sides)
    rows = np.repeat(np.arange(len(sides)), sides.lengths())
    cols = sides.flat
    data = np.ones(len(cols), dtype=np.float64)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(sides), n_texts))


def l2_normalise_rows(X):
    """Rows scaled to unit L2 norm (zero rows stay zero); sparse or dense."""
    if sparse.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sparse.diags(inv) @ X
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X, dtype=float), where=norms > 0)


def normalise_rows_in_place(X: sparse.csr_matrix, *, block: int = 1 << 16) -> sparse.csr_matrix:
    """A CSR matrix's rows scaled to unit L2 norm in place (zero rows stay zero), a block of rows
    at a time (no copy of a 10^8-entry matrix); returns it."""
    for r0 in range(0, X.shape[0], block):
        ptr = X.indptr[r0 : min(r0 + block, X.shape[0]) + 1]
        data = X.data[ptr[0] : ptr[-1]]
        rows = np.flatnonzero(np.diff(ptr))  # reduceat segments: the non-empty rows' starts
        if not len(rows):
            continue
        norms = np.sqrt(np.add.reduceat(data * data, ptr[rows] - ptr[0]))
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        data *= np.repeat(scale, np.diff(ptr)[rows])
    return X


# Rows gathered per block of trials, in bytes: under glibc's largest mmap threshold (32 MiB), so a
# block's memory comes back from the heap on the next block. A larger block is mapped afresh and
# page-faulted in every time, which at 1.5x10^6 utterances cost more than the copy it holds
# (SPoRC's enrollment rows: gathered in 5.5 s in larger blocks, 1.6 s in these; docs/results/scale.md).
BLOCK_BYTES = 16 << 20


def paired_dot(
    A, B, ia: np.ndarray, ib: np.ndarray, *, chunk: int = 50_000, block_bytes: int = BLOCK_BYTES
) -> np.ndarray:
    """Dot products of rows ``A[ia[k]]`` and ``B[ib[k]]`` for all k, vectorised; sparse or dense.
    The rows are gathered a block of trials at a time: at most ``chunk`` trials and about
    ``block_bytes`` of gathered rows (one row larger than that is a block of its own)."""
    out = np.empty(len(ia), dtype=np.float64)
    edges = _block_edges(A, B, ia, ib, chunk, block_bytes)
    for lo, hi in zip(edges[:-1], edges[1:]):
        if sparse.issparse(A):
            prod = A[ia[lo:hi]].multiply(B[ib[lo:hi]])
            out[lo:hi] = np.asarray(prod.sum(axis=1)).ravel()
        else:
            out[lo:hi] = np.einsum("ij,ij->i", A[ia[lo:hi]], B[ib[lo:hi]])
    return out


def _block_edges(A, B, ia, ib, chunk: int, block_bytes: int) -> np.ndarray:
    """Trial positions where :func:`paired_dot`'s blocks start, and the end."""
    if sparse.issparse(A):
        size = np.diff(A.indptr)[ia] * (A.data.itemsize + A.indices.itemsize)
        size += np.diff(B.indptr)[ib] * (B.data.itemsize + B.indices.itemsize)
    else:
        size = np.full(len(ia), A.shape[1] * A.itemsize + B.shape[1] * B.itemsize)
    total = np.cumsum(size)  # bytes gathered through each trial
    limits = np.arange(block_bytes, total[-1], block_bytes) if len(total) else np.zeros(0)
    by_bytes = np.searchsorted(total, limits, "right")
    return np.unique(np.r_[0, by_bytes, np.arange(chunk, len(ia), chunk), len(ia)]).astype(np.int64)


class TextScorer:
    """Base class: subclasses implement ``side_vectors`` (cosine scorers) or override ``score``."""

    name = "text-scorer"
    #: the ISO 639-1 codes of the languages it serves, or None for every language sparc_eval
    #: scores; an English word list or an English model says ("en",)
    languages = None

    def fit(self, texts):
        return self

    def preflight(self) -> None:
        """Raise a clear error now if something the scorer needs is missing."""

    def settings(self) -> dict:
        return {}

    def model_files(self) -> list:
        """The local files its model is read from (their content keys what it scored)."""
        return []

    def report(self) -> dict:
        return {}

    def deviations(self) -> dict:
        return {}

    def side_vectors(self, trials: TrialSet):
        raise NotImplementedError

    def score(self, trials) -> np.ndarray:
        """Cosine of L2-normalised side vectors, one per trial (vectorised over trials)."""
        trials = as_trialset(trials)
        if len(trials) == 0:
            return np.zeros(0)
        V = l2_normalise_rows(self.side_vectors(trials))
        return paired_dot(V, V, trials.probe_side, trials.enroll_side)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"{type(self).__name__}({args})"
