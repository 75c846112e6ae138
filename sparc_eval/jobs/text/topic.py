"""Episode topic metadata for the SPoRC topic control (A.1.2): title+description TF-IDF cosine
and category Jaccard between episodes (how they are used: :mod:`~sparc_eval.jobs.text.trials`)."""

from __future__ import annotations

import re

import numpy as np


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

    def similarity(self, e: int, others: np.ndarray) -> np.ndarray:
        if self.X is None:
            return np.zeros(len(others))
        return np.asarray((self.X[others] @ self.X[e].T).todense()).ravel()

    def jaccard(self, e: int, others: np.ndarray) -> np.ndarray:
        inter = self.C[others] @ self.C[e]
        union = self.size[others] + self.size[e] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


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
