"""The identity anonymizer: the input samples unchanged (at 16 kHz); the baseline of every
evaluation, and a way to turn any corpus into 16 kHz wav files with a manifest."""

from __future__ import annotations

from .base import Anonymizer


class Identity(Anonymizer):
    name = "identity"
    keeps_words = True
    deterministic = True

    def anonymize(self, wav, sr, utterance):
        return wav, sr
