"""White noise at a set signal-to-noise ratio: a reference degradation, not an anonymizer (the voice
and the words stay). It checks utility metrics on real speech: a naturalness predictor must rank
the copies at 20, 10 and 5 dB below the original and below each other (docs/results/anonymizer_card.md).

The noise of an utterance is drawn from a generator seeded by ``(seed, utterance id)``, so a copy
is the same in any order, shard or worker. The SNR is over the whole utterance (mean power, pauses
included); a copy that would clip is scaled down as a whole, which keeps its SNR.
"""

from __future__ import annotations

import numpy as np

from .base import Anonymizer


class WhiteNoise(Anonymizer):
    keeps_words = True
    deterministic = True  # seeded by the utterance: the input and the settings fix the output
    draws = "utterance"

    def __init__(self, snr_db: float = 20.0, seed: int = 0):
        self.snr_db, self.seed = float(snr_db), int(seed)
        self.name = f"noise_{self.snr_db:g}db"  # the manifest's name says the SNR

    def anonymize(self, wav, sr, utterance):
        wav = np.asarray(wav, np.float64)
        noise_power = np.mean(wav**2) / 10 ** (self.snr_db / 10)
        noisy = wav + self.draw_rng(utterance).standard_normal(wav.size) * np.sqrt(noise_power)
        peak = np.max(np.abs(noisy)) if noisy.size else 0.0
        if peak > 1.0:
            noisy /= peak
        return noisy.astype(np.float32), sr
