"""numpy helpers the stages share."""

from __future__ import annotations

import numpy as np


def distinct(x) -> np.ndarray:
    """Sorted distinct values of an integer array, by one sort: numpy 2's default ``np.unique``
    (hash-based) takes 0.17 s on 3x10^5 ints and 2.3 s on 2.5x10^6 here, a sort 3 ms and 30 ms."""
    x = np.sort(np.asarray(x))
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


def first_sight_codes(keys):
    """``(codes, first)`` of an integer array: equal keys share a code, codes numbered in order of
    first sight, and ``first[c]`` the position where code ``c`` is first seen. One stable sort."""
    keys = np.asarray(keys)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    new = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]] if len(keys) else np.zeros(0, bool)
    first = order[new]  # each distinct key's first position (the sort is stable)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = rank[np.cumsum(new) - 1]
    return codes, np.sort(first)
