"""numpy helpers the stages share."""

from __future__ import annotations

import numpy as np


def distinct(x) -> np.ndarray:
    """Sorted distinct values of an integer array, by one sort: numpy 2's default ``np.unique``
    (hash-based) takes 0.17 s on 3x10^5 ints and 2.3 s on 2.5x10^6 here, a sort 3 ms and 30 ms."""
    x = np.sort(np.asarray(x))
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


def sorted_runs(keys):
    """``(order, starts)``: the stable sort order of an integer array, and where each run of equal
    keys starts in it (so ``order[starts]`` is each distinct key's first position)."""
    keys = np.asarray(keys)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    return order, np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(keys) else order


def first_sight_codes(keys):
    """``(codes, first)`` of an integer array: equal keys share a code, codes numbered in order of
    first sight, and ``first[c]`` the position where code ``c`` is first seen. One stable sort."""
    order, starts = sorted_runs(keys)
    first = order[starts]  # each distinct key's first position (the sort is stable)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    codes = np.empty(len(order), dtype=np.int64)
    codes[order] = np.repeat(rank, np.diff(np.r_[starts, len(order)]))
    return codes, np.sort(first)
