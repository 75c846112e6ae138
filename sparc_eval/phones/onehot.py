"""Phone one-hot features (content-leakage paper, equation 1).

``R[i, t] = d_t * delta(i, phi(p_t))``: one row per phone in the sequence, with the phone's
duration d_t (seconds) in its vocabulary column and zeros elsewhere. Phone-only features set
d_t = 1. Width 39 (the CMU phones) or 40 with silence (``SIL``, the last column). The time axis
is the phone index, not frames: the attacker sees which phones came in which order, and (with
durations) for how long, and nothing else.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError
from .phoneset import CMU_PHONES, PHONE_INDEX, SILENCE


def feature_width(silence: bool) -> int:
    return len(CMU_PHONES) + (1 if silence else 0)


def one_hot(
    phones, *, durations: bool = True, silence: bool = False, utt_id: str = ""
) -> np.ndarray:
    """(T, 39|40) float32 matrix for a phone sequence.

    ``phones`` is a list of phone symbols, or of ``(phone, start_s, end_s)`` segments when
    ``durations`` is set. Silence segments are dropped unless ``silence`` is set.
    """
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
        if phone not in PHONE_INDEX:
            raise DataError(
                f"{utt_id or 'utterance'}: unknown phone {phone!r}",
                hint="phones must be the 39 CMU phones without stress, or SIL",
            )
        rows.append(PHONE_INDEX[phone])
        values.append(duration)
    matrix = np.zeros((len(rows), feature_width(silence)), dtype=np.float32)
    if rows:
        matrix[np.arange(len(rows)), rows] = values
    return matrix


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
