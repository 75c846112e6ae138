"""TF-IDF scorer (SPARC paper A.2.1): word unigrams and bigrams, cosine.

Fitted without labels on the unique utterances of a task and (P, L) configuration. A side
(probe or enrollment) is the sum of its utterances' term counts (n-grams never span two
utterances), weighted by the fitted IDF and L2-normalised; the score is the cosine. All sides
are built with one sparse product (sides x texts) @ (texts x terms), and the trial scores with
one row-wise product, so 10^5 trials take seconds.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .base import TextScorer, side_matrix


class TfidfScorer(TextScorer):
    name = "tfidf"

    def __init__(self, ngram_range=(1, 2), min_df: int = 1, sublinear_tf: bool = False, lowercase: bool = True,
                 token_pattern: str = r"(?u)\b\w[\w']*\b"):
        self.ngram_range = tuple(ngram_range)
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.vectorizer_ = None
        self.idf_ = None
        self.counts_, self.row_ = None, None

    def settings(self) -> dict:
        return {"ngram_range": list(self.ngram_range), "min_df": self.min_df, "sublinear_tf": self.sublinear_tf,
                "lowercase": self.lowercase, "token_pattern": self.token_pattern}

    def deviations(self) -> dict:
        if tuple(self.ngram_range) == (1, 2):
            return {}
        return {"scorer": f"TF-IDF over word {list(self.ngram_range)}-grams; the paper's uses unigrams and bigrams"}

    def fit(self, texts):
        from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

        unique = sorted(set(texts))
        self.vectorizer_ = CountVectorizer(ngram_range=self.ngram_range, min_df=self.min_df,
                                           lowercase=self.lowercase, token_pattern=self.token_pattern)
        counts = self.vectorizer_.fit_transform(unique)
        self.idf_ = TfidfTransformer(smooth_idf=True).fit(counts).idf_
        # the fitted texts' counts are kept: scoring the same texts reuses them instead of counting
        # every n-gram again (the same rows CountVectorizer.transform would return)
        self.counts_, self.row_ = counts.tocsr(), {t: i for i, t in enumerate(unique)}
        return self

    def side_vectors(self, trials):
        if self.vectorizer_ is None:
            self.fit(trials.texts)
        rows = [self.row_.get(t) for t in trials.texts] if self.row_ is not None else [None]
        if None in rows:  # texts the scorer was not fitted on
            C = self.vectorizer_.transform(trials.texts)  # texts x terms
        else:
            C = self.counts_[rows]
        S = (side_matrix(trials) @ C).tocsr()  # sides x terms, summed counts
        if self.sublinear_tf:
            S.data = 1.0 + np.log(S.data)
        return (S @ sparse.diags(self.idf_)).tocsr()
