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

from sparc_eval.text_trials.trial_set import CodedTexts

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
        self._space = (None, None)  # the last list of texts coded into (CodedTexts), its rows
        self._blocks, self._starts = (
            [],
            [],
        )  # one CSR block of rows per call that counted texts, its first row

    def __getstate__(self):
        # shipped to scoring workers: the columns travel, the rows are counted again where needed
        return {**self.__dict__, "row_of": {}, "_blocks": [], "_starts": [], "_space": (None, None)}

    def rows(self, texts) -> sparse.csr_matrix:
        """Counts of ``texts`` (int32; n-gram columns of every text seen so far), counting the new
        ones, in the order given."""
        return self.rows_at(self.ids(texts))

    def rows_at(self, ids: np.ndarray) -> sparse.csr_matrix:
        """The rows of row ``ids``, in that order: read in ascending order (each block once, in
        sequence), then put in the order asked."""
        order = np.argsort(ids, kind="stable")
        ascending = self.gather(ids[order])
        return ascending if len(order) < 2 else ascending[np.argsort(order, kind="stable")]

    def gather(self, ids: np.ndarray) -> sparse.csr_matrix:
        """The rows of ascending row ``ids``: each block read once, in order (no row of the cache
        is visited twice, and the cache is never copied whole)."""
        parts = []
        for first, block in zip(self._starts, self._blocks):
            lo, hi = np.searchsorted(ids, [first, first + block.shape[0]])
            if hi > lo:
                part = block[ids[lo:hi] - first]
                parts.append(
                    sparse.csr_matrix(
                        (part.data, part.indices, part.indptr),
                        shape=(part.shape[0], self.n_columns),
                    )
                )
        if not parts:
            return sparse.csr_matrix((0, self.n_columns), dtype=np.int32)
        return parts[0] if len(parts) == 1 else sparse.vstack(parts, format="csr")

    def document_frequency(self, ids, *, block: int = 1 << 16) -> np.ndarray:
        """Per column, how many of the texts with row ``ids`` (distinct) hold the n-gram; a block of
        texts at a time, each block's columns added where they occur (not a pass over every
        column per block: the columns grow with the corpus)."""
        ids = np.sort(np.asarray(ids, dtype=np.int64))  # rows in stored order
        df = np.zeros(self.n_columns, dtype=np.int64)
        for at in range(0, len(ids), block):
            columns = self.gather(ids[at : at + block]).indices
            np.add.at(df, columns, 1)
        return df

    def ids(self, texts, *, new_sorted: bool = False) -> np.ndarray:
        """Row ids of ``texts``: one dictionary look-up per text, the texts not seen yet counted
        first (in sorted order with ``new_sorted``, else in the order given); texts given as
        :class:`~sparc_eval.text_trials.trial_set.CodedTexts` by their codes (``_coded_ids``)."""
        if isinstance(texts, CodedTexts):
            return self._coded_ids(texts, new_sorted)
        found = list(map(self.row_of.get, texts))
        new = list(dict.fromkeys(t for t, row in zip(texts, found) if row is None))
        if new:
            if new_sorted:
                new.sort()
            batches = [
                self._count(new[lo : lo + COUNT_BATCH]) for lo in range(0, len(new), COUNT_BATCH)
            ]
            self._add_block(new, batches)  # one block per call (a batch is counted at a time)
            get = self.row_of.__getitem__
            found = [get(t) if row is None else row for t, row in zip(texts, found)]
        return np.fromiter(found, dtype=np.int64, count=len(found))

    def _coded_ids(self, texts: CodedTexts, new_sorted: bool) -> np.ndarray:
        """:meth:`ids` of coded texts: the rows are kept per code of the list they are coded
        into (a trial builder's), so a text is looked up by its string once per builder, not
        once per trial set and fit (at 10^6 texts each string read misses the caches)."""
        space, rows = self._space
        if space is not texts.space:
            space, rows = texts.space, np.full(len(texts.space), -1, dtype=np.int64)
            self._space = (space, rows)
        elif len(rows) < len(space):  # a shared list that grew (a later builder's cut texts)
            rows = np.r_[rows, np.full(len(space) - len(rows), -1, dtype=np.int64)]
            self._space = (space, rows)
        codes = texts.codes
        need = codes[rows[codes] < 0]
        if len(need):
            rows[need] = self.ids([space[c] for c in need.tolist()], new_sorted=new_sorted)
        return rows[codes]

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
