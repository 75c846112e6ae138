"""Batches of waveforms for an encoder, and their embeddings put back in input order.

Padding is not free: padded frames reach the edges of the convolutions (and, in SpeechBrain's
pipeline, frames of silence enter the filterbank), so a padded utterance's embedding moves with
its batch mates' lengths, by a few percent of cosine on a tiny model. By default only waves of
the same length share a forward pass, so an embedding depends on its utterance alone (a cached
one equals a fresh one); ``padded=True`` pads length-sorted batches instead, faster on a GPU
and close, not equal, to one at a time.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np


def length_sorted_batches(waves: list, batch_size: int) -> Iterator[list[int]]:
    """Indices of ``waves`` in batches of at most ``batch_size``, longest first."""
    order = sorted(range(len(waves)), key=lambda i: -len(waves[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def equal_length_batches(waves: list, batch_size: int) -> Iterator[list[int]]:
    """Indices of ``waves`` in batches of at most ``batch_size`` waves of one length each."""
    groups: dict[int, list[int]] = {}
    for index, wave in enumerate(waves):
        groups.setdefault(len(wave), []).append(index)
    for indices in groups.values():
        for start in range(0, len(indices), batch_size):
            yield indices[start : start + batch_size]


def pad(waves: list) -> tuple[np.ndarray, np.ndarray]:
    """(batch, samples) float32 zero-padded waves and each one's length in samples."""
    lengths = np.array([len(w) for w in waves], dtype=np.int64)
    out = np.zeros((len(waves), int(lengths.max())), dtype=np.float32)
    for row, wave in enumerate(waves):
        out[row, : len(wave)] = wave
    return out, lengths


def embed_in_batches(
    waves: list, batch_size: int, embed_batch: Callable, *, padded: bool = False
) -> np.ndarray:
    """(n, D) float32: ``embed_batch(list of waves) -> (b, D)`` over batches, rows back in the
    order of ``waves``."""
    if not waves:
        raise ValueError("no waveforms to embed")
    batches = length_sorted_batches if padded else equal_length_batches
    rows = {}
    for indices in batches(waves, max(1, int(batch_size))):
        out = np.asarray(embed_batch([waves[i] for i in indices]), dtype=np.float32)
        rows.update(zip(indices, out))
    return np.stack([rows[i] for i in range(len(waves))])
