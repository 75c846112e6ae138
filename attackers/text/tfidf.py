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

from sparc_eval.errors import DataError

from .base import TextScorer, as_trialset, normalise_rows_in_place, paired_dot, side_matrix
from .ngram_counts import NgramCounts

CHUNK = 1 << 22  # entries per in-place pass
SCORE_CHUNK = 20_000  # trials scored at once


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
        unique = sorted(set(texts))
        df = self.counts.document_frequency(unique)
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
        S = (
            side_matrix(trials) @ self.counts.rows(trials.texts)
        ).tocsr()  # sides x columns, summed counts
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
        """Cosines, ``SCORE_CHUNK`` trials at a time (each chunk with the sides and texts it uses):
        memory follows the chunk, not the trial set; the scores are the same bit for bit."""
        trials = as_trialset(trials)
        if len(trials) == 0:
            return np.zeros(0)
        if self.idf_ is None:
            self.fit(trials.texts)
        if len(trials) <= SCORE_CHUNK:
            V = self.side_vectors(trials)  # unit rows
            return paired_dot(V, V, trials.probe_side, trials.enroll_side)
        return np.concatenate(
            [
                self.score(trials.take(np.arange(lo, min(lo + SCORE_CHUNK, len(trials)))))
                for lo in range(0, len(trials), SCORE_CHUNK)
            ]
        )
