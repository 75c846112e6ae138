"""numpy helpers the stages share."""

from __future__ import annotations

import numpy as np


def distinct(x) -> np.ndarray:
    """Sorted distinct values of an integer array, by one sort: numpy 2's default ``np.unique``
    (hash-based) takes 0.17 s on 3x10^5 ints and 2.3 s on 2.5x10^6 here, a sort 3 ms and 30 ms."""
    x = np.sort(np.asarray(x))
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


def sorted_runs(keys, *, stable: bool = True):
    """``(order, starts)``: the sort order of an integer array, and where each run of equal keys
    starts in it (so ``order[starts]`` is each distinct key's first position when the sort is
    stable; an unstable sort is 2-3 times faster)."""
    keys = np.asarray(keys)
    order = np.argsort(keys, kind="stable" if stable else None)
    ordered = keys[order]
    return order, np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(keys) else order


def first_sight_codes(keys, size: int = 0):
    """``(codes, first)`` of an integer array: equal keys share a code, codes numbered in order of
    first sight, and ``first[c]`` the position where code ``c`` is first seen. Keys known to lie
    in ``[0, size)`` (a caller's bound, worth it when ``size`` is of the order of the data), or
    small non-negative keys (below ``4 * len(keys) + 2**16``), are numbered in linear time
    through a table indexed by key; other keys (hashes, say) through a table of buckets
    (:func:`first_positions`), also linear in expectation."""
    keys = np.asarray(keys)
    n = len(keys)
    small = n and keys.dtype.kind in "iu" and keys.min() >= 0
    if small and keys.max() < max(size, 4 * n + (1 << 16)):
        return _first_sight_by_table(keys)
    return _first_sight_by_buckets(keys)


def first_positions(keys) -> np.ndarray:
    """Where each key of an integer array (any values: hashes, say) is first seen, so that equal
    keys share a position, in expected linear time: each key's bucket (the top bits of key x a
    golden-ratio constant, at least 2 buckets per key) finds the first position in its bucket
    through a table (``_bucket_owners``); a key equal to that first key has found its own first
    sight, and the few keys that share a bucket with a different, earlier key (one in four at
    most) find theirs by a sort among themselves. (A sort of 10^6 random keys took a third of a
    second and grew faster than the keys.) Positions are int32 below 2^30 keys: what reads
    them (a trial set's utterance text codes) moves half the memory."""
    keys = np.asarray(keys).astype(np.int64, copy=False)
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    owner = _bucket_owners(keys)
    crowded = np.flatnonzero(keys[owner] != keys)
    if len(crowded):
        codes, first = _first_sight_by_sort(keys[crowded])
        owner[crowded] = crowded[first[codes]]
    return owner


def codes_of_positions(first_at: np.ndarray):
    """``(codes, first)`` of :func:`first_sight_codes` from each key's first position: a code is
    the rank of its first position among the first positions (passes in order, no table)."""
    is_first = first_at == np.arange(len(first_at), dtype=first_at.dtype)
    rank = np.cumsum(is_first, dtype=np.int64) - 1
    return rank[first_at], np.flatnonzero(is_first)


def _first_sight_by_sort(keys: np.ndarray):
    """:func:`first_sight_codes` by one sort of the keys (a run's least position is its first
    sight, so the sort need not be stable)."""
    order, starts = sorted_runs(keys, stable=False)
    first = np.minimum.reduceat(order, starts)  # each distinct key's first position
    by_first = np.argsort(first)  # distinct positions: any sort gives one order
    rank = np.empty(len(first), dtype=np.int64)
    rank[by_first] = np.arange(len(first))
    codes = np.empty(len(order), dtype=np.int64)
    codes[order] = np.repeat(rank, np.diff(np.r_[starts, len(order)]))
    return codes, first[by_first]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: spreads any keys over buckets


def _first_sight_by_buckets(keys: np.ndarray):
    """:func:`first_sight_codes` of any integer keys, by :func:`first_positions`."""
    return codes_of_positions(first_positions(keys))


def _bucket_owners(keys: np.ndarray) -> np.ndarray:
    """The first position of each key's bucket. The keys are visited a region of the bucket table
    at a time (a stable radix sort on the buckets' top bits, then ``np.minimum.at``), so that the
    table, which outgrows the caches from about 10^6 keys, is walked once in order, not at
    random (:func:`first_sight_codes` of 1.5x10^6 random keys: 0.15 s -> 0.08 s, with the
    codes ranked in order rather than by a second table)."""
    n = len(keys)
    bits = int(2 * n - 1).bit_length()
    with np.errstate(over="ignore"):
        hashed = keys.view(np.uint64) * _GOLDEN
    hashed >>= np.uint64(64 - bits)
    index = np.int32 if n < 2**30 else np.int64  # half the memory traffic (buckets < 2n)
    bucket = hashed.astype(index)
    del hashed
    region_bits = min(16, max(0, bits - _REGION_BITS))  # 16: what a radix sort takes
    if region_bits:
        region = (bucket >> (bits - region_bits)).astype(np.uint16)
        order = np.argsort(region, kind="stable").astype(index)  # a radix sort: linear
        del region
    else:
        order = np.arange(n, dtype=index)
    in_order = bucket[order]
    del bucket
    first_at = np.full(1 << bits, n, dtype=index)
    np.minimum.at(first_at, in_order, order)
    owner = np.empty(n, dtype=index)
    owner[order] = first_at[in_order]
    return owner


_REGION_BITS = 15  # 2^15 buckets a region: 128 KiB of the table, within any core's L2


def _first_sight_by_table(keys: np.ndarray):
    """:func:`first_sight_codes` of small non-negative keys: each key's first position by
    ``np.minimum.at`` into a table of every key value, no sort (5-9 times faster on 10^5-10^6
    keys, and linear)."""
    at = np.arange(len(keys), dtype=np.int64)
    first_at = np.full(int(keys.max()) + 1, len(keys), dtype=np.int64)
    np.minimum.at(first_at, keys, at)
    first = np.flatnonzero(first_at[keys] == at)  # first sights, in order of position
    code_of = np.empty(len(first_at), dtype=np.int64)
    code_of[keys[first]] = np.arange(len(first))
    return code_of[keys], first


def ranges_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions of consecutive ranges ``[start, start + length)``, one after another."""
    total = int(lengths.sum())
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(total, dtype=np.int64)
