"""SpeechBrain datasets over manifest utterances, for the ECAPA attacker.

Each item provides ``inputs`` (a waveform for mel and ssl features, a (T, D) one-hot matrix for
phone features) and ``speaker_index``. Training items are random crops (``chunk``: seconds of
audio or number of phones), drawn from Python's ``random``, which the recipe seeds.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from sparc_eval.speech.audio import read_utterance
from sparc_eval.speechbrain_compat import import_speechbrain

from .features import WAVEFORM_FEATURES

sb = import_speechbrain()
from speechbrain.dataio.dataset import DynamicItemDataset  # noqa: E402

SAMPLE_RATE = 16000


def _crop(array, length: int):
    if length is None or array.shape[0] <= length:
        return array
    start = random.randint(0, array.shape[0] - length)
    return array[start : start + length]


def make_dataset(
    utterances,
    *,
    feature_type: str,
    features: dict | None = None,
    speaker_index: dict | None = None,
    chunk=None,
    sort: bool = False,
) -> DynamicItemDataset:
    """A DynamicItemDataset of ``utterances``.

    ``features`` (id -> matrix) is required for phone features; mel and ssl features read the audio.
    ``chunk`` crops training items; ``sort`` orders by length for padding-efficient inference.
    """
    by_id = {u.id: u for u in utterances}
    data = {}
    for utt in utterances:
        if feature_type in WAVEFORM_FEATURES:
            length = utt.duration or 0.0
        else:
            length = float(features[utt.id].shape[0])
        data[utt.id] = {"speaker": utt.speaker, "length": length}
    dataset = DynamicItemDataset(data)

    if feature_type in WAVEFORM_FEATURES:
        crop = None if chunk is None else int(chunk * SAMPLE_RATE)

        @sb.utils.data_pipeline.takes("id")
        @sb.utils.data_pipeline.provides("inputs")
        def inputs_pipeline(utt_id):
            wav, _ = read_utterance(by_id[utt_id], sample_rate=SAMPLE_RATE)
            return torch.from_numpy(np.ascontiguousarray(_crop(wav, crop)))
    else:
        crop = None if chunk is None else int(chunk)

        @sb.utils.data_pipeline.takes("id")
        @sb.utils.data_pipeline.provides("inputs")
        def inputs_pipeline(utt_id):
            matrix = features[utt_id]
            if matrix.shape[0] == 0:  # nothing recognised: one empty frame, scored as such
                matrix = np.zeros((1, matrix.shape[1]), dtype=np.float32)
            return torch.from_numpy(np.ascontiguousarray(_crop(matrix, crop)))

    dataset.add_dynamic_item(inputs_pipeline)
    keys = ["id", "inputs"]
    if speaker_index is not None:

        @sb.utils.data_pipeline.takes("speaker")
        @sb.utils.data_pipeline.provides("speaker_index")
        def speaker_pipeline(speaker):
            return torch.LongTensor([speaker_index[speaker]])

        dataset.add_dynamic_item(speaker_pipeline)
        keys.append("speaker_index")
    dataset.set_output_keys(keys)
    if sort:
        dataset = dataset.filtered_sorted(sort_key="length", reverse=True)
    return dataset


def hold_out(utterances, *, fraction: float, seed: int) -> tuple:
    """(train, valid): ``fraction`` of each speaker's utterances held out (at least one when the
    speaker has three or more), so validation measures speaker classification on unseen speech."""
    rng = np.random.default_rng(seed)
    by_speaker: dict = {}
    for utt in utterances:
        by_speaker.setdefault(utt.speaker, []).append(utt)
    train, valid = [], []
    for speaker in sorted(by_speaker):
        utts = by_speaker[speaker]
        k = int(round(len(utts) * fraction))
        if len(utts) >= 3:
            k = max(k, 1)
        order = rng.permutation(len(utts))
        held = set(order[:k].tolist())
        for i, utt in enumerate(utts):
            (valid if i in held else train).append(utt)
    return train, valid
