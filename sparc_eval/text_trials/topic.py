"""Episode topic metadata for the SPoRC topic control (A.1.2): title+description TF-IDF cosine
and category Jaccard between episodes (how they are used: :mod:`~sparc_eval.text_trials.trials`)."""

from __future__ import annotations

import re

import numpy as np

from ..arrays import ranges_positions

#: the topic filter's per-episode counts are exact up to this many appearances, and estimated
#: from a seeded uniform sample of this many beyond (listing every pair is quadratic)
COUNT_SAMPLE = 2048
_BLOCK = 1024  # episodes per similarity block (a 1024 x COUNT_SAMPLE float64 block: 16 MB)
#: category sets up to which Jaccard values are looked up in a set-by-set table (float32 rows,
#: made for the sets probes ask about: at most 64 MB)
JACCARD_TABLE_MAX = 4096


class TopicIndex:
    """Episode title+description TF-IDF (unigrams+bigrams) and category sets."""

    def __init__(self, manifest, episodes: list):
        meta = {}
        for u in manifest:
            if u.episode is None:
                continue
            row = meta.setdefault(u.episode, {})
            for key in ("title", "description", "category"):
                if key not in row and u.extra.get(key) not in (None, "", []):
                    row[key] = u.extra[key]
        docs = [
            " ".join(str(meta.get(e, {}).get(k, "")) for k in ("title", "description")).strip()
            for e in episodes
        ]
        self.has_text = any(docs)
        if self.has_text:
            from sklearn.feature_extraction.text import TfidfVectorizer

            vec = TfidfVectorizer(ngram_range=(1, 2), norm="l2")
            self.X = vec.fit_transform(docs).tocsr()
        else:
            self.X = None
        cats = [category_set(meta.get(e, {}).get("category")) for e in episodes]
        vocab = {c: i for i, c in enumerate(sorted(set().union(*cats)))} if cats else {}
        self.has_category = bool(vocab)
        self.C = np.zeros((len(episodes), max(len(vocab), 1)), dtype=np.float32)
        for i, cs in enumerate(cats):
            for c in cs:
                self.C[i, vocab[c]] = 1.0
        self.size = self.C.sum(axis=1)
        # each episode's category set as a code, and one episode per set (its row stands for all)
        set_codes = {}
        self.category_code = np.asarray(
            [set_codes.setdefault(frozenset(cs), len(set_codes)) for cs in cats], dtype=np.int64
        )
        self.category_example = np.zeros(len(set_codes), dtype=np.int64)
        self.category_example[self.category_code] = np.arange(len(cats))  # any one will do
        self._dense, self._dense_e, self._dense_terms = None, None, None
        self._set_rows = {}  # category set code -> its Jaccard with every set (jaccard)

    def similarity(self, e: int, others: np.ndarray) -> np.ndarray:
        """Cosine of episode ``e`` with each of ``others`` (:meth:`similarity_of_rows` of the
        whole TF-IDF matrix: the draws ask for a few candidates at a time)."""
        return self.similarity_of_rows(e, self.X, np.asarray(others, dtype=np.int64))

    def similarity_of_rows(self, e: int, rows, which: np.ndarray) -> np.ndarray:
        """Cosine of episode ``e`` with rows ``which`` of a TF-IDF block (the whole matrix or a
        :meth:`rows` block; None: no title or description text, all 0): each row's products
        with ``e``'s vector summed in the row's stored order (what a sparse product does,
        without building a block per call)."""
        if rows is None or len(which) == 0:
            return np.zeros(len(which))
        dense = self._dense_row(e)
        starts = rows.indptr[which]
        lengths = rows.indptr[which + 1] - starts
        at = ranges_positions(starts, lengths)
        return _row_sums(rows.data[at] * dense[rows.indices[at]], lengths)

    def similarity_of_range(self, e: int, rows, lo: int, hi: int) -> np.ndarray:
        """:meth:`similarity_of_rows` of the consecutive rows ``lo`` to ``hi`` of a block, read as
        slices (a category group's rows): the same products and sums, with no gather of the
        positions."""
        if rows is None or hi <= lo:
            return np.zeros(max(hi - lo, 0))
        a, b = rows.indptr[lo], rows.indptr[hi]
        products = rows.data[a:b] * self._dense_row(e)[rows.indices[a:b]]
        return _row_sums(products, np.diff(rows.indptr[lo : hi + 1]))

    def rows(self, episodes: np.ndarray):
        """The TF-IDF rows of ``episodes`` (None without title or description text)."""
        return None if self.X is None else self.X[np.asarray(episodes, dtype=np.int64)]

    def similarity_to_rows(self, e: int, rows, n: int) -> np.ndarray:
        """:meth:`similarity` of episode ``e`` with the episodes whose :meth:`rows` these are: one
        sparse product, summed in each row's stored order as :meth:`similarity` sums."""
        if rows is None or n == 0:
            return np.zeros(n)
        return rows @ self._dense_row(e)

    def _dense_row(self, e: int) -> np.ndarray:
        """Episode ``e``'s TF-IDF vector as a dense array (one buffer, refilled when e changes)."""
        if self._dense_e != e:
            if self._dense is None:
                self._dense = np.zeros(self.X.shape[1])
            else:
                self._dense[self._dense_terms] = 0.0
            lo, hi = self.X.indptr[e], self.X.indptr[e + 1]
            self._dense_terms = self.X.indices[lo:hi]
            self._dense[self._dense_terms] = self.X.data[lo:hi]
            self._dense_e = e
        return self._dense

    def excluded_appearances(self, app_ep: np.ndarray, threshold: float, seed: int):
        """(per episode, sample): for a probe of each episode, how many appearances of other
        episodes the topic filter removes (similarity above ``threshold``), and the sample size
        when that count is estimated (None when exact).

        Exact when the corpus holds at most :data:`COUNT_SAMPLE` appearances. Beyond, each
        episode's count is its other-episode appearances times the share of a seeded uniform
        sample of :data:`COUNT_SAMPLE` appearances that lies above the threshold: linear in the
        corpus, where the exact count needs every pair of episodes. Trials do not depend on it:
        every candidate drawn is checked exactly (:meth:`~.pairing.TrialPairing.topic_view`).
        """
        n_eps, n = self.C.shape[0], len(app_ep)
        if self.X is None or n == 0:
            return np.zeros(n_eps), None
        exact = n <= COUNT_SAMPLE
        sample = (
            np.arange(n)
            if exact
            else np.sort(np.random.default_rng([int(seed), 9173]).choice(n, COUNT_SAMPLE, False))
        )
        eps, per_ep = np.unique(app_ep[sample], return_counts=True)
        hits = np.zeros(n_eps)
        for start in range(0, n_eps, _BLOCK):
            rows = np.arange(start, min(n_eps, start + _BLOCK))
            above = self._above(rows, eps, threshold)
            above[rows[:, None] == eps[None, :]] = False  # a probe's own episode is not a candidate
            hits[rows] = above @ per_ep
        if exact:
            return hits, None
        sampled = np.zeros(n_eps)
        sampled[eps] = per_ep
        others, others_sampled = n - np.bincount(app_ep, minlength=n_eps), len(sample) - sampled
        return others * hits / np.maximum(others_sampled, 1), COUNT_SAMPLE

    def _above(self, rows: np.ndarray, cols: np.ndarray, threshold: float) -> np.ndarray:
        """rows x cols: similarity above the threshold, pairs within rounding of it re-checked
        with :meth:`similarity` (the expression the trial draws use)."""
        sims = (self.X[rows] @ self.X[cols].T).toarray()
        above = sims > threshold
        for i, j in zip(*np.nonzero(np.abs(sims - threshold) <= 1e-9)):
            above[i, j] = self.similarity(rows[i], cols[j : j + 1])[0] > threshold
        return above

    def set_jaccard(self, e: int, codes: np.ndarray) -> np.ndarray:
        """:meth:`jaccard` of episode ``e`` with category sets (their codes): the same values,
        from one episode of each set (looked up in the set-by-set table where :meth:`jaccard`
        keeps one)."""
        codes = np.asarray(codes, dtype=np.int64)
        if len(self.category_example) <= JACCARD_TABLE_MAX:
            return self._set_row(e)[codes]
        return self._jaccard(e, self.category_example[codes])

    def _set_row(self, e: int) -> np.ndarray:
        """Episode ``e``'s set's Jaccard with every category set (made when first asked)."""
        code = int(self.category_code[e])
        if code not in self._set_rows:
            self._set_rows[code] = self._jaccard(e, self.category_example)
        return self._set_rows[code]

    def jaccard(self, e: int, others: np.ndarray) -> np.ndarray:
        """Category-set Jaccard of episode ``e`` with each of ``others``: looked up in ``e``'s
        set's row of set-by-set values (made when first asked, the same values) when the corpus
        has at most ``JACCARD_TABLE_MAX`` category sets, else computed from the category rows."""
        if len(self.category_example) > JACCARD_TABLE_MAX:
            return self._jaccard(e, others)
        return self._set_row(e)[self.category_code[np.asarray(others, dtype=np.int64)]]

    def _jaccard(self, e: int, others: np.ndarray) -> np.ndarray:
        inter = self.C[others] @ self.C[e]
        union = self.size[others] + self.size[e] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def _row_sums(products: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The sums of consecutive runs of ``products``, run i ``lengths[i]`` long, each summed in
    its stored order (as a sparse product sums a row)."""
    owner = np.repeat(np.arange(len(lengths)), lengths)
    return np.bincount(owner, weights=products, minlength=len(lengths))


def category_set(value) -> set:
    if value is None:
        return set()
    if isinstance(value, (list, tuple, set)):
        items = value
    else:
        items = re.split(r"[,;|]", str(value))
    return {str(x).strip().lower() for x in items if str(x).strip()}


def has_topic_metadata(manifest) -> bool:
    return any(
        any(u.extra.get(k) not in (None, "", []) for k in ("title", "description", "category"))
        for u in manifest
    )
