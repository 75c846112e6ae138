"""Phone one-hot features (content-leakage paper, equation 1).

``R[i, t] = d_t * delta(i, phi(p_t))``: one row per phone in the sequence, with the phone's
duration d_t (seconds) in its vocabulary column and zeros elsewhere. Phone-only features set
d_t = 1. Width 39 (the CMU phones) or 40 with silence (``SIL``, the last column). The time axis
is the phone index, not frames: the attacker sees which phones came in which order, and (with
durations) for how long, and nothing else.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import DataError
from .phoneset import CMU_PHONES, PHONE_INDEX, SILENCE


def feature_width(silence: bool, phones: tuple = CMU_PHONES) -> int:
    return len(phones) + (1 if silence else 0)


def one_hot(
    phones,
    *,
    durations: bool = True,
    silence: bool = False,
    utt_id: str = "",
    inventory: tuple = CMU_PHONES,
) -> np.ndarray:
    """(T, 39|40) float32 matrix for a phone sequence (T, len(inventory) [+ 1] for another
    language's inventory, :func:`~sparc_eval.phones.phoneset.inventory`).

    ``phones`` is a list of phone symbols, or of ``(phone, start_s, end_s)`` segments when
    ``durations`` is set. Silence segments are dropped unless ``silence`` is set.
    """
    index = PHONE_INDEX if inventory is CMU_PHONES else _index_with_silence(inventory)
    rows, values = [], []
    for item in phones:
        if isinstance(item, str):
            if durations:
                raise DataError(
                    f"{utt_id or 'utterance'}: durations requested but phones have no timings",
                    hint="use segments (phone, start, end) from a recognizer, or durations: False",
                )
            phone, duration = item, 1.0
        else:
            phone, start, end = item
            duration = float(end) - float(start) if durations else 1.0
        if phone == SILENCE and not silence:
            continue
        if phone not in index:
            raise DataError(
                f"{utt_id or 'utterance'}: unknown phone {phone!r}",
                hint="phones must be the 39 CMU phones without stress, or SIL"
                if inventory is CMU_PHONES
                else "phones must be the language's espeak phonemes, or SIL",
            )
        rows.append(index[phone])
        values.append(duration)
    matrix = np.zeros((len(rows), feature_width(silence, inventory)), dtype=np.float32)
    if rows:
        matrix[np.arange(len(rows)), rows] = values
    return matrix


@functools.lru_cache(maxsize=8)
def _index_with_silence(inventory: tuple) -> dict:
    return {p: i for i, p in enumerate(inventory + (SILENCE,))}


def pad_batch(matrices, *, min_length: int = 1):
    """Stack (T_i, D) matrices into a zero-padded (B, T, D) array and SpeechBrain's relative
    lengths (T_i / T). Sequences shorter than ``min_length`` are zero-padded up to it, so short
    utterances never reach a convolution shorter than its reflect padding."""
    if not matrices:
        raise DataError("empty batch")
    width = matrices[0].shape[1]
    longest = max(max(m.shape[0] for m in matrices), min_length)
    batch = np.zeros((len(matrices), longest, width), dtype=np.float32)
    for i, m in enumerate(matrices):
        batch[i, : m.shape[0]] = m
    lengths = np.array([max(m.shape[0], 1) / longest for m in matrices], dtype=np.float32)
    return batch, lengths
