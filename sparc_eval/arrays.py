"""numpy helpers the stages share."""

from __future__ import annotations

import numpy as np


def distinct(x) -> np.ndarray:
    """Sorted distinct values of an integer array, by one sort: numpy 2's default ``np.unique``
    (hash-based) takes 0.17 s on 3x10^5 ints and 2.3 s on 2.5x10^6 here, a sort 3 ms and 30 ms."""
    x = np.sort(np.asarray(x))
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x
