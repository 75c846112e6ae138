"""TF-IDF scorer (SPARC paper A.2.1): word unigrams and bigrams, cosine.

Fitted without labels on the unique utterances of a task and (P, L) configuration. A side
(probe or enrollment) is the sum of its utterances' term counts (n-grams never span two
utterances), weighted by the fitted IDF and L2-normalised; the score is the cosine. All sides
are built with one sparse product (sides x texts) @ (texts x terms), and the trial scores with
one row-wise product, so 10^5 trials take seconds. The n-gram counts of each text are taken
once per scorer (:mod:`.ngram_counts`), however many tasks and settings fit on it; each fit
keeps its own vocabulary (the n-grams of its texts with at least ``min_df`` of them) and IDF.
"""

from __future__ import annotations

import numpy as np

from sparc_eval.arrays import distinct
from sparc_eval.errors import DataError
from sparc_eval.text_trials.trial_set import CodedTexts

from .base import TextScorer, as_trialset, incidence, normalise_rows_in_place, paired_dot
from .ngram_counts import NgramCounts

CHUNK = 1 << 22  # entries per in-place pass
# trials scored at once: their enrollment sides' rows stay under glibc's 32 MiB mmap threshold
# (about 700 entries of 12 bytes a side at L = 20), so each chunk reuses the last one's memory
SCORE_CHUNK = 4096


class TfidfScorer(TextScorer):
    name = "tfidf"

    def __init__(
        self,
        ngram_range=(1, 2),
        min_df: int = 1,
        sublinear_tf: bool = False,
        lowercase: bool = True,
        token_pattern: str = r"(?u)\b\w[\w']*\b",
    ):
        self.ngram_range = tuple(ngram_range)
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.counts = NgramCounts(self.ngram_range, lowercase, token_pattern)
        self.idf_ = None  # per n-gram column of ``counts``; 0 outside the fitted vocabulary

    def settings(self) -> dict:
        return {
            "ngram_range": list(self.ngram_range),
            "min_df": self.min_df,
            "sublinear_tf": self.sublinear_tf,
            "lowercase": self.lowercase,
            "token_pattern": self.token_pattern,
        }

    def deviations(self) -> dict:
        if tuple(self.ngram_range) == (1, 2):
            return {}
        return {
            "scorer": f"TF-IDF over word {list(self.ngram_range)}-grams; the paper's uses unigrams and bigrams"
        }

    def fit(self, texts):
        """Vocabulary (n-grams in at least ``min_df`` of the unique texts) and smoothed IDF, as
        scikit-learn's ``CountVectorizer`` + ``TfidfTransformer(smooth_idf=True)`` compute them."""
        unique = texts if isinstance(texts, CodedTexts) else list(dict.fromkeys(texts))  # distinct
        # texts not counted before are numbered in sorted order (as fitting on sorted texts did),
        # so only they are sorted: a setting whose texts were all seen sorts nothing
        df = self.counts.document_frequency(self.counts.ids(unique, new_sorted=True))
        min_count = (
            self.min_df if isinstance(self.min_df, (int, np.integer)) else self.min_df * len(unique)
        )
        kept = (df >= min_count) & (df > 0)
        if not kept.any():
            raise DataError(
                f"TF-IDF: no word n-gram occurs in at least min_df={self.min_df} of the "
                f"{len(unique)} texts",
                hint="lower min_df, or check the texts hold words",
            )
        self.idf_ = np.zeros(len(df))
        self.idf_[kept] = np.log((len(unique) + 1) / (df[kept].astype(np.float64) + 1.0)) + 1.0
        return self

    def side_vectors(self, trials):
        """Sides x n-gram columns: summed counts (sublinear if set) times IDF, L2-normalised in place."""
        if self.idf_ is None:
            self.fit(trials.texts)
        return self._side_vectors(
            trials, np.arange(len(trials.sides)), self.counts.ids(trials.texts)
        )

    def _side_vectors(self, trials, side_ids: np.ndarray, ids: np.ndarray):
        """:meth:`side_vectors` of sides ``side_ids`` (ascending) of ``trials``, whose texts have
        count rows ``ids`` (looked up once per trial set, not once per batch of sides)."""
        text_ids, used = trials.sides.select(side_ids).compact()
        M = incidence(used, len(text_ids))
        S = (M @ self.counts.rows_at(ids[text_ids])).tocsr()  # sides x columns, summed counts
        idf = (
            self.idf_
            if len(self.idf_) >= S.shape[1]
            else np.pad(self.idf_, (0, S.shape[1] - len(self.idf_)))
        )
        for lo in range(0, S.nnz, CHUNK):  # in place: a side matrix of 10^8 entries is not copied
            data = S.data[lo : lo + CHUNK]
            if self.sublinear_tf:
                np.log(data, out=data)
                data += 1.0
            data *= idf[S.indices[lo : lo + CHUNK]]
        return normalise_rows_in_place(S)

    def score(self, trials) -> np.ndarray:
        """Cosines, with each side's vector built once however large the set: every probe side at
        once (probes are short), then the enrollment sides in chunks of about ``SCORE_CHUNK``
        trials (the trials sorted by enrollment, so an enrollment shared by trials far apart is
        built once, not once per chunk). Memory follows the probes and one chunk; the scores
        are the same bit for bit (a side's vector does not depend on what it is built with).
        Each text's count row is looked up once for all the set's sides."""
        trials = as_trialset(trials)
        if len(trials) == 0:
            return np.zeros(0)
        if self.idf_ is None:
            self.fit(trials.texts)
        ids = self.counts.ids(trials.texts)
        if len(trials) <= SCORE_CHUNK:
            V = self._side_vectors(trials, np.arange(len(trials.sides)), ids)  # unit rows
            return paired_dot(V, V, trials.probe_side, trials.enroll_side)
        probes = distinct(trials.probe_side)
        P = self._side_vectors(trials, probes, ids)
        scores = np.empty(len(trials))
        for at in enrollment_chunks(trials.enroll_side, SCORE_CHUNK):
            enrolls = distinct(trials.enroll_side[at])
            E = self._side_vectors(trials, enrolls, ids)
            scores[at] = paired_dot(
                P,
                E,
                np.searchsorted(probes, trials.probe_side[at]),
                np.searchsorted(enrolls, trials.enroll_side[at]),
            )
        return scores


def enrollment_chunks(enroll_side: np.ndarray, size: int) -> list:
    """Trial indices sorted by enrollment side, cut every ``size`` trials at the next change of
    side (each side's trials in one chunk)."""
    order = np.argsort(enroll_side, kind="stable")
    ordered = enroll_side[order]
    starts = np.append(np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]), len(order))
    cuts = starts[np.searchsorted(starts, np.arange(size, len(order), size))]
    bounds = np.unique(np.r_[0, cuts, len(order)])
    return [order[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
