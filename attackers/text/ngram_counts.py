"""Word n-gram counts of every text a scorer has seen, each text counted once.

A text evaluation fits TF-IDF on each task and (P, L) setting's unique utterances: the four tasks
and every setting read the same utterances again, so counting n-grams per fit (scikit-learn's
``CountVectorizer``) repeats the same Python tokenising 16 times in the NaturalVoices preset.
:class:`NgramCounts` tokenises a text once (the ``CountVectorizer`` analyzer's rules: lower-case,
``token_pattern``, n-grams of consecutive tokens), gives each n-gram a column the first time it
is seen, and keeps one sparse row per text; a fit then takes its texts' rows and its own document
frequencies. The n-grams are vectorised: each token gets its unigram column from one dictionary,
an n-gram is keyed by its (n-1)-gram's column and its last token's, and only the distinct keys of
a batch go through a dictionary.

Columns are in order of first sight, not alphabetical as in ``CountVectorizer``: cosine scores
are the same up to the last bits of float rounding (tested against scikit-learn).
"""

from __future__ import annotations

import re
from itertools import chain

import numpy as np
from scipy import sparse

COUNT_BATCH = 10_000  # texts tokenised at once (their tokens are Python strings until counted)
_SHIFT = 31  # an n-gram key: (n-1)-gram column << 31 | last token's column (columns < 2**31)


class NgramCounts:
    """Text -> row of n-gram counts (columns shared by every text seen); see the module docstring."""

    def __init__(
        self, ngram_range=(1, 2), lowercase: bool = True, token_pattern: str = r"(?u)\b\w[\w']*\b"
    ):
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.columns = [{} for _ in range(self.ngram_range[1])]  # per n: key -> column
        self.n_columns = 0
        self.row_of = {}  # text -> row
        self._blocks, self._starts = (
            [],
            [],
        )  # one CSR block of rows per call that counted texts, its first row

    def __getstate__(self):
        # shipped to scoring workers: the columns travel, the rows are counted again where needed
        return {**self.__dict__, "row_of": {}, "_blocks": [], "_starts": []}

    def rows(self, texts) -> sparse.csr_matrix:
        """Counts of ``texts`` (int32; n-gram columns of every text seen so far), counting the new
        ones; gathered block by block (the cache is never copied whole)."""
        ids = self._row_ids(texts)
        parts, order = [], []
        for first, block in zip(self._starts, self._blocks):
            mine = np.flatnonzero((ids >= first) & (ids < first + block.shape[0]))
            if len(mine):
                parts.append(block[ids[mine] - first])
                order.append(mine)
        if not parts:
            return sparse.csr_matrix((0, self.n_columns), dtype=np.int32)
        shaped = [
            sparse.csr_matrix((b.data, b.indices, b.indptr), shape=(b.shape[0], self.n_columns))
            for b in parts
        ]
        if len(shaped) == 1:
            return shaped[0]
        return sparse.vstack(shaped, format="csr")[np.argsort(np.concatenate(order), kind="stable")]

    def document_frequency(self, texts, *, block: int = 1 << 16) -> np.ndarray:
        """Per column, how many of ``texts`` (distinct) hold the n-gram; a block of texts at a time."""
        ids = np.sort(self._row_ids(texts))  # rows in stored order: each block read in sequence
        df = np.zeros(self.n_columns, dtype=np.int64)
        for first, rows in zip(self._starts, self._blocks):
            lo, hi = np.searchsorted(ids, [first, first + rows.shape[0]])
            for at in range(lo, hi, block):
                mine = ids[at : min(hi, at + block)] - first
                df += np.bincount(rows[mine].indices, minlength=self.n_columns)
        return df

    def count(self, texts) -> None:
        """Count the ``texts`` not seen yet, in the order given (their new n-grams numbered so)."""
        self._row_ids(texts)

    def unseen(self, texts) -> list:
        """The distinct ``texts`` not counted yet, in the order given."""
        return list(dict.fromkeys(t for t in texts if t not in self.row_of))

    def _row_ids(self, texts) -> np.ndarray:
        new = self.unseen(texts)
        batches = [
            self._count(new[lo : lo + COUNT_BATCH]) for lo in range(0, len(new), COUNT_BATCH)
        ]
        if (
            batches
        ):  # one block per call: tokens are Python strings, so a batch is counted at a time
            self._add_block(new, batches)
        return np.fromiter(map(self.row_of.__getitem__, texts), dtype=np.int64, count=len(texts))

    def _count(self, texts: list) -> sparse.csr_matrix:
        """The rows of ``texts`` (not yet registered), numbering their new n-grams."""
        find = re.compile(self.token_pattern).findall
        tokens = [find(t.lower()) for t in texts] if self.lowercase else [find(t) for t in texts]
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        doc = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        pos = np.arange(len(doc), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        unigram = self._token_columns(list(chain.from_iterable(tokens)))
        docs, cols, gram = (
            [],
            [],
            unigram,
        )  # gram[i]: column of the n-gram ending at token i (-1: none)
        for n in range(1, self.ngram_range[1] + 1):
            if n > 1:
                prev, gram = gram, np.full(len(doc), -1, dtype=np.int64)
                ok = np.flatnonzero(pos >= n - 1)
                gram[ok] = self._keyed_columns(n - 1, prev[ok - 1] << _SHIFT | unigram[ok])
            if n >= self.ngram_range[0]:
                has = gram >= 0
                docs.append(doc[has])
                cols.append(gram[has])
        return self._block(len(texts), np.concatenate(docs), np.concatenate(cols))

    def _token_columns(self, flat: list) -> np.ndarray:
        """Columns of tokens, new ones numbered on in order of first sight."""
        table = self.columns[0]
        for token in dict.fromkeys(flat):  # distinct tokens, first-sight order
            if token not in table:
                table[token] = self.n_columns
                self.n_columns += 1
        return np.fromiter(map(table.__getitem__, flat), dtype=np.int64, count=len(flat))

    def _keyed_columns(self, n: int, keys: np.ndarray) -> np.ndarray:
        """Columns of integer (n+1)-gram keys: one dictionary look-up per distinct key."""
        table = self.columns[n]
        unique, inverse = np.unique(keys, return_inverse=True)
        for key in unique.tolist():
            if key not in table:
                table[key] = self.n_columns
                self.n_columns += 1
        ids = np.fromiter(
            map(table.__getitem__, unique.tolist()), dtype=np.int64, count=len(unique)
        )
        return ids[inverse]

    def _block(self, n_texts: int, doc: np.ndarray, col: np.ndarray) -> sparse.csr_matrix:
        pairs, counts = np.unique(doc << _SHIFT | col, return_counts=True)  # sorted: CSR order
        indptr = np.zeros(n_texts + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs >> _SHIFT, minlength=n_texts), out=indptr[1:])
        cols = (pairs & ((1 << _SHIFT) - 1)).astype(np.int32)
        return sparse.csr_matrix(
            (counts.astype(np.int32), cols, indptr), shape=(n_texts, self.n_columns)
        )

    def _add_block(self, texts: list, batches: list) -> None:
        shaped = [
            sparse.csr_matrix((b.data, b.indices, b.indptr), shape=(b.shape[0], self.n_columns))
            for b in batches
        ]
        block = shaped[0] if len(shaped) == 1 else sparse.vstack(shaped, format="csr")
        first = len(self.row_of)
        self.row_of.update(zip(texts, range(first, first + len(texts))))
        self._starts.append(first)
        self._blocks.append(block)
