"""An anonymizer that fails on chosen utterances, for the card's bad-input tests."""

import numpy as np

from anonymizers.base import Anonymizer


class Flaky(Anonymizer):
    """Keeps the audio, except: raises on ``fail_ids`` and returns no audio for ``empty_ids``."""

    name = "flaky"
    keeps_words = True

    def __init__(self, fail_ids=(), empty_ids=()):
        self.fail_ids, self.empty_ids = list(fail_ids), list(empty_ids)

    def anonymize(self, wav, sr, utterance):
        if utterance.id in self.fail_ids:
            raise RuntimeError("the backend crashed on this one")
        if utterance.id in self.empty_ids:
            return np.zeros(0, np.float32), sr
        return wav, sr
